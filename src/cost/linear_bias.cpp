// Linear biases (docs/moe.md "Linear biases").
//
// Megatron-Core builds every linear layer with a bias when add_bias_linear is set (GPT-OSS:
// NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py
// @21b02e0, add_bias_linear = True; the released config.json has biases on q/k/v/o, the router
// and both expert projections). The dense projections and the experts' FC1 add theirs in the
// GEMM epilogue (Transformer Engine Linear / GroupedLinear with bias; the bias gradient comes
// out of the wgrad GEMM, grouped_linear.py @v2.10), which the GEMM time already covers.
//
// The experts' FC2 is built with skip_bias_add = True and its bias is applied afterwards,
// scaled by each copy's routing probability, by TEGroupedMLP._apply_bias
// (NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py, the same code in core_v0.15.0,
// v0.16.0, v0.17.0 and v0.18.0, the Megatron-Core releases of the NeMo 25.11 to 26.06
// containers):
//
//     torch.cat([t + b * p for t, b, p in zip(split(out, tokens_per_expert), biases,
//                                              split(probs, tokens_per_expert))]).to(bf16)
//
// with t the bf16 FC2 output, b a bf16 [h] bias and p the fp32 [n, 1] probabilities, so every
// product and sum is an fp32 [n, h] tensor. Per element of the [rows × h] output, in HBM bytes:
//   forward   b*p writes 4; t + (b*p) reads 2 + 4, writes 4; cat reads 4, writes 4;
//             .to(bf16) reads 4, writes 2                                          = 28
//   backward  the cast's gradient bf16 → fp32 (2 + 4); the add's gradient to t, fp32 → bf16
//             (4 + 2); the bias gradient (grad·p: 4 + 4, summed over rows: 4) and the
//             probability gradient (grad·b: 4 + 4, summed over h: 4)                = 36
// (cat's backward and the split are views). The Transformer Engine op fuser
// (use_transformer_engine_op_fuser, which Megatron-Bridge turns on with
// cutedsl_fused_grouped_mlp: scripts/performance/utils/overrides.py @fcbb603) runs the bias
// inside its grouped linear op (scale_bias) instead: no extra pass.
#include "ppsearch/cost/linear_bias.hpp"

namespace ppsearch {

bool expert_bias_unfused(const Problem& pb) {
  return pb.model.linear_bias && pb.model.moe_experts > 0 && !pb.training.moe_fused_grouped_mlp;
}

ExpertBiasCost expert_bias_cost(const Problem& pb, double rows) {
  ExpertBiasCost out;
  if (!expert_bias_unfused(pb) || rows <= 0) return out;
  const double bw = pb.gpu.hbm_bytes_per_s * pb.gpu.memory_efficiency;
  if (bw <= 0) return out;
  const double elems = rows * pb.model.hidden_size;
  out.fwd_s = kExpertBiasFwdBytes * elems / bw;
  out.bwd_s = kExpertBiasBwdBytes * elems / bw;
  // The list of fp32 sums and their concatenation are alive together.
  out.transient_bytes = 2.0 * 4.0 * elems;
  return out;
}

}  // namespace ppsearch
