// Causal attention's rate by length (cost/attention_window.hpp attention_length_factor;
// docs/step-time.md "Attention efficiency by sequence length"): n / (n + gpu.attention_tile_blocks)
// for calls over n 128-key blocks, s / cp keys per call. Closed forms against the layer costs of
// items.cpp and the windowed cut of attention_window.cpp, and the FlashAttention-3 chart it was
// read from.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/builders.hpp"
#include "ppsearch/cost/attention_window.hpp"
#include "ppsearch/cost/items.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

TEST(AttentionLength, FactorIsTheClosedForm) {
  GpuSpec g;
  g.attention_tile_blocks = 0.0;
  EXPECT_EQ(attention_length_factor(g, 8192), 1.0);  // the key at 0: one rate at every length
  g.attention_tile_blocks = 2.47;
  EXPECT_DOUBLE_EQ(attention_length_factor(g, 8192), 64.0 / (64.0 + 2.47));
  EXPECT_DOUBLE_EQ(attention_length_factor(g, 128), 1.0 / 3.47);
  EXPECT_EQ(attention_length_factor(g, 0), 1.0);
  // Monotone in the length, below 1, towards 1.
  double prev = 0;
  for (double s = 256; s <= 1 << 20; s *= 2) {
    const double f = attention_length_factor(g, s);
    EXPECT_GT(f, prev);
    EXPECT_LT(f, 1.0);
    prev = f;
  }
  EXPECT_GT(prev, 0.999);
}

// The chart the constant comes from: FlashAttention-3 paper (Shah et al. 2024, Figure 5, causal
// forward, head dim 128, H100), cuDNN at 1k..16k. Ratios to the 16k point, which the factor must
// reproduce within 3 % (the figure docs/step-time.md states).
TEST(AttentionLength, ReproducesTheFa3ChartFrom1k) {
  GpuSpec g;
  g.attention_tile_blocks = 2.47;
  const double s[] = {1024, 2048, 4096, 8192, 16384};
  const double tflops[] = {410, 484, 518, 529, 539};
  for (int i = 0; i < 5; ++i) {
    const double measured = tflops[i] / tflops[4];
    const double model = attention_length_factor(g, s[i]) / attention_length_factor(g, s[4]);
    EXPECT_NEAR(model / measured, 1.0, 0.03) << s[i];
  }
}

TEST(AttentionLength, CallKeysSplitOverContextParallelism) {
  Problem p = llama70b_h200();
  Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_EQ(attention_call_keys(p.model, c), 8192.0);
  c.cp = 4;
  EXPECT_EQ(attention_call_keys(p.model, c), 2048.0);
}

// The layer's core attention takes exactly the factor: the forward grows by the attention
// forward × (1/f − 1), and the attention forward is read off the key at 0 by doubling the
// efficiency (which halves it).
TEST(AttentionLength, LayerForwardGrowsByTheAttentionShare) {
  Problem p = llama70b_h200();
  p.gpu.attention_efficiency = 0.4;
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  const Links links = effective_links(p.cluster);
  const double base = chain_costs(p, c, links).layer.fwd_s;
  Problem fast = p;
  fast.gpu.attention_efficiency = 0.8;
  const double att = 2.0 * (base - chain_costs(fast, c, links).layer.fwd_s);
  ASSERT_GT(att, 0.0);
  Problem q = p;
  q.gpu.attention_tile_blocks = 2.47;
  const double f = attention_length_factor(q.gpu, 8192);
  EXPECT_NEAR(chain_costs(q, c, links).layer.fwd_s - base, att * (1.0 / f - 1.0), 1e-12);
}

// A windowed layer's cut is taken from the same attention items.cpp charged: with the factor, a
// model whose every layer is windowed keeps f·work + the tile overhead of the slower attention, so
// the windowed layer slows by the same factor on its remaining key-block work.
TEST(AttentionLength, WindowedCutUsesTheSameRate) {
  Problem p = llama70b_h200();
  p.model.attention_window = 1024;
  p.model.window_attn_skip_freq = 0;  // every layer windowed
  p.gpu.attention_efficiency = 0.4;
  const Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  const auto windowed_fwd = [&](const Problem& q) {
    ItemCost L = chain_costs(q, c, effective_links(q.cluster)).layer;
    apply_attention_window(q, c, &L);
    return L.fwd_s;
  };
  Problem on = p;
  on.gpu.attention_tile_blocks = 2.47;
  const double f = attention_length_factor(on.gpu, 8192);
  // Remaining key-block work: the attention forward (as above) × the work factor.
  Problem fast = p;
  fast.gpu.attention_efficiency = 0.8;
  const double att = 2.0 * (chain_costs(p, c, effective_links(p.cluster)).layer.fwd_s -
                            chain_costs(fast, c, effective_links(fast.cluster)).layer.fwd_s);
  const double kept = att * attention_work_factor(p.model);
  EXPECT_NEAR(windowed_fwd(on) - windowed_fwd(p), kept * (1.0 / f - 1.0), 1e-12);
}

}  // namespace
}  // namespace ppsearch
