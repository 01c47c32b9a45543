// The clamped gated activation of GPT-OSS (model.activation_clamp; Megatron-Core
// activation_func_clamp_value) and what its eager clamp costs beyond the fused activation
// (docs/moe.md "Clamped GLU activation"). Pure core.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// The memory-bound passes of the clamp of the routed experts' FC1 output, outside the fused
// activation kernel.
struct GluClampCost {
  double fwd_s = 0;            // forward, per MoE layer and micro-batch
  double bwd_s = 0;            // backward (autograd of the clamps, the cat and the chunk)
  double saved_bytes = 0;      // extra activation kept for the backward (FC1 output twice)
  double recompute_fwd_s = 0;  // the forward again under moe_act recomputation
};

// HBM bytes per element of the routed experts' FC1 output [rows × 2F_e/etp] (derivation in
// glu_clamp.cpp).
inline constexpr double kGluClampFwdBytes = 8.0;    // two clamps (2 + 2) and the cat (2 + 2)
inline constexpr double kGluClampBwdBytes = 15.0;   // clamp_backward 11 on average, chunk's cat 4
inline constexpr double kGluClampSavedBytes = 2.0;  // the clamped bf16 copy saved beside the input

// true when the routed experts' clamp runs eagerly: a gated MoE model with
// model.activation_clamp > 0 whose experts do not run through the fused grouped MLP
// (training.moe_fused_grouped_mlp: Transformer Engine's ScaledClampedQGeGLU op clamps inside).
bool glu_clamp_unfused(const Problem&);

// The cost of the eager clamp for `rows` routed token copies whose FC1 output is `fc1_n` wide on
// this GPU; `moe_act` = the experts' activation is recomputed (selective recomputation with
// moe_act): nothing extra is saved and the forward runs again before the backward.
GluClampCost glu_clamp_cost(const Problem&, double rows, double fc1_n, bool moe_act);

}  // namespace ppsearch
