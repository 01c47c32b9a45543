// Step-time mechanisms (docs/step-time.md): the overlap charge, software-stack profiles, the
// per-collective overlap of DP / ZeRO / TP traffic, the fixed per-step costs and the straggler
// term, each against a closed form counted by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// ---- overlap charge ------------------------------------------------------------------------

TEST(OverlapCharge, HiddenCommunicationCostsOnlyTheContention) {
  // comm ≤ compute·(1 − ρ): the collective hides completely; compute is late by ρ·comm.
  EXPECT_DOUBLE_EQ(overlap_charge(1.0, 4.0, 0.25), 0.25);
  EXPECT_DOUBLE_EQ(overlap_charge(2.0, 4.0, 0.1), 0.2);
  // Without contention a hidden collective costs nothing.
  EXPECT_DOUBLE_EQ(overlap_charge(1.0, 4.0, 0.0), 0.0);
}

TEST(OverlapCharge, LongerCommunicationIsExposedByTheDifference) {
  // comm ≥ compute / (1 − ρ): the step grows by comm − compute.
  EXPECT_DOUBLE_EQ(overlap_charge(5.0, 2.0, 0.25), 3.0);
  EXPECT_DOUBLE_EQ(overlap_charge(5.0, 2.0, 0.0), 3.0);
  // No compute to hide behind: all of it.
  EXPECT_DOUBLE_EQ(overlap_charge(5.0, 0.0, 0.3), 5.0);
  EXPECT_DOUBLE_EQ(overlap_charge(0.0, 3.0, 0.3), 0.0);
}

TEST(OverlapCharge, BranchesMeetWhereTheSlowedComputeEndsWithTheCollective) {
  // At comm = compute / (1 − ρ) both forms agree: comm − compute = ρ·comm.
  for (double rho : {0.05, 0.25, 0.5}) {
    const double compute = 3.0, comm = compute / (1.0 - rho);
    EXPECT_NEAR(overlap_charge(comm, compute, rho), rho * comm, 1e-12);
    EXPECT_NEAR(overlap_charge(comm, compute, rho), comm - compute, 1e-12);
    // Monotone in the communication time.
    EXPECT_LT(overlap_charge(comm * 0.9, compute, rho), overlap_charge(comm * 1.1, compute, rho));
  }
}

// ---- stack profiles -----------------------------------------------------------------------

TEST(Stacks, NamesAndAliasesResolve) {
  for (const std::string& n : stack_names()) ASSERT_NE(find_stack(n), nullptr) << n;
  EXPECT_EQ(std::string(find_stack("megatron")->name), "megatron-2021");
  EXPECT_EQ(std::string(find_stack("nemo")->name), "nemo-24.x");
  EXPECT_EQ(std::string(find_stack("torchtitan")->name), "torchtitan-2024");
  EXPECT_EQ(find_stack("deepspeed"), nullptr);
  EXPECT_EQ(std::string(kDefaultStack), "nemo-25.x");
  EXPECT_NE(find_stack(kDefaultStack), nullptr);
}

TEST(Stacks, ProfileSetsOnlyTheKeysNotGiven) {
  Problem p = llama70b_h200();
  p.training.stack = "torchtitan-2024";
  p.training.grad_reduce_in_fp32 = false;  // as if a file said so
  ASSERT_TRUE(apply_stack(&p, {"training.grad_reduce_in_fp32"}));
  EXPECT_FALSE(p.training.grad_reduce_in_fp32);  // explicit key wins
  EXPECT_FALSE(p.training.tp_comm_overlap);      // the rest from the profile
  EXPECT_FALSE(p.training.p2p_overlap);
  EXPECT_FALSE(p.training.fused_elementwise);
  EXPECT_DOUBLE_EQ(p.training.attention_efficiency_scale, 0.7);
  EXPECT_TRUE(p.training.overlap_grad_reduce);

  Problem q = llama70b_h200();
  q.training.stack = "megatron-2021";
  ASSERT_TRUE(apply_stack(&q, {}));
  EXPECT_FALSE(q.training.overlap_grad_reduce);
  EXPECT_FALSE(q.training.overlap_param_gather);
  EXPECT_TRUE(q.training.grad_reduce_in_fp32);

  // megatron-2022 (Korthikanti et al.'s code) is megatron-2021 with the element-wise kernels at
  // the fused bandwidth; every other profile key is the same.
  Problem k = llama70b_h200();
  k.training.stack = "megatron-2022";
  ASSERT_TRUE(apply_stack(&k, {}));
  EXPECT_TRUE(k.training.fused_elementwise);
  EXPECT_FALSE(q.training.fused_elementwise);
  Problem k_as_q = k;
  k_as_q.training.fused_elementwise = q.training.fused_elementwise;
  k_as_q.training.stack = q.training.stack;
  EXPECT_EQ(to_ini(k_as_q), to_ini(q));

  Problem r = llama70b_h200();
  r.training.stack = "nosuch";
  const bool before = r.training.tp_comm_overlap;
  EXPECT_FALSE(apply_stack(&r, {}));
  EXPECT_EQ(r.training.tp_comm_overlap, before);
  // Every profile key is a known stack key.
  EXPECT_EQ(stack_keys().size(),
            20u);  // + optimizer_state_dtype, fsdp_fp32_params, cross_entropy_inplace,
                   // recompute_skip_fc2, tp_bwd_overlap, split_linears, overlap_backward_gather,
                   // optimizer_impl, fused_norm, triton_attention, fsdp_impl, tp_symm_mem
}

