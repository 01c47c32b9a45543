// FP8 training (docs/precision.md): the plan per recipe, the casts and memory of a layer
// against hand counts, and the refusal of fp8 on a GPU without FP8 tensor cores.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/spec/check.hpp"

namespace ppsearch {
namespace {

using test::gpt175b_a100;
using test::llama70b_h200;
using test::make_candidate;

Problem fp8(Problem p, Fp8Recipe r = Fp8Recipe::kDelayed) {
  p.training.precision = "fp8";
  p.training.fp8_recipe = r;
  return p;
}

TEST(Precision, PlanPerRecipe) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  const PrecisionPlan bf16 = precision_plan(p.training, p.gpu);
  EXPECT_FALSE(bf16.fp8);
  EXPECT_EQ(bf16.cast_bytes_per_element, 0.0);
  EXPECT_EQ(bf16.weight_copy_bytes, 0.0);
  EXPECT_EQ(bf16.saved_input_bytes, 2.0);
  const PrecisionPlan delayed = precision_plan(fp8(p).training, p.gpu);
  EXPECT_EQ(delayed.linear, GemmPrecision::kFp8);
  EXPECT_EQ(delayed.cast_bytes_per_element, 4.0);  // read 2, write FP8 + transposed FP8
  EXPECT_EQ(delayed.weight_copy_bytes, 2.0);
  EXPECT_EQ(delayed.saved_input_bytes, 1.0);
  EXPECT_EQ(precision_plan(fp8(p, Fp8Recipe::kCurrent).training, p.gpu).cast_bytes_per_element,
            6.0);  // + the amax read
  EXPECT_EQ(precision_plan(fp8(p, Fp8Recipe::kMxfp8).training, p.gpu).cast_bytes_per_element,
            4.0 + 2.0 / 32);
  Problem primary = fp8(p);
  primary.training.fp8_param_gather = true;  // FP8 weight replaces the bf16 one
  EXPECT_EQ(precision_plan(primary.training, p.gpu).weight_copy_bytes, 1.0 - 2.0);
  // No FP8 tensor cores: the plan stays bf16.
  p.gpu.peak_fp8_flop_per_s = 0;
  EXPECT_FALSE(precision_plan(fp8(p).training, p.gpu).fp8);
}

// A layer in bf16 and in FP8 with FP8 GEMMs exactly as fast as bf16 ones (same peak and
// efficiency, no k fill, compute-bound shapes): the compute time differs by the casts alone.
TEST(Precision, CastsAreCountedByHand) {
  Problem p = llama70b_h200();
  p.gpu.gemm_k_overhead = 0;
  p.gpu.peak_fp8_flop_per_s = p.gpu.peak_flop_per_s;
  p.gpu.gemm_efficiency_fp8 = p.gpu.gemm_efficiency;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const ChainCosts b = chain_costs(p, c, links);
  const ChainCosts f = chain_costs(fp8(p), c, links);
  const double m = c.mbs * double(p.model.seq_length), t = c.tp;
  const double h = p.model.hidden_size, F = p.model.ffn_hidden_size;
  const double hq = double(p.model.attention_heads) * p.model.head_dim;
  const double hkv = double(p.model.kv_heads) * p.model.head_dim;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double n_micro = double(p.training.global_batch_size) / (c.dp * c.mbs);
  // Forward: X of QKV and FC1 (h/t each with SP), of the out-projection (h_q/t) and FC2 (F/t);
  // the weights once per step; backward: dY of QKV, out-projection, FC1 (gate + up), FC2.
  const double x = m * (2 * h / t + hq / t + F / t);
  const double w = (h * (hq + 2 * hkv) + hq * h + 3 * h * F) / t;
  const double dy = m * ((hq + 2 * hkv) / t + 2 * h / t + 2 * F / t);
  // Read 2 bytes, write the FP8 copy and its transpose: 4 bytes an element; but the four
  // sequence-parallel tensors (QKV's and FC1's inputs, the out-projection's and FC2's output
  // gradients, h/t each) are cast row-wise only (3 bytes) and gathered in FP8, and the backward
  // transposes the four gathered m x h tensors (read 1, write 1) for wgrad.
  const double gathered = m * 4 * h / t;
  const double cast = (4.0 * (x + w / n_micro + dy) - 1.0 * gathered + 2.0 * 4 * m * h) / bw;
  // The GEMMs match only up to the roofline's FP8 bytes, which do not bind here.
  EXPECT_NEAR(f.layer.compute_s - b.layer.compute_s, cast, 1e-6 * cast);
  EXPECT_GT(cast, 0.0);
}

TEST(Precision, Fp8LayerIsFasterOnHopper) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.gemm_efficiency_fp8 = 0.65;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const double bf16 = chain_costs(p, c, links).layer.compute_s;
  const double f8 = chain_costs(fp8(p), c, links).layer.compute_s;
  EXPECT_LT(f8, 0.8 * bf16);
  EXPECT_GT(f8, 0.4 * bf16);  // attention, element-wise ops and casts stay
}

TEST(Precision, MemoryByHand) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const ChainCosts b = chain_costs(p, c, links);
  const ChainCosts f = chain_costs(fp8(p), c, links);
  const double m = c.mbs * double(p.model.seq_length), t = c.tp;
  const double h = p.model.hidden_size, F = p.model.ffn_hidden_size;
  const double hq = double(p.model.attention_heads) * p.model.head_dim;
  // FP8 weight + transpose next to bf16: 2 bytes per linear weight (the norms stay bf16).
  const double linear = b.layer.params - 2 * h;
  EXPECT_DOUBLE_EQ(f.layer.weight_bytes - b.layer.weight_bytes, 2.0 * linear);
  EXPECT_DOUBLE_EQ(f.layer.static_bytes - b.layer.static_bytes, 2.0 * linear);
  // Saved inputs of QKV, FC1 (SP-sharded h each), out-projection (h_q/t), FC2 (F/t): 1 byte
  // instead of 2.
  const double saved = m * (2 * h / t + (hq + F) / t);
  EXPECT_NEAR(b.layer.act_bytes - f.layer.act_bytes, saved * p.gpu.activation_overhead,
              1e-9 * saved);
  // Output layer and embedding are untouched.
  EXPECT_EQ(f.head.act_bytes, b.head.act_bytes);
  EXPECT_EQ(f.embed.static_bytes, b.embed.static_bytes);
}

