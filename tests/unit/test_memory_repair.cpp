// Interleaved memory repair (evaluate.cpp; docs/algorithms.md §1.3 "Memory repair"): when no
// candidate chunk chain fits, the evaluator also repairs the latest-cut chain item by item. Held
// against the evaluator without it and against every chunk chain of small problems, each run
// through search.pp_layout (brute force).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/compositions.hpp"
#include "../support/layout_text.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::layout_of;

struct Outcome {
  double brute = std::numeric_limits<double>::infinity();  // best feasible chain
  double repaired = std::numeric_limits<double>::infinity();
  double unrepaired = std::numeric_limits<double>::infinity();
  std::string best;  // the brute-force best chain's layout
};

Outcome run(Problem p, const Candidate& c) {
  Outcome o;
  EvalOptions off;
  off.memory_repair = false;
  const Evaluation r = evaluate(p, c);
  const Evaluation u = evaluate(p, c, off);
  if (r.feasible) o.repaired = r.iteration_time_s;
  if (u.feasible) o.unrepaired = u.iteration_time_s;
  const int L = p.model.layers;
  const int S = c.pp * c.vpp;
  test::for_each_partition(L + 2, S, [&](const std::vector<int>& b) {
    p.search.pp_layout = layout_of(b, L);
    const Evaluation e = evaluate(p, c);
    if (e.feasible && e.iteration_time_s < o.brute) {
      o.brute = e.iteration_time_s;
      o.best = p.search.pp_layout;
    }
  });
  return o;
}

TEST(MemoryRepair, LayoutTextRoundTrip) {
  EXPECT_EQ(layout_of({0, 2, 5, 7, 12}, 10), "Et|t*3|t*2|t*4L");
  EXPECT_EQ(layout_of({0, 1, 11, 12}, 10), "E|t*10|L");
}

struct Tally {
  int cases = 0;             // capacities at which some chain fits
  int none_fit = 0;          // capacities at which no chain fits
  int repair_best = 0;       // the evaluator's answer is the brute-force best
  int fallback_best = 0;     // the same without the repair
  int fallback_missing = 0;  // without the repair, no chain is found although one fits
  int repair_helped = 0;     // the repair made the answer faster (or feasible)
  double repair_gap = 0;     // Σ (answer / brute-force best − 1) over the cases
  double fallback_gap = 0;   // the same without the repair, over the cases it answers
  int fallback_answered = 0;
  void add(const Tally& t) {
    cases += t.cases;
    none_fit += t.none_fit;
    repair_best += t.repair_best;
    fallback_best += t.fallback_best;
    fallback_missing += t.fallback_missing;
    repair_helped += t.repair_helped;
    repair_gap += t.repair_gap;
    fallback_gap += t.fallback_gap;
    fallback_answered += t.fallback_answered;
  }
};

// One problem at capacities from the first chain's peak down by 1 % steps. At each: the
// repaired answer fits (it is never faster than the brute-force best), it is found whenever
// some chain fits, and it is never slower than the answer without the repair.
Tally sweep_capacities(const Problem& p, const Candidate& c, int steps) {
  Tally t;
  const Evaluation roomy = evaluate(p, c);
  EXPECT_TRUE(roomy.feasible);
  if (!roomy.feasible) return t;
  for (int k = 0; k <= steps; ++k) {
    Problem q = p;
    q.gpu.memory_bytes = roomy.needed_bytes * (1.0 - 0.01 * k) / q.gpu.memory_usable_factor +
                         q.gpu.memory_headroom_bytes;
    const Outcome o = run(q, c);
    if (!std::isfinite(o.brute)) {
      EXPECT_FALSE(std::isfinite(o.repaired)) << k;
      ++t.none_fit;
      continue;
    }
    ++t.cases;
    const double tol = 1e-9 * o.brute;
    EXPECT_TRUE(std::isfinite(o.repaired)) << k << ": " << o.best << " fits";
    EXPECT_GE(o.repaired, o.brute - tol) << k;
    EXPECT_LE(o.repaired, o.unrepaired + tol) << k;
    if (o.repaired < o.unrepaired - tol) ++t.repair_helped;
    if (o.repaired <= o.brute + tol) ++t.repair_best;
    if (o.unrepaired <= o.brute + tol) ++t.fallback_best;
    if (std::isfinite(o.repaired)) t.repair_gap += o.repaired / o.brute - 1.0;
    if (std::isfinite(o.unrepaired)) {
      t.fallback_gap += o.unrepaired / o.brute - 1.0;
      ++t.fallback_answered;
    } else {
      ++t.fallback_missing;
    }
    std::fprintf(stderr, "k %d brute %.6f repaired %.6f unrepaired %.6f best %s\n", k, o.brute,
                 o.repaired, o.unrepaired, o.best.c_str());
  }
  return t;
}

// Llama 3 8B-shaped layers, 8192 tokens, micro-batch 1, 24 micro-batches, interleaved 1F1B:
// PP 2 × VPP 2 with 12 layers (286 chains), PP 3 × VPP 2 with 10 layers (462), PP 2 × VPP 3
// with 12 layers (1,287), each over 25 capacities.
TEST(MemoryRepair, AgainstEveryChain) {
  struct Shape {
    int layers, pp, vpp;
  };
  Tally all;
  for (const Shape sh : {Shape{12, 2, 2}, Shape{10, 3, 2}, Shape{12, 2, 3}}) {
    Problem p = test::llama8b_like(sh.layers);
    p.training.global_batch_size = 96;
    p.model.seq_length = 8192;
    p.search.pp = {sh.pp};
    p.search.vpp = {sh.vpp};
    const Candidate c = test::make_candidate(p, 1, sh.pp, 4, 1, Schedule::kInterleaved1F1B,
                                             Recompute::kNone, 0, 1, sh.vpp);
    const Tally t = sweep_capacities(p, c, 24);
    std::fprintf(stderr,
                 "PP %d x VPP %d: %d cases (%d capacities where nothing fits); the best chain: "
                 "repaired %d, without the repair %d; without it nothing found %d times\n",
                 sh.pp, sh.vpp, t.cases, t.none_fit, t.repair_best, t.fallback_best,
                 t.fallback_missing);
    all.add(t);
  }
  std::fprintf(stderr,
               "all: %d cases; repaired: best %d, mean gap %.2f %%; without the repair: best %d, "
               "nothing found %d, mean gap %.2f %% over the %d it answers\n",
               all.cases, all.repair_best, 100.0 * all.repair_gap / all.cases, all.fallback_best,
               all.fallback_missing, 100.0 * all.fallback_gap / std::max(1, all.fallback_answered),
               all.fallback_answered);
  ASSERT_GE(all.cases, 30);
  EXPECT_GE(all.none_fit, 1);           // the sweeps reach capacities where nothing fits
  EXPECT_GE(all.fallback_missing, 10);  // ... and ones the fallbacks alone call infeasible
  EXPECT_GT(all.repair_helped, all.cases / 2);
  EXPECT_GT(all.repair_best, 2 * all.fallback_best);
  EXPECT_LT(all.repair_gap / all.cases, all.fallback_gap / std::max(1, all.fallback_answered));
}

}  // namespace
}  // namespace ppsearch
