// Time of one dense GEMM by shape and input precision (docs/algorithms.md §3.3 (b),
// docs/precision.md "GEMM efficiency by shape").
#pragma once

#include <cstdint>

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Input precision of a GEMM: bf16 (also fp16), fp8 with per-tensor scales (E4M3/E5M2; delayed or
// current scaling) or MXFP8 (E4M3 with one E8M0 scale per 32 elements along k; Blackwell's
// block-scaled GEMMs, docs/precision.md "MXFP8 against per-tensor FP8").
enum class GemmPrecision : std::uint8_t { kBf16 = 0, kFp8 = 1, kMxfp8 = 2 };

// True for both FP8 kinds: the GEMM runs against gpu.fp8_peak_tflops.
constexpr bool is_fp8(GemmPrecision p) { return p != GemmPrecision::kBf16; }

// Parts of one GEMM's time, for tests and reports.
struct GemmTiming {
  double tiles = 0;      // output tiles, ceil(m/tile_m)·ceil(n/tile_n)
  double splits = 1;     // split-K factor for GEMMs with fewer tiles than SMs
  double waves = 0;      // ceil(tiles·splits / sm_count)
  double compute_s = 0;  // tile-quantised, wave-quantised math time incl. the k fill
  double memory_s = 0;   // operand and result traffic at the achieved HBM bandwidth
  double time_s = 0;     // max(compute, memory) + gpu.gemm_overhead_s
};

// Time of [m×k]·[k×n] on one GPU. Zero for an empty GEMM. FP8 needs gpu.peak_fp8_flop_per_s > 0
// (check() refuses training.precision = fp8 otherwise); with no FP8 peak it falls back to bf16.
GemmTiming gemm_timing(double m, double n, double k, const GpuSpec&,
                       GemmPrecision = GemmPrecision::kBf16);
double gemm_time(double m, double n, double k, const GpuSpec&,
                 GemmPrecision = GemmPrecision::kBf16);

// Achieved fraction of the precision's peak, 2mnk / (time_s · peak) (includes the fixed
// per-kernel overhead).
double gemm_achieved_fraction(double m, double n, double k, const GpuSpec&,
                              GemmPrecision = GemmPrecision::kBf16);

}  // namespace ppsearch
