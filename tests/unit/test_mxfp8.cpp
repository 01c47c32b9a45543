// MXFP8 against per-tensor FP8 (docs/precision.md "MXFP8 against per-tensor FP8"): the block-scaled
// GEMM rate (gpu.mxfp8_gemm_efficiency), the casts without a transposed copy on GPUs whose FP8
// GEMMs take any layout (gpu.fp8_non_tn_gemm), and the keys' ranges.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// A Blackwell-like GPU: FP8 and MXFP8 tensor cores, any-layout FP8 GEMMs.
Problem blackwell(Fp8Recipe r) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 2 * p.gpu.peak_flop_per_s;
  p.gpu.gemm_efficiency_fp8 = 0.7;
  p.gpu.mxfp8 = true;
  p.gpu.fp8_non_tn_gemm = true;
  p.training.precision = "fp8";
  p.training.fp8_recipe = r;
  return p;
}

TEST(Mxfp8, PlanPerRecipeWithAnyLayoutGemms) {
  const Problem d = blackwell(Fp8Recipe::kDelayed);
  const PrecisionPlan delayed = precision_plan(d.training, d.gpu);
  EXPECT_EQ(delayed.linear, GemmPrecision::kFp8);
  EXPECT_EQ(delayed.cast_bytes_per_element, 3.0);  // read 2, write the FP8 copy only
  EXPECT_EQ(delayed.weight_copy_bytes, 1.0);       // the FP8 weight, no transpose
  const Problem c = blackwell(Fp8Recipe::kCurrent);
  EXPECT_EQ(precision_plan(c.training, c.gpu).cast_bytes_per_element, 5.0);  // + the amax read
  const Problem x = blackwell(Fp8Recipe::kMxfp8);
  const PrecisionPlan mx = precision_plan(x.training, x.gpu);
  EXPECT_EQ(mx.linear, GemmPrecision::kMxfp8);
  EXPECT_EQ(mx.cast_bytes_per_element, 4.0 + 2.0 / 32);  // row- and column-wise copies, scales
  EXPECT_EQ(mx.weight_copy_bytes, 2.0 + 2.0 / 32);
  // Without any-layout GEMMs (Hopper) the per-tensor casts keep the transpose.
  Problem h = blackwell(Fp8Recipe::kDelayed);
  h.gpu.fp8_non_tn_gemm = false;
  EXPECT_EQ(precision_plan(h.training, h.gpu).cast_bytes_per_element, 4.0);
  EXPECT_EQ(precision_plan(h.training, h.gpu).weight_copy_bytes, 2.0);
  // FP8 primary weights: the FP8 weight replaces the bf16 one whatever the layout.
  Problem g = blackwell(Fp8Recipe::kCurrent);
  g.training.fp8_param_gather = true;
  EXPECT_EQ(precision_plan(g.training, g.gpu).weight_copy_bytes, 1.0 - 2.0);
}

TEST(Mxfp8, GemmRateIsTheFp8RateTimesTheFactor) {
  Problem p = blackwell(Fp8Recipe::kMxfp8);
  p.gpu.gemm_overhead_s = 0;
  const GpuSpec& g = p.gpu;
  const double m = 16384, n = 8192, k = 8192;  // compute-bound
  const GemmTiming f8 = gemm_timing(m, n, k, g, GemmPrecision::kFp8);
  const GemmTiming mx = gemm_timing(m, n, k, g, GemmPrecision::kMxfp8);
  ASSERT_GT(f8.compute_s, f8.memory_s);
  EXPECT_NEAR(mx.compute_s, f8.compute_s / g.mxfp8_gemm_efficiency, 1e-12 * mx.compute_s);
  EXPECT_NEAR(mx.time_s, f8.time_s / g.mxfp8_gemm_efficiency, 1e-12 * mx.time_s);
  EXPECT_GT(mx.time_s, f8.time_s);
  // At a factor of 1 the two are the same kernel rate.
  p.gpu.mxfp8_gemm_efficiency = 1.0;
  EXPECT_DOUBLE_EQ(gemm_timing(m, n, k, p.gpu, GemmPrecision::kMxfp8).compute_s, f8.compute_s);
  // Roofline: the operands carry one E8M0 scale byte per 32 elements.
  const double bw = g.hbm_bytes_per_s * g.memory_efficiency;
  EXPECT_NEAR(mx.memory_s, ((1 + 1.0 / 32) * (m * k + k * n) + 2 * m * n) / bw, 1e-12);
  EXPECT_NEAR(f8.memory_s, ((m * k + k * n) + 2 * m * n) / bw, 1e-12);
  // Both FP8 kinds run against the FP8 peak: without one, both fall back to bf16.
  p.gpu.peak_fp8_flop_per_s = 0;
  EXPECT_EQ(gemm_time(m, n, k, p.gpu, GemmPrecision::kMxfp8), gemm_time(m, n, k, p.gpu));
}

TEST(Mxfp8, LayerTimeFallsAsTheFactorRises) {
  Problem p = blackwell(Fp8Recipe::kMxfp8);
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  double last = 0;
  for (double e : {0.5, 0.7, 0.9, 0.951, 1.0}) {
    p.gpu.mxfp8_gemm_efficiency = e;
    const double t = chain_costs(p, c, links).layer.compute_s;
    if (last > 0) {
      EXPECT_LT(t, last) << e;
    }
    last = t;
  }
  // Per-tensor FP8 does not see the factor.
  Problem d = blackwell(Fp8Recipe::kCurrent);
  const double at1 = chain_costs(d, c, links).layer.compute_s;
  d.gpu.mxfp8_gemm_efficiency = 0.5;
  EXPECT_EQ(chain_costs(d, c, links).layer.compute_s, at1);
}

