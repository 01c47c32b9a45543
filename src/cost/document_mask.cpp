// Document (block-causal) attention masks (docs/step-time.md "Document-masked attention").
//
// Training data is packed: documents (each with BOS/EOS) are concatenated and cut into
// sequences of seq_length tokens. With a document mask a query attends only to the earlier keys
// of its own document. torchtitan's "8B_flex_attn" flavour sets attn_mask_type = "block_causal"
// (torchtitan/models/llama3/__init__.py @ce8a56fe7): get_attention_masks builds a FlexAttention
// BlockMask from the EOS positions (document mask AND causal), and FlexAttention skips the
// 128 x 128 blocks the mask empties entirely and computes partly masked blocks in full (the
// BlockMask of torch.nn.attention.flex_attention, default block size 128; Dong et al. 2024,
// "Flex Attention: A Programming Model for Generating Optimized Attention Kernels").
//
// Work per query. For a query at a uniformly random position of the packed stream, the
// expected number of earlier keys in its document is the mean backward recurrence time of the
// document boundaries, E[L^2] / (2 E[L]) for document length L; for exponential (memoryless)
// lengths it equals the mean length D. The block-sparse kernel adds up to one key block on
// the document's first key block (as attention_window.cpp charges a window): min(s/2, D + 128)
// keys per query, against the s/2 that items.cpp charges for plain causal attention. The
// correction is applied with the sliding-window one (attention_window.cpp): forward, backward
// and the forward replays of recomputation; FLOPs conventions (MFU) are unchanged.
#include "ppsearch/cost/document_mask.hpp"

#include <algorithm>

#include "ppsearch/cost/attention_window.hpp"

namespace ppsearch {

bool has_document_mask(const ModelSpec& m) { return m.attention_document_tokens > 0; }

double document_mask_keys(const ModelSpec& m) {
  if (!has_document_mask(m) || m.seq_length <= 0) return 0.0;
  const double half = 0.5 * m.seq_length;
  return std::min(half, double(m.attention_document_tokens) + kAttentionKeyBlock);
}

double document_mask_factor(const ModelSpec& m) {
  if (!has_document_mask(m) || m.seq_length <= 0) return 1.0;
  return document_mask_keys(m) / (0.5 * m.seq_length);
}

}  // namespace ppsearch
