// torchtitan's torch.compile profiles and the mechanisms they set (docs/step-time.md
// "torch.compile (torchtitan)"): the profiles' keys, and each mechanism's cost difference against a
// hand count from the same cost functions (GEMM time by shape, collective time).
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

Problem with_stack(const std::string& name) {
  Problem p = llama70b_h200();
  p.training.stack = name;
  EXPECT_TRUE(apply_stack(&p, {})) << name;
  return p;
}

TEST(CompileStack, ProfilesSetWhatCompileChanges) {
  for (const char* name : {"torchtitan-compile", "torchtitan-asynctp-compile"}) {
    const Problem p = with_stack(name);
    EXPECT_TRUE(p.training.fused_elementwise) << name;
    EXPECT_TRUE(p.training.recompute_skip_fc2) << name;
    EXPECT_FALSE(p.training.tp_bwd_overlap) << name;
    EXPECT_TRUE(p.training.split_linears) << name;
    EXPECT_DOUBLE_EQ(p.training.attention_efficiency_scale, 0.7) << name;
    EXPECT_TRUE(p.training.grad_reduce_in_fp32) << name;
    EXPECT_TRUE(p.training.fsdp_fp32_params) << name;
    EXPECT_FALSE(p.training.cross_entropy_fusion) << name;
  }
  EXPECT_FALSE(with_stack("torchtitan-compile").training.tp_comm_overlap);
  EXPECT_TRUE(with_stack("torchtitan-asynctp-compile").training.tp_comm_overlap);
  // The eager torchtitan profiles share the DTensor TP and the separate linears, not the fusion;
  // their non-reentrant checkpoint stops the replay before FC2 as the compiled graph prunes it
  // (docs/step-time.md "Early-stopping recomputation").
  for (const char* name : {"torchtitan-2024", "torchtitan-asynctp", "torchtitan"}) {
    const Problem p = with_stack(name);
    EXPECT_FALSE(p.training.fused_elementwise) << name;
    EXPECT_TRUE(p.training.recompute_skip_fc2) << name;
    EXPECT_FALSE(p.training.tp_bwd_overlap) << name;
    EXPECT_TRUE(p.training.split_linears) << name;
  }
  // Megatron-based profiles keep Megatron's backward TP overlap and fused QKV / FC1 GEMMs.
  for (const char* name : {"nemo-25.x", "nemo-24.x", "megatron-2021", "megatron-core", "tuned"}) {
    const Problem p = with_stack(name);
    EXPECT_FALSE(p.training.recompute_skip_fc2) << name;
    EXPECT_TRUE(p.training.tp_bwd_overlap) << name;
    EXPECT_FALSE(p.training.split_linears) << name;
  }
  // An explicit key wins over the profile.
  Problem q = llama70b_h200();
  q.training.stack = "torchtitan-compile";
  q.training.recompute_skip_fc2 = false;
  q.training.split_linears = false;
  ASSERT_TRUE(apply_stack(&q, {"training.recompute_skip_fc2", "training.split_linears"}));
  EXPECT_FALSE(q.training.recompute_skip_fc2);
  EXPECT_FALSE(q.training.split_linears);
  EXPECT_TRUE(q.training.fused_elementwise);
}

// The layer of llama70b_h200 at TP 4 with SP, micro-batch 1, with the cluster's TP overlap off.
struct Layer {
  Problem p;
  Candidate c;
  double m, h, F, hq, hkv, t;
  GroupShape g;
  Links links;
};

Layer layer_setup(Recompute r) {
  Layer L{llama70b_h200(), {}, 0, 0, 0, 0, 0, 4, {}, {}};
  L.p.cluster.tp_comm_overlap = 0;
  L.p.training.tp_comm_overlap = false;
  L.c = make_candidate(L.p, 4, 1, 2, 1, Schedule::k1F1B, r, 1, 1);
  L.m = double(L.p.model.seq_length);
  L.h = L.p.model.hidden_size;
  L.F = L.p.model.ffn_hidden_size;
  L.hq = double(L.p.model.attention_heads) * L.p.model.head_dim;
  L.hkv = double(L.p.model.kv_heads) * L.p.model.head_dim;
  L.links = effective_links(L.p.cluster);
  L.g = group_shape(4, 1, L.p.cluster.nvlink_domain_size);
  return L;
}

