// Megatron-LM's pipeline layout notation read into ppsearch's stage bounds (pipeline_layout.hpp):
// the round trip with the layouts ppsearch prints (cli/emit.cpp megatron_layout), the Bridge
// DeepSeek-V3 layouts, and every malformed form refused with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ppsearch/search/pipeline_layout.hpp"

namespace ppsearch {
namespace {

std::vector<int> parse_ok(const std::string& text, int layers, int mtp = 0) {
  std::vector<int> b;
  std::string err;
  EXPECT_TRUE(parse_pipeline_layout(text, layers, mtp, &b, &err)) << text << ": " << err;
  return b;
}

std::string parse_error(const std::string& text, int layers, int mtp = 0) {
  std::vector<int> b;
  std::string err;
  EXPECT_FALSE(parse_pipeline_layout(text, layers, mtp, &b, &err)) << text;
  EXPECT_FALSE(err.empty()) << text;
  return err;
}

TEST(PipelineLayout, SimpleLayouts) {
  // Items: 0 embedding, 1..L layers, L+1 output layer + loss.
  EXPECT_EQ(parse_ok("Et*19|t*21|t*21|t*19L", 80), (std::vector<int>{0, 20, 41, 62, 82}));
  EXPECT_EQ(parse_ok("EttL", 2), (std::vector<int>{0, 4}));
  EXPECT_EQ(parse_ok("E|t*4|L", 4), (std::vector<int>{0, 1, 5, 6}));
  EXPECT_EQ(pipeline_layout_stages("E|t*4|L"), 3);
}

TEST(PipelineLayout, BridgeDeepSeekV3Layouts) {
  // Megatron-Bridge deepseek_v3.py set_deepseek_v3_pipeline_model_parallel_layout, PP 16 and
  // PP 2 × VP 8 (61 layers, one MTP module with the loss in the last stage).
  const std::vector<int> pp16 = parse_ok("Et*4|(t*4|)*14tmL", 61, 1);
  ASSERT_EQ(pp16.size(), 17u);
  EXPECT_EQ(pp16[1], 5);              // E + 4 layers
  EXPECT_EQ(pp16[15], 61);            // 14 stages of 4 after it
  EXPECT_EQ(pp16[16] - pp16[15], 2);  // layer 61 and the head (with MTP)
  EXPECT_EQ(pp16.back(), 63);
  EXPECT_EQ(pipeline_layout_stages("Et*4|(t*4|)*14tmL"), 16);
  // Cosmetic commas, as Megatron's own docstring writes them; a standalone MTP segment ("m|L",
  // Megatron's mtp_standalone) is refused: ppsearch costs the modules with the output layer.
  EXPECT_EQ(parse_ok("Et*2,t|(t|)*2,tL", 6), (std::vector<int>{0, 4, 5, 6, 8}));
  EXPECT_NE(parse_error("Ettt|(tt|)*29,m|L", 61, 1).find("no embedding, layer or loss"),
            std::string::npos);
}

TEST(PipelineLayout, RandomRoundTrip) {
  // Any partition written in the notation (as cli/emit.cpp prints it) reads back unchanged.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const int L = 1 + static_cast<int>(rng() % 40);
    const int S = 1 + static_cast<int>(rng() % std::min(L + 2, 12));
    // Random strictly increasing bounds over items 0..L+1.
    std::vector<int> cuts;
    for (int i = 1; i <= L + 1; ++i) cuts.push_back(i);
    std::shuffle(cuts.begin(), cuts.end(), rng);
    cuts.resize(S - 1);
    std::sort(cuts.begin(), cuts.end());
    std::vector<int> b{0};
    b.insert(b.end(), cuts.begin(), cuts.end());
    b.push_back(L + 2);
    const int mtp = static_cast<int>(rng() % 3);
    std::string text;
    for (int s = 0; s < S; ++s) {
      if (s) text += "|";
      for (int i = b[s]; i < b[s + 1]; ++i) {
        if (i == 0) text += "E";
        if (i >= 1 && i <= L) text += "t";
        if (i == L + 1) text += std::string(mtp, 'm') + "L";
      }
    }
    EXPECT_EQ(parse_ok(text, L, mtp), b) << text;
  }
}

TEST(PipelineLayout, MalformedLayoutsAreRefused) {
  parse_error("t*4L", 4);             // no embedding
  parse_error("Et*4", 4);             // no loss
  parse_error("Et*3L", 4);            // layer count
  parse_error("Et*4|L|", 4);          // empty last segment
  parse_error("E||t*4L", 4);          // empty segment
  parse_error("Et*4xL", 4);           // unknown character
  parse_error("E(t*2|L", 2);          // unbalanced
  parse_error("E(t|)L", 1);           // group without a count
  parse_error("Et*L", 1);             // '*' without a count
  parse_error("Et*4mL", 4, 0);        // MTP count
  parse_error("Et*4|m|L", 4, 1);      // MTP apart from the loss: not how ppsearch costs it
  parse_error("Et*2mtL", 3, 1);       // a layer after MTP
  parse_error("Et*99999999999L", 4);  // absurd count
  EXPECT_NE(parse_error("Et*3L", 4).find("4"), std::string::npos);
  EXPECT_EQ(pipeline_layout_stages("E(t|"), 0);
}

}  // namespace
}  // namespace ppsearch
