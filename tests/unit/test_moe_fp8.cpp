// FP8 in the expert part of a MoE layer (docs/moe.md "FP8 in the experts", docs/precision.md):
// the quantisation passes of the routed-expert GEMMs and the FP8 weight copies, by closed form;
// and the all-to-all overlap capped by the layer's compute (docs/moe.md "Costs of a MoE layer").
#include <gtest/gtest.h>

#include <algorithm>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/precision.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// Qwen3-30B-A3B-shaped (128 experts of width 768, top 8) on an FP8-capable H200.
Problem qwen3_like(Fp8Recipe recipe) { return test::qwen3_30b_fp8_like(recipe, false); }

struct Parts {
  ItemCost moe, attn;
};
Parts parts(const Problem& p, const Candidate& c) {
  const Links l = effective_links(p.cluster);
  const ItemCost dense = chain_costs(p, c, l).layer;
  const ItemCost attn = chain_costs(attention_only_problem(p), c, l).layer;
  return {moe_items(p, c, l, dense, attn).moe_layer, attn};
}

TEST(MoeFp8, CurrentScalingAddsItsAmaxPassOverEveryExpertCast) {
  // Current scaling reads each cast tensor once more (+2 bytes per element) than delayed
  // scaling; the GEMMs are the same FP8 GEMMs. The expert part's extra time is therefore
  // 2 bytes × the elements cast: forward the permuted FC1 input (h) and FC2 input (F_e) of every
  // routed copy and the local experts' weights over the step's micro-batches; backward the
  // output gradients of FC2 (h) and FC1 (2F_e).
  const int ep = 8, mbs = 2, dp = 8;
  Candidate c = make_candidate(qwen3_like(Fp8Recipe::kDelayed), 1, 1, dp, mbs, Schedule::k1F1B,
                               Recompute::kNone, 0, 1);
  c.ep = ep;
  const Parts d = parts(qwen3_like(Fp8Recipe::kDelayed), c);
  const Parts cur = parts(qwen3_like(Fp8Recipe::kCurrent), c);
  const Problem p = qwen3_like(Fp8Recipe::kDelayed);
  const double h = 2048, fe = 768, rows = double(mbs) * 4096 * 8, local = 128.0 / ep;
  const double n_micro = 64.0 / (dp * mbs);
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double fwd_elems = rows * (h + fe) + local * h * 3 * fe / n_micro;
  const double bwd_elems = rows * (h + 2 * fe);
  EXPECT_NEAR((cur.moe.fwd_s - cur.attn.fwd_s) - (d.moe.fwd_s - d.attn.fwd_s), 2.0 * fwd_elems / bw,
              1e-12);
  EXPECT_NEAR((cur.moe.bwd_s - cur.attn.bwd_s) - (d.moe.bwd_s - d.attn.bwd_s), 2.0 * bwd_elems / bw,
              1e-12);
}