ItemCost layer_of(const Layer& L, const Problem& p, const Candidate& c) {
  return chain_costs(p, c, L.links).layer;
}

TEST(CompileStack, FullRecomputeSkipsFc2AndItsReduceScatter) {
  Layer L = layer_setup(Recompute::kFull);
  Problem eager = L.p, compiled = L.p;
  eager.training.recompute_skip_fc2 = false;
  compiled.training.recompute_skip_fc2 = true;
  const ItemCost a = layer_of(L, eager, L.c), b = layer_of(L, compiled, L.c);
  // FC2 per TP rank: [m × F/t]·[F/t × h]; with SP the collective after it is a reduce-scatter
  // of the full m × h bf16 activation.
  const double fc2 = gemm_time(L.m, L.h, L.F / L.t, L.p.gpu);
  const double rs = collective_time(Collective::kReduceScatter, 2.0 * L.m * L.h, L.g, L.links);
  ASSERT_GT(fc2, 0);
  ASSERT_GT(rs, 0);
  EXPECT_NEAR(a.compute_s - b.compute_s, fc2, 1e-12);
  EXPECT_NEAR(a.bwd_s - b.bwd_s, fc2 + rs, 1e-12);
  EXPECT_NEAR(a.tp_comm_s - b.tp_comm_s, rs, 1e-12);
  EXPECT_NEAR(a.tp_total_s - b.tp_total_s, rs, 1e-12);
  EXPECT_DOUBLE_EQ(a.fwd_s, b.fwd_s);  // the forward itself is unchanged

  // Without full recomputation there is nothing to prune.
  Candidate none = L.c;
  none.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(layer_of(L, eager, none).bwd_s, layer_of(L, compiled, none).bwd_s);
}

