// YaRN RoPE without a fused kernel (docs/moe.md "YaRN RoPE").
//
// GPT-OSS applies RoPE with YaRN frequency scaling, which Megatron-Core runs as its own
// position-embedding type (position_embedding_type = "yarn", YarnRotaryEmbedding;
// NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py @21b02e0).
// Megatron-Bridge's GPTModelProvider.provide() turns apply_rope_fusion off for every
// position_embedding_type other than "rope" (src/megatron/bridge/utils/fusions.py
// validate_rope_fusion_compatibility, the same at 7af9601, 21b02e0, 0fbfe7d and fcbb603, the
// releases behind the NeMo 25.11 to 26.06 containers), although the performance scripts ask for
// it (scripts/performance/utils/overrides.py: apply_rope_fusion = True). Megatron-Core then
// rotates q and k with the eager _apply_rotary_pos_emb_bshd (NVIDIA/Megatron-LM
// megatron/core/models/common/embeddings/rope_utils.py, core_v0.15.0):
//
//     t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
//     t = (t * cos_) + (_rotate_half(t) * sin_)        # _rotate_half: cat((-x2, x1))
//     return torch.cat((t, t_pass), dim=-1)
//
// HBM bytes per bf16 element of q or k: forward t*cos 2 + 2, -x2 1 + 1, cat 2 + 2, *sin 2 + 2,
// the sum 4 + 2, the final cat 2 + 2 = 24; backward (autograd) grad*cos 2 + 2, grad*sin 2 + 2,
// the negation 1 + 1, the chunk's gradient assembled 2 + 2, the two gradients of t summed 4 + 2,
// the slice's gradient (zeros, then a copy) 2 + 2 + 2 = 26. The fused kernel reads and writes
// each element once per pass, which items.cpp's element-wise term charges (4 forward, 8
// backward); the difference is charged here. The cos/sin tables ([s, 64]) are negligible.
#include "ppsearch/cost/rope.hpp"

namespace ppsearch {

bool rope_unfused(const Problem& pb) { return pb.model.yarn_rope && pb.training.fused_elementwise; }

RopeExtra unfused_rope_extra(const Problem& pb, double tokens, double tp) {
  RopeExtra out;
  if (!rope_unfused(pb) || tokens <= 0 || tp <= 0) return out;
  const double bw = pb.gpu.hbm_bytes_per_s * pb.gpu.memory_efficiency;
  if (bw <= 0) return out;
  const ModelSpec& m = pb.model;
  const double elems =
      tokens * (double(m.attention_heads) + double(m.kv_heads)) * double(m.head_dim) / tp;
  out.fwd_s = (kUnfusedRopeFwdBytes - kFusedRopeFwdBytes) * elems / bw;
  out.bwd_s = (kUnfusedRopeBwdBytes - kFusedRopeBwdBytes) * elems / bw;
  return out;
}

}  // namespace ppsearch
