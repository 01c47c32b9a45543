// Usable capacity (docs/memory.md "Capacity"): the fit check compares a pipeline rank's
// device-level need with gpu.memory_gb × gpu.memory_usable_factor, less the headroom.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

TEST(MemoryCapacity, UsableFactorMovesTheBoundaryByExactlyItsBytes) {
  Problem p = llama70b_h200();
  // PP 1: one stage, so the peak does not depend on the capacity the partitioner sees.
  Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const Evaluation base = evaluate(p, c);
  ASSERT_TRUE(base.feasible);
  const double need = base.peak_memory_gb * 1e9;
  // A nominal capacity a kilobyte short of the need: infeasible at factor 1 ...
  p.gpu.memory_bytes = need - 1e3;
  p.gpu.memory_usable_factor = 1.0;
  const Evaluation short_of = evaluate(p, c);
  EXPECT_FALSE(short_of.feasible);
  EXPECT_EQ(short_of.reason, Infeasible::kMemory);
  EXPECT_NEAR(short_of.capacity_bytes, need - 1e3, 1e-3);
  // ... and feasible, with the same figures, once the usable bytes cover it (1.06 as on an H100).
  p.gpu.memory_usable_factor = 1.06;
  const Evaluation fits = evaluate(p, c);
  ASSERT_TRUE(fits.feasible);
  EXPECT_EQ(fits.peak_memory_gb, base.peak_memory_gb);
  EXPECT_EQ(fits.iteration_time_s, base.iteration_time_s);
  EXPECT_NEAR(fits.capacity_bytes, (need - 1e3) * 1.06, 1e-3);
  // The factor scales the nominal figure before the headroom is taken off.
  p.gpu.memory_headroom_bytes = (need - 1e3) * 1.06 - need + 1e3;
  const Evaluation over = evaluate(p, c);
  EXPECT_FALSE(over.feasible);
  EXPECT_NEAR(over.capacity_bytes, need - 1e3, 1e-3);
}

TEST(MemoryCapacity, TheReasonNamesTheUsableCapacityWithItsDecimals) {
  Problem p = llama70b_h200();
  Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  p.gpu.memory_bytes = 20e9;
  p.gpu.memory_usable_factor = 1.061;  // 21.22 GB usable
  const Evaluation e = evaluate(p, c);
  ASSERT_FALSE(e.feasible);
  EXPECT_NE(explain(e).find("the GPU has 21.22 GB"), std::string::npos) << explain(e);
  p.gpu.memory_usable_factor = 1.0;
  EXPECT_NE(explain(evaluate(p, c)).find("the GPU has 20 GB"), std::string::npos);
}

}  // namespace
}  // namespace ppsearch
