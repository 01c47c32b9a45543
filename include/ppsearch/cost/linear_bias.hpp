// Biases on the linear layers (model.linear_bias, Megatron-Core add_bias_linear; GPT-OSS) and
// what they cost beyond the GEMMs (docs/moe.md "Linear biases"). Pure core.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// The memory-bound passes of the routed experts' FC2 bias, applied outside the grouped GEMM.
struct ExpertBiasCost {
  double fwd_s = 0;            // forward, per MoE layer and micro-batch
  double bwd_s = 0;            // backward (autograd of the same expression)
  double transient_bytes = 0;  // fp32 temporaries alive in the forward
};

// HBM bytes per element of the [rows × h] expert output that the FC2 bias path moves, forward
// and backward (derivation in linear_bias.cpp).
inline constexpr double kExpertBiasFwdBytes = 28.0;
inline constexpr double kExpertBiasBwdBytes = 36.0;

// true when the routed experts' FC2 bias is applied by Megatron-Core's per-expert fp32 path:
// a MoE model with model.linear_bias, experts not run by the fused grouped MLP
// (training.moe_fused_grouped_mlp, the Transformer Engine op fuser that folds the bias in).
bool expert_bias_unfused(const Problem&);

// The cost of that path for `rows` routed token copies of width h on this GPU (0 when
// expert_bias_unfused is false).
ExpertBiasCost expert_bias_cost(const Problem&, double rows);

}  // namespace ppsearch
