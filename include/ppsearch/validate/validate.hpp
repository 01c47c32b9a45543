/// \file
/// Predictions held against measured training runs (`ppsearch-validate`, docs/validation.md).
/// The pure part: a checked runs row → the Problem and the candidate set, the best prediction,
/// error statistics and ranking fidelity, and the printed report. Loading presets is the
/// caller's job (io/config_file.hpp): the row only overrides what it states, so every
/// calibration constant comes from configs/. Pure core: std only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"
#include "ppsearch/validate/conventions.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {

/// \brief Which presets model a row's `gpu`.
struct GpuMapping {
  bool supported = false;
  std::string cluster_preset;  ///< configs/clusters/NAME.ini; it names the GPU preset
  double memory_gb = 0;        ///< > 0: overrides gpu.memory_gb of the preset
  std::string note;            ///< said in the output, e.g. for a100-40gb
  std::string reason;          ///< why not, when !supported
  std::string gpu_preset;      ///< non-empty: configs/gpus/NAME.ini replaces the cluster's GPU
};

/// \brief a100-80gb → a100-8gpu-hdr (gpus/a100-80gb); a100-40gb → the same with
///        memory_gb = 40; h100-80gb → h100-8gpu-ndr (gpus/h100); h100-96gb → the same cluster
///        with the GPU preset gpus/h100-96gb-500w (96 GB HBM2e at a 500 W limit); h200 →
///        h200-8gpu-ndr; gb200 → gb200-nvl72; b200, b300, gb300 → their 8-GPU XDR / NVL72 presets.
///        Anything else is unsupported.
GpuMapping map_gpu(const std::string& gpu);

/// \brief Why a row is not modelled before any Problem is built, or "" when it can be: neither
///        a measured step time (trust "no-time" counts as none) nor a measured peak memory, an
///        unsupported GPU, or a model column the source leaves empty (ffn_hidden_size,
///        kv_heads, vocab_size). A row with a peak memory and no step time is modelled for its
///        memory only.
std::string precheck_run(const RunRecord& run);

/// \brief Overrides `problem` (loaded from the row's cluster preset) with what the row states:
///        the whole model (head_dim = hidden/heads, untied embeddings, the name = the id),
///        training.global_batch_size, attention_flops = full, the GPU memory of the mapping,
///        cluster.nvlink_domain_size = gpus_per_node (gpus_per_node too unless the preset's
///        node size divides it), the network bandwidth, and the GPU count. Then check() and
///        resolve_defaults().
/// \param why set to the issues check() found when it returns false
bool apply_run_to_problem(const RunRecord& run, const GpuMapping& gpu, Problem* problem,
                          std::string* why);

/// \brief Every configuration the row allows, in a fixed order: the stated knobs fixed, and
///        for each knob left empty: mbs ∈ divisors of global_batch_size/dp up to 16;
///        vpp ∈ {1} if pp = 1, else {1} ∪ {v ≥ 2 : layers % (pp·v) = 0}; recompute ∈
///        {none, selective, full}; sp ∈ {off, on} when tp > 1 (off otherwise); zero ∈ {0, 1}.
///        The schedule is interleaved-1f1b when vpp > 1, else 1f1b.
std::vector<Candidate> run_candidates(const RunRecord& run);

/// \brief The outcome of one row.
struct RunResult {
  std::string id;
  bool modelled = false;
  std::string reason;  ///< why not modelled
  std::string note;    ///< remarks (e.g. a100-40gb modelled as a100-80gb with 40 GB)
  bool fit = false;    ///< listed in --fit-ids
  MfuConvention convention = MfuConvention::kUnknown;
  std::string convention_label;  ///< as in the file ("" = none)

  Candidate chosen{};          ///< the configuration behind the prediction
  std::string searched;        ///< knobs the row left empty and their chosen values
  std::int32_t evaluated = 0;  ///< candidates evaluated for the row
  std::int32_t feasible = 0;   ///< of which feasible
  double predicted_step_time_s = std::numeric_limits<double>::quiet_NaN();
  double measured_step_time_s = std::numeric_limits<double>::quiet_NaN();
  double error_pct = std::numeric_limits<double>::quiet_NaN();      ///< 100·(pred − meas)/meas
  double predicted_mfu = std::numeric_limits<double>::quiet_NaN();  ///< row convention, 0–1
  double reported_mfu = std::numeric_limits<double>::quiet_NaN();   ///< as printed, 0–1
  double measured_mfu =
      std::numeric_limits<double>::quiet_NaN();  ///< row convention at the measured time, 0–1
  double engine_mfu = std::numeric_limits<double>::quiet_NaN();  ///< the engine's own MFU
  /// Predicted peak memory per GPU in the row's memory_metric (metric_memory_bytes; the device
  /// level when the row has none), GB (1e9).
  double peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  /// The engine's device-level peak of the same GPU (its memory_gb), GB (1e9).
  double device_peak_memory_gb = std::numeric_limits<double>::quiet_NaN();

  /// The model judged that no configuration the row allows fits in memory: the published
  /// run's stated configuration is infeasible to the model (the feasibility rule).
  bool does_not_fit = false;
  double measured_peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  /// 100·(predicted − measured)/measured of the peak memory; also set when the single stated
  /// configuration does not fit (then the prediction is what it would need).
  double memory_error_pct = std::numeric_limits<double>::quiet_NaN();
  std::string memory_metric;  ///< allocated, reserved, device ("" = no memory figure)
  std::string split;          ///< the row's split column: fit, held-out or ""
};

