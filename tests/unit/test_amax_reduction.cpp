// FP8 delayed scaling's amax all-reduces (docs/precision.md "Amax reductions"): one after each
// chunk's forward and one after its backward, over the stage's TP×CP×DP ranks (TP×CP with
// training.tp_only_amax_red), latency-bound and so costed with NCCL's LL protocol. Checked
// against NCCL's closed forms, per recipe, per placement, and in the evaluated passes.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/fabric.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

Problem fp8_problem(Fp8Recipe r = Fp8Recipe::kDelayed) {
  Problem p = llama70b_h200();  // 16 GPUs a node, NVLink domains of 8, α 2 µs / 8 µs
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.mxfp8 = true;
  p.training.precision = "fp8";
  p.training.fp8_recipe = r;
  return p;
}

// NCCL's LL tree all-reduce (tuning.cc @5067397c): base 6.8 µs + 2·((n/N − 1)·0.6 µs·s_nvl +
// log2(N)·5.0 µs·s_net), the hops scaled by the cluster's α against NCCL's Simple 3.4 / 14 µs;
// bus bandwidth 0.92/3.8 of the ring's, at most 20.4 GB/s beyond two nodes; size correction 1
// below 1 KB.
double ll_tree(double bytes, int n, int domains, const Problem& p) {
  const Links l = effective_links(p.cluster);
  const double s_nvl = p.cluster.nvlink_latency_s / 3.4e-6,
               s_net = p.cluster.network_latency_s / 14e-6;
  const double lat = 6.8e-6 + 2.0 * ((double(n) / domains - 1) * 0.6e-6 * s_nvl +
                                     std::log2(double(domains)) * 5.0e-6 * s_net);
  const double bus = std::min(l.nvlink_bytes_per_s, (double(n) / domains) * l.network_bytes_per_s);
  const double bw = std::min(0.92 * bus / 3.8, domains > 2 ? 20.4e9 : 39.0e9);
  return lat + 2.0 * bytes / bw;
}

TEST(AmaxReduction, DelayedScalingReducesOverTheStageWithNcclsLowLatencyTree) {
  const Problem p = fp8_problem();
  const Links l = effective_links(p.cluster);
  // TP 2, PP 4, DP 16: the stage's 32 ranks are consecutive, 4 NVLink domains of 8.
  const Candidate c =
      make_candidate(p, 2, 4, 16, 1, Schedule::kInterleaved1F1B, Recompute::kSelective, 1, 1, 5);
  const double layers = 80.0 / 20;  // a chunk
  const AmaxReduction a = amax_reduction_time(p, c, l, layers);
  // 4 bytes per FP8 tensor: 3 per GEMM forward, 2 backward, 4 GEMMs a layer.
  EXPECT_NEAR(a.fwd_s, ll_tree(4.0 * 12 * layers, 32, 4, p), 1e-15);
  EXPECT_NEAR(a.bwd_s, ll_tree(4.0 * 8 * layers, 32, 4, p), 1e-15);
  EXPECT_GT(a.fwd_s, a.bwd_s);
  // About 20 µs each: latency, not bandwidth.
  EXPECT_GT(a.fwd_s, 15e-6);
  EXPECT_LT(a.fwd_s, 30e-6);

  // tp_only_amax_red: the two TP ranks only, inside a domain: NCCL's LL ring, base 6.6 µs and
  // 2(n − 1) hops of 0.6 µs·s_nvl, half the NVLink bus bandwidth.
  Problem t = p;
  t.training.tp_only_amax_red = true;
  const AmaxReduction b = amax_reduction_time(t, c, l, layers);
  const double s_nvl = p.cluster.nvlink_latency_s / 3.4e-6;
  const double bytes = 4.0 * 12 * layers;
  EXPECT_NEAR(b.fwd_s, 6.6e-6 + 2.0 * 0.6e-6 * s_nvl + bytes * 1.0 / (0.5 * l.nvlink_bytes_per_s),
              1e-15);
  EXPECT_LT(b.fwd_s, a.fwd_s);
}

TEST(AmaxReduction, OnlyDelayedScalingAndOnlyWithPeers) {
  const Links l = effective_links(fp8_problem().cluster);
  for (const Fp8Recipe r : {Fp8Recipe::kCurrent, Fp8Recipe::kMxfp8}) {
    const Problem p = fp8_problem(r);
    const Candidate c = make_candidate(p, 2, 4, 16, 1, Schedule::k1F1B);
    const AmaxReduction a = amax_reduction_time(p, c, l, 20);
    EXPECT_EQ(a.fwd_s, 0.0);
    EXPECT_EQ(a.bwd_s, 0.0);
  }
  Problem bf16 = fp8_problem();
  bf16.training.precision = "bf16";
  EXPECT_EQ(
      amax_reduction_time(bf16, make_candidate(bf16, 2, 4, 16, 1, Schedule::k1F1B), l, 20).fwd_s,
      0.0);
  // A stage of one rank has nobody to reduce with.
  const Problem p = fp8_problem();
  Candidate one = make_candidate(p, 1, 4, 1, 1, Schedule::k1F1B);
  EXPECT_EQ(amax_reduction_time(p, one, l, 20).fwd_s, 0.0);
  // tp_only_amax_red with TP = CP = 1 reduces nothing either, whatever the DP.
  Problem t = p;
  t.training.tp_only_amax_red = true;
  EXPECT_EQ(amax_reduction_time(t, make_candidate(t, 1, 4, 32, 1, Schedule::k1F1B), l, 20).fwd_s,
            0.0);
}

