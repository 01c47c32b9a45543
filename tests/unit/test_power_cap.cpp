// Power-capped GPUs (docs/step-time.md "Power-capped GPUs"): gpu.clock_scale slows the
// compute-bound kernels (GEMMs, attention) exactly as the same factor on their efficiencies
// would, and leaves memory-bound work (the optimizer step) and communication alone.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

struct Times {
  double compute_s;
  double optimizer_s;
  double tp_total_s;
  double step_s;
};

Times run(const Problem& p) {
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator ev(p, o);
  const Evaluation e = ev.evaluate(c);
  EXPECT_TRUE(e.feasible);
  return {ev.breakdown().compute_s.at(0), ev.breakdown().optimizer_s,
          ev.breakdown().tp_total_s.at(0), e.iteration_time_s};
}

TEST(PowerCap, ClockScaleIsTheSameFactorOnGemmAndAttentionEfficiency) {
  const Problem base = llama70b_h200();
  ASSERT_DOUBLE_EQ(base.gpu.clock_scale, 1.0);  // the default changes nothing
  Problem capped = base;
  capped.gpu.clock_scale = 0.8;
  Problem by_hand = base;
  by_hand.gpu.gemm_efficiency *= 0.8;
  by_hand.gpu.attention_efficiency *= 0.8;

  const Times r0 = run(base), r1 = run(capped), r2 = run(by_hand);
  EXPECT_GT(r1.compute_s, r0.compute_s * 1.05);  // GEMMs and attention dominate this layer
  EXPECT_LT(r1.compute_s, r0.compute_s / 0.8);   // element-wise work does not slow
  EXPECT_NEAR(r1.compute_s, r2.compute_s, 1e-12 * r2.compute_s);
  EXPECT_NEAR(r1.step_s, r2.step_s, 1e-12 * r2.step_s);
  EXPECT_GT(r1.step_s, r0.step_s);
}

TEST(PowerCap, MemoryBoundAndCommunicationTimesDoNotMove) {
  const Problem base = llama70b_h200();
  Problem capped = base;
  capped.gpu.clock_scale = 0.7;
  const Times r0 = run(base), r1 = run(capped);
  EXPECT_DOUBLE_EQ(r1.optimizer_s, r0.optimizer_s);  // HBM-bound Adam step
  EXPECT_DOUBLE_EQ(r1.tp_total_s, r0.tp_total_s);    // NVLink collectives
}

}  // namespace
}  // namespace ppsearch