// ---- per-collective overlap ---------------------------------------------------------------

// A problem whose item costs evaluate() sees unchanged: no kernel overhead, fused kernels, the
// preset's attention, no fixed costs or jitter, so the differences are the mechanism alone.
Problem plain() {
  Problem p = llama70b_h200();
  p.gpu.kernel_overhead_s = 0;
  p.training.fused_elementwise = true;
  p.training.attention_efficiency_scale = 1.0;
  p.training.step_overhead_s = 0;
  p.cluster.step_jitter = 0;
  return p;
}

TEST(DpOverlap, GradientBucketsHideBehindTheLastBackwardButTheLast) {
  Problem p = plain();
  p.gpu.comm_contention = 0.2;
  // TP 8, PP 1, DP 16, ZeRO-1: one stage holds every item.
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  EvalOptions o;
  o.want_breakdown = true;
  const Links links = effective_links(p.cluster);
  const ChainCosts cc = chain_costs(p, c, links);
  const double phi = cc.embed.params + p.model.layers * cc.layer.params + cc.head.params;
  const double dr = 16;
  const double n = std::ceil(phi / std::max(40e6, 1e6 * dr));
  const GroupShape g = group_shape(16, 8, p.cluster.nvlink_domain_size);
  const double grad = p.training.grad_reduce_in_fp32 ? 4.0 : 2.0;
  const double bucket = collective_time(Collective::kReduceScatter, grad * phi / n, g, links);

  p.training.overlap_grad_reduce = false;
  Evaluator off(p, o);
  ASSERT_TRUE(off.evaluate(c).feasible);
  EXPECT_NEAR(off.breakdown().dp_exposed_s[0], n * bucket, 1e-12);

  p.training.overlap_grad_reduce = true;
  Evaluator on(p, o);
  ASSERT_TRUE(on.evaluate(c).feasible);
  const ScheduleInput& si = on.breakdown().schedule;
  const double window = si.bwd_s[0] + si.wgt_s[0];
  const double expect =
      bucket + overlap_charge((n - 1) * bucket, window * (1.0 - 1.0 / n), p.gpu.comm_contention);
  EXPECT_NEAR(on.breakdown().dp_exposed_s[0], expect, 1e-12);
  EXPECT_LT(on.breakdown().dp_exposed_s[0], off.breakdown().dp_exposed_s[0]);
}