TEST(AmaxReduction, GroupFollowsThePlacement) {
  const Problem p = fp8_problem();
  const Fabric f = fabric_of(p.cluster);
  Candidate c = make_candidate(p, 2, 4, 16, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1, 1, 2);
  // tp-cp-dp-pp: TP, CP and DP innermost, 64 consecutive ranks, 8 in each NVLink domain.
  GroupShape g = group_shape(tp_cp_dp_layout(c), f);
  EXPECT_EQ(g.size, 64);
  EXPECT_EQ(g.per_domain, 8);
  // tp-cp-pp-dp: DP outside PP, stride tp·cp·pp = 16: each domain holds one TP×CP block of 4.
  c.placement = Placement::kTpCpPpDp;
  g = group_shape(tp_cp_dp_layout(c), f);
  EXPECT_EQ(g.size, 64);
  EXPECT_EQ(g.per_domain, 4);
  EXPECT_EQ(g.domains, 16);
}

TEST(AmaxReduction, ChargedToEveryChunkPassInTheEvaluation) {
  // PP 1, DP 64: one stage; its forward and backward per micro-batch carry the two all-reduces
  // over the 128 ranks, exactly the difference to the same run reducing over TP only.
  Problem p = fp8_problem();
  p.model.layers = 8;  // fits at PP 1
  p.training.global_batch_size = 128;
  p.cluster.step_jitter = 0;
  const Candidate c = make_candidate(p, 2, 1, 64, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const Links l = effective_links(p.cluster);
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator global(p, o);
  const Evaluation eg = global.evaluate(c);
  ASSERT_TRUE(eg.feasible);
  const EvalBreakdown bg = global.breakdown();
  Problem t = p;
  t.training.tp_only_amax_red = true;
  Evaluator tp_only(t, o);
  const Evaluation et = tp_only.evaluate(c);
  ASSERT_TRUE(et.feasible);
  const EvalBreakdown& bt = tp_only.breakdown();
  const AmaxReduction ag = amax_reduction_time(p, c, l, 8);
  const AmaxReduction at = amax_reduction_time(t, c, l, 8);
  ASSERT_GT(ag.fwd_s, at.fwd_s);
  EXPECT_NEAR(bg.schedule.fwd_s[0] - bt.schedule.fwd_s[0], ag.fwd_s - at.fwd_s, 1e-12);
  EXPECT_NEAR(bg.schedule.bwd_s[0] - bt.schedule.bwd_s[0], ag.bwd_s - at.bwd_s, 1e-12);
  EXPECT_NEAR(bg.amax_s[0], ag.fwd_s + ag.bwd_s, 1e-15);
  EXPECT_GT(eg.iteration_time_s, et.iteration_time_s);

  // Interleaved, PP 2 × 2 chunks of 2 layers (Megatron's even split, pinned): every chunk pays,
  // so each rank's breakdown holds two forward and two backward reductions per micro-batch.
  Problem q = p;
  q.search.pp_layout = "Et*2|t*2|t*2|t*2L";
  const Candidate v =
      make_candidate(q, 2, 2, 32, 1, Schedule::kInterleaved1F1B, Recompute::kSelective, 1, 1, 2);
  Evaluator ev(q, o);
  ASSERT_TRUE(ev.evaluate(v).feasible);
  const AmaxReduction av = amax_reduction_time(q, v, l, 2);
  for (int d = 0; d < 2; ++d)
    EXPECT_NEAR(ev.breakdown().amax_s[d], 2 * (av.fwd_s + av.bwd_s), 1e-15);
  // A chunk without transformer layers (the output layer alone, as the partitioner may leave
  // it) has no FP8 module and reduces nothing.
  q.search.pp_layout = "Et*3|t*3|t*2|L";
  Evaluator eh(q, o);
  ASSERT_TRUE(eh.evaluate(v).feasible);
  EXPECT_NEAR(eh.breakdown().amax_s[0], 2 * (av.fwd_s + av.bwd_s), 1e-15);
  EXPECT_NEAR(eh.breakdown().amax_s[1], av.fwd_s + av.bwd_s, 1e-15);
}

}  // namespace
}  // namespace ppsearch
