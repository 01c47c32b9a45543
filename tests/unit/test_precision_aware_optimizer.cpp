// Megatron-Core's precision-aware optimizer with bf16 Adam moments and fp32 main weights
// (training.optimizer_state_dtype = bf16-moments; docs/memory.md "Optimizer state"): 8 B of
// optimizer state per parameter instead of 12, by hand, and the DeepSeek-V3 rows that state it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

TEST(Bf16Moments, StateBytesPerParameterByHand) {
  for (double d : {1.0, 8.0, 64.0}) {
    for (bool fp32_grads : {true, false}) {
      const double g = fp32_grads ? 4.0 : 2.0, copy = fp32_grads ? 0.0 : 4.0;
      const StaticSplit z0 = static_bytes_per_param(0, d, fp32_grads, false, false, true);
      EXPECT_DOUBLE_EQ(z0.optim, 4.0 + 2.0 + 2.0);
      EXPECT_DOUBLE_EQ(z0.weight, 2.0);
      EXPECT_DOUBLE_EQ(z0.grad, g);
      EXPECT_DOUBLE_EQ(z0.step, copy);  // the fp32 gradient copy is unchanged
      const StaticSplit z1 = static_bytes_per_param(1, d, fp32_grads, false, false, true);
      EXPECT_DOUBLE_EQ(z1.optim, 8.0 / d);
      EXPECT_DOUBLE_EQ(z1.step, copy / d);
      // Against fp32 moments: exactly 4 B per parameter (over d) fewer, nothing else changes.
      const StaticSplit f1 = static_bytes_per_param(1, d, fp32_grads);
      EXPECT_DOUBLE_EQ(f1.optim - z1.optim, 4.0 / d);
      EXPECT_DOUBLE_EQ(f1.weight, z1.weight);
      EXPECT_DOUBLE_EQ(f1.grad, z1.grad);
    }
    // FSDP fp32 shards under ZeRO-3: the shard is the fp32 main weight, the moments 2 + 2.
    const StaticSplit z3 = static_bytes_per_param(3, d, false, false, true, true);
    EXPECT_DOUBLE_EQ(z3.weight, 4.0 / d);
    EXPECT_DOUBLE_EQ(z3.optim, 4.0 / d);
  }
}

TEST(Bf16Moments, ExpertAndDenseStateOfAMoeLayer) {
  Problem p = test::qwen3_30b_fp8_like(Fp8Recipe::kMxfp8, true);
  p.gpus = {16};
  const Links l = effective_links(p.cluster);
  Candidate c = test::make_candidate(p, 1, 1, 16, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  auto layer = [&](const Problem& q) {
    return moe_items(q, c, l, chain_costs(q, c, l).layer,
                     chain_costs(attention_only_problem(q), c, l).layer)
        .moe_layer;
  };
  const ItemCost f = layer(p);
  p.training.optimizer_state_dtype = "bf16-moments";
  const ItemCost b = layer(p);
  // 4 B fewer per parameter, over DP for the dense part and over expert-DP (16/8 = 2) for the
  // experts.
  const double dense = f.params, experts = f.expert_params;
  EXPECT_NEAR(f.optim_bytes - b.optim_bytes, 4.0 * dense / 16 + 4.0 * experts / 2, 1.0);
  EXPECT_DOUBLE_EQ(f.weight_bytes, b.weight_bytes);
  EXPECT_DOUBLE_EQ(f.act_bytes, b.act_bytes);
}

TEST(Bf16Moments, DeepSeekV3RowsStateItAndTheValidatorAppliesIt) {
  const std::vector<RunRecord> runs =
      parse_runs_csv(test::validation_text("runs-moe.csv"), "runs-moe.csv");
  int stated = 0;
  for (const RunRecord& r : runs) {
    const bool dsv3 = r.id.find("-dsv3-") != std::string::npos;
    EXPECT_EQ(r.optimizer_state_dtype, dsv3 ? "bf16-moments" : "") << r.id;
    if (!dsv3) continue;
    ++stated;
    Problem p = test::qwen3_30b_fp8_like(Fp8Recipe::kMxfp8, true);  // a loaded GPU and cluster
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << why;
    EXPECT_EQ(p.training.optimizer_state_dtype, "bf16-moments") << r.id;
  }
  EXPECT_EQ(stated, 18);
}

TEST(Bf16Moments, ABadCellNamesItsColumnAndLine) {
  std::string text = test::validation_text("runs-moe.csv"), was;
  ASSERT_TRUE(test::replace_cell(&text, "mb2604-gb200-dsv3-fp8mx", "optimizer_state_dtype",
                                 "bf16_moments", &was));
  ASSERT_EQ(was, "bf16-moments");
  try {
    parse_runs_csv(text, "runs-moe.csv");
    FAIL() << "accepted";
  } catch (const ConfigError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("optimizer_state_dtype"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bf16-moments"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runs-moe.csv:"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ppsearch
