// Sliding-window attention (docs/moe.md "Sliding-window attention"): closed forms of the work
// factor, the per-layer correction, neutrality without a window, and the config checks.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/attention_window.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/check.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// GPT-OSS-120B's attention shape (Megatron-Bridge gpt_oss_provider.py) on a dense stand-in.
Problem gpt_oss_like(int window, int skip) {
  Problem p = test::gpt_oss_dense_like();
  p.model.attention_window = window;
  p.model.window_attn_skip_freq = skip;
  return p;
}

TEST(AttentionWindow, WorkFactorClosedForm) {
  // Every other layer windowed: half of the 36 layers; a windowed layer runs w + one key block
  // = 256 keys per query against s/2 = 2048 for causal full attention.
  const ModelSpec m = gpt_oss_like(128, 2).model;
  EXPECT_DOUBLE_EQ(windowed_layer_share(m), 0.5);
  EXPECT_DOUBLE_EQ(attention_work_factor(m), 0.5 * 256.0 / 2048.0 + 0.5);
  // Every layer windowed.
  EXPECT_DOUBLE_EQ(attention_work_factor(gpt_oss_like(128, 0).model), 256.0 / 2048.0);
  // Every third of 36 layers full: 12 full, 24 windowed.
  EXPECT_DOUBLE_EQ(windowed_layer_share(gpt_oss_like(128, 3).model), 24.0 / 36.0);
  // An odd layer count: 5 layers, every 2nd full = 2 full.
  Problem five = gpt_oss_like(128, 2);
  five.model.layers = 5;
  EXPECT_DOUBLE_EQ(windowed_layer_share(five.model), 3.0 / 5.0);
}

TEST(AttentionWindow, NoWindowOrAWindowAsLongAsHalfTheSequenceIsFullAttention) {
  EXPECT_DOUBLE_EQ(attention_work_factor(gpt_oss_like(0, 0).model), 1.0);
  EXPECT_FALSE(has_attention_window(gpt_oss_like(0, 0).model));
  // skip frequency 1: every layer is full attention.
  EXPECT_DOUBLE_EQ(attention_work_factor(gpt_oss_like(128, 1).model), 1.0);
  // w + block ≥ s/2: the window skips nothing the causal kernel would run.
  EXPECT_DOUBLE_EQ(attention_work_factor(gpt_oss_like(2048 - 128, 0).model), 1.0);
  EXPECT_LT(attention_work_factor(gpt_oss_like(2048 - 129, 0).model), 1.0);
}

TEST(AttentionWindow, LayerCorrectionIsTheSkippedCoreAttention) {
  const Problem p = gpt_oss_like(128, 2);
  const Links l = effective_links(p.cluster);
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const Candidate c = make_candidate(p, 2, 1, 32, 2, Schedule::k1F1B, r, 1, 1);
    const ItemCost full = chain_costs(p, c, l).layer;
    ItemCost win = full;
    apply_attention_window(p, c, &win);
    // items.cpp: half of 4·b·s_q·s·h_q/t at peak·attention_efficiency; backward 2.5×.
    const double m_tok = 2.0 * 4096, hq = 64.0 * 64;
    const double att = 0.5 * 4.0 * m_tok * 4096 * hq / 2 / (p.gpu.peak_flop_per_s * 0.5);
    // Minus the windowed query tiles' fixed time: half the layers, 2·4096/128 tiles × 64/2
    // heads on this GPU, 2.1 µs each over the GPU's SMs.
    const double tiles_time = 0.5 * (2.0 * 4096 / 128) * (64.0 / 2) * 2.1e-6 / p.gpu.sm_count;
    EXPECT_NEAR(windowed_tile_overhead_fwd(p, c), tiles_time, 1e-15);
    const double cut = att * (1.0 - attention_work_factor(p.model)) - tiles_time;
    const double replay = r == Recompute::kNone ? 0.0 : cut;  // both replay the core attention
    EXPECT_NEAR(full.fwd_s - win.fwd_s, cut, 1e-12);
    EXPECT_NEAR(full.bwd_s - win.bwd_s, 2.5 * cut + replay, 1e-12);
    EXPECT_NEAR(full.compute_s - win.compute_s, 3.5 * cut + replay, 1e-12);
    EXPECT_DOUBLE_EQ(full.act_bytes, win.act_bytes);  // FlashAttention keeps O and the LSE only
  }
}

TEST(AttentionWindow, WindowedModelIsFasterAndAFullWindowChangesNothing) {
  const Problem plain = gpt_oss_like(0, 0);
  const Candidate c = make_candidate(plain, 1, 2, 32, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  const Evaluation base = evaluate(plain, c);
  ASSERT_TRUE(base.feasible);
  const Evaluation win = evaluate(gpt_oss_like(128, 2), c);
  ASSERT_TRUE(win.feasible);
  EXPECT_LT(win.iteration_time_s, base.iteration_time_s);
  // A window that skips nothing takes the windowed code path with an identical answer.
  const Evaluation same = evaluate(gpt_oss_like(4096, 2), c);
  EXPECT_DOUBLE_EQ(same.iteration_time_s, base.iteration_time_s);
  EXPECT_DOUBLE_EQ(same.needed_bytes, base.needed_bytes);
}

TEST(AttentionWindow, TileOverheadMatchesTheMeasuredWindowedForward) {
  // GPT-OSS's windowed layer at s = 8192, one sequence, on GB300 (148 SMs): key blocks at the
  // full layer's measured 0.485 µs per block (cuDNN 9.27, cudnn-frontend benchmark) plus the
  // tile overhead reproduce the measured 0.0933 ms of the windowed forward within 10 %.
  Problem p = gpt_oss_like(128, 0);
  p.model.seq_length = 8192;
  p.gpu.sm_count = 148;
  const Candidate c = make_candidate(p, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  const double tiles = 8192.0 / 128 * 64;
  const double blocks = tiles * 2 * 0.485e-6 / 148;
  EXPECT_NEAR(windowed_tile_overhead_fwd(p, c), tiles * 2.1e-6 / 148, 1e-15);
  EXPECT_NEAR(blocks + windowed_tile_overhead_fwd(p, c), 0.0933e-3, 0.1 * 0.0933e-3);
  // No window, no overhead; no SM count, no overhead.
  EXPECT_EQ(windowed_tile_overhead_fwd(gpt_oss_like(0, 0), c), 0.0);
  p.gpu.sm_count = 0;
  EXPECT_EQ(windowed_tile_overhead_fwd(p, c), 0.0);
}

bool has_issue(const Problem& p, const std::string& key) {
  for (const ConfigIssue& i : check(p))
    if (i.key == key) return true;
  return false;
}

TEST(AttentionWindow, CheckNamesTheSkipFrequencyKey) {
  EXPECT_FALSE(has_issue(gpt_oss_like(128, 2), "model.window_attn_skip_freq"));
  EXPECT_TRUE(has_issue(gpt_oss_like(0, 2), "model.window_attn_skip_freq"));
  EXPECT_TRUE(has_issue(gpt_oss_like(128, 37), "model.window_attn_skip_freq"));
  EXPECT_FALSE(has_issue(gpt_oss_like(128, 36), "model.window_attn_skip_freq"));
}

}  // namespace
}  // namespace ppsearch