// HFU counts the FLOPs that run: the pruned replay skips FC2, so its recompute FLOPs are those of
// full recomputation less one FC2 GEMM per layer and token (closed form 2·F·h).
TEST(CompileStack, HfuDoesNotCountTheSkippedFc2) {
  Layer L = layer_setup(Recompute::kFull);
  Problem eager = L.p, compiled = L.p;
  eager.training.recompute_skip_fc2 = false;
  compiled.training.recompute_skip_fc2 = true;
  // TP 4 × PP 4 (the layer setup's PP 1 does not fit 70B in memory).
  const Candidate c = make_candidate(L.p, 4, 4, 2, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  const Evaluation a = evaluate(eager, c), b = evaluate(compiled, c);
  ASSERT_TRUE(a.feasible && b.feasible);
  const double denom = double(c.gpus) * L.p.gpu.peak_flop_per_s;
  const double hw_a = a.hfu * a.iteration_time_s * denom, hw_b = b.hfu * b.iteration_time_s * denom;
  const double model_a = a.mfu * a.iteration_time_s * denom;
  const double skipped =
      double(L.c.global_batch_size) * L.p.model.seq_length * L.p.model.layers * 2.0 * L.F * L.h;
  EXPECT_NEAR(hw_a - hw_b, skipped, 1e-9 * hw_a);
  EXPECT_NEAR(skipped_fc2_flops_per_step(L.p.model, c.global_batch_size), skipped, 1e-9 * skipped);
  EXPECT_NEAR(b.mfu * b.iteration_time_s * denom, model_a, 1e-9 * model_a);  // MFU unchanged
  EXPECT_GT(hw_b, model_a);  // the rest of the replay still counts
}

TEST(CompileStack, DtensorBackwardCollectivesAreExposed) {
  Layer L = layer_setup(Recompute::kNone);
  const double S = 2.0 * L.m * L.h;
  const double ag = collective_time(Collective::kAllGather, S, L.g, L.links);
  const double rs = collective_time(Collective::kReduceScatter, S, L.g, L.links);
  Problem dtensor = L.p, megatron = L.p;
  dtensor.training.tp_bwd_overlap = false;
  megatron.training.tp_bwd_overlap = true;
  const ItemCost d = layer_of(L, dtensor, L.c), m = layer_of(L, megatron, L.c);
  // Forward AG before QKV and FC1, RS after the out-projection and FC2; backward the mirror
  // images (RS of the input gradients, AG of the output gradients), nothing hidden.
  EXPECT_NEAR(d.tp_comm_s, 4 * ag + 4 * rs, 1e-12);
  EXPECT_NEAR(d.tp_total_s, 4 * ag + 4 * rs, 1e-12);
  // Megatron hides the input-gradient RS behind wgrad (and re-gathers the SP input for wgrad).
  EXPECT_LT(m.tp_comm_s, d.tp_comm_s);
  EXPECT_NEAR(m.tp_total_s, 6 * ag + 4 * rs, 1e-12);
}

TEST(CompileStack, PerOpRecomputeReplaysTheSequenceParallelGathers) {
  Layer L = layer_setup(Recompute::kSelective);
  const double ag = collective_time(Collective::kAllGather, 2.0 * L.m * L.h, L.g, L.links);
  const double rs = collective_time(Collective::kReduceScatter, 2.0 * L.m * L.h, L.g, L.links);
  Problem p = L.p;
  p.training.tp_bwd_overlap = false;
  p.training.selective_recompute = SelectiveRecompute::kPerOp;
  EXPECT_NEAR(layer_of(L, p, L.c).tp_comm_s, 4 * ag + 4 * rs + 2 * ag, 1e-12);
  // Megatron's selective recompute (core attention) replays no collective.
  p.training.selective_recompute = SelectiveRecompute::kCoreAttention;
  EXPECT_NEAR(layer_of(L, p, L.c).tp_comm_s, 4 * ag + 4 * rs, 1e-12);
  // Without SP there is no all-gather to replay.
  Candidate nosp = L.c;
  nosp.sp = false;
  p.training.selective_recompute = SelectiveRecompute::kPerOp;
  const double ar = collective_time(Collective::kAllReduce, 2.0 * L.m * L.h, L.g, L.links);
  EXPECT_NEAR(layer_of(L, p, nosp).tp_comm_s, 4 * ar, 1e-12);
}

TEST(CompileStack, SplitLinearsCostOneGemmPerWeight) {
  Layer L = layer_setup(Recompute::kNone);
  Problem fused = L.p, split = L.p;
  fused.training.split_linears = false;
  split.training.split_linears = true;
  const GpuSpec& g = L.p.gpu;
  const double t = L.t, m = L.m, h = L.h;
  const double qkv = (L.hq + 2 * L.hkv) / t, fc1 = 2 * L.F / t;  // SwiGLU: gate and up
  const double nq = L.hq / t, nkv = L.hkv / t, nf = L.F / t;
  auto wgrad = [&](double n) { return gemm_time(h, n, m, g); };
  const double want = wgrad(nq) + 2 * wgrad(nkv) + 2 * wgrad(nf) - wgrad(qkv) - wgrad(fc1);
  ASSERT_GT(want, 0);  // the narrow K and V GEMMs are less efficient
  const ItemCost a = layer_of(L, fused, L.c), b = layer_of(L, split, L.c);
  EXPECT_NEAR(b.wgt_s - a.wgt_s, want, 1e-12);
  auto fwd = [&](double n) { return gemm_time(m, n, h, g); };
  EXPECT_NEAR(b.fwd_s - a.fwd_s, fwd(nq) + 2 * fwd(nkv) + 2 * fwd(nf) - fwd(qkv) - fwd(fc1), 1e-12);
}

}  // namespace
}  // namespace ppsearch
