// Sliding-window (local) attention on some of a model's layers (docs/moe.md "Sliding-window
// attention"), e.g. GPT-OSS: a window of 128 tokens on every other layer. Pure core.
#pragma once

#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Keys of one FlashAttention key block: a block partly inside the window is computed in full.
inline constexpr double kAttentionKeyBlock = 128.0;
// Queries of one attention query tile (cuDNN's and FlashAttention's 128-row tile).
inline constexpr double kAttentionQueryTile = 128.0;
// Fixed SM time of one query tile (128 queries of one head) of a windowed layer's forward beyond
// its key blocks: loading the Q tile, the softmax statistics and sink, writing O and the LSE,
// which a full-attention tile spreads over s/256 key blocks on average and a windowed one over
// two. Measured from NVIDIA/cudnn-frontend benchmark/attention_inference/results/gpt_oss
// (cuDNN 9.27, GPT-OSS attention with sinks, 64 heads of 64, window 128): 2.3 us on GB300,
// 1.9-2.0 us on H200 (attention_window.cpp).
inline constexpr double kWindowedTileOverheadS = 2.1e-6;

// Causal attention's rate by length (docs/step-time.md "Attention efficiency by sequence
// length"): n / (n + gpu.attention_tile_blocks), n = keys_per_call / kAttentionKeyBlock, the
// factor on gpu.attention_efficiency for one kernel call over keys_per_call keys; 1 when the key
// is 0 or keys_per_call is not positive.
double attention_length_factor(const GpuSpec&, double keys_per_call);
// The keys of one core-attention call of a candidate's layer: the sequence, split over context
// parallelism (each ring step or load-balanced chunk pair covers s / cp keys).
double attention_call_keys(const ModelSpec&, const Candidate&);

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
// window skips and adds the windowed query tiles' fixed time: forward, backward, and the forward
// replays of full and selective recomputation.
void apply_attention_window(const Problem&, const Candidate&, ItemCost*);
// The windowed query tiles' fixed forward time of the average layer (0 without a window, or
// without gpu.sm_count).
double windowed_tile_overhead_fwd(const Problem&, const Candidate&);

}  // namespace ppsearch
