// Document (block-causal) attention masks: sequences packed from several documents whose
// attention stays inside each document, e.g. torchtitan's FlexAttention flavours with
// attn_mask_type = "block_causal" (docs/step-time.md "Document-masked attention"). Pure core.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// model.attention_document_tokens > 0: the core attention is masked per packed document.
bool has_document_mask(const ModelSpec&);

// Keys the attention kernel computes per query under the document mask: the mean document
// length D (the expected same-document keys before a query when document lengths are
// exponential, i.e. memoryless) plus one key block of the block-sparse kernel, at most the
// s/2 of plain causal attention. 0 without a document mask.
double document_mask_keys(const ModelSpec&);

// Core-attention work relative to plain causal attention (s/2 keys per query), in (0, 1]:
// document_mask_keys / (s/2); 1 without a document mask.
double document_mask_factor(const ModelSpec&);

}  // namespace ppsearch
