// Uncertainty bounds (docs/uncertainty.md) and the cross-topology regret matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../support/builders.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/search/regret.hpp"
#include "ppsearch/search/uncertainty.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A feasible seed candidate of the 70B test problem, and its step time.
struct Seed {
  Problem problem = llama70b_h200();
  Candidate c = make_candidate(problem, 4, 8, 4, 1, Schedule::k1F1B);
  double time = evaluate(problem, c).iteration_time_s;
};

// A one-constant table whose constant does nothing at `p`: both ends are the base value and the
// bounds of candidate `c` are its time.
void expect_inactive(const Problem& p, const std::vector<ConstantRange>& table, const Candidate& c,
                     double base_value) {
  const std::vector<Variation> v = make_variations(p, table);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].value, base_value);
  EXPECT_EQ(v[1].value, base_value);
  const double t = evaluate(p, c).iteration_time_s;
  ASSERT_TRUE(std::isfinite(t));
  UncertaintyEvaluator u(p, table, EvalOptions{});
  EXPECT_EQ(u.evaluate(c, t).bounds.lo, t);
  EXPECT_EQ(u.evaluate(c, t).bounds.hi, t);
}

// The same table where the constant acts: its ends at value·(1 ∓ w), a lower value a slower step,
// and bounds on both sides of the time.
void expect_varied(const Problem& p, const std::vector<ConstantRange>& table, const Candidate& c,
                   double value, double w) {
  const std::vector<Variation> v = make_variations(p, table);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0].value, value * (1 - w), 1e-12);
  EXPECT_NEAR(v[1].value, value * (1 + w), 1e-12);
  const double t = evaluate(p, c).iteration_time_s;
  UncertaintyEvaluator u(p, table, EvalOptions{});
  const auto r = u.evaluate(c, t);
  EXPECT_GT(r.times[0], t);
  EXPECT_LT(r.times[1], t);
  EXPECT_LT(r.bounds.lo, t);
  EXPECT_GT(r.bounds.hi, t);
}

TEST(Uncertainty, EveryTabledKeyIsAKnownKeyWithASource) {
  for (const ConstantRange& r : default_constant_ranges()) {
    SCOPED_TRACE(r.key);
    EXPECT_TRUE(is_known_key(r.key));
    EXPECT_GT(r.half_width, 0);
    EXPECT_LT(r.min_value, r.max_value);
    EXPECT_FALSE(r.source.empty());
  }
}

TEST(Uncertainty, BoundsBracketTheTime) {
  Seed s;
  ASSERT_TRUE(std::isfinite(s.time));
  UncertaintyEvaluator u(s.problem, default_constant_ranges(), EvalOptions{});
  const auto r = u.evaluate(s.c, s.time);
  EXPECT_EQ(r.infeasible, 0);
  ASSERT_EQ(r.times.size(), 2 * default_constant_ranges().size());
  EXPECT_LT(r.bounds.lo, s.time);  // the GEMM efficiency alone moves it
  EXPECT_GT(r.bounds.hi, s.time);
  // Each one-at-a-time time lies within the combined bounds.
  for (double t : r.times) {
    EXPECT_GE(t, r.bounds.lo);
    EXPECT_LE(t, r.bounds.hi);
  }
}

TEST(Uncertainty, ZeroRangeGivesTheTimeItself) {
  Seed s;
  std::vector<ConstantRange> table = default_constant_ranges();
  for (ConstantRange& r : table) r.half_width = 0;
  UncertaintyEvaluator u(s.problem, table, EvalOptions{});
  const auto r = u.evaluate(s.c, s.time);
  EXPECT_EQ(r.bounds.lo, s.time);
  EXPECT_EQ(r.bounds.hi, s.time);
  for (double t : r.times) EXPECT_EQ(t, s.time);
  // The scale does the same.
  UncertaintyEvaluator z(s.problem, default_constant_ranges(), EvalOptions{}, 0.0);
  const auto rz = z.evaluate(s.c, s.time);
  EXPECT_EQ(rz.bounds.lo, s.time);
  EXPECT_EQ(rz.bounds.hi, s.time);
}

TEST(Uncertainty, BoundsWidenWithTheRange) {
  Seed s;
  double last_lo = s.time;
  double last_hi = s.time;
  for (double scale : {0.25, 0.5, 1.0, 2.0}) {
    SCOPED_TRACE(scale);
    UncertaintyEvaluator u(s.problem, default_constant_ranges(), EvalOptions{}, scale);
    const auto r = u.evaluate(s.c, s.time);
    EXPECT_LE(r.bounds.lo, last_lo);
    EXPECT_GE(r.bounds.hi, last_hi);
    EXPECT_LT(r.bounds.hi - r.bounds.lo, 2 * s.time);  // sane, not runaway
    last_lo = r.bounds.lo;
    last_hi = r.bounds.hi;
  }
  EXPECT_LT(last_lo, s.time);
  EXPECT_GT(last_hi, s.time);
}

