// Sliding-window attention (docs/moe.md "Sliding-window attention").
//
// Megatron-Core's TransformerConfig.window_size = (w, 0) restricts each query to the w keys
// before it, and window_attn_skip_freq = N makes every N-th layer full attention (GPT-OSS:
// w = 128, N = 2, Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py;
// OpenAI's gpt-oss config.json sliding_window = 128 with layer_types alternating
// sliding_attention / full_attention). The fused attention kernels skip the key blocks outside
// the window (FlashAttention-2's local attention, window_size; Dao 2023) and compute a block
// that the window cuts in full, so a query block sees the window plus one key block.
//
// items.cpp costs the core attention of a causal layer as s/2 keys per query (the masked half
// skipped). A windowed layer runs min(s/2, w + block) keys per query. Attention sinks (GPT-OSS's
// learnable softmax offset per head, TE softmax_type = learnable) add one logit per head and
// row: no cost is charged for them.
//
// A windowed layer's query tile does the fixed work of every tile (load the Q tile, keep the
// softmax statistics and the sink, write O and the log-sum-exp) for only two key blocks, where
// the attention efficiency of a full layer averages it over s/256 blocks. NVIDIA/cudnn-frontend
// publishes the forward of exactly this attention (benchmark/attention_inference/configs/
// gpt_oss.py: 64 query heads and 8 KV heads of 64, sinks, window 128; results/gpt_oss/gb300/
// gpt_oss_20260928_182059.csv and h200/gpt_oss_20260928_135723.csv, cuDNN 9.27, one sequence).
// Per query tile (128 queries × one head) of SM time, time × SMs / tiles:
//   GB300 (148 SMs): full causal s = 8192 0.4364 ms → 15.8 µs for 32.5 key blocks (0.485 µs
//   each), windowed 0.0933 ms → 3.37 µs = 2 blocks + 2.40 µs; s = 32768: 0.444 µs per block,
//   windowed 3.17 µs = 2 blocks + 2.28 µs.
//   H200 (132 SMs): s = 8192 1.19 µs per block, windowed 4.37 µs = 2 blocks + 1.99 µs;
//   s = 32768 1.14 µs per block, windowed 4.17 µs = 2 blocks + 1.89 µs.
// So the windowed forward costs, beyond its key blocks, about 2.1 µs per query tile on both
// generations (kWindowedTileOverheadS): 2.75× the key-block work alone on GB300 at s = 8192. The
// backward is taken as 2.5× the forward like the key-block work (not measured).
#include "ppsearch/cost/attention_window.hpp"

#include <algorithm>
#include <cmath>

#include "ppsearch/cost/document_mask.hpp"
#include "ppsearch/cost/moe_recipe.hpp"

