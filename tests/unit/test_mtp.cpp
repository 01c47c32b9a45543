// Multi-token prediction (docs/moe.md "MTP"): hand counts of one module's FLOPs and bytes, zero
// modules leave everything as it was, and the modules' place on the last pipeline stage.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/mtp.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// A small dense Llama-like model: 16 layers.
Problem small_dense() {
  Problem p = test::llama8b_like(16);
  p.model.vocab_size = 128256;
  p.model.seq_length = 4096;
  p.training.global_batch_size = 64;
  p.gpus = {32};
  return p;
}

// The same with 8 experts, top-2, the first 2 layers dense.
Problem small_moe() {
  Problem p = small_dense();
  p.model.moe_experts = 8;
  p.model.moe_top_k = 2;
  p.model.moe_ffn_hidden_size = 7168;
  p.model.moe_first_dense_layers = 2;
  return p;
}

TEST(MtpFlops, DenseModuleByHand) {
  ModelSpec m = small_dense().model;
  m.mtp_layers = 1;
  const double h = 4096, hq = 32 * 128, hkv = 8 * 128, F = 14336, V = 128256, s = 4096;
  const double B = 64;
  for (AttentionFlops conv : {AttentionFlops::kFull, AttentionFlops::kCausal}) {
    const double s_eff = conv == AttentionFlops::kCausal ? s / 2 : s;
    // One layer forward per token: QKV + O projections, core attention, SwiGLU MLP.
    const double layer = 2 * h * (hq + 2 * hkv) + 2 * hq * h + 4 * s_eff * hq + 2 * h * F * 3;
    // Megatron-LM num_floating_point_operations: norms (3h) and eh_proj (2h²), logits h·V.
    const double extra = 2 * (3 * h + 2 * h * h) + 2 * h * V;
    const double want = 3 * B * s * (layer + extra);
    EXPECT_NEAR(mtp_model_flops_per_step(m, 64, conv, false) / want, 1.0, 1e-12);
    EXPECT_NEAR(mtp_model_flops_per_step(m, 64, conv, true) / want, 1.0, 1e-12);
    m.mtp_layers = 3;
    EXPECT_NEAR(mtp_model_flops_per_step(m, 64, conv, false) / (3 * want), 1.0, 1e-12);
    m.mtp_layers = 1;
  }
  // Full recomputation replays the block's forward (full-matrix attention, as for HFU).
  const double fwd = 2 * h * (hq + 2 * hkv) + 2 * hq * h + 4 * s * hq + 2 * h * F * 3;
  EXPECT_NEAR(mtp_recompute_flops_per_step(m, 64, Recompute::kFull,
                                           SelectiveRecompute::kCoreAttention, false) /
                  (B * s * fwd),
              1.0, 1e-12);
}

TEST(MtpFlops, MoeModuleCountsTheLastLayersKind) {
  ModelSpec m = small_moe().model;
  m.mtp_layers = 1;
  const double h = 4096, hq = 32 * 128, hkv = 8 * 128, Fe = 7168, V = 128256, s = 4096;
  const double B = 64;
  // The last layer is a MoE layer: top-2 experts of width Fe (router not counted).
  const double layer = 2 * h * (hq + 2 * hkv) + 2 * hq * h + 4 * s * hq + 2 * h * 3 * 2 * Fe;
  const double want = 3 * B * s * (layer + 2 * (3 * h + 2 * h * h) + 2 * h * V);
  EXPECT_NEAR(mtp_model_flops_per_step(m, 64, AttentionFlops::kFull, true) / want, 1.0, 1e-12);
  // All layers dense (first_dense ≥ layers): the module's block is dense.
  m.moe_first_dense_layers = 16;
  const double dense_layer =
      2 * h * (hq + 2 * hkv) + 2 * hq * h + 4 * s * hq + 2 * h * 3 * m.ffn_hidden_size;
  const double want_dense = 3 * B * s * (dense_layer + 2 * (3 * h + 2 * h * h) + 2 * h * V);
  EXPECT_NEAR(mtp_model_flops_per_step(m, 64, AttentionFlops::kFull, true) / want_dense, 1.0,
              1e-12);
}