TEST(Uncertainty, VariationsClampIntoTheKeysRange) {
  Problem p = llama70b_h200();
  ASSERT_FALSE(apply_key(p, "cluster.dp_comm_overlap", "0.95", "test"));
  const std::vector<ConstantRange> table = {
      {"cluster.dp_comm_overlap", 0.2, false, 0.0, 1.0, "test"},
      {"gpu.gemm_efficiency", 0.5, true, 0.01, 1.0, "test"}};
  const std::vector<Variation> v = make_variations(p, table);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_NEAR(v[0].value, 0.75, 1e-12);
  EXPECT_EQ(v[1].value, 1.0);  // 1.15 clamped
  EXPECT_NEAR(v[1].problem.cluster.dp_comm_overlap, 1.0, 1e-12);
  EXPECT_NEAR(v[2].problem.gpu.gemm_efficiency, p.gpu.gemm_efficiency * 0.5, 1e-12);
  EXPECT_EQ(v[3].end, +1);
  EXPECT_THROW(make_variations(p, {{"gpu.no_such_key", 0.1, true, 0, 1, "x"}}),
               std::invalid_argument);
}

TEST(Uncertainty, AFittedDerateIsVariedOnlyWhereAPresetSetsIt) {
  Problem p = llama70b_h200();
  const std::vector<ConstantRange> table = {
      {"gpu.clock_scale", 0.029, true, 0.1, 1.5, "test", true, 1.0}};
  const Candidate c = make_candidate(p, 4, 8, 4, 1, Schedule::k1F1B);
  // At the neutral 1 there is nothing fitted: both ends are the base value and the time stays.
  expect_inactive(p, table, c, 1.0);
  // A fitted 0.808 is varied by ±2.9 %, and a slower clock is a slower step.
  ASSERT_FALSE(apply_key(p, "gpu.clock_scale", "0.808", "test"));
  expect_varied(p, table, c, 0.808, 0.029);
  // The built-in table has it, flagged.
  bool found = false;
  for (const ConstantRange& cr : default_constant_ranges())
    if (cr.key == "gpu.clock_scale") found = cr.only_when_fitted;
  EXPECT_TRUE(found);
}

TEST(Uncertainty, TheAttentionTileCostIsVariedOnlyWhereAPresetSetsIt) {
  Problem p = llama70b_h200();
  const std::vector<ConstantRange> table = {
      {"gpu.attention_tile_blocks", 0.45, true, 0.0, 1e3, "test", true, 0.0}};
  const Candidate c = make_candidate(p, 4, 8, 4, 1, Schedule::k1F1B);
  // At 0 there is one attention rate and nothing to vary.
  ASSERT_FALSE(apply_key(p, "gpu.attention_tile_blocks", "0", "test"));
  expect_inactive(p, table, c, 0.0);
  // At 2.47 both ends move, and more fixed work per tile is a slower step.
  ASSERT_FALSE(apply_key(p, "gpu.attention_tile_blocks", "2.47", "test"));
  const std::vector<Variation> v = make_variations(p, table);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0].value, 2.47 * 0.55, 1e-12);
  EXPECT_NEAR(v[1].value, 2.47 * 1.45, 1e-12);
  const double t = evaluate(p, c).iteration_time_s;
  UncertaintyEvaluator u(p, table, EvalOptions{});
  const auto r = u.evaluate(c, t);
  ASSERT_EQ(r.times.size(), 2u);
  EXPECT_LT(r.times[0], t);
  EXPECT_GT(r.times[1], t);
  EXPECT_LT(r.bounds.lo, t);
  EXPECT_GT(r.bounds.hi, t);
  // The built-in table has it, varied only where set.
  bool found = false;
  for (const ConstantRange& cr : default_constant_ranges())
    if (cr.key == "gpu.attention_tile_blocks") found = cr.only_when_fitted && cr.unset_value == 0;
  EXPECT_TRUE(found);
}

TEST(Uncertainty, TheTritonRateIsVariedOnlyWhereTheStackRunsTheKernel) {
  Problem p = llama70b_h200();
  ASSERT_FALSE(apply_key(p, "gpu.triton_attention_scale", "0.577", "test"));
  const std::vector<ConstantRange> table = {{"gpu.triton_attention_scale", 0.16, true, 0.05, 1.5,
                                             "test", false, 1.0, "training.triton_attention"}};
  const Candidate c = make_candidate(p, 4, 8, 4, 1, Schedule::k1F1B);
  // Without the kernel the rate does nothing: both ends are the base value, the bounds the time.
  expect_inactive(p, table, c, 0.577);
  // With it, ±16 %: a slower kernel is a slower step.
  ASSERT_FALSE(apply_key(p, "training.triton_attention", "true", "test"));
  expect_varied(p, table, c, 0.577, 0.16);
  // The built-in table has it, tied to the kernel's key; an unknown tie is refused.
  bool found = false;
  for (const ConstantRange& cr : default_constant_ranges())
    if (cr.key == "gpu.triton_attention_scale") found = cr.only_with == "training.triton_attention";
  EXPECT_TRUE(found);
  EXPECT_THROW(make_variations(p, {{"gpu.gemm_efficiency", 0.1, true, 0.01, 1, "x", false, 1.0,
                                    "training.no_such_key"}}),
               std::invalid_argument);
}