TEST(MoeFp8, ExpertWeightsGetTheirFp8CopiesAndSavedInputsShrink) {
  Candidate c = make_candidate(qwen3_like(Fp8Recipe::kDelayed), 1, 1, 8, 1, Schedule::k1F1B,
                               Recompute::kNone, 0, 1);
  c.ep = 8;
  Problem bf = qwen3_like(Fp8Recipe::kDelayed);
  bf.training.precision = "bf16";
  const Parts f8 = parts(qwen3_like(Fp8Recipe::kDelayed), c);
  const Parts b16 = parts(bf, c);
  // Delayed scaling, no FP8 primary weights: +2 bytes (FP8 weight and its transpose) per expert
  // weight, beyond what the attention part adds.
  const double expert_params = 128.0 / 8 * 2048 * 3 * 768;
  EXPECT_DOUBLE_EQ(f8.moe.expert_params, expert_params);
  EXPECT_NEAR(
      (f8.moe.weight_bytes - f8.attn.weight_bytes) - (b16.moe.weight_bytes - b16.attn.weight_bytes),
      2.0 * expert_params, 1.0);
  // The FC1 (h) and FC2 (F_e) inputs of every routed copy are kept in FP8 (1 byte, not 2).
  const double rows = 4096.0 * 8;
  const double ovh = bf.gpu.activation_overhead;
  EXPECT_NEAR((b16.moe.act_bytes - b16.attn.act_bytes) - (f8.moe.act_bytes - f8.attn.act_bytes),
              rows * (2048 + 768) * ovh, 1.0);
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

// training.moe_a2a_overlap hides at most the layer's own compute (docs/moe.md "Costs of a MoE
// layer"): exposed ≥ total − overlap · min(total, compute), and no more than the total; the
// combined-1F1B closed form itself is tests/unit/test_moe_recipe_features.cpp's.
TEST(MoeA2aOverlap, HidesNoMoreThanTheLayersCompute) {
  // EP 8 inside one 8-GPU NVLink domain: the all-to-all is shorter than the compute; EP 32 over
  // four domains on a slow NIC: longer.
  for (int ep : {8, 32}) {
    for (double ov : {0.0, 0.5, 1.0}) {
      Problem p = qwen3_like(Fp8Recipe::kDelayed);
      p.training.precision = "bf16";
      p.cluster.network_bytes_per_s = 5e9;
      p.training.moe_a2a_overlap = ov;
      p.gpus = {32};
      Candidate c = make_candidate(p, 1, 1, 32, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
      c.ep = ep;
      const ItemCost L = parts(p, c).moe;
      const double total = L.ep_total_s, compute = L.compute_s;
      ASSERT_GT(total, 0.0);
      if (ep == 8) {
        EXPECT_LT(total, compute);
      } else {
        EXPECT_GT(total, compute);
      }
      EXPECT_GE(L.ep_comm_s, total - ov * std::min(total, compute) - 1e-12 * total)
          << ep << " " << ov;
      EXPECT_LE(L.ep_comm_s, total * (1 + 1e-12)) << ep << " " << ov;
      if (ov == 0.0) {
        EXPECT_DOUBLE_EQ(L.ep_comm_s, total);
      } else {
        EXPECT_LT(L.ep_comm_s, total) << ep << " " << ov;
      }
    }
  }
}

}  // namespace
}  // namespace ppsearch
namespace ppsearch {
namespace {

// MoE activations per layer and micro-batch by hand (docs/moe.md "Activations"): Qwen3-30B-A3B
// shape, mbs 2, seq 4096, EP8, TP1, bf16. Megatron-Core (>= 0.13) keeps per routed copy the FC1
// input (h), the FC1 output (2F_e, saved by the weighted SwiGLU), the FC1 activation output
// (F_e, FC2's input) and the fp32 routing probability; the expert output is not kept (the
// unpermute gets no probabilities). Router: fp32 logits and probabilities per token.
TEST(MoeMemory, ExpertOutputIsNotKeptForTheUnpermute) {
  Problem p = qwen3_like(Fp8Recipe::kCurrent);
  p.training.precision = "bf16";
  Candidate c = make_candidate(p, 1, 1, 8, 2, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  const Parts x = parts(p, c);
  const double tokens = 2.0 * 4096, rows = tokens * 8;  // 65,536 routed copies
  // 2 · 65536 · 4352 + 4 · 65536 + 2 · 4 · 8192 · 128 = 579,076,096 bytes
  const double moe_bytes = 579076096.0;
  EXPECT_DOUBLE_EQ(2.0 * rows * (2048 + 3 * 768) + 4.0 * rows + 8.0 * tokens * 128, moe_bytes);
  EXPECT_NEAR(x.moe.act_bytes - x.attn.act_bytes, moe_bytes * p.gpu.activation_overhead, 1.0);
}

}  // namespace
}  // namespace ppsearch
