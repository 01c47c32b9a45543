// The performance features of the Megatron-Bridge 26.06 MoE recipes (docs/moe.md "26.06 recipe
// features"). The recipes (NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/** @v0.5.0 =
// fcbb603, applied by scripts/performance/utils/overrides.py set_workload_base_configs) set
//   - fp8_dot_product_attention → mixed_precision.fp8_dot_product_attention: Transformer
//     Engine's DotProductAttention in FP8 (cuDNN fused attention, forward and backward);
//   - cutedsl_fused_grouped_mlp → model.use_transformer_engine_op_fuser (Megatron-Core
//     experts.py TEGroupedMLP's fused path): TE's fused MoE MLP (NVIDIA/TransformerEngine
//     transformer_engine/pytorch/ops/fused/forward_grouped_mlp.py and backward_grouped_mlp.py,
//     added in 29a8c2f "GEMM + Swiglu fused Grouped MLP for MXFP8", PR #2769): FC1 grouped
//     GEMM with the SwiGLU, the routing-probability scaling and the MXFP8 quantisation of FC2's
//     input in its epilogue (cuDNN front-end grouped_gemm_glu_wrapper_sm100, a CuTe DSL kernel),
//     FC2 grouped GEMM (grouped_gemm_quant_wrapper_sm100), and in the backward FC2's dgrad with
//     the SwiGLU backward and the quantisation of FC1's output gradient in its epilogue
//     (grouped_gemm_dglu_wrapper_sm100); each a single launch over all local experts;
//   - moe_a2a_overlap → comm_overlap.overlap_moe_expert_parallel_comm and delay_wgrad_compute:
//     Megatron-Core's combined 1F1B (megatron/core/pipeline_parallel/combined_1f1b.py,
//     models/common/model_chunk_schedule_plan.py), the forward of one micro-batch interleaved
//     layer by layer with the backward of another so that each all-to-all runs on its own
//     stream beside the other micro-batch's computation.
#include "ppsearch/cost/moe_recipe.hpp"

#include <algorithm>
#include <cmath>

#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/precision.hpp"

