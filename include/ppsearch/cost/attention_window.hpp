// Sliding-window (local) attention on some of a model's layers (docs/moe.md "Sliding-window
// attention"), e.g. GPT-OSS: a window of 128 tokens on every other layer. Pure core.
#pragma once

#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Keys of one FlashAttention key block: a block partly inside the window is computed in full.
inline constexpr double kAttentionKeyBlock = 128.0;

// model.attention_window > 0 and at least one layer is windowed, or a document mask
// (model.attention_document_tokens > 0, cost/document_mask.hpp): the layer correction applies.
bool has_attention_window(const ModelSpec&);
// Share of the layers with windowed attention: all of them with model.window_attn_skip_freq = 0,
// otherwise all but every N-th (N = window_attn_skip_freq).
double windowed_layer_share(const ModelSpec&);
// Core-attention work of the average layer relative to full causal attention (items.cpp's
// s/2 keys per query), in (0, 1]; 1 without a window or document mask. With a document mask
// every layer computes at most cost/document_mask.hpp's keys per query.
double attention_work_factor(const ModelSpec&);
// Removes from a layer costed with full causal attention (items.cpp) the core-attention work the
// window skips: forward, backward, and the forward replays of full and selective recomputation.
void apply_attention_window(const Problem&, const Candidate&, ItemCost*);

}  // namespace ppsearch
