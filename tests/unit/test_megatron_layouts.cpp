// Megatron-Core's own splits as interleaved candidates (megatron_layouts(), partition.cpp;
// evaluate.cpp; docs/algorithms.md §1.3 "Megatron's layouts"): the bounds against Megatron's
// rule written out per stage, and the evaluator with them against the evaluator without them and
// against each layout run through search.pp_layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/layout_text.hpp"
#include "ppsearch/partition/partition.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::layout_of;

// Megatron's rule (transformer_block.py get_num_layers_to_build, written out): with the
// embedding (e = 1) and / or the loss (l = 1) counted as layers, every virtual stage builds
// (L + e + l)/S layers, the first e fewer and the last l fewer; the embedding sits on the first
// stage, the output layer on the last. Returns the bounds, or an empty vector when the division
// is not exact or a stage would build fewer than 0 layers.
std::vector<int> megatron_rule(int L, int S, int e, int l) {
  if ((L + e + l) % S != 0) return {};
  const int per = (L + e + l) / S;
  std::vector<int> b{0};
  int item = 0;
  for (int st = 0; st < S; ++st) {
    int layers = per - (st == 0 ? e : 0) - (st == S - 1 ? l : 0);
    if (layers < 0) return {};
    item += layers + (st == 0 ? 1 : 0) + (st == S - 1 ? 1 : 0);
    b.push_back(item);
  }
  if (item != L + 2) return {};
  for (std::size_t k = 0; k + 1 < b.size(); ++k) {
    if (b[k + 1] <= b[k]) return {};  // a stage with no item at all
  }
  return b;
}

TEST(MegatronLayouts, ExamplesAsLayoutText) {
  auto texts = [](int L, int S) {
    std::vector<int> out;
    const int n = megatron_layouts(L, S, out);
    std::vector<std::string> t;
    for (int k = 0; k < n; ++k) {
      t.push_back(layout_of(
          std::vector<int>(out.begin() + k * (S + 1), out.begin() + (k + 1) * (S + 1)), L));
    }
    return t;
  };
  EXPECT_EQ(texts(8, 4), (std::vector<std::string>{"Et*2|t*2|t*2|t*2L"}));
  // account_for_embedding, then account_for_loss
  EXPECT_EQ(texts(7, 4), (std::vector<std::string>{"Et|t*2|t*2|t*2L", "Et*2|t*2|t*2|tL"}));
  EXPECT_EQ(texts(6, 4), (std::vector<std::string>{"Et|t*2|t*2|tL"}));  // both
  EXPECT_EQ(texts(5, 4), (std::vector<std::string>{}));
  // Llama 3.1 405B over PP 16 × VPP 4 (the Megatron-Bridge GB200 recipe's split).
  const std::vector<std::string> big = texts(126, 64);
  ASSERT_EQ(big.size(), 1u);
  std::string want = "Et";
  for (int k = 0; k < 62; ++k) want += "|t*2";
  want += "|tL";
  EXPECT_EQ(big[0], want);
  // Two stages: the even split and both options coincide (one layout).
  EXPECT_EQ(texts(4, 2), (std::vector<std::string>{"Et*2|t*2L"}));
}

