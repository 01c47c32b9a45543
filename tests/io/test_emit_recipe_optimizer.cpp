// Launch config of the DeepSeek-V3 recipe settings (docs/moe.md "Recomputation", docs/memory.md
// "Optimizer state"): selective recomputation of MLA's up projections alone and the
// precision-aware optimizer with bf16 moments print the Megatron-LM flags that run them, names
// the pinned Megatron-LM version accepts (tests/emit/megatron_args.txt).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/io/config_file.hpp"

namespace ppsearch {
namespace {

std::set<std::string> megatron_names() {
  std::ifstream in(std::string(PPSEARCH_SOURCE_DIR) + "/tests/emit/megatron_args.txt");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') names.insert(line);
  return names;
}

ResultRow dsv3_row(Recompute rc, int zero) {
  ResultRow x{};
  x.tp = 1, x.pp = 4, x.cp = 1, x.dp = 64, x.vpp = 1, x.mbs = 1;
  x.gpus = 256;
  x.global_batch_size = 4096;
  x.num_microbatches = 64;
  x.schedule = static_cast<std::uint8_t>(Schedule::k1F1B);
  x.recompute = static_cast<std::uint8_t>(rc);
  x.sequence_parallel = 0;
  x.zero_stage = static_cast<std::int8_t>(zero);
  x.feasible = 1;
  x.ep = 64;
  x.etp = 1;
  return x;
}

Problem dsv3(const std::vector<std::string>& sets) {
  LoadRequest req;
  req.model = "deepseek-v3";
  req.sets = {"search.gpus=256"};
  req.sets.insert(req.sets.end(), sets.begin(), sets.end());
  return load_problem(req);
}

const std::vector<std::pair<int, int>> kStages = {{0, 16}, {17, 32}, {33, 48}, {49, 62}};

TEST(EmitRecipe, MlaUpProjAloneIsTheRecomputeModule) {
  const ResultRow r = dsv3_row(Recompute::kSelective, 1);
  const LaunchConfig def = emit_launch_config(LaunchFormat::kMegatron, dsv3({}), r, kStages);
  EXPECT_NE(def.text.find("--recompute-modules core_attn mla_up_proj moe_act"), std::string::npos)
      << def.text;
  const LaunchConfig up = emit_launch_config(
      LaunchFormat::kMegatron, dsv3({"training.selective_recompute=mla-up-proj"}), r, kStages);
  ASSERT_TRUE(up.runnable) << up.text;
  EXPECT_NE(up.text.find("--recompute-modules mla_up_proj"), std::string::npos) << up.text;
  EXPECT_EQ(up.text.find("core_attn"), std::string::npos) << up.text;
  EXPECT_EQ(up.text.find("moe_act"), std::string::npos) << up.text;
  const std::set<std::string> names = megatron_names();
  for (const std::string& n : up.names) EXPECT_TRUE(names.count(n)) << n;
}

TEST(EmitRecipe, Bf16MomentsPrintThePrecisionAwareOptimizer) {
  const Problem p = dsv3({"training.optimizer_state_dtype=bf16-moments"});
  const LaunchConfig z1 =
      emit_launch_config(LaunchFormat::kMegatron, p, dsv3_row(Recompute::kNone, 1), kStages);
  ASSERT_TRUE(z1.runnable) << z1.text;
  for (const char* f :
       {"--use-precision-aware-optimizer", "--exp-avg-dtype bf16", "--exp-avg-sq-dtype bf16"})
    EXPECT_NE(z1.text.find(f), std::string::npos) << f << "\n" << z1.text;
  const std::set<std::string> names = megatron_names();
  for (const std::string& n : z1.names) EXPECT_TRUE(names.count(n)) << n;
  // Without the distributed optimizer Megatron-Core refuses it: no flag, a note instead.
  const LaunchConfig z0 =
      emit_launch_config(LaunchFormat::kMegatron, p, dsv3_row(Recompute::kNone, 0), kStages);
  EXPECT_EQ(z0.text.find("--use-precision-aware-optimizer"), std::string::npos) << z0.text;
  EXPECT_NE(z0.text.find("bf16-moments"), std::string::npos) << z0.text;
  // The default (fp32 moments) prints none of them.
  const LaunchConfig d =
      emit_launch_config(LaunchFormat::kMegatron, dsv3({}), dsv3_row(Recompute::kNone, 1), kStages);
  EXPECT_EQ(d.text.find("--use-precision-aware-optimizer"), std::string::npos) << d.text;
}

}  // namespace
}  // namespace ppsearch
