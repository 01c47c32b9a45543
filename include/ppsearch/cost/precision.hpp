// What training precision changes in a layer's costs (docs/precision.md).
#pragma once

#include <string>

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct PrecisionPlan {
  bool fp8 = false;
  // Precision of the transformer layers' linear GEMMs (QKV, out-projection, FC1, FC2; fprop,
  // dgrad and wgrad): kFp8 for per-tensor scaling, kMxfp8 for the MXFP8 recipe. Core attention,
  // the embedding and the output layer stay bf16.
  GemmPrecision linear = GemmPrecision::kBf16;
  // HBM bytes per element of one FP8 quantisation pass over a bf16 tensor: read 2, write the FP8
  // copy (1) and its transposed / column-wise copy (1) for the other GEMM of the pair (no
  // transposed copy for per-tensor scaling when gpu.fp8_non_tn_gemm); +2 for current scaling's
  // separate amax pass; +1/16 for MXFP8's scales. 0 in bf16.
  double cast_bytes_per_element = 0;
  // Bytes per linear weight held beyond the bf16 weight: +2 for the cached FP8 weight and its
  // transpose / column-wise copy next to the bf16 one (+1 for per-tensor scaling when
  // gpu.fp8_non_tn_gemm); with FP8 primary weights
  // (fp8_param_gather) the FP8 weight replaces the bf16 one: 1 − 2 (per-tensor; the transpose
  // is made when used) or 2 − 2 (MXFP8 keeps row- and column-wise copies). 0 in bf16.
  double weight_copy_bytes = 0;
  // Bytes per element of a linear layer's input saved for its backward (wgrad): 1 in FP8, 2 in
  // bf16.
  double saved_input_bytes = 2;
  // Sequence-parallel all-gathers of the linear layers' inputs and output gradients (the norm
  // output before QKV and FC1 and its re-gather for wgrad; the output gradient before the
  // out-projection's and FC2's dgrad and wgrad). Transformer Engine quantises the local shard and
  // gathers the FP8 data (src/cost/precision.cpp). The reduce-scatters of the GEMM outputs stay
  // bf16 (but see fwd_reduce_scatter_bytes_per_element). All 2 (and 0) in bf16.
  // Bytes per element of one gathered copy: 1 (+1/32 for MXFP8's scales).
  double gather_bytes_per_element = 2;
  // Bytes per element of the output-gradient gather: one copy for per-tensor scaling (its
  // transpose is made after the gather), both MXFP8 copies (row-wise for dgrad, column-wise for
  // wgrad) with their scales.
  double grad_gather_bytes_per_element = 2;
  // HBM bytes per local element of the cast of a tensor that is gathered: per-tensor scaling
  // writes the row-wise copy only (cast_bytes_per_element − 1 where a transpose is written);
  // MXFP8 writes both copies as an ungathered cast.
  double gathered_cast_bytes_per_element = 0;
  // HBM bytes per gathered element of the transpose that per-tensor scaling makes after the
  // gather for wgrad where FP8 GEMMs take only the TN layout (read 1, write 1); 0 otherwise.
  double gathered_transpose_bytes = 0;
  // Bytes per element of the forward reduce-scatters after the out-projection and FC2 (with SP):
  // 2 (bf16), 1 when training.tp_fp8_reduce_scatter holds under delayed scaling with
  // training.tp_comm_overlap (src/cost/precision.cpp). The backward's reduce-scatters of the
  // input gradients stay bf16.
  double fwd_reduce_scatter_bytes_per_element = 2;
};

PrecisionPlan precision_plan(const TrainingSpec&, const GpuSpec&);

// FP8 delayed scaling's amax reductions (docs/precision.md "Amax reductions"). Megatron-Core
// wraps each model chunk's TransformerBlock forward in one Transformer Engine fp8_autocast over
// the TP×CP×DP group; on leaving it TE all-reduces (MAX, synchronously) the amaxes of the chunk's
// forward FP8 tensors, and the backward of the chunk's first FP8 module reduces the backward ones.
// Per micro-batch, each virtual stage that holds transformer layers therefore waits for one
// small all-reduce after its forward and one after its backward. Current scaling and MXFP8
// compute their scales locally and reduce nothing across ranks. `layers` is the chunk's layer
// count (the message: 4 bytes per FP8 tensor, 3 per linear GEMM forward, 2 backward, 4 GEMMs a
// layer; latency-bound at any size). Both 0 unless the precision is fp8 with delayed scaling.
struct AmaxReduction {
  double fwd_s = 0, bwd_s = 0;
};
AmaxReduction amax_reduction_time(const Problem&, const Candidate&, const Links&, double layers);

// One line for the results' mfu_basis attribute: MFU is model FLOPs against the dense BF16
// peak (gpu.peak_tflops) in every precision, as the frameworks report it; and the precision.
std::string mfu_basis(const Problem&);

}  // namespace ppsearch
