// The clamped gated activation (docs/moe.md "Clamped GLU activation").
//
// GPT-OSS clamps the gated activation's inputs (HF config.json swiglu_limit = 7.0; Megatron-Bridge
// sets activation_func_clamp_value = 7.0 with activation_func = quick_gelu, glu_linear_offset = 1
// and bias_activation_fusion = True: src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py
// @v0.2.0 and @v0.3.0, gpt_oss_bridge.py provider_bridge @v0.4.0 and @v0.5.0). Megatron-Core's
// TEGroupedMLP then calls weighted_bias_quick_geglu_impl (megatron/core/fusions/
// fused_bias_geglu.py, the same at the Megatron-LM commits the Bridge releases pin: 0d8e071
// @v0.2.0, b0cc270 @v0.3.0, d728871 @v0.4.0, d0b3b77 @v0.5.0), whose activation and probability
// scaling are one compiled kernel (jit_fuser) but whose clamp runs eagerly before it:
//
//     x_glu, x_linear = input.chunk(2, -1)
//     input = torch.cat((x_glu.clamp(min=None, max=c), x_linear.clamp(min=-c, max=c)), -1)
//
// Per bf16 element of the FC1 output [rows × 2F_e/etp], in HBM bytes:
//   forward   each clamp reads 2 and writes 2 (its half), the cat reads 2 and writes 2     =  8
//   backward  the cat's gradient is two narrow views (PyTorch cat_tensors_backward); the clamps'
//             gradients are PyTorch's clamp_backward (torch/csrc/autograd/FunctionsManual.cpp,
//             tools/autograd/derivatives.yaml `clamp: self: clamp_backward(grad, self, min,
//             max)`): with max only `where(self <= max, grad, 0)` = le (2 + 1) + where (1 + 2 +
//             2) = 8, with both bounds `where((self >= min).logical_and_(self <= max), grad, 0)`
//             = ge 3 + le 3 + logical_and_ 3 + where 5 = 14, so 11 on average over the two
//             halves; chunk's gradient (split_backward) concatenates the halves, 2 + 2        = 15
// at gpu.memory_bandwidth × memory_efficiency. Memory: each clamp saves its input (a view of
// the FC1 output) and the fused activation saves the clamped copy, so the layer keeps the FC1
// output twice (2 bytes per element more than the plain activation, which saves its input
// once). With moe_act recomputation (tensor_parallel.CheckpointWithoutOutput around the
// activation, experts.py) the forward runs under no_grad and saves only the FC1 output; the
// clamp and the cat run again before the backward. Transformer Engine's fused grouped MLP
// (use_transformer_engine_op_fuser, Megatron-Bridge cutedsl_fused_grouped_mlp) clamps inside its
// ScaledClampedQGeGLU op (experts.py _make_fused_ops @d0b3b77): nothing extra.
#include "ppsearch/cost/glu_clamp.hpp"

namespace ppsearch {

bool glu_clamp_unfused(const Problem& pb) {
  return pb.model.activation_clamp > 0 && pb.model.moe_experts > 0 &&
         pb.model.mlp == MlpKind::kSwiGLU && !pb.training.moe_fused_grouped_mlp;
}

GluClampCost glu_clamp_cost(const Problem& pb, double rows, double fc1_n, bool moe_act) {
  GluClampCost out;
  if (!glu_clamp_unfused(pb) || rows <= 0 || fc1_n <= 0) return out;
  const double bw = pb.gpu.hbm_bytes_per_s * pb.gpu.memory_efficiency;
  if (bw <= 0) return out;
  const double elems = rows * fc1_n;
  out.fwd_s = kGluClampFwdBytes * elems / bw;
  out.bwd_s = kGluClampBwdBytes * elems / bw;
  if (moe_act) {
    out.recompute_fwd_s = out.fwd_s;
  } else {
    out.saved_bytes = kGluClampSavedBytes * elems;
  }
  return out;
}

}  // namespace ppsearch