TEST(ZeroThree, ForwardWaitsForTheFirstGatherAndChargesTheRestAgainstItsCompute) {
  Problem p = plain();
  p.model.layers = 8;  // small enough to fit at PP 1
  p.training.global_batch_size = 64;
  for (double rho : {0.0, 0.3}) {
    p.gpu.comm_contention = rho;
    const Candidate c = make_candidate(p, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
    EvalOptions o;
    o.want_breakdown = true;
    Evaluator ev(p, o);
    ASSERT_TRUE(ev.evaluate(c).feasible);
    const Links links = effective_links(p.cluster);
    const ChainCosts cc = chain_costs(p, c, links);
    const GroupShape g = group_shape(64, 1, p.cluster.nvlink_domain_size);
    auto ag = [&](const ItemCost& it) {
      return collective_time(Collective::kAllGather, 2.0 * it.params, g, links);
    };
    const double fwd = cc.embed.fwd_s + p.model.layers * cc.layer.fwd_s + cc.head.fwd_s;
    const double all = ag(cc.embed) + p.model.layers * ag(cc.layer) + ag(cc.head);
    const double first = ag(cc.embed);
    const double expect = fwd + first + overlap_charge(all - first, fwd, rho);
    EXPECT_NEAR(ev.breakdown().schedule.fwd_s[0], expect, 1e-9 * expect) << rho;
  }
}

TEST(TpOverlap, LayerCollectivesAreChargedAgainstTheirGemms) {
  Problem p = plain();
  p.gpu.comm_contention = 0.25;
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  EvalOptions o;
  o.want_breakdown = true;
  const Links links = effective_links(p.cluster);
  const ItemCost L = chain_costs(p, c, links).layer;
  p.training.tp_comm_overlap = false;
  Evaluator off(p, o);
  ASSERT_TRUE(off.evaluate(c).feasible);
  p.training.tp_comm_overlap = true;
  Evaluator on(p, o);
  ASSERT_TRUE(on.evaluate(c).feasible);
  // Ring-exchange pipelining in TP chunks: 1/t of each pass's TP time has no GEMM beside it.
  const double piece = 1.0 / 8;
  const double f =
      piece * L.tp_fwd_total_s + overlap_charge((1 - piece) * L.tp_fwd_total_s, L.gemm_fwd_s, 0.25);
  const double diff = p.model.layers * (f - L.tp_fwd_s);
  EXPECT_NEAR(on.breakdown().schedule.fwd_s[0] - off.breakdown().schedule.fwd_s[0], diff,
              1e-9 * std::fabs(off.breakdown().schedule.fwd_s[0]));
  EXPECT_LT(on.breakdown().schedule.fwd_s[0], off.breakdown().schedule.fwd_s[0]);
}

// ---- fixed costs and the straggler term -------------------------------------------------------

TEST(FixedCosts, OptimizerClippingAndZeroingByHand) {
  Problem p = plain();
  p.training.grad_reduce_in_fp32 = true;
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator ev(p, o);
  const Evaluation e = ev.evaluate(c);
  ASSERT_TRUE(e.feasible);
  const ChainCosts cc = chain_costs(p, c, effective_links(p.cluster));
  const double phi = cc.embed.params + p.model.layers * cc.layer.params + cc.head.params;
  // Adam 30 B + clipping 12 B per local fp32 parameter; the 4-byte grad buffer zeroed whole.
  const double bytes = 42.0 * phi / 16 + 4.0 * phi;
  EXPECT_NEAR(e.optimizer_s, bytes / (p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency), 1e-12);
  // bf16 main gradients add the fp32 copy (6 B) and halve the zeroed buffer.
  p.training.grad_reduce_in_fp32 = false;
  const Evaluation b = Evaluator(p, o).evaluate(c);
  const double bytes16 = 48.0 * phi / 16 + 2.0 * phi;
  EXPECT_NEAR(b.optimizer_s, bytes16 / (p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency), 1e-12);
}

TEST(FixedCosts, StepOverheadAndKernelOverheadAdd) {
  Problem p = plain();
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  const double base = evaluate(p, c).iteration_time_s;
  p.training.step_overhead_s = 0.125;
  EXPECT_NEAR(evaluate(p, c).iteration_time_s - base, 0.125, 1e-9);
  p.training.step_overhead_s = 0;
  // Kernel overhead: 7 forward + 12 backward + 7 replayed (full recompute) fused kernels per
  // layer and micro-batch, seen in the simulated stage times.
  p.gpu.kernel_overhead_s = 1e-5;
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator with(p, o);
  ASSERT_TRUE(with.evaluate(c).feasible);
  p.gpu.kernel_overhead_s = 0;
  Evaluator without(p, o);
  ASSERT_TRUE(without.evaluate(c).feasible);
  const double per_mb = p.model.layers * 1e-5 * (7 + 12 + 7);
  const ScheduleInput& a = with.breakdown().schedule;
  const ScheduleInput& z = without.breakdown().schedule;
  EXPECT_NEAR((a.fwd_s[0] + a.bwd_s[0]) - (z.fwd_s[0] + z.bwd_s[0]), per_mb, 1e-9);
}

TEST(Straggler, GrowsWithTheRanksOfTheBlockingCollective) {
  Problem p = plain();
  p.cluster.step_jitter = 0.01;
  EvalOptions o;
  o.want_breakdown = true;
  double last = 0;
  for (int dp : {2, 8, 16}) {
    p.training.global_batch_size = 16 * dp;  // the same 16 micro-batches per rank
    const Candidate c = make_candidate(p, 8, 1, dp, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
    Evaluator ev(p, o);
    ASSERT_TRUE(ev.evaluate(c).feasible);
    const EvalBreakdown& b = ev.breakdown();
    const double expect = 0.01 * b.busy_s[b.critical_rank] * std::sqrt(2.0 * std::log(8.0 * dp));
    EXPECT_NEAR(b.straggler_s, expect, 1e-12);
    EXPECT_GT(b.straggler_s, last);
    last = b.straggler_s;
  }
}

}  // namespace
}  // namespace ppsearch
