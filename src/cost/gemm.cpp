// GEMM time by shape (docs/precision.md "GEMM efficiency by shape"; docs/algorithms.md §3.3 (b)).
//
// A cuBLAS/CUTLASS GEMM computes its output in tiles of gemm_tile_m × gemm_tile_n, one tile per
// SM at a time (NVIDIA "Matrix Multiplication Background" user guide, DU-09799-001, ch. 3-4):
//   - tile quantisation: a partial tile at the edge costs a whole tile;
//   - wave quantisation: tiles run in waves of sm_count; a partial last wave idles SMs;
//   - split-K: a GEMM with fewer tiles than SMs splits k over idle SMs (cuBLAS split-K, CUTLASS
//     stream-K: Osama et al., PPoPP 2023), down to slices of gemm_split_k_min;
//   - each tile's main loop pays a fixed fill/drain (prologue, epilogue) equivalent to
//     gemm_k_overhead more k-steps, so short-k GEMMs fall off;
//   - the operands and the result must cross HBM at least once (roofline bound).
// Large aligned GEMMs approach peak × gemm_efficiency. The curve's constants were fitted to the
// public per-shape GEMM table of OpenXLA (xla/service/gpu/model/matmul_interpolator_data.h, PR
// #36518 of Feb 2026, keys sm_90 and sm_100_B200: 375 shapes each, m, n, k in 256..4096, batch
// 1..4) with the ceiling held at the MAMF-finder maximum (stas00/ml-engineering,
// compute/accelerator/README.md: 794.5 of 989 TFLOP/s BF16 on H100, 1,745 of 2,250 on B200);
// docs/precision.md gives the fit and its residuals.
#include "ppsearch/cost/gemm.hpp"

#include <algorithm>
#include <cmath>

namespace ppsearch {

GemmTiming gemm_timing(double m, double n, double k, const GpuSpec& g, GemmPrecision p) {
  GemmTiming out;
  if (m <= 0 || n <= 0 || k <= 0) return out;
  const bool fp8 = is_fp8(p) && g.peak_fp8_flop_per_s > 0;
  const bool mx = fp8 && p == GemmPrecision::kMxfp8;
  const double peak = fp8 ? g.peak_fp8_flop_per_s : g.peak_flop_per_s;
  double eff = fp8 ? (g.gemm_efficiency_fp8 > 0 ? g.gemm_efficiency_fp8 : g.gemm_efficiency)
                   : g.gemm_efficiency;
  // MXFP8 block-scaled GEMMs run below the per-tensor FP8 GEMMs of the same shape: each k-block of
  // 32 brings one E8M0 scale per row of A and per column of B that the kernel loads and applies
  // (cuBLAS CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0), and TE swizzles the scales into cuBLAS's
  // layout before the GEMM unless the quantiser wrote them swizzled (transformer_engine/pytorch/
  // csrc/extensions/gemm.cpp swizzle_scales_for_gemm, NVIDIA/TransformerEngine @d0067d0). TE's
  // GEMM benchmark (docs/examples/gemm_profiling/gemm_profiling.rst, benchmarks/gemm/
  // benchmark_gemm.py --pre-quantize, B300, hidden 4096, FFN 16384, 15872 tokens) gives 7.161 ms
  // per layer in MXFP8 against 6.812 ms in per-tensor FP8: gpu.mxfp8_gemm_efficiency = 0.951.
  if (mx) eff *= g.mxfp8_gemm_efficiency;
  // The same fill in k-steps for FP8: on the sm_100_B200 FP8 table (ceiling at MAMF 3432.5/4500)
  // the bf16 value 192 gives mean |log error| 7.7 % against 6.9 % at the best (64); twice the
  // bf16 value (384) gives 11.4 %.
  const double k_fill = g.gemm_k_overhead;
  const double sms = g.sm_count;
  const double tm = g.gemm_tile_m, tn = g.gemm_tile_n;

  out.tiles = std::ceil(m / tm) * std::ceil(n / tn);
  // Split-K over the SMs that one wave leaves idle, by a real factor so that the time stays
  // monotone in k: each slice keeps at least gemm_split_k_min k-steps.
  if (out.tiles < sms && g.gemm_split_k_min > 0) {
    const double by_sms = std::floor(sms / out.tiles);
    out.splits = std::max(1.0, std::min(by_sms, k / g.gemm_split_k_min));
  }
  // tiles·splits ≤ sm_count when split, so a split GEMM is one wave.
  out.waves = out.splits > 1 ? 1.0 : std::ceil(out.tiles / sms);
  const double k_slice = k / out.splits;
  // Each wave: every SM runs one tile (slice) at peak·eff/sm_count.
  out.compute_s = out.waves * 2.0 * tm * tn * (k_slice + k_fill) / (peak * eff / sms);
  // Roofline: A and B in the input precision (MXFP8: one scale byte per 32 elements more), C
  // written in bf16.
  const double in_bytes = fp8 ? (mx ? 1.0 + 1.0 / 32.0 : 1.0) : 2.0;
  const double bytes = in_bytes * (m * k + k * n) + 2.0 * m * n;
  out.memory_s = bytes / g.gemm_memory_bandwidth();
  out.time_s = std::max(out.compute_s, out.memory_s) + g.gemm_overhead_s;
  return out;
}

double gemm_time(double m, double n, double k, const GpuSpec& g, GemmPrecision p) {
  return gemm_timing(m, n, k, g, p).time_s;
}

double gemm_achieved_fraction(double m, double n, double k, const GpuSpec& g, GemmPrecision p) {
  const double t = gemm_time(m, n, k, g, p);
  if (t <= 0) return 0.0;
  const bool fp8 = is_fp8(p) && g.peak_fp8_flop_per_s > 0;
  return 2.0 * m * n * k / (t * (fp8 ? g.peak_fp8_flop_per_s : g.peak_flop_per_s));
}

}  // namespace ppsearch
