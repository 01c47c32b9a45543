// The performance features of the Megatron-Bridge 26.06 MoE recipes (docs/moe.md "26.06 recipe
// features"): FP8 core attention (training.fp8_attention), the fused grouped expert MLP
// (training.moe_fused_grouped_mlp) and Megatron-Core's EP all-to-all overlap as its combined
// 1F1B schedule runs it (training.moe_a2a_overlap). Pure core.
#pragma once

#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608, abstract) reaches 740 TFLOP/s forward in
// 16-bit (FP16; 75 % of H100 SXM5's 16-bit peak of 989) and close to 1.2 PFLOP/s in FP8 (61 % of
// 1,979): the FP8 kernel's achieved fraction of its (FP8) peak over the 16-bit kernel's.
inline constexpr double kFp8AttentionEfficiencyRatio = (1200.0 / 1979.0) / (740.0 / 989.0);

// Factor by which FP8 core attention (training.fp8_attention, TE DotProductAttention with
// fp8_dpa: cuDNN's FP8 fused attention, forward and backward) is faster than the BF16 kernel:
// (peak FP8 / peak BF16) × kFp8AttentionEfficiencyRatio; 1 when the key is off, the run is not
// FP8 or the GPU has no FP8 peak.
double fp8_attention_speedup(const TrainingSpec&, const GpuSpec&);

// Whether the fused grouped expert MLP applies: training.moe_fused_grouped_mlp with MXFP8
// (Transformer Engine's ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8 / its backward twin are MXFP8,
// compute capability 10.x kernels; a run without them keeps TE's GroupedLinear).
bool fused_grouped_mlp_active(const TrainingSpec&, const GpuSpec&);

// One grouped GEMM launch over `count` experts, each [rows × k]·[k × n], whose tiles are
// scheduled together (one persistent kernel): every expert's rows padded to the tile height,
// the tiles of all experts in common waves (gemm_timing of the stacked [count·⌈rows/tile_m⌉·
// tile_m × n] output), the roofline over every expert's operands, one launch overhead, the
// throughput divided by training.moe_grouped_gemm_efficiency.
double fused_grouped_gemm_time(double count, double rows, double n, double k, const Problem&);

// Throughput of a grouped expert GEMM relative to a dense GEMM of the per-expert shape:
// training.moe_grouped_gemm_efficiency, times training.moe_grouped_gemm_efficiency_fp8 when the
// experts run in FP8 (`linear`: precision_plan's linear precision, which the callers have;
// docs/moe.md "FP8 grouped GEMM efficiency").
double grouped_gemm_efficiency(const TrainingSpec&, GemmPrecision linear);

// HBM time the fused grouped MLP saves per micro-batch on the busiest GPU, against TE's
// separate kernels (docs/moe.md "26.06 recipe features"). `rows` routed token copies, expert
// width `fe` (after ETP), gated (SwiGLU) or not, `cast_bytes` the FP8 cast's bytes per element
// (precision_plan), `mem_bw` the achievable HBM bandwidth.
struct FusedMlpSaving {
  double fwd_s = 0, bwd_s = 0;
};
FusedMlpSaving fused_grouped_mlp_saving(double rows, double fe, bool glu, double cast_bytes,
                                        double mem_bw);

// One MoE layer's work as Megatron-Core's combined 1F1B step interleaves it
// (megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run):
// the forward of one micro-batch (f) and the backward of another (b) on a compute and a
// communication stream,
//   comm:    combine_bwd(b)   | dispatch_fwd(f) → dispatch_bwd(b)        | combine_fwd(f)
//   compute: attn_fwd(f)      | mlp_bwd(b) → mlp_dw(b) → mlp_fwd(f)      | attn_bwd + attn_dw(b)
// with dispatch_fwd(f) before mlp_fwd(f) and mlp_bwd(b) before dispatch_bwd(b).
// While an all-to-all runs, its kernels hold SMs the computation beside it cannot use: DeepEP's
// default is 20 SMs (Megatron-Core transformer_config.py moe_deepep_num_sms, "historical
// default 20"; DeepSeek-V3 technical report §3.2.1: 20 of the H800's 132 SMs for communication).
inline constexpr double kA2aCommSms = 20.0;
struct CombinedLayerWork {
  double a2a = 0;  // one dispatch (= one combine) all-to-all, seconds
  double attn_fwd = 0, attn_bwd = 0, attn_dw = 0;
  double mlp_fwd = 0, mlp_bwd = 0, mlp_dw = 0;
  // Share of the SMs the all-to-all kernels hold (kA2aCommSms / gpu.sm_count): computation
  // overlapped with an all-to-all runs that much slower for as long as they overlap.
  double comm_sm_share = 0;
};
// Seconds the combined step takes beyond its computation alone: the exposed part of the four
// all-to-alls plus the computation's slowdown while they overlap (0 … 4·a2a).
double combined_1f1b_exposed_a2a(const CombinedLayerWork&);
// Share of a rank's forward and backward passes that run in combined 1F1B steps: Megatron-Core
// runs pp·vpp warm-up forwards alone on average over the ranks (schedules.py
// get_pp_rank_microbatches: 2(pp−1−r) + (vpp−1)·pp + 1 with the EP overlap, pp = 1: the first
// forward alone, combined_1f1b.py), of the n_micro·vpp, so 1 − pp/n_micro (≥ 0).
double a2a_overlap_steady_share(int pp, double n_micro);
// Share of a layer's all-to-all time (4·a2a) hidden: ω · steady · (4·a2a − exposed) / (4·a2a).
double moe_a2a_hidden_share(double omega, const CombinedLayerWork&, double steady_share);

}  // namespace ppsearch
