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
#include "ppsearch/cost/attention_window.hpp"

#include <algorithm>

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

void apply_attention_window(const Problem& pb, const Candidate& c, ItemCost* L) {
  const ModelSpec& m = pb.model;
  const double f = attention_work_factor(m);
  if (f >= 1.0) return;
  // The full causal core attention items.cpp charged (docs/algorithms.md §3.3): half of
  // 4·b·s_q·s·h_q/t executed, at gpu.attention_efficiency scaled by the stack's
  // training.attention_efficiency_scale (search/evaluate.cpp stack_costs); backward 2.5×.
  const double t = c.tp, m_tok = double(c.mbs) * m.seq_length / c.cp;
  const double hq = double(m.attention_heads) * m.head_dim;
  const double eff =
      std::min(1.0, pb.gpu.attention_efficiency * pb.training.attention_efficiency_scale);
  const double att_fwd = 0.5 * 4.0 * m_tok * m.seq_length * hq / t /
                         (pb.gpu.peak_flop_per_s * eff) /
                         fp8_attention_speedup(pb.training, pb.gpu);  // as items.cpp
  const double cut_fwd = att_fwd * (1.0 - f), cut_bwd = 2.5 * cut_fwd;
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
