// Rotary position embedding applied without a fused kernel (model.yarn_rope; docs/moe.md
// "YaRN RoPE"). Pure core.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// HBM bytes per element of the rotated q and k: Megatron-Core's unfused
// _apply_rotary_pos_emb_bshd forward and its autograd backward (rope.cpp), and the fused
// kernel's read and write that items.cpp's element-wise term already charges (2 + 2 forward,
// twice that backward).
inline constexpr double kUnfusedRopeFwdBytes = 24.0;
inline constexpr double kUnfusedRopeBwdBytes = 26.0;
inline constexpr double kFusedRopeFwdBytes = 4.0;
inline constexpr double kFusedRopeBwdBytes = 8.0;

struct RopeExtra {
  double fwd_s = 0;  // per layer and micro-batch, beyond items.cpp's fused RoPE
  double bwd_s = 0;
};

// true when the layers' RoPE runs unfused: model.yarn_rope with the fused element-wise kernels of
// the stack (training.fused_elementwise; eager stacks already pay for unfused element-wise ops).
bool rope_unfused(const Problem&);

// The extra time of the unfused RoPE on `tokens` tokens of one layer at tensor parallelism `tp`
// (q and k: (heads + kv_heads)·head_dim/tp elements per token); zero unless rope_unfused.
RopeExtra unfused_rope_extra(const Problem&, double tokens, double tp);

}  // namespace ppsearch
