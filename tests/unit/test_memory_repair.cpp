// Interleaved memory repair and polish (evaluate.cpp; docs/algorithms.md §1.3 "Memory repair",
// "Memory polish"): when no candidate chunk chain fits, the evaluator also repairs the latest-cut
// chain item by item; when the first candidate does not fit, it then polishes the chosen chain.
// Held against the evaluator without them and against every chunk chain of small problems, each
// run through search.pp_layout (brute force).
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
  double brute = std::numeric_limits<double>::infinity();       // best feasible chain
  double polished = std::numeric_limits<double>::infinity();    // the evaluator as it is
  double repaired = std::numeric_limits<double>::infinity();    // without the polish
  double unrepaired = std::numeric_limits<double>::infinity();  // without either
  std::string best;  // the brute-force best chain's layout
  std::string got;   // the evaluator's
};

// The layout text of an evaluation's stages.
std::string layout_of_stages(const Evaluation& e, int layers) {
  std::vector<int> b;
  for (const StageResult& st : e.stages) b.push_back(st.first_layer);
  b.push_back(layers + 2);
  return layout_of(b, layers);
}

Outcome run(Problem p, const Candidate& c) {
  Outcome o;
  EvalOptions no_polish;
  no_polish.memory_polish = false;
  EvalOptions off = no_polish;
  off.memory_repair = false;
  const Evaluation full = evaluate(p, c);
  const Evaluation r = evaluate(p, c, no_polish);
  const Evaluation u = evaluate(p, c, off);
  if (full.feasible) {
    o.polished = full.iteration_time_s;
    o.got = layout_of_stages(full, p.model.layers);
  }
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
  int polish_best = 0;    // the evaluator with the polish is the brute-force best
  int polish_helped = 0;  // the polish made the answer faster
  double polish_gap = 0;  // Σ (answer / brute-force best − 1) with the polish
  void add(const Tally& t) {
    polish_best += t.polish_best;
    polish_helped += t.polish_helped;
    polish_gap += t.polish_gap;
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
// some chain fits, and it is never slower than the answer without the repair; the polished
// answer likewise, and it is never slower than the repaired one.
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
      EXPECT_FALSE(std::isfinite(o.polished)) << k;
      ++t.none_fit;
      continue;
    }
    ++t.cases;
    const double tol = 1e-9 * o.brute;
    EXPECT_TRUE(std::isfinite(o.repaired)) << k << ": " << o.best << " fits";
    EXPECT_GE(o.repaired, o.brute - tol) << k;
    EXPECT_LE(o.repaired, o.unrepaired + tol) << k;
    EXPECT_TRUE(std::isfinite(o.polished)) << k;
    EXPECT_GE(o.polished, o.brute - tol) << k;
    EXPECT_LE(o.polished, o.repaired + tol) << k;
    if (o.polished < o.repaired - tol) ++t.polish_helped;
    if (o.polished <= o.brute + tol) ++t.polish_best;
    if (std::isfinite(o.polished)) t.polish_gap += o.polished / o.brute - 1.0;
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
    std::fprintf(stderr,
                 "k %d brute %.6f polished %.6f repaired %.6f unrepaired %.6f best %s got %s\n", k,
                 o.brute, o.polished, o.repaired, o.unrepaired, o.best.c_str(), o.got.c_str());
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
  std::fprintf(stderr, "all: polished: best %d, mean gap %.2f %%, faster than repaired in %d\n",
               all.polish_best, 100.0 * all.polish_gap / all.cases, all.polish_helped);
  EXPECT_GE(all.polish_helped, 10);
  EXPECT_GT(all.polish_best, all.repair_best + 10);
  EXPECT_LT(all.polish_gap, 0.6 * all.repair_gap);
}

// The polish on five shapes the repair test above does not use (other layer counts, PP × VPP
// from 2 × 2 to 4 × 2, sequence 4096 or 8192, four vocabularies), 13 capacities each from the
// unconstrained peak down in 2 % steps: never slower than without it, never faster than the
// brute-force best, and closer to it over all.
TEST(MemoryPolish, OtherShapes) {
  struct Shape {
    int layers, pp, vpp, seq, gbs, vocab;
  };
  int cases = 0, best_on = 0, best_off = 0, faster = 0;
  double gap_on = 0, gap_off = 0;
  for (const Shape sh : {Shape{14, 4, 2, 8192, 64, 128256}, Shape{12, 2, 4, 4096, 96, 32000},
                         Shape{16, 2, 2, 8192, 96, 128256}, Shape{11, 3, 2, 8192, 48, 256000},
                         Shape{13, 2, 3, 4096, 64, 151936}}) {
    Problem p = test::llama8b_like(sh.layers);
    p.training.global_batch_size = sh.gbs;
    p.model.seq_length = sh.seq;
    p.model.vocab_size = sh.vocab;
    p.search.pp = {sh.pp};
    p.search.vpp = {sh.vpp};
    const Candidate c = test::make_candidate(p, 1, sh.pp, 4, 1, Schedule::kInterleaved1F1B,
                                             Recompute::kNone, 0, 1, sh.vpp);
    const Evaluation roomy = evaluate(p, c);
    ASSERT_TRUE(roomy.feasible);
    for (int k = 0; k <= 24; k += 2) {
      Problem q = p;
      q.gpu.memory_bytes = roomy.needed_bytes * (1.0 - 0.01 * k) / q.gpu.memory_usable_factor +
                           q.gpu.memory_headroom_bytes;
      EvalOptions off;
      off.memory_polish = false;
      const Evaluation on = evaluate(q, c), of = evaluate(q, c, off);
      double brute = std::numeric_limits<double>::infinity();
      const int L = q.model.layers;
      test::for_each_partition(L + 2, c.pp * c.vpp, [&](const std::vector<int>& b) {
        q.search.pp_layout = layout_of(b, L);
        const Evaluation e = evaluate(q, c);
        if (e.feasible && e.iteration_time_s < brute) brute = e.iteration_time_s;
      });
      if (!std::isfinite(brute)) {
        EXPECT_FALSE(on.feasible) << sh.layers << " " << k;
        continue;
      }
      ++cases;
      const double tol = 1e-9 * brute;
      ASSERT_TRUE(on.feasible) << sh.layers << " " << k;
      ASSERT_TRUE(of.feasible) << sh.layers << " " << k;
      const double a = on.iteration_time_s, b = of.iteration_time_s;
      EXPECT_GE(a, brute - tol) << sh.layers << " " << k;
      EXPECT_LE(a, b + tol) << sh.layers << " " << k;
      if (a <= brute + tol) ++best_on;
      if (b <= brute + tol) ++best_off;
      if (a < b - tol) ++faster;
      gap_on += a / brute - 1.0;
      gap_off += b / brute - 1.0;
    }
  }
  std::fprintf(stderr,
               "%d cases: the best chain with the polish %d, without %d; faster with it %d; mean "
               "gap %.2f %% with, %.2f %% without\n",
               cases, best_on, best_off, faster, 100.0 * gap_on / cases, 100.0 * gap_off / cases);
  ASSERT_GE(cases, 30);
  EXPECT_GE(faster, 5);
  EXPECT_GT(best_on, best_off);
  EXPECT_LT(gap_on, 0.85 * gap_off);
}

}  // namespace
}  // namespace ppsearch
