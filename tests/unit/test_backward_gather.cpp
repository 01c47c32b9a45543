// FSDP backward prefetch (docs/step-time.md "llm-foundry: FSDP backward prefetch"):
// training.overlap_backward_gather = false (PyTorch FSDP BACKWARD_POST) leaves the backward's
// re-gather of the weights exposed and still hides the reduce-scatters; true (BACKWARD_PRE,
// FSDP2, Megatron) charges both against the backward. Checked against the closed form, for
// ZeRO-3 only, and for the stack profiles that set it.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

Problem plain_fsdp() {
  Problem p = llama70b_h200();
  p.gpu.kernel_overhead_s = 0;
  p.training.fused_elementwise = true;
  p.training.attention_efficiency_scale = 1.0;
  p.training.step_overhead_s = 0;
  p.cluster.step_jitter = 0;
  p.model.layers = 8;  // small enough to fit at PP 1
  p.training.global_batch_size = 64;
  p.training.overlap_grad_reduce = true;
  p.training.overlap_param_gather = true;
  return p;
}

TEST(BackwardGather, PostPrefetchExposesTheRegatherAndHidesTheReduceScatters) {
  for (double rho : {0.0, 0.3}) {
    SCOPED_TRACE(rho);
    Problem p = plain_fsdp();
    p.gpu.comm_contention = rho;
    const Candidate c = make_candidate(p, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
    const Links links = effective_links(p.cluster);
    const ChainCosts cc = chain_costs(p, c, links);
    const GroupShape g = group_shape(64, 1, p.cluster.nvlink_domain_size);
    const double grad = p.training.grad_reduce_in_fp32 ? 4.0 : 2.0;
    auto sum = [&](auto f) { return f(cc.embed) + p.model.layers * f(cc.layer) + f(cc.head); };
    const double ag = sum([&](const ItemCost& it) {
      return collective_time(Collective::kAllGather, 2.0 * it.params, g, links);
    });
    const double rs = sum([&](const ItemCost& it) {
      return collective_time(Collective::kReduceScatter, grad * it.params, g, links);
    });
    const double bwd = sum([](const ItemCost& it) { return it.bwd_s; });
    const double wgt = sum([](const ItemCost& it) { return it.wgt_s; });
    ASSERT_GT(ag, 0);
    ASSERT_GT(rs, 0);

    EvalOptions o;
    o.want_breakdown = true;
    p.training.overlap_backward_gather = true;
    Evaluator pre(p, o);
    const Evaluation e_pre = pre.evaluate(c);
    ASSERT_TRUE(e_pre.feasible);
    const double expect_pre = bwd + overlap_charge(ag + rs, bwd + wgt, rho);
    EXPECT_NEAR(pre.breakdown().schedule.bwd_s[0], expect_pre, 1e-9 * expect_pre);

    p.training.overlap_backward_gather = false;
    Evaluator post(p, o);
    const Evaluation e_post = post.evaluate(c);
    ASSERT_TRUE(e_post.feasible);
    const double expect_post = bwd + ag + overlap_charge(rs, bwd + wgt, rho);
    EXPECT_NEAR(post.breakdown().schedule.bwd_s[0], expect_post, 1e-9 * expect_post);
    // The gather that no longer hides makes the step longer.
    EXPECT_GT(e_post.iteration_time_s, e_pre.iteration_time_s);
  }
}

TEST(BackwardGather, NoEffectWithoutShardedWeights) {
  // ZeRO-1 and ZeRO-2 gather no weights in the backward: the key changes nothing.
  for (int zero : {1, 2}) {
    SCOPED_TRACE(zero);
    Problem p = plain_fsdp();
    const Candidate c = make_candidate(p, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kFull, 0, zero);
    p.training.overlap_backward_gather = true;
    const Evaluation a = Evaluator(p, {}).evaluate(c);
    p.training.overlap_backward_gather = false;
    const Evaluation b = Evaluator(p, {}).evaluate(c);
    ASSERT_TRUE(a.feasible);
    ASSERT_TRUE(b.feasible);
    EXPECT_DOUBLE_EQ(a.iteration_time_s, b.iteration_time_s);
  }
}

TEST(BackwardGather, OnlyTheOct2023LlmFoundryProfileWaitsForTheGather) {
  // Composer 0.16's FSDP default BACKWARD_POST (llm-foundry v0.3.0, the 8-64 GPU table);
  // sweep.py's BACKWARD_PRE for the >= 128-GPU table; every other stack overlaps it, so the
  // default answers do not move.
  for (const std::string& n : stack_names()) {
    const StackProfile* s = find_stack(n);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->overlap_backward_gather, n != "llmfoundry-2023") << n;
  }
  Problem p = llama70b_h200();
  p.training.stack = "llmfoundry-2023";
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_FALSE(p.training.overlap_backward_gather);
  p.training.stack = "llmfoundry-2024";
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_TRUE(p.training.overlap_backward_gather);
  // An explicit key wins over the profile.
  p.training.overlap_backward_gather = true;
  p.training.stack = "llmfoundry-2023";
  ASSERT_TRUE(apply_stack(&p, {"training.overlap_backward_gather"}));
  EXPECT_TRUE(p.training.overlap_backward_gather);
}

}  // namespace
}  // namespace ppsearch
