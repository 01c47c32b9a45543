// Training precision → per-layer cost terms (docs/precision.md).
//
// Sources: NVIDIA Transformer Engine (TE) user guide, "Using FP8 with Transformer Engine"
// (recipes DelayedScaling, Float8CurrentScaling, MXFP8BlockScaling) and TE's Linear /
// LayerNormLinear modules (transformer_engine/pytorch/module/linear.py,
// layernorm_linear.py), which Megatron-Core's --fp8-format/--fp8-recipe use:
//   - the linear layers' fprop, dgrad and wgrad GEMMs run in FP8; core attention (unless TE's
//     FP8 attention is switched on), softmax, norms, the embedding and the output layer stay in
//     bf16;
//   - each GEMM input (activation X, output gradient dY) is quantised by a fused cast kernel
//     that also writes the transposed copy (Hopper FP8 GEMMs take only the TN layout) or the
//     column-wise MXFP8 copy (Blackwell), and records the tensor's amax; current scaling
//     computes the amax in a separate pass first;
//   - weights are quantised once per optimizer step and cached across micro-batches
//     (is_first_microbatch), the FP8 weight and its transpose living next to the bf16 weight;
//   - a linear layer saves its FP8 input (and not the bf16 one) for the wgrad GEMM.
#include "ppsearch/cost/precision.hpp"

#include <cstdio>

#include "ppsearch/cost/fabric.hpp"

