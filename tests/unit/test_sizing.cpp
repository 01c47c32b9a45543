// Sizing (time to train, GPU-hours, cost), the token-count parser of training.tokens, and the
// folding of near-duplicate rows in the printed table. Expected values are worked out by hand
// from the definitions in docs/results.md, not taken from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ppsearch/search/sizing.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {
namespace {

TEST(TokenCount, PlainNumbersAndSuffixes) {
  struct Case {
    const char* text;
    double value;
  };
  const Case cases[] = {{"15T", 15e12},     {"1.5T", 1.5e12}, {"300B", 300e9},   {"300G", 300e9},
                        {"2.5e12", 2.5e12}, {"7M", 7e6},      {"4k", 4e3},       {"4K", 4e3},
                        {"0", 0},           {" 15T ", 15e12}, {"123456", 123456}};
  for (const Case& c : cases) {
    double x = -1;
    EXPECT_TRUE(parse_token_count(c.text, &x)) << c.text;
    EXPECT_DOUBLE_EQ(x, c.value) << c.text;
  }
  for (const char* bad : {"", "T", "15TT", "15 T", "15X", "abc", "1e400", "nan", "15t"}) {
    double x = -1;
    EXPECT_FALSE(parse_token_count(bad, &x)) << bad;
  }
}

TEST(TokenCount, KeyRangeAndRoundTrip) {
  Problem p;
  EXPECT_FALSE(apply_key(p, "training.tokens", "15T", "test").has_value());
  EXPECT_DOUBLE_EQ(p.training.tokens, 15e12);
  // The canonical text loads back to the same value.
  Problem q;
  EXPECT_FALSE(apply_key(q, "training.tokens", key_value(p, "training.tokens"), "t").has_value());
  EXPECT_EQ(q.training.tokens, p.training.tokens);
  for (const char* bad : {"-1", "-5T", "2e18", "lots"}) {
    auto issue = apply_key(p, "training.tokens", bad, "--tokens");
    ASSERT_TRUE(issue.has_value()) << bad;
    EXPECT_EQ(issue->source, "--tokens");
    EXPECT_NE(issue->allowed.find("15T"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(p.training.tokens, 15e12);  // untouched by the refused values
}

TEST(Price, KeyRange) {
  Problem p;
  EXPECT_EQ(p.cluster.price_per_gpu_hour, 0.0);
  EXPECT_FALSE(apply_key(p, "cluster.price_per_gpu_hour", "2.5", "t").has_value());
  EXPECT_DOUBLE_EQ(p.cluster.price_per_gpu_hour, 2.5);
  EXPECT_TRUE(apply_key(p, "cluster.price_per_gpu_hour", "-1", "t").has_value());
  EXPECT_TRUE(apply_key(p, "cluster.price_per_gpu_hour", "2.5T", "t").has_value());
}

TEST(TrainingCost, Arithmetic) {
  // 15e12 tokens at 3e6 tokens/s on 512 GPUs: 5e6 s; 512 · 5e6 / 3600 GPU-hours; × 2.5.
  const TrainingCost c = training_cost(15e12, 3e6, 512, 2.5);
  EXPECT_DOUBLE_EQ(c.time_to_train_s, 5e6);
  EXPECT_DOUBLE_EQ(c.gpu_hours, 512.0 * 5e6 / 3600.0);
  EXPECT_DOUBLE_EQ(c.cost, 512.0 * 5e6 / 3600.0 * 2.5);
  // No price: time and GPU-hours, no cost.
  const TrainingCost n = training_cost(15e12, 3e6, 512, 0);
  EXPECT_DOUBLE_EQ(n.time_to_train_s, 5e6);
  EXPECT_TRUE(std::isnan(n.cost));
  // No token count, or an infeasible row (NaN rate): nothing.
  for (const TrainingCost& z :
       {training_cost(0, 3e6, 512, 2.5), training_cost(15e12, std::nan(""), 512, 2.5),
        training_cost(15e12, 0, 512, 2.5)}) {
    EXPECT_TRUE(std::isnan(z.time_to_train_s));
    EXPECT_TRUE(std::isnan(z.gpu_hours));
    EXPECT_TRUE(std::isnan(z.cost));
  }
}

TEST(Fold, NearDuplicatesJoinTheFirstRowOfTheirGroup) {
  std::vector<FoldKey> rows = {
      {128, true, 10.000, 60.0},   // 0: leads
      {128, true, 10.005, 60.03},  // 1: within 0.1 % of row 0 in both → 0
      {128, true, 10.02, 60.0},    // 2: time 0.2 % off → own group
      {128, true, 10.0, 61.0},     // 3: memory 1.6 % off → own group
      {256, true, 10.0, 60.0},     // 4: other GPU count → own group
      {128, true, 10.0201, 60.0},  // 5: matches row 2 (0.001 %), not row 0 → 2
      {128, false, 10.0, 60.0},    // 6: infeasible → own group
      {128, false, 10.0, 60.0},    // 7: infeasible → own group
  };
  const std::vector<std::size_t> g = fold_near_duplicates(rows);
  const std::vector<std::size_t> want = {0, 0, 2, 3, 4, 2, 6, 7};
  EXPECT_EQ(g, want);
  // A tolerance of zero folds exact equals only.
  rows[1] = rows[0];
  const std::vector<std::size_t> exact = fold_near_duplicates(rows, 0.0);
  EXPECT_EQ(exact[1], 0U);
  EXPECT_EQ(exact[5], 5U);
}

}  // namespace
}  // namespace ppsearch
