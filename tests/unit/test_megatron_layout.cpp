// Megatron-Core's default layer split (validate/framework_layout.hpp), used by
// `ppsearch-validate --megatron-layout`: the layout text against the closed form of its bounds,
// which rows it applies to, and that the evaluator then runs exactly that split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/pipeline_layout.hpp"
#include "ppsearch/validate/framework_layout.hpp"

namespace ppsearch {
namespace {

// Bounds of the default split: virtual stage s holds layers s·k+1 … (s+1)·k, the first also the
// embedding (item 0), the last also the output layer and loss (item L+1).
std::vector<int> default_bounds(int layers, int stages) {
  const int k = layers / stages;
  std::vector<int> b(static_cast<std::size_t>(stages) + 1);
  for (int s = 0; s <= stages; ++s) b[s] = s == 0 ? 0 : 1 + s * k;
  b[stages] = layers + 2;
  return b;
}

TEST(MegatronDefaultLayout, MatchesTheClosedForm) {
  EXPECT_EQ(megatron_default_layout(8, 2, 2), "Et*2|t*2|t*2|t*2L");
  // Every divisible (layers, pp, vpp) in a range, read back by the layout parser.
  int checked = 0;
  for (int pp = 2; pp <= 9; ++pp) {
    for (int vpp = 1; vpp <= 7; ++vpp) {
      for (int layers = 1; layers <= 130; ++layers) {
        const std::string text = megatron_default_layout(layers, pp, vpp);
        if (layers % (pp * vpp) != 0) {
          EXPECT_TRUE(text.empty()) << layers << " " << pp << " " << vpp;
          continue;
        }
        ASSERT_FALSE(text.empty()) << layers << " " << pp << " " << vpp;
        std::vector<int> bounds;
        std::string why;
        ASSERT_TRUE(parse_pipeline_layout(text, layers, 0, &bounds, &why)) << text << ": " << why;
        EXPECT_EQ(bounds, default_bounds(layers, pp * vpp)) << text;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(MegatronDefaultLayout, NoSplitWithoutPipelineOrDivision) {
  EXPECT_EQ(megatron_default_layout(80, 1, 1), "");   // no pipeline
  EXPECT_EQ(megatron_default_layout(80, 8, 0), "");   // no virtual stage
  EXPECT_EQ(megatron_default_layout(126, 8, 8), "");  // 126 layers over 64 virtual stages
  EXPECT_EQ(megatron_default_layout(0, 4, 1), "");
}

RunRecord bridge_70b_row() {
  RunRecord r;
  r.id = "bridge-70b";
  r.stack = "nemo";
  r.layers = 80;
  r.tp = 4;
  r.pp = 8;
  r.vpp = 5;
  r.cp = 1;
  r.dp = 2;
  return r;
}

TEST(MegatronDefaultLayout, WhichRowsRunIt) {
  RunRecord r = bridge_70b_row();
  EXPECT_TRUE(row_runs_megatron_default_layout(r));
  r.stack = "megatron-core";
  EXPECT_TRUE(row_runs_megatron_default_layout(r));
  r.stack = "torchtitan-2024";  // torchtitan splits by its own rule
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
  r.stack = "";  // framework not stated
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
  r = bridge_70b_row();
  r.vpp.reset();  // searched: the validator tries several vpp
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
  r = bridge_70b_row();
  r.pp_layout = "Et*19|t*21|t*21|t*19L";  // the recipe's own layout wins
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
  r = bridge_70b_row();
  r.mtp_layers = 1;
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
  r = bridge_70b_row();
  r.vpp = 3;  // 80 layers do not divide over 24 virtual stages
  EXPECT_FALSE(row_runs_megatron_default_layout(r));
}

// Applied to a problem, the evaluator runs the default split: every virtual stage holds two
// layers, the first the embedding too, the last the output layer and loss.
TEST(MegatronDefaultLayout, EvaluatorRunsTheDefaultSplit) {
  Problem p = test::llama70b_h200();
  p.training.global_batch_size = 128;
  p.search.pp = {8};
  p.search.tp = {4};
  p.search.cp = {1};
  const RunRecord r = bridge_70b_row();
  ASSERT_TRUE(apply_megatron_default_layout(r, &p));
  EXPECT_EQ(p.search.pp_layout, megatron_default_layout(80, 8, 5));
  ASSERT_EQ(p.search.vpp, (std::vector<int>{5}));
  const Candidate c =
      test::make_candidate(p, 4, 8, 2, 1, Schedule::kInterleaved1F1B, Recompute::kNone, 1, 1, 5);
  const Evaluation e = evaluate(p, c);
  ASSERT_TRUE(e.feasible);
  ASSERT_EQ(e.stages.size(), 40u);
  const std::vector<int> b = default_bounds(80, 40);
  for (int s = 0; s < 40; ++s) {
    EXPECT_EQ(e.stages[s].first_layer, b[s]) << s;
    EXPECT_EQ(e.stages[s].last_layer, b[s + 1] - 1) << s;
  }
  // A row it does not apply to leaves the problem as it was.
  Problem q = test::llama70b_h200();
  RunRecord t = r;
  t.stack = "torchtitan-2024";
  EXPECT_FALSE(apply_megatron_default_layout(t, &q));
  EXPECT_TRUE(q.search.pp_layout.empty());
}

}  // namespace
}  // namespace ppsearch
