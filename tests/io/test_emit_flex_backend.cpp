// The Megatron-LM launch line names the flex dispatcher's backend the host time was costed with
// (training.moe_flex_backend, docs/moe.md "DeepEP's host wait"; src/cli/emit.cpp).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/io/config_file.hpp"

namespace ppsearch {
namespace {

std::string megatron_text(const char* dispatcher, const char* backend) {
  LoadRequest req;
  req.model = "qwen3-30b-a3b";
  req.sets = {"search.gpus=8", std::string("training.moe_dispatcher=") + dispatcher,
              std::string("training.moe_flex_backend=") + backend};
  const Problem p = load_problem(req);
  ResultRow r{};
  r.gpus = 8, r.tp = 1, r.pp = 1, r.cp = 1, r.dp = 8, r.vpp = 1, r.mbs = 1;
  r.global_batch_size = 64;
  r.num_microbatches = 8;
  r.schedule = static_cast<std::uint8_t>(Schedule::k1F1B);
  r.recompute = static_cast<std::uint8_t>(Recompute::kNone);
  r.zero_stage = 1;
  r.ep = 8;
  r.etp = 1;
  r.feasible = 1;
  const std::vector<std::pair<int, int>> stages = {{0, p.model.layers + 1}};
  const LaunchConfig c = emit_launch_config(LaunchFormat::kMegatron, p, r, stages);
  EXPECT_TRUE(c.runnable) << c.text;
  return c.text;
}

TEST(EmitFlexBackend, MegatronNamesTheCostedBackend) {
  EXPECT_NE(megatron_text("flex", "deepep").find("--moe-flex-dispatcher-backend deepep"),
            std::string::npos);
  EXPECT_NE(megatron_text("flex", "hybridep").find("--moe-flex-dispatcher-backend hybridep"),
            std::string::npos);
  // Another dispatcher takes no backend flag, whatever the key says.
  EXPECT_EQ(megatron_text("alltoall", "deepep").find("--moe-flex-dispatcher-backend"),
            std::string::npos);
}

}  // namespace
}  // namespace ppsearch