TEST(MegatronLayouts, AgainstTheRuleForEveryShape) {
  int layouts = 0;
  for (int L = 1; L <= 48; ++L) {
    for (int S = 1; S <= 20; ++S) {
      std::vector<int> out;
      const int n = megatron_layouts(L, S, out);
      ASSERT_EQ(out.size(), static_cast<std::size_t>(n) * (S + 1)) << L << " " << S;
      std::vector<std::vector<int>> want;
      for (const auto& el : {std::pair<int, int>{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
        std::vector<int> b = megatron_rule(L, S, el.first, el.second);
        if (b.empty()) continue;
        bool dup = false;
        for (const auto& w : want) dup = dup || w == b;
        if (!dup) want.push_back(b);
      }
      ASSERT_EQ(n, static_cast<int>(want.size())) << L << " " << S;
      for (int k = 0; k < n; ++k) {
        const std::vector<int> got(out.begin() + k * (S + 1), out.begin() + (k + 1) * (S + 1));
        EXPECT_EQ(got, want[k]) << L << " " << S << " layout " << k;
        // A partition of the L + 2 items into S non-empty contiguous stages.
        EXPECT_EQ(got.front(), 0);
        EXPECT_EQ(got.back(), L + 2);
        for (int st = 0; st < S; ++st) EXPECT_LT(got[st], got[st + 1]);
      }
      layouts += n;
    }
  }
  EXPECT_GT(layouts, 200);  // the sweep exercises many shapes
}

TEST(MegatronLayouts, RejectsDegenerateInput) {
  std::vector<int> out{7};
  EXPECT_EQ(megatron_layouts(0, 4, out), 0);
  EXPECT_EQ(megatron_layouts(8, 0, out), 0);
  EXPECT_EQ(out, std::vector<int>{7});  // nothing appended
}

// The evaluator with Megatron's layouts among its candidates is never slower than without them,
// never slower than any of them that fits (run through search.pp_layout), and faster in some
// cases: Llama-3-8B-shaped layers whose layer counts leave the even split out, interleaved
// 1F1B, at memory capacities from roomy down to where nothing fits.
TEST(MegatronLayouts, EvaluatorUsesThem) {
  struct Shape {
    int layers, pp, vpp;
  };
  int cases = 0, faster = 0, matched = 0;
  double gain = 0;
  for (const Shape sh : {Shape{10, 2, 3}, Shape{11, 2, 3}, Shape{14, 2, 4}, Shape{30, 4, 4},
                         Shape{62, 4, 4}, Shape{46, 8, 2}}) {
    for (const int vocab : {32000, 128256, 256000}) {
      Problem p = test::llama8b_like(sh.layers);
      p.model.vocab_size = vocab;
      p.model.seq_length = 8192;
      p.training.global_batch_size = 8 * sh.pp * 4;
      p.search.pp = {sh.pp};
      p.search.vpp = {sh.vpp};
      const Candidate c = test::make_candidate(p, 1, sh.pp, 4, 1, Schedule::kInterleaved1F1B,
                                               Recompute::kNone, 0, 1, sh.vpp);
      const Evaluation roomy = evaluate(p, c);
      ASSERT_TRUE(roomy.feasible) << sh.layers;
      std::vector<int> fixed;
      const int S = sh.pp * sh.vpp;
      const int n_fixed = megatron_layouts(sh.layers, S, fixed);
      ASSERT_GE(n_fixed, 1) << sh.layers << " " << S;
      EvalOptions without;
      without.megatron_layouts = false;
      for (int k = 0; k <= 12; ++k) {
        Problem q = p;
        q.gpu.memory_bytes = roomy.needed_bytes * (1.0 - 0.02 * k) / q.gpu.memory_usable_factor +
                             q.gpu.memory_headroom_bytes;
        const Evaluation on = evaluate(q, c);
        const Evaluation off = evaluate(q, c, without);
        const double t_on = on.feasible ? on.iteration_time_s : INFINITY;
        const double t_off = off.feasible ? off.iteration_time_s : INFINITY;
        if (!std::isfinite(t_on) && !std::isfinite(t_off)) continue;
        ++cases;
        ASSERT_TRUE(std::isfinite(t_on)) << sh.layers << " k " << k;
        const double tol = 1e-9 * t_on;
        EXPECT_LE(t_on, t_off + tol) << sh.layers << " vocab " << vocab << " k " << k;
        if (t_on < t_off - tol) {
          ++faster;
          gain += std::isfinite(t_off) ? 1.0 - t_on / t_off : 1.0;
        }
        for (int j = 0; j < n_fixed; ++j) {
          Problem r = q;
          r.search.pp_layout = layout_of(
              std::vector<int>(fixed.begin() + j * (S + 1), fixed.begin() + (j + 1) * (S + 1)),
              sh.layers);
          const Evaluation e = evaluate(r, c);
          if (!e.feasible) continue;
          EXPECT_LE(t_on, e.iteration_time_s + tol)
              << sh.layers << " vocab " << vocab << " k " << k << " " << r.search.pp_layout;
          if (std::abs(t_on - e.iteration_time_s) <= tol) ++matched;
        }
      }
    }
  }
  std::fprintf(stderr,
               "%d cases; with Megatron's layouts faster in %d (mean gain %.2f %% there), the "
               "answer is one of them in %d\n",
               cases, faster, faster ? 100.0 * gain / faster : 0.0, matched);
  ASSERT_GE(cases, 100);
  EXPECT_GE(faster, 1);  // the candidates change some answers
}

}  // namespace
}  // namespace ppsearch