namespace ppsearch {

PrecisionPlan precision_plan(const TrainingSpec& t, const GpuSpec& g) {
  PrecisionPlan p;
  if (t.precision != "fp8" || g.peak_fp8_flop_per_s <= 0) return p;
  p.fp8 = true;
  const bool mx = t.fp8_recipe == Fp8Recipe::kMxfp8;
  // MXFP8 GEMMs are block-scaled GEMMs with their own rate (cost/gemm.cpp).
  p.linear = mx ? GemmPrecision::kMxfp8 : GemmPrecision::kFp8;
  // read bf16 (2) + write FP8 row-wise (1) + FP8 transposed / column-wise (1); MXFP8 scales
  // (one byte per 32 elements, both directions) add 1/16.
  // Per-tensor scaling on a GPU whose FP8 GEMMs take any layout (Blackwell) writes no transposed
  // copy: TE's Float8Quantizer and Float8CurrentScalingQuantizer allocate the transpose only when
  // !nvte_is_non_tn_fp8_gemm_supported() (transformer_engine/pytorch/csrc/quantizer.cpp,
  // NVIDIA/TransformerEngine @d0067d0; since TE 2.0), and the dgrad and wgrad GEMMs read the
  // row-wise copy in the NN / NT layout. MXFP8 keeps both copies: its scales run along the GEMM's
  // k, which is a row for fprop and a column for wgrad (MXFP8Quantizer, rowwise and columnwise).
  const bool transpose = mx || !g.fp8_non_tn_gemm;
  p.cast_bytes_per_element = transpose ? 4.0 : 3.0;
  if (t.fp8_recipe == Fp8Recipe::kCurrent) p.cast_bytes_per_element += 2.0;  // amax pass
  if (mx) p.cast_bytes_per_element += 2.0 / 32.0;
  const double mx_scales = mx ? 2.0 / 32.0 : 0.0;
  if (t.fp8_param_gather) {
    // Megatron --fp8-param-gather (megatron/core/fp8_utils.py, TE Float8Tensor / MXFP8Tensor
    // parameters): the model's weights are FP8; the fp32 main weights stay in the optimizer.
    p.weight_copy_bytes = (mx ? 2.0 : 1.0) + mx_scales - 2.0;
  } else {
    // The cached FP8 weight and its transpose (none with any-layout FP8 GEMMs, as above).
    p.weight_copy_bytes = (transpose ? 2.0 : 1.0) + mx_scales;
  }
  p.saved_input_bytes = 1.0;
  // Sequence-parallel all-gathers in FP8 (NVIDIA/TransformerEngine @d0067d0; TE 1.12 the same):
  // LayerNormLinear quantises the norm output in the norm kernel and gathers the quantised shard,
  // through NCCL or Userbuffers, and again for wgrad; the row-parallel Linear's
  // grad_output_preprocess casts the output gradient and gathers the FP8 data
  // (module/layernorm_linear.py, module/base.py: gather_along_first_dim(..., quantizer=...)).
  // Per-tensor scaling quantises the local shard row-wise only and makes the transpose from the
  // gathered data when the GEMMs need it (distributed.py _all_gather_fp8,
  // !nvte_is_non_tn_fp8_gemm_supported()); MXFP8 gathers each requested copy with its scales
  // (_all_gather_mxfp8), the output gradient with both (under Userbuffers the column-wise copy
  // is gathered separately, layernorm_linear.py backward).
  p.gather_bytes_per_element = mx ? 1.0 + 1.0 / 32.0 : 1.0;
  p.grad_gather_bytes_per_element = mx ? 2.0 * (1.0 + 1.0 / 32.0) : 1.0;
  p.gathered_cast_bytes_per_element =
      (!mx && transpose) ? p.cast_bytes_per_element - 1.0 : p.cast_bytes_per_element;
  p.gathered_transpose_bytes = (!mx && transpose) ? 2.0 : 0.0;
  // FP8 forward reduce-scatters (training.tp_fp8_reduce_scatter): Transformer Engine's
  // initialize_ub gives proj_fprop and fc2_fprop a uint8 Userbuffers buffer when the user's
  // config sets fp8_buf (module/base.py: fp8_buf for the pipeline-method layers; v1.12 and
  // @d0067d0), the row-parallel Linear then asks for an FP8 GEMM output (linear.py:
  // ub_overlap_rs_fprop and is_fp8_ubuf() -> fp8_output) and the reduce-scatter reads the FP8
  // chunks and writes bf16. The GEMM writes FP8 in its epilogue only under delayed scaling
  // (extensions/gemm.cpp @v2.9: "only use-case for fused GEMM: Delayed scaling quantizer with
  // per-tensor scaling inputs"; current scaling and MXFP8 quantise after the GEMM, so the
  // overlapped reduce-scatter is not in FP8). Only Userbuffers has the FP8 buffer, so the key
  // needs training.tp_comm_overlap. dgxc-benchmarking v25.01's llama3.1/configure.sh sets it for
  // its Llama 3.1 405B FP8 runs.
  if (t.tp_fp8_reduce_scatter && t.tp_comm_overlap && t.fp8_recipe == Fp8Recipe::kDelayed)
    p.fwd_reduce_scatter_bytes_per_element = 1.0;
  return p;
}

AmaxReduction amax_reduction_time(const Problem& pb, const Candidate& c, const Links& l,
                                  double layers) {
  AmaxReduction r;
  const TrainingSpec& t = pb.training;
  if (t.precision != "fp8" || pb.gpu.peak_fp8_flop_per_s <= 0 ||
      t.fp8_recipe != Fp8Recipe::kDelayed || layers <= 0)
    return r;
  // Megatron-Core fp8_utils.get_fp8_context / transformer_block.py (core_v0.9.0 and d98e8a64):
  // fp8_group = get_amax_reduction_group(with_context_parallel=True) = the TP×DP×CP group.
  // Transformer Engine v1.12 fp8.py: fp8_autocast_exit -> reduce_and_update_fp8_tensors(forward)
  // -> torch.distributed.all_reduce(contiguous_amax, op=MAX, group, async_op=False); the module
  // whose forward ran first reduces the backward amaxes at the end of its backward
  // (module/linear.py, layernorm_linear.py, layernorm_mlp.py: reduce_and_update_bwd_fp8_tensors).
  // tp_only_amax_red: parallel_state's _TENSOR_AND_CONTEXT_PARALLEL_GROUP, TP and CP consecutive
  // ranks under either placement.
  GroupLayout layout = tp_cp_dp_layout(c);
  if (t.tp_only_amax_red) layout = GroupLayout{c.tp * c.cp, 1, 1, 0};
  const GroupShape g = group_shape(layout, l.fabric);
  if (g.size <= 1) return r;
  constexpr double kAmaxBytes = 4.0, kGemms = 4.0;  // fp32 amax; QKV, proj, FC1, FC2
  r.fwd_s = collective_time(Collective::kAllReduce, kAmaxBytes * 3 * kGemms * layers, g, l);
  r.bwd_s = collective_time(Collective::kAllReduce, kAmaxBytes * 2 * kGemms * layers, g, l);
  return r;
}

std::string mfu_basis(const Problem& pb) {
  const auto tflops = [](double flop_per_s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", flop_per_s / 1e12);
    return std::string(buf);
  };
  std::string s =
      "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = " + tflops(pb.gpu.peak_flop_per_s) +
      " TFLOP/s, the dense BF16 peak); precision " + pb.training.precision;
  if (pb.training.precision == "fp8") {
    static const char* kRecipe[] = {"delayed", "current", "mxfp8"};
    s += " (recipe " + std::string(kRecipe[static_cast<int>(pb.training.fp8_recipe)]) +
         ", linear GEMMs against gpu.fp8_peak_tflops = " + tflops(pb.gpu.peak_fp8_flop_per_s) +
         " TFLOP/s)";
  }
  return s;
}

}  // namespace ppsearch