namespace ppsearch {

double fp8_attention_speedup(const TrainingSpec& t, const GpuSpec& g) {
  if (!t.fp8_attention || t.precision != "fp8" || g.peak_fp8_flop_per_s <= 0 ||
      g.peak_flop_per_s <= 0)
    return 1.0;
  return g.peak_fp8_flop_per_s / g.peak_flop_per_s * kFp8AttentionEfficiencyRatio;
}

bool fused_grouped_mlp_active(const TrainingSpec& t, const GpuSpec& g) {
  return t.moe_fused_grouped_mlp && precision_plan(t, g).fp8 && t.fp8_recipe == Fp8Recipe::kMxfp8;
}

// The FP8 factor is a calibration constant (docs/moe.md "FP8 grouped GEMM efficiency"): the BF16
// MoE rows of tests/validation/runs-moe.csv sit near their measured times with the dense GEMM
// efficiency, the FP8 rows well below theirs. The FP8 grouped GEMM pays what a dense FP8 GEMM of
// the same shape does not: Transformer Engine's GroupedLinear quantises each expert's slice
// separately (grouped_linear.py _split_quantize, one scale per expert) and runs one cuBLAS GEMM
// per expert over its compute streams (common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm,
// NVIDIA/TransformerEngine @d0067d0; the CUTLASS grouped kernel only on Hopper with
// NVTE_USE_CUTLASS_GROUPED_GEMM). Fitted on the split = fit rows (tools/calibrate-presets.sh).
double grouped_gemm_efficiency(const TrainingSpec& t, GemmPrecision linear) {
  return t.moe_grouped_gemm_efficiency * (is_fp8(linear) ? t.moe_grouped_gemm_efficiency_fp8 : 1.0);
}

double fused_grouped_gemm_time(double count, double rows, double n, double k, const Problem& pb) {
  if (count <= 0 || rows <= 0 || n <= 0 || k <= 0) return 0.0;
  const GpuSpec& g = pb.gpu;
  const GemmPrecision p = precision_plan(pb.training, g).linear;
  // Every expert's rows padded to whole tiles, all experts' tiles in one grid (gemm.cpp's tile
  // and wave model applied to the stacked output).
  const double tm = std::max(1.0, double(g.gemm_tile_m));
  const double stacked = count * std::ceil(rows / tm) * tm;
  const GemmTiming tt = gemm_timing(stacked, n, k, g, p);
  // Roofline: each expert's own operands (A of its rows, its own B) and bf16 output.
  const double in_bytes = is_fp8(p) && g.peak_fp8_flop_per_s > 0
                              ? (p == GemmPrecision::kMxfp8 ? 1.0 + 1.0 / 32.0 : 1.0)
                              : 2.0;
  const double bytes = count * (in_bytes * (rows * k + k * n) + 2.0 * rows * n);
  const double memory_s = bytes / g.gemm_memory_bandwidth();
  return std::max(tt.compute_s, memory_s) / grouped_gemm_efficiency(pb.training, p) +
         g.gemm_overhead_s;
}

FusedMlpSaving fused_grouped_mlp_saving(double rows, double fe, bool glu, double cast_bytes,
                                        double mem_bw) {
  FusedMlpSaving s;
  if (rows <= 0 || fe <= 0 || mem_bw <= 0) return s;
  const double act = glu ? 3.0 : 2.0;  // activation bytes / 2 per element of fe (moe.cpp)
  // Forward: moe.cpp charges the activation (2·act bytes per fe element) and the FP8 cast of
  // FC2's input (cast_bytes); the fused epilogue writes the FP8 copies only (cast_bytes − 2: the
  // cast's bf16 read is gone).
  s.fwd_s = rows * fe * (2.0 * act + cast_bytes - (cast_bytes - 2.0)) / mem_bw;
  // Backward: moe.cpp charges the activation backward (2 × the forward's bytes) and the cast of
  // FC1's output gradient (fc1_n elements); the dglu epilogue reads the pre-activation (2 bytes
  // per fc1_n element) and writes the FP8 gradient (cast_bytes − 2), which equals the cast: the
  // activation backward is what goes.
  s.bwd_s = rows * fe * 4.0 * act / mem_bw;
  return s;
}

double combined_1f1b_exposed_a2a(const CombinedLayerWork& w) {
  const double a = std::max(0.0, w.a2a);
  if (a <= 0) return 0.0;
  // Computation c beside communication a loses the comm kernels' SMs while both run:
  // c + min(a, c)·share.
  const double sh = std::clamp(w.comm_sm_share, 0.0, 0.9);
  auto beside = [&](double comm, double comp) { return comp + std::min(comm, comp) * sh; };
  // Phase 1: combine_bwd(b) beside the forward's attention part.
  const double t1 = std::max(a, beside(a, w.attn_fwd));
  // Phase 2: comm dispatch_fwd(f) [0, a], then dispatch_bwd(b) once mlp_bwd(b) is done;
  // compute mlp_bwd(b), mlp_dw(b), then mlp_fwd(f) once dispatch_fwd(f) is done.
  const double comm_end = std::max(a, w.mlp_bwd) + a;
  const double comp_end = std::max(w.mlp_bwd + w.mlp_dw, a) + w.mlp_fwd +
                          std::min(2.0 * a, w.mlp_bwd + w.mlp_dw + w.mlp_fwd) * sh;
  const double t2 = std::max(comm_end, comp_end);
  // Phase 3: combine_fwd(f) beside the backward's attention part (dgrad, then its wgrad).
  const double t3 = std::max(a, beside(a, w.attn_bwd + w.attn_dw));
  const double compute = w.attn_fwd + w.mlp_bwd + w.mlp_dw + w.mlp_fwd + w.attn_bwd + w.attn_dw;
  return std::clamp(t1 + t2 + t3 - compute, 0.0, 4.0 * a);
}

double a2a_overlap_steady_share(int pp, double n_micro) {
  if (n_micro <= 0) return 0.0;
  return std::max(0.0, 1.0 - double(std::max(1, pp)) / n_micro);
}

double moe_a2a_hidden_share(double omega, const CombinedLayerWork& w, double steady_share) {
  if (omega <= 0 || w.a2a <= 0) return 0.0;
  const double all = 4.0 * w.a2a;
  const double hidden = all - combined_1f1b_exposed_a2a(w);
  return std::clamp(omega * steady_share * hidden / all, 0.0, 1.0);
}

}  // namespace ppsearch
