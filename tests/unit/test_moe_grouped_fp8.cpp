// The FP8 grouped expert GEMM factor (docs/moe.md "FP8 grouped GEMM efficiency"):
// training.moe_grouped_gemm_efficiency_fp8 multiplies training.moe_grouped_gemm_efficiency for
// grouped GEMMs run in FP8 only, on TE's GroupedLinear and on the fused grouped MLP alike.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "../support/moe_items.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

ItemCost moe_layer(const Problem& p) {
  return test::moe_items_of(p,
                            make_candidate(p, 1, 1, 8, 2, Schedule::k1F1B, Recompute::kNone, 0, 1))
      .moe_layer;
}

// The factor as the cost code takes it: with the run's linear-layer precision.
double efficiency(const Problem& p) {
  return grouped_gemm_efficiency(p.training, precision_plan(p.training, p.gpu).linear);
}

TEST(MoeGroupedFp8, FactorAppliesToFp8RunsOnly) {
  Problem bf16 = test::qwen3_30b_like();
  bf16.training.moe_grouped_gemm_efficiency = 0.8;
  bf16.training.moe_grouped_gemm_efficiency_fp8 = 0.5;
  EXPECT_DOUBLE_EQ(efficiency(bf16), 0.8);
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kCurrent, Fp8Recipe::kMxfp8}) {
    Problem fp8 = test::qwen3_30b_fp8_like(r, true);
    fp8.training.moe_grouped_gemm_efficiency = 0.8;
    fp8.training.moe_grouped_gemm_efficiency_fp8 = 0.5;
    EXPECT_DOUBLE_EQ(efficiency(fp8), 0.4);
  }
  // FP8 asked for on a GPU without an FP8 peak runs the GEMMs in 16 bit: no factor.
  Problem nofp8 = test::qwen3_30b_fp8_like(Fp8Recipe::kDelayed, false);
  nofp8.gpu.peak_fp8_flop_per_s = 0;
  nofp8.training.moe_grouped_gemm_efficiency_fp8 = 0.5;
  EXPECT_DOUBLE_EQ(efficiency(nofp8), nofp8.training.moe_grouped_gemm_efficiency);
}

TEST(MoeGroupedFp8, ExpertGemmTimeScalesByTheFactor) {
  // Halving the factor adds exactly the grouped GEMMs' throughput time once more: the layer's
  // compute grows by (t(0.5) - t(1)) = t(1) - overheads, and a BF16 layer does not move.
  Problem one = test::qwen3_30b_fp8_like(Fp8Recipe::kCurrent, false);
  one.training.moe_grouped_gemm_efficiency_fp8 = 1.0;
  Problem half = one;
  half.training.moe_grouped_gemm_efficiency_fp8 = 0.5;
  Problem quarter = one;
  quarter.training.moe_grouped_gemm_efficiency_fp8 = 0.25;
  const double c1 = moe_layer(one).compute_s, c2 = moe_layer(half).compute_s,
               c4 = moe_layer(quarter).compute_s;
  EXPECT_GT(c2, c1);
  // Linear in 1/factor: the step from 1/1 to 1/0.5 is a third of the step from 1/1 to 1/0.25.
  EXPECT_NEAR(c4 - c1, 3.0 * (c2 - c1), 1e-9 * c4);

  Problem b1 = test::qwen3_30b_like();
  b1.training.moe_grouped_gemm_efficiency_fp8 = 1.0;
  Problem b2 = b1;
  b2.training.moe_grouped_gemm_efficiency_fp8 = 0.5;
  EXPECT_DOUBLE_EQ(moe_layer(b1).compute_s, moe_layer(b2).compute_s);
}

TEST(MoeGroupedFp8, KeyRangeAndDefault) {
  Problem p;
  EXPECT_DOUBLE_EQ(p.training.moe_grouped_gemm_efficiency_fp8, 0.65);
  const auto zero = apply_key(p, "training.moe_grouped_gemm_efficiency_fp8", "0", "t");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->key, "training.moe_grouped_gemm_efficiency_fp8");
  EXPECT_TRUE(apply_key(p, "training.moe_grouped_gemm_efficiency_fp8", "1.5", "t"));
  EXPECT_DOUBLE_EQ(p.training.moe_grouped_gemm_efficiency_fp8, 0.65);
  EXPECT_FALSE(apply_key(p, "training.moe_grouped_gemm_efficiency_fp8", "0.5", "t"));
  EXPECT_DOUBLE_EQ(p.training.moe_grouped_gemm_efficiency_fp8, 0.5);
}

}  // namespace
}  // namespace ppsearch