// With GEMMs of equal rate (factor 1, compute-bound shapes, no k fill), MXFP8 and delayed scaling
// on an any-layout GPU differ by the casts alone: 1 + 1/16 bytes per cast element.
TEST(Mxfp8, CastDifferenceByHand) {
  Problem d = blackwell(Fp8Recipe::kDelayed);
  d.gpu.gemm_k_overhead = 0;
  d.gpu.mxfp8_gemm_efficiency = 1.0;
  Problem x = d;
  x.training.fp8_recipe = Fp8Recipe::kMxfp8;
  Problem h = d;
  h.gpu.fp8_non_tn_gemm = false;  // delayed scaling with the transposed copy
  const Candidate c = make_candidate(d, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(d.cluster);
  const double td = chain_costs(d, c, links).layer.compute_s;
  const double tx = chain_costs(x, c, links).layer.compute_s;
  const double th = chain_costs(h, c, links).layer.compute_s;
  const double m = c.mbs * double(d.model.seq_length), t = c.tp;
  const double hs = d.model.hidden_size, F = d.model.ffn_hidden_size;
  const double hq = double(d.model.attention_heads) * d.model.head_dim;
  const double hkv = double(d.model.kv_heads) * d.model.head_dim;
  const double bw = d.gpu.hbm_bytes_per_s * d.gpu.memory_efficiency;
  const double n_micro = double(d.training.global_batch_size) / (c.dp * c.mbs);
  const double x_el = m * (2 * hs / t + hq / t + F / t);
  const double w_el = (hs * (hq + 2 * hkv) + hq * hs + 3 * hs * F) / t;
  const double dy_el = m * ((hq + 2 * hkv) / t + 2 * hs / t + 2 * F / t);
  const double per_byte = (x_el + w_el / n_micro + dy_el) / bw;
  // The GEMMs match up to the roofline's scale bytes, which do not bind at these shapes.
  // With the transposed copy, the four sequence-parallel tensors (QKV's and FC1's inputs, the
  // out-projection's and FC2's output gradients, h/t each) are cast row-wise only and gathered
  // in FP8; the backward transposes the four gathered m x h tensors (read 1, write 1).
  const double gathered = m * 4 * hs / t;
  const double th_by_hand = per_byte - gathered / bw + 2.0 * 4 * m * hs / bw;
  EXPECT_NEAR(th - td, th_by_hand, 1e-6 * th_by_hand);
  EXPECT_NEAR(tx - td, (1 + 2.0 / 32) * per_byte, 1e-6 * per_byte);
  EXPECT_GT(per_byte, 0.0);
}

TEST(Mxfp8, MemoryWithoutTheTranspose) {
  Problem d = blackwell(Fp8Recipe::kDelayed);
  Problem h = d;
  h.gpu.fp8_non_tn_gemm = false;
  const Candidate c = make_candidate(d, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(d.cluster);
  const ChainCosts a = chain_costs(d, c, links);
  const ChainCosts b = chain_costs(h, c, links);
  const double linear = a.layer.params - 2.0 * d.model.hidden_size;
  EXPECT_DOUBLE_EQ(b.layer.weight_bytes - a.layer.weight_bytes, linear);  // one byte a weight
}

TEST(Mxfp8, GroupedGemmsTakeTheFp8FactorInBothKinds) {
  const Problem p = blackwell(Fp8Recipe::kMxfp8);
  EXPECT_EQ(grouped_gemm_efficiency(p.training, GemmPrecision::kMxfp8),
            grouped_gemm_efficiency(p.training, GemmPrecision::kFp8));
  EXPECT_LT(grouped_gemm_efficiency(p.training, GemmPrecision::kMxfp8),
            grouped_gemm_efficiency(p.training, GemmPrecision::kBf16));
}

TEST(Mxfp8, KeysAndRanges) {
  Problem p = llama70b_h200();
  EXPECT_FALSE(p.gpu.fp8_non_tn_gemm);
  EXPECT_EQ(p.gpu.mxfp8_gemm_efficiency, 0.951);
  EXPECT_FALSE(apply_key(p, "gpu.mxfp8_gemm_efficiency", "0.9", "test"));
  EXPECT_EQ(p.gpu.mxfp8_gemm_efficiency, 0.9);
  EXPECT_TRUE(apply_key(p, "gpu.mxfp8_gemm_efficiency", "0", "test"));    // open at 0
  EXPECT_TRUE(apply_key(p, "gpu.mxfp8_gemm_efficiency", "1.2", "test"));  // a fraction
  EXPECT_EQ(p.gpu.mxfp8_gemm_efficiency, 0.9);
  EXPECT_FALSE(apply_key(p, "gpu.fp8_non_tn_gemm", "true", "test"));
  EXPECT_TRUE(p.gpu.fp8_non_tn_gemm);
  EXPECT_EQ(key_value(p, "gpu.fp8_non_tn_gemm"), "true");
}

}  // namespace
}  // namespace ppsearch
