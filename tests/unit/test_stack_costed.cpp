// The evaluator's stack-costed rates (cost/items.hpp stack_costed; docs/step-time.md "Power-capped
// GPUs", "Attention generation and element-wise fusion"): every layer kind sees the same GPU
// rates. The MoE layers' expert GEMMs, MLA's projections and the windowed layers' attention cut
// slow under a power limit (gpu.clock_scale) exactly as the same factor on the efficiencies
// would, as the dense layers do (test_power_cap.cpp); the stack's attention scale reaches the
// windowed layers once; and an eager stack's halved element-wise bandwidth leaves the library
// GEMMs' roofline at the fused figure.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::gpt_oss_moe_like;
using test::make_candidate;
using test::qwen3_30b_fp8_like;

// GPT-OSS's experts with sliding-window attention on every other layer.
Problem moe_window() {
  Problem p = gpt_oss_moe_like();
  p.model.attention_window = 128;
  p.model.window_attn_skip_freq = 2;
  return p;
}

// Qwen3-30B-like experts in FP8 with MLA attention (DeepSeek-V3's ranks,
// configs/models/deepseek-v3.ini).
Problem moe_mla_fp8() {
  Problem p = qwen3_30b_fp8_like(Fp8Recipe::kDelayed, false);
  p.model.mla_q_lora_rank = 1536;
  p.model.mla_kv_lora_rank = 512;
  p.model.mla_qk_rope_head_dim = 64;
  p.model.mla_qk_nope_head_dim = 128;
  p.model.mla_v_head_dim = 128;
  p.model.head_dim = 192;
  return p;
}

// 64 GPUs: PP 4 × DP 16, experts over EP 8, full recomputation (GPT-OSS-120B's 117 B
// parameters fit).
Candidate moe_candidate(const Problem& p) {
  Candidate c = make_candidate(p, 1, 4, 16, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  c.ep = 8;
  return c;
}

double moe_step(const Problem& p) {
  const Evaluation e = evaluate(p, moe_candidate(p));
  EXPECT_TRUE(e.feasible) << to_string(e.reason);
  return e.iteration_time_s;
}

TEST(StackCosted, MoeMlaAndWindowedLayersSlowByTheClockFactor) {
  for (const Problem& base : {moe_window(), moe_mla_fp8()}) {
    Problem capped = base;
    capped.gpu.clock_scale = 0.75;
    Problem by_hand = base;
    by_hand.gpu.gemm_efficiency *= 0.75;
    by_hand.gpu.gemm_efficiency_fp8 *= 0.75;
    by_hand.gpu.attention_efficiency *= 0.75;
    const double t0 = moe_step(base), t1 = moe_step(capped), t2 = moe_step(by_hand);
    EXPECT_GT(t1, t0 * 1.05);
    EXPECT_NEAR(t1, t2, 1e-12 * t2);
  }
}

TEST(StackCosted, TheStacksAttentionScaleReachesTheWindowedLayersOnce) {
  const Problem base = moe_window();
  Problem scaled = base;
  scaled.training.attention_efficiency_scale = 0.7;
  Problem by_hand = base;
  by_hand.gpu.attention_efficiency *= 0.7;
  const double t0 = moe_step(base), t1 = moe_step(scaled), t2 = moe_step(by_hand);
  EXPECT_GT(t1, t0);
  EXPECT_NEAR(t1, t2, 1e-12 * t2);
}

TEST(StackCosted, EagerElementwiseKernelsSlowTheExpertsToo) {
  // With training.fused_elementwise = false the element-wise kernels run at
  // kEagerMemoryEfficiency of the fused bandwidth; the experts' activation and the tokens'
  // permutation are element-wise kernels of the MoE layer and slow with it.
  const Problem base = moe_window();
  Problem eager = base;
  eager.training.fused_elementwise = false;
  const Links l = effective_links(base.cluster);
  const Candidate c = moe_candidate(base);
  // The MoE layer's time less its attention-only part: the router, dispatch and experts.
  auto experts = [&](const Problem& p) {
    const Problem e = stack_costed(p);
    const ItemCost attention = chain_costs(attention_only_problem(e), c, l).layer;
    const MoeItems mi = moe_items(e, c, l, chain_costs(e, c, l).layer, attention);
    return mi.moe_layer.compute_s - attention.compute_s;
  };
  EXPECT_GT(experts(eager), experts(base));
  EXPECT_DOUBLE_EQ(stack_costed(eager).gpu.memory_efficiency,
                   base.gpu.memory_efficiency * kEagerMemoryEfficiency);
  EXPECT_GT(moe_step(eager), moe_step(base));
}

TEST(StackCosted, GemmRooflineKeepsTheFusedBandwidthUnderAnEagerStack) {
  const Problem base = moe_window();
  Problem eager = base;
  eager.training.fused_elementwise = false;
  const GpuSpec fused = stack_costed(base).gpu, unfused = stack_costed(eager).gpu;
  EXPECT_DOUBLE_EQ(unfused.gemm_memory_bandwidth(), fused.gemm_memory_bandwidth());
  EXPECT_DOUBLE_EQ(fused.gemm_memory_bandwidth(),
                   base.gpu.hbm_bytes_per_s * base.gpu.memory_efficiency);
  // A memory-bound GEMM (a few rows against a wide weight) costs the same under both, and
  // would take longer at the eager element-wise bandwidth.
  const GemmTiming g = gemm_timing(16, 8192, 8192, unfused, GemmPrecision::kBf16);
  ASSERT_GT(g.memory_s, g.compute_s);
  EXPECT_DOUBLE_EQ(g.time_s, gemm_time(16, 8192, 8192, fused, GemmPrecision::kBf16));
  GpuSpec halved = fused;
  halved.memory_efficiency *= kEagerMemoryEfficiency;
  EXPECT_GT(gemm_time(16, 8192, 8192, halved, GemmPrecision::kBf16), g.time_s);
}

}  // namespace
}  // namespace ppsearch