// Sequence-parallel TP in FP8: the all-gathers move the quantised data (1 byte, + 1/32 for MXFP8's
// scales; MXFP8's output gradient with both copies), the reduce-scatters bf16. A layer's TP
// traffic (hidden + exposed) by hand: forward 2 AG + 2 RS, backward 2 AG of the output gradient,
// 2 RS of the input gradients and the 2 re-gathers of the SP input for wgrad (Megatron with TE,
// docs/precision.md "FP8 all-gathers").
TEST(Precision, SequenceParallelGathersMoveFp8Bytes) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.mxfp8 = true;  // to cost the MXFP8 recipe on the same problem
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const GroupShape g = group_shape(c.tp, 1, p.cluster.nvlink_domain_size);
  const double S = 2.0 * c.mbs * double(p.model.seq_length) * p.model.hidden_size;
  const double rs = collective_time(Collective::kReduceScatter, S, g, links);
  auto ag = [&](double bytes_per_element) {
    return collective_time(Collective::kAllGather, S * bytes_per_element / 2.0, g, links);
  };
  auto by_hand = [&](double gather_bytes, double grad_gather_bytes) {
    return 4.0 * ag(gather_bytes) + 2.0 * ag(grad_gather_bytes) + 4.0 * rs;
  };
  const double bf16 = chain_costs(p, c, links).layer.tp_total_s;
  EXPECT_NEAR(bf16, by_hand(2.0, 2.0), 1e-12 * bf16);
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kCurrent}) {
    const double f8 = chain_costs(fp8(p, r), c, links).layer.tp_total_s;
    EXPECT_NEAR(f8, by_hand(1.0, 1.0), 1e-12 * f8);
    EXPECT_LT(f8, bf16);
  }
  const double mx = chain_costs(fp8(p, Fp8Recipe::kMxfp8), c, links).layer.tp_total_s;
  EXPECT_NEAR(mx, by_hand(1.0 + 1.0 / 32, 2.0 + 2.0 / 32), 1e-12 * mx);
  EXPECT_EQ(precision_plan(p.training, p.gpu).gather_bytes_per_element, 2.0);
  // Without SP the layer all-reduces its bf16 GEMM outputs: FP8 changes nothing.
  const Candidate no_sp = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_EQ(chain_costs(fp8(p), no_sp, links).layer.tp_total_s,
            chain_costs(p, no_sp, links).layer.tp_total_s);
}

// The attention-only layer of a MoE model (F = 0, cost/moe.cpp) without shared experts gathers
// only its attention side's two tensors (QKV's input, the out-projection's output gradient): the
// row-wise-only casts and the transposes of the MLP side's pair are not charged there.
TEST(Precision, AttentionOnlyLayerWithoutSharedExpertsGathersOnePair) {
  Problem p = fp8(llama70b_h200());
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.model.ffn_hidden_size = 0;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const double alone = chain_costs(p, c, links).layer.compute_s;
  p.model.moe_shared_experts = 1;
  const double shared = chain_costs(p, c, links).layer.compute_s;
  const double m = c.mbs * double(p.model.seq_length), h = p.model.hidden_size, t = c.tp;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  // One byte fewer in each of the pair's two local casts, 2 bytes per element of its two
  // gathered m x h transposes.
  const double pair = (-2.0 * m * h / t + 2.0 * 2 * m * h) / bw;
  EXPECT_NEAR(shared - alone, pair, 1e-6 * pair);
}

TEST(Precision, Fp8OnA100IsAConfigurationIssue) {
  Problem p = fp8(gpt175b_a100());
  p.gpu.peak_fp8_flop_per_s = 0;
  const std::vector<ConfigIssue> issues = check(p);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "training.precision");
  EXPECT_EQ(issues[0].value, "fp8");
  EXPECT_EQ(issues[0].allowed,
            "bf16 (gpu 'a100-80gb' has no FP8 tensor cores: gpu.fp8_peak_tflops = 0)")
      << issues[0].allowed;
  // MXFP8 on Hopper is refused the same way.
  Problem h = fp8(llama70b_h200(), Fp8Recipe::kMxfp8);
  h.gpu.peak_fp8_flop_per_s = 1979e12;
  const std::vector<ConfigIssue> mx = check(h);
  ASSERT_EQ(mx.size(), 1u);
  EXPECT_EQ(mx[0].key, "training.fp8_recipe");
  h.gpu.mxfp8 = true;
  EXPECT_TRUE(check(h).empty());
}

TEST(Precision, MfuBasisNamesTheBf16Peak) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  EXPECT_EQ(mfu_basis(p),
            "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = 989 TFLOP/s, the dense BF16 "
            "peak); precision bf16");
  EXPECT_EQ(mfu_basis(fp8(p, Fp8Recipe::kCurrent)),
            "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = 989 TFLOP/s, the dense BF16 "
            "peak); precision fp8 (recipe current, linear GEMMs against gpu.fp8_peak_tflops = "
            "1979 TFLOP/s)");
}

}  // namespace
}  // namespace ppsearch