namespace ppsearch {

namespace {
bool has_sliding_window(const ModelSpec& m) {
  return m.attention_window > 0 && m.window_attn_skip_freq != 1;
}
}  // namespace

// A document mask (document_mask.cpp) takes the same correction path.
bool has_attention_window(const ModelSpec& m) {
  return has_sliding_window(m) || has_document_mask(m);
}

// The FlashAttention-3 paper's causal forward chart (Shah et al. 2024, arXiv 2407.08608, Figure 5,
// head dim 128, H100 SXM5): cuDNN 315, 410, 484, 518, 529, 539 TFLOP/s at s = 512, 1k, 2k, 4k,
// 8k, 16k, which n / (n + 2.47), n = s / 128, reproduces within 3 % from 1k up (docs/step-time.md
// "Attention efficiency by sequence length"). Per query tile of a causal call over n key blocks the
// kernel computes about (n + 1) / 2 blocks for n / 2 of useful work (the diagonal block in full)
// and pays a fixed load of Q and write of O and the log-sum-exp: n / (n + 1 + 2c) with c the fixed
// work in blocks; the chart's 2.47 is 1 + 2 × 0.735.
double attention_length_factor(const GpuSpec& g, double keys_per_call) {
  if (g.attention_tile_blocks <= 0 || keys_per_call <= 0) return 1.0;
  const double n = keys_per_call / kAttentionKeyBlock;
  return n / (n + g.attention_tile_blocks);
}

double attention_call_keys(const ModelSpec& m, const Candidate& c) {
  return double(m.seq_length) / std::max(1, c.cp);
}

double windowed_layer_share(const ModelSpec& m) {
  if (!has_sliding_window(m)) return 0.0;
  if (m.window_attn_skip_freq <= 0 || m.layers <= 0) return 1.0;
  // Layers 1..L, every N-th is full: floor(L / N) full layers.
  const int full = m.layers / m.window_attn_skip_freq;
  return double(m.layers - full) / m.layers;
}

double attention_work_factor(const ModelSpec& m) {
  // Document mask (document_mask.cpp): every layer computes at most its keys per query.
  const double doc = document_mask_factor(m);
  if (!has_sliding_window(m) || m.seq_length <= 0) return doc;
  const double half = 0.5 * m.seq_length;
  const double windowed =
      std::min(doc, std::min(half, m.attention_window + kAttentionKeyBlock) / half);
  const double share = windowed_layer_share(m);
  return share * windowed + (1.0 - share) * doc;
}

double windowed_tile_overhead_fwd(const Problem& pb, const Candidate& c) {
  const ModelSpec& m = pb.model;
  if (attention_work_factor(m) >= 1.0 || pb.gpu.sm_count <= 0 || c.tp <= 0 || c.cp <= 0) return 0.0;
  // Query tiles of one windowed layer on this GPU: the micro-batch's tokens (CP-sharded) in
  // 128-query tiles, times its heads (TP-sharded).
  const double m_tok = double(c.mbs) * m.seq_length / c.cp;
  const double tiles =
      std::ceil(m_tok / kAttentionQueryTile) * double(m.attention_heads) / double(c.tp);
  return windowed_layer_share(m) * tiles * kWindowedTileOverheadS / pb.gpu.sm_count;
}

void apply_attention_window(const Problem& pb, const Candidate& c, ItemCost* L) {
  const ModelSpec& m = pb.model;
  const double f = attention_work_factor(m);
  if (f >= 1.0) return;
  // The full causal core attention items.cpp charged (docs/algorithms.md §3.3): half of
  // 4·b·s_q·s·h_q/t executed, at gpu.attention_efficiency of the stack-costed problem (the
  // stack's FlashAttention generation, the Triton kernel's rate and the power limit applied,
  // cost/items.hpp stack_costed), as items.cpp charged it; backward 2.5×.
  const double t = c.tp, m_tok = double(c.mbs) * m.seq_length / c.cp;
  const double hq = double(m.attention_heads) * m.head_dim;
  const double eff =
      pb.gpu.attention_efficiency * attention_length_factor(pb.gpu, attention_call_keys(m, c));
  const double att_fwd = 0.5 * 4.0 * m_tok * m.seq_length * hq / t /
                         (pb.gpu.peak_flop_per_s * eff) /
                         fp8_attention_speedup(pb.training, pb.gpu);  // as items.cpp
  // Skipped key blocks minus the windowed tiles' fixed time (negative: the layer gets slower).
  const double cut_fwd = att_fwd * (1.0 - f) - windowed_tile_overhead_fwd(pb, c);
  const double cut_bwd = 2.5 * cut_fwd;
  // Full recomputation replays the forward; selective (Megatron's core-attention flavour)
  // replays the core attention.
  const bool replay = c.recompute == Recompute::kFull ||
                      (c.recompute == Recompute::kSelective &&
                       pb.training.selective_recompute == SelectiveRecompute::kCoreAttention);
  const double cut_b = cut_bwd + (replay ? cut_fwd : 0.0);
  L->fwd_s = std::max(0.0, L->fwd_s - cut_fwd);
  L->bwd_s = std::max(0.0, L->bwd_s - cut_b);
  L->compute_s = std::max(0.0, L->compute_s - cut_fwd - cut_b);
}

}  // namespace ppsearch