TEST(MtpFlops, EvaluatorAddsThemToTheModelFlops) {
  Problem p = small_moe();
  const Candidate c = make_candidate(p, 2, 2, 8, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const Evaluation a = evaluate(p, c);
  p.model.mtp_layers = 1;
  const Evaluation b = evaluate(p, c);
  ASSERT_TRUE(a.feasible && b.feasible);
  const double peak = p.gpu.peak_flop_per_s * c.gpus;
  const double fa = a.mfu * a.iteration_time_s * peak, fb = b.mfu * b.iteration_time_s * peak;
  EXPECT_NEAR((fb - fa) / mtp_model_flops_per_step(p.model, 64, p.training.attention_flops, true),
              1.0, 1e-9);
}

TEST(MtpBytes, OneModuleByHand) {
  Problem p = small_dense();
  p.model.mtp_layers = 1;
  const Links l = effective_links(p.cluster);
  const double h = 4096, V = 128256, t = 2, m = 4096;  // mbs 1, cp 1
  for (int pp : {1, 2}) {
    const Candidate c =
        make_candidate(p, 2, pp, 16 / pp, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
    const ChainCosts cc = chain_costs(p, c, l);
    const ItemCost x = mtp_module_extra(p, c, l, cc);
    // eh_proj 2h·h/t, enorm + hnorm + final norm, and the embedding table on the last stage when
    // it is not the first (PP > 1, untied).
    const double params = 2 * h * h / t + 3 * h + (pp > 1 ? V * h / t : 0.0);
    EXPECT_DOUBLE_EQ(x.params, params) << pp;
    const double dr = 16.0 / pp;  // ZeRO-1: bf16 weights, fp32 gradients, 12 B over DP
    EXPECT_NEAR(x.static_bytes / (params * (2 + 4 + 12 / dr)), 1.0, 1e-12) << pp;
    EXPECT_EQ(x.expert_params, 0.0);
    // Activations: token ids and the head's inputs (as the items), enorm, hnorm and eh_proj
    // inputs (4h, SP-sharded by t), × activation_overhead.
    const double ovh = p.gpu.activation_overhead;
    EXPECT_NEAR(x.act_bytes, cc.embed.act_bytes + cc.head.act_bytes + 2.0 * m * 4 * h / t * ovh,
                1e-3);
    // Its cross entropy's fp32 softmax (Megatron's vocab-parallel cross entropy), 4 B per logit;
    // the fused one keeps the bf16 logits, 2 B.
    EXPECT_NEAR(x.transient_bytes, 4.0 * m * V / t * ovh, 1e-3);
    Problem fused = p;
    fused.training.cross_entropy_fusion = true;
    EXPECT_NEAR(mtp_module_extra(fused, c, l, chain_costs(fused, c, l)).transient_bytes,
                2.0 * m * V / t * ovh, 1e-3);
    // Time: at least the second output layer's GEMMs and the embedding lookup.
    EXPECT_GT(x.time_s(), cc.head.time_s() + cc.embed.time_s());
  }
}

TEST(MtpBytes, AddedToTheHeadPerModule) {
  Problem p = small_moe();
  const Links l = effective_links(p.cluster);
  Candidate c = make_candidate(p, 2, 2, 8, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  c.ep = 4;
  const ChainCosts base = chain_costs(p, c, l);
  const MoeItems mi =
      moe_items(p, c, l, base.layer, chain_costs(attention_only_problem(p), c, l).layer);
  for (int n : {1, 2}) {
    p.model.mtp_layers = n;
    ChainCosts cc = base;
    add_mtp(p, c, l, mi.moe_layer, &cc);
    const ItemCost x = mtp_module_extra(p, c, l, base);
    EXPECT_NEAR(cc.head.time_s(), base.head.time_s() + n * (mi.moe_layer.time_s() + x.time_s()),
                1e-12);
    EXPECT_DOUBLE_EQ(cc.head.expert_params, n * mi.moe_layer.expert_params);
    EXPECT_NEAR(cc.head.static_bytes,
                base.head.static_bytes + n * (mi.moe_layer.static_bytes + x.static_bytes), 1.0);
    EXPECT_NEAR(cc.head.act_bytes, base.head.act_bytes + n * (mi.moe_layer.act_bytes + x.act_bytes),
                1.0);
    EXPECT_NEAR(cc.head.transient_bytes, base.head.transient_bytes + n * x.transient_bytes, 1.0);
    // The embedding group's communicator (PP > 1, untied).
    EXPECT_DOUBLE_EQ(cc.extra_bytes, base.extra_bytes + p.gpu.comm_buffer_bytes);
    // Only the last item changes.
    EXPECT_EQ(cc.embed.time_s(), base.embed.time_s());
    EXPECT_EQ(cc.layer.time_s(), base.layer.time_s());
  }
}

TEST(MtpZero, NoModuleChangesNothing) {
  Problem p = small_moe();
  const Links l = effective_links(p.cluster);
  const Candidate c = make_candidate(p, 2, 2, 8, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const ChainCosts base = chain_costs(p, c, l);
  ChainCosts cc = base;
  add_mtp(p, c, l, base.layer, &cc);
  EXPECT_EQ(cc.head.time_s(), base.head.time_s());
  EXPECT_EQ(cc.head.static_bytes, base.head.static_bytes);
  EXPECT_EQ(cc.head.act_bytes, base.head.act_bytes);
  EXPECT_EQ(cc.head.transient_bytes, base.head.transient_bytes);
  EXPECT_EQ(cc.head.params, base.head.params);
  EXPECT_EQ(cc.extra_bytes, base.extra_bytes);
  EXPECT_EQ(mtp_model_flops_per_step(p.model, 64, AttentionFlops::kFull, true), 0.0);
  EXPECT_EQ(mtp_recompute_flops_per_step(p.model, 64, Recompute::kFull,
                                         SelectiveRecompute::kCoreAttention, true),
            0.0);
  // And the evaluation: one module costs time and memory, none is the model without MTP.
  const Evaluation a = evaluate(p, c);
  p.model.mtp_layers = 1;
  const Evaluation b = evaluate(p, c);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_GT(b.iteration_time_s, a.iteration_time_s);
  EXPECT_GT(b.peak_memory_gb, a.peak_memory_gb);
}

TEST(MtpPlacement, LastStageCarriesTheModules) {
  // With PP = 4 the modules' time sits on the last stage: the partitioner gives it fewer layers
  // and the other stages more, and the stages' times stay balanced around the new bottleneck.
  Problem p = small_dense();
  const Candidate c = make_candidate(p, 2, 4, 4, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const Evaluation a = evaluate(p, c);
  p.model.mtp_layers = 1;
  const Evaluation b = evaluate(p, c);
  ASSERT_TRUE(a.feasible && b.feasible);
  ASSERT_EQ(a.stages.size(), 4u);
  ASSERT_EQ(b.stages.size(), 4u);
  auto items = [](const StageResult& r) { return r.last_layer - r.first_layer + 1; };
  EXPECT_EQ(b.stages.back().last_layer, 17);  // the head item (with the modules) stays last
  EXPECT_LT(items(b.stages.back()), items(a.stages.back()));
  // The last stage's time includes at least one module beyond the head; no other stage took it.
  const Links l = effective_links(p.cluster);
  const ChainCosts cc = chain_costs(p, c, l);
  const double module = cc.layer.time_s() + mtp_module_extra(p, c, l, cc).time_s();
  double before_rest = 0, after_rest = 0;
  for (int s = 0; s < 3; ++s) {
    before_rest += a.stages[s].time_s;
    after_rest += b.stages[s].time_s;
  }
  EXPECT_GT(after_rest, before_rest);  // the layers the last stage gave up
  EXPECT_GT(b.iteration_time_s, a.iteration_time_s);
  // The last stage of b would hold the module on top of its layers: its time exceeds the time of
  // its layers and head alone by the module's time (within the per-stage p2p and kernel terms).
  EXPECT_GT(b.stages.back().time_s, module);
}

}  // namespace
}  // namespace ppsearch