/// \brief What a peak-memory metric counts, from the engine's device-level peak of one GPU
///        (docs/memory.md "What a measured peak counts"). `device` (nvidia-smi) is the engine's
///        figure itself. `allocated` (torch.cuda.max_memory_allocated) leaves out what is not
///        allocated through PyTorch's caching allocator: the CUDA context and NCCL's buffers,
///        i.e. the engine's workspace term, except the cuBLAS and Transformer Engine GEMM
///        workspaces, which are caching-allocator tensors (kAllocatorLibraryBytes). `reserved`
///        (torch.cuda.max_memory_reserved) is the allocated peak plus the caching allocator's
///        fragmentation: allocated / (1 − kAllocatorFragmentation).
/// \param workspace_bytes the engine's workspace term of that GPU (workspace_bytes())
/// \return bytes; the device figure for an unknown metric
double metric_memory_bytes(double device_bytes, double workspace_bytes, const std::string& metric);

/// PyTorch's cuBLAS workspace (32 MiB on sm90+, CublasHandlePool.cpp: allocated with
/// CUDACachingAllocator) and Transformer Engine's four 32 MiB cuBLAS workspaces (torch.empty in
/// transformer_engine/pytorch/module/base.py get_workspace): 5 × 33,554,432 bytes.
inline constexpr double kAllocatorLibraryBytes = 5 * 33554432.0;
/// Fragmentation of PyTorch's caching allocator in LLM training, 1 − allocated/reserved at the
/// peak: 15 % on average over eight LLMs on A100-80GB (Guo et al., "GMLake", ASPLOS'24, §6,
/// which removes it).
inline constexpr double kAllocatorFragmentation = 0.15;

/// \brief A row that is not modelled, with its reason (and the measured figures it has).
RunResult not_modelled(const RunRecord& run, const std::string& reason);

/// \brief Evaluates every candidate of run_candidates() on `problem` (from
///        apply_run_to_problem) and keeps the feasible one with the lowest step time (ties:
///        candidate key). No feasible candidate → not modelled, with the engine's reason.
RunResult predict_run(const RunRecord& run, const Problem& problem);

/// \brief True when `id` matches `pattern`: equal, or the pattern ends in '*' and the id starts
///        with what precedes it.
bool id_matches(const std::string& pattern, const std::string& id);

/// \brief Splits a --fit-ids value ("a,b,kor22-*") into patterns; empty items are dropped.
std::vector<std::string> split_id_list(const std::string& list);

/// \brief Statistics of signed percentage errors.
struct ErrorStats {
  int count = 0;
  double mean_abs = std::numeric_limits<double>::quiet_NaN();
  double median_abs = std::numeric_limits<double>::quiet_NaN();
  double max_abs = std::numeric_limits<double>::quiet_NaN();
  int max_index = -1;  ///< index into the input of the largest |error| (first on ties)
  double mean_signed = std::numeric_limits<double>::quiet_NaN();
};

/// \brief Mean, median (mean of the two middle values for an even count) and maximum of |e|,
///        and the mean of e. All NaN (count 0) for no input.
ErrorStats error_stats(const std::vector<double>& errors_pct);

/// \brief Rows are in one family when they share the model (every model column), the GPU type
///        and the work per GPU (global_batch_size/gpus, so that step times are comparable); the
///        GPU count and the parallel configuration may differ (weak-scaling families).
std::string family_key(const RunRecord& run);

/// \brief One row for the ranking check.
struct RankItem {
  std::string family;
  std::string id;
  double predicted_s = 0;
  double measured_s = 0;
};

/// \brief Ranking fidelity of one family: of the pairs whose measured step times differ, how
///        many the prediction orders the same way (Kendall-style concordance).
struct FamilyRanking {
  std::string label;               ///< the ids' common prefix (to a '-'), else "FIRST-ID +N"
  std::vector<std::string> ids;    ///< in input order
  std::int64_t pairs = 0;          ///< pairs with different measured times
  std::int64_t concordant = 0;     ///< of which predicted in the same order
  std::int64_t measured_ties = 0;  ///< pairs with equal measured times (not counted)
  /// The first discordant pairs in pair order (at most kMaxDiscordantShown; their number is
  /// pairs − concordant): "A < B measured (x s < y s), predicted x' s > y' s" (or "="); ids
  /// that start with the label are written "...-REST".
  std::vector<std::string> discordant;
};

/// \brief Discordant pairs spelled out per family (the count covers them all).
inline constexpr std::size_t kMaxDiscordantShown = 5;

/// \brief Families of two or more items, in order of their first item.
std::vector<FamilyRanking> ranking_fidelity(const std::vector<RankItem>& items);

/// \brief Prints the per-row table (step time, MFU and peak memory), the step-time error
///        statistics (all rows, Korthikanti Table 5 rows kor22-*, fit / held-out rows by the
///        `split` column when a row states one, and by `fit_patterns` when it is not empty), the
///        peak-memory error statistics with the counts of over- and under-predictions, the
///        published configurations the model judges not to fit, the rows not modelled with their
///        reasons and the ranking fidelity. `runs` and `results` are parallel.
void print_validation_report(std::ostream& os, const std::vector<RunRecord>& runs,
                             const std::vector<RunResult>& results,
                             const std::vector<std::string>& fit_patterns);

}  // namespace ppsearch
