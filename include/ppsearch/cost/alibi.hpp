// ALiBi position biases added to attention scores that are materialised in HBM (model.alibi with
// training.unfused_attention; docs/step-time.md "ALiBi on materialised attention scores").
// Pure core.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// HBM bytes per element of the [b·heads/t, s_q, s_k] score tensor in each forward pass: the
// broadcast copy of the bias into the baddbmm result (2-byte write) and the GEMM's read of it as
// its C operand with beta != 0 (2-byte read); alibi.cpp gives the source.
inline constexpr double kAlibiBytesPerScore = 4.0;

// true when the layers add ALiBi to scores in HBM: model.alibi with training.unfused_attention.
// A fused attention kernel (FlashAttention-2 >= 2.4 alibi_slopes, llm-foundry's Triton kernel with
// its bias row) adds the bias in registers, which the engine does not charge.
bool alibi_materialized(const Problem&);

// Seconds of the ALiBi bias traffic of one forward pass of one layer on one GPU: `tokens` query
// tokens (micro-batch × sequence / cp), `keys` keys per query row (the sequence), `heads` query
// heads on the GPU (heads / tp). Zero unless alibi_materialized. `pb` is the problem whose GPU
// the layer costs use (cost/items.cpp stack_costed: the eager stacks' halved
// memory_efficiency is undone here, as these bytes are counted exactly).
double alibi_bias_fwd_s(const Problem& pb, double tokens, double keys, double heads);

}  // namespace ppsearch