TEST(Uncertainty, CombineIsRootSumSquareOfOneSidedMoves) {
  // Two constants: (9, 12) and (10.5, 10) around 10: down √(1² + 0²), up √(2² + 0.5²).
  const TimeBounds b = combine_bounds(10.0, {9.0, 12.0, 10.5, 10.0});
  EXPECT_DOUBLE_EQ(b.lo, 9.0);
  EXPECT_DOUBLE_EQ(b.hi, 10.0 + std::sqrt(4.0 + 0.25));
  // Infeasible variations are left out.
  const TimeBounds n = combine_bounds(10.0, {kNaN, 11.0, kNaN, kNaN});
  EXPECT_DOUBLE_EQ(n.lo, 10.0);
  EXPECT_DOUBLE_EQ(n.hi, 11.0);
}

TEST(Uncertainty, RobustIsTheBestWorstCase) {
  // Rank order by time: row 0 is fastest but has the worst upper bound.
  EXPECT_EQ(robust_index({13.5, 13.1, 13.1, 14.0}), 1);  // first among equals
  EXPECT_EQ(robust_index({kNaN, 12.0}), 1);
  EXPECT_EQ(robust_index({}), -1);
  EXPECT_EQ(robust_index({kNaN}), -1);
}

TEST(Uncertainty, RobustPrefersRowsThatRunUnderEveryVariation) {
  // Row 1 has the smallest bound but stops fitting under one variation: row 2 is chosen.
  EXPECT_EQ(robust_index({13.5, 13.1, 13.3, 14.0}, {0, 1, 0, 0}), 2);
  // When every row stops somewhere, the fewest failures win, then the smallest bound.
  EXPECT_EQ(robust_index({13.5, 13.1, 13.3}, {2, 1, 1}), 1);
  EXPECT_EQ(robust_index({13.5, 13.1, 13.3}, {0, 0, 0}), 1);
}

TEST(Uncertainty, TopWithinUncertaintyNeedsOverlap) {
  EXPECT_TRUE(top_within_uncertainty({9.5, 9.8, 10.0}, {10.5, 10.8, 11.0}, 3));
  EXPECT_FALSE(top_within_uncertainty({9.5, 10.6, 10.7}, {10.5, 11.0, 11.2}, 3));
  EXPECT_FALSE(top_within_uncertainty({9.5, 9.8}, {10.5, 10.8}, 3));  // fewer than 3 rows
}

TEST(Regret, DiagonalIsZeroAndTheRestNonNegative) {
  // Cluster j's own best is the minimum of its column (what a search guarantees).
  const std::vector<std::vector<double>> t = {
      {10.0, 12.0, 15.0},
      {11.0, 11.0, 14.0},
      {10.5, 11.5, 13.0},
  };
  const RegretMatrix m = regret_matrix(t);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m.regret_pct[i][i], 0.0);
    for (std::size_t j = 0; j < 3; ++j) EXPECT_GE(m.regret_pct[i][j], 0.0);
  }
  EXPECT_NEAR(m.regret_pct[0][1], 100.0 * (12.0 - 11.0) / 11.0, 1e-12);
  EXPECT_NEAR(m.worst_pct[0], 100.0 * 2.0 / 13.0, 1e-12);
  EXPECT_NEAR(m.worst_pct[1], 10.0, 1e-12);  // 11 s where 10 s is best
  EXPECT_NEAR(m.worst_pct[2], 5.0, 1e-12);
  EXPECT_EQ(m.robust, 2);  // 5 % at worst beats 10 % and 15.4 %
}

TEST(Regret, InfeasibleCellsExcludeARowFromRobust) {
  const std::vector<std::vector<double>> t = {
      {10.0, kNaN},
      {10.2, 11.0},
  };
  const RegretMatrix m = regret_matrix(t);
  EXPECT_TRUE(std::isinf(m.worst_pct[0]));
  EXPECT_TRUE(std::isnan(m.regret_pct[0][1]));
  EXPECT_EQ(m.robust, 1);
  EXPECT_EQ(regret_matrix({{10.0, kNaN}, {kNaN, 11.0}}).robust, -1);
  EXPECT_THROW(regret_matrix({{10.0, 1.0}}), std::invalid_argument);
  EXPECT_THROW(regret_matrix({{kNaN}}), std::invalid_argument);
}

}  // namespace
}  // namespace ppsearch
