// The rate of llm-foundry's pre-MLIR Triton FlashAttention per GPU preset
// (gpu.triton_attention_scale; docs/step-time.md "llm-foundry: the Triton kernel on Hopper"):
// the Hopper presets carry the value fitted on the split = fit llm-foundry H100 rows, every other
// preset keeps FlashAttention-2's rate (1), and the llmfoundry-2023 stack is what turns the
// kernel on, through the configuration loader as ppsearch and ppsearch-validate load them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/presets.hpp"

namespace ppsearch {
namespace {

Problem load(const std::string& cluster, const std::vector<std::string>& sets) {
  LoadRequest req;
  req.cluster = cluster;
  req.sets = sets;
  req.sets.push_back("search.gpus=8");
  return load_problem(req);
}

TEST(TritonPresets, HopperCarriesTheFittedRateEveryOtherGpuFlashAttention2s) {
  for (const std::string& name : preset_names("clusters")) {
    SCOPED_TRACE(name);
    const Problem p = load(name, {});
    const std::string gpu = p.gpu.name;
    const bool hopper = gpu.rfind("h100", 0) == 0 || gpu.rfind("h200", 0) == 0;
    EXPECT_DOUBLE_EQ(p.gpu.triton_attention_scale, hopper ? 0.530 : 1.0) << gpu;
    EXPECT_FALSE(p.training.triton_attention);  // the default stack runs FlashAttention
  }
  const Problem h96 = load("h100-8gpu-ndr", {"cluster.gpu=h100-96gb-500w"});
  EXPECT_DOUBLE_EQ(h96.gpu.triton_attention_scale, 0.530);
}

TEST(TritonPresets, TheLlmFoundry2023StackTurnsTheKernelOnAndAKeyOverridesIt) {
  const Problem h100 = load("h100-8gpu-ndr", {"training.stack=llmfoundry-2023"});
  EXPECT_TRUE(h100.training.triton_attention);
  EXPECT_TRUE(h100.training.fused_elementwise);
  EXPECT_DOUBLE_EQ(h100.gpu.triton_attention_scale, 0.530);
  const Problem a100 = load("a100-8gpu-hdr", {"training.stack=llmfoundry-2023"});
  EXPECT_TRUE(a100.training.triton_attention);
  EXPECT_DOUBLE_EQ(a100.gpu.triton_attention_scale, 1.0);
  const Problem off =
      load("h100-8gpu-ndr", {"training.stack=llmfoundry-2023", "training.triton_attention=false",
                             "gpu.triton_attention_scale=0.5"});
  EXPECT_FALSE(off.training.triton_attention);
  EXPECT_DOUBLE_EQ(off.gpu.triton_attention_scale, 0.5);
  const Problem later = load("h100-8gpu-ndr", {"training.stack=llmfoundry-2024"});
  EXPECT_FALSE(later.training.triton_attention);
}

}  // namespace
}  // namespace ppsearch
