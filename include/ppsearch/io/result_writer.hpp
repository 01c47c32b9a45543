// HDF5 result file (docs/interface.md §3). The only HDF5 user is src/io/hdf5_result_writer.cpp;
// this header is std-only. Rank 0 writes; rows are streamed in final (ranked) order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppsearch/util/error.hpp"

namespace ppsearch {

// One row of /candidates and /best. Plain layout, mapped member by member to an HDF5 compound.
struct ResultRow {
  std::int32_t gpus, tp, pp, cp, dp, vpp, mbs, num_microbatches, global_batch_size;
  std::uint8_t schedule;   // HDF5 enum: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe
                           // (Schedule values)
  std::uint8_t recompute;  // HDF5 enum: none, selective, full (Recompute values)
  std::uint8_t sequence_parallel;  // 0/1
  std::int8_t zero_stage;          // 0..3
  std::uint8_t feasible;           // 0/1
  std::uint8_t
      infeasible_reason;  // HDF5 enum: Infeasible values (none, memory, too_few_layers, schedule)
  double iteration_time_s, mfu, hfu, tflops_per_gpu, tokens_per_s, bubble_fraction, peak_memory_gb;
  double compute_s, tp_comm_s, cp_comm_s, pp_comm_s, dp_comm_s;
  double pipeline_s, optimizer_s;
  double needed_memory_gb;            // infeasible(memory): what the worst rank needs; else = peak
  std::int32_t worst_rank;            // pipeline rank with the highest memory need
  std::int32_t recompute_num_layers;  // with full recompute: 0 all, N block, -1 fewest per stage
  // Sizing (docs/results.md "Time to train and cost"); NaN when training.tokens (cost: also
  // cluster.price_per_gpu_hour) is not given, and in infeasible rows.
  double time_to_train_s;  // training.tokens / tokens_per_s
  double gpu_hours;        // gpus · time_to_train_s / 3600
  double cost;             // gpu_hours · cluster.price_per_gpu_hour
  // Mixture of experts (docs/moe.md): expert-parallel and expert-tensor-parallel degrees.
  std::int32_t ep, etp;
  // Uncertainty (docs/uncertainty.md): the step time with the calibration constants varied over
  // their ranges, for each GPU count's first --uncertainty-top rows; NaN in the other rows.
  double iteration_time_lo_s;
  double iteration_time_hi_s;
};

// One row of /stages.
struct StageRow {
  std::int64_t candidate;  // row index into /candidates
  std::int32_t stage, pipeline_rank, first_layer, last_layer;
  double time_s, memory_gb;
  // memory_gb broken down (docs/memory.md); the seven add up to memory_gb.
  double weights_gb, gradients_gb, optimizer_gb, activations_gb, wstate_gb, transient_gb,
      workspace_gb;
  std::int64_t recomputed_layers;  // layers of the stage recomputed in full (64-bit: no padding)
};

// Root attributes.
struct ResultMeta {
  std::string ppsearch_version;
  std::int32_t schema_version = 1;
  std::string command_line;
  std::string created_utc;
  std::string resolved_config;
  std::int32_t mpi_ranks = 1;
  std::int32_t threads_per_rank = 1;
  std::int64_t candidates_evaluated = 0;
  std::int64_t candidates_feasible = 0;
  double search_wall_s = 0;
  // Additions (allowed by the contract):
  std::int64_t candidates_enumerated = 0;  // before the enumeration rules
  std::string rule_counts;                 // "rule=removed;..." in a fixed order
  std::string infeasible_counts;           // "reason=count;..."
  std::vector<double> rank_busy_s;         // per MPI rank, evaluation busy time
  double rank_imbalance = 0;               // max/mean of rank_busy_s
};

// Cross-topology regret and uncertainty tables (docs/uncertainty.md, docs/interface.md):
// small, written once before commit().
// One /regret row: the best configuration found on `tuned_on`, evaluated on `run_on`.
struct RegretRow {
  std::int32_t gpus = 0;
  std::string tuned_on, run_on;  // cluster labels (preset name or INI file stem)
  std::int32_t tp = 0, pp = 0, cp = 0, dp = 0, vpp = 0, mbs = 0, num_microbatches = 0;
  std::string schedule, recompute;  // command-line names
  std::int8_t sequence_parallel = 0, zero_stage = 0;
  std::int32_t recompute_num_layers = 0;
  std::int32_t ep = 1, etp = 1;      // expert degrees (docs/moe.md; 1 for dense models)
  std::uint8_t feasible = 0;         // feasible on run_on
  std::string infeasible_reason;     // "none", "memory", ..., or "no feasible configuration"
  std::uint8_t in_search_space = 0;  // run_on's enumeration holds this configuration
  double iteration_time_s = 0;       // on run_on (NaN when infeasible)
  double best_time_s = 0;            // run_on's own best step time
  double regret_pct = 0;             // 100·(iteration_time_s − best_time_s)/best_time_s
  double worst_regret_pct = 0;       // the largest regret_pct of this tuned_on row set (inf if any
                                     // run_on is infeasible)
  std::uint8_t robust = 0;           // this tuned_on configuration has the smallest worst regret
};
// One /uncertainty row: one top row re-evaluated with one constant at one end of its range.
struct UncertaintyRow {
  std::int64_t candidate = 0;  // row index into /candidates
  std::int32_t gpus = 0;
  std::string constant;         // configuration key, e.g. gpu.gemm_efficiency
  std::string end;              // "low" or "high"
  double value = 0;             // the constant's value (file units)
  double iteration_time_s = 0;  // step time with it (NaN when infeasible)
  std::int32_t rank = 0;        // 1-based rank of the row among its GPU count's varied rows
};
// One /robust row per GPU count: its robust winner (smallest iteration_time_hi_s).
struct RobustRow {
  std::int32_t gpus = 0;
  std::int64_t candidate = -1;       // /candidates index of the robust winner
  std::int64_t best_candidate = -1;  // /candidates index of the best row (= /best)
  double iteration_time_s = 0, iteration_time_lo_s = 0, iteration_time_hi_s = 0;
  std::int32_t rows_compared = 0;  // rows of that GPU count with bounds
};

class ResultWriter {
 public:
  virtual ~ResultWriter() = default;  // an uncommitted writer removes its temporary files
  // Appends rows to /candidates. May be called repeatedly with consecutive blocks in final
  // (ranked) order; the rows are written through to the temporary file in fixed blocks, and the
  // file is the same however the rows are split into calls.
  virtual void write_candidates(const std::vector<ResultRow>& rows) = 0;
  // Appends rows to /stages (StageRow::candidate is the global row index); may be called
  // repeatedly.
  virtual void write_stages(const std::vector<StageRow>& rows) = 0;
  virtual void write_best(const std::vector<ResultRow>& rows) = 0;  // once
  // Cross-topology regret and uncertainty (once each, before commit; docs/uncertainty.md).
  virtual void write_regret(const std::vector<RegretRow>& rows) = 0;
  virtual void write_uncertainty(const std::vector<UncertaintyRow>& rows,
                                 const std::vector<RobustRow>& robust) = 0;
  // Writes the attributes, syncs and closes the file, and moves it onto the final name.
  virtual void commit(const ResultMeta& meta) = 0;
};

// The output target cannot be used as named: it is a directory, a symbolic link, a device, a
// FIFO or a socket (never written or replaced, even with overwrite), or a file that exists (or
// appeared during the run) without overwrite. A usage error: the programs exit with 2.
class OutputTargetError : public OutputError {
 public:
  using OutputError::OutputError;
};

// What is wrong with `path` as an output file name, as a phrase to follow "PATH: ", or "" when
// it may be written: it does not exist, or it is a regular file and `overwrite` is set. Looks
// at the name itself (lstat): a symbolic link is refused even when it points to a regular file.
std::string output_target_problem(const std::string& path, bool overwrite);

// Makes SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU and SIGXFSZ (those still at their
// default action) remove the temporary files of every open writer, then end the process with
// that signal as before. Call once at start-up, before creating writers.
void install_output_cleanup_handlers();

// Creates a private temporary folder ".NAME.ppsearch-tmp-XXXXXX" next to PATH holding the file
// being written; commit() moves it onto PATH. Throws OutputTargetError (exit 2) for the cases of
// output_target_problem(), and OutputError (exit 4) when the file cannot be created or written.
std::unique_ptr<ResultWriter> make_hdf5_result_writer(const std::string& path, bool overwrite);

// Writes a small text file (the --trace JSON) with the same output safety as the result file:
// output_target_problem() first, then a private temporary folder next to PATH and a rename onto
// it. Throws OutputTargetError (exit 2) and OutputError (exit 4) like make_hdf5_result_writer;
// `what` names the file in messages ("trace file").
void write_text_output(const std::string& path, bool overwrite, const std::string& text,
                       const char* what);

enum class TextFormat { kCsv, kJson };

// The text formats (docs/results.md "CSV and JSON"): the same rows and field names as the HDF5
// tables, written with the same output safety (private temporary folder, rename on commit,
// regular files only). CSV: PATH holds /candidates, PATH's stem + "_stages.csv" and "_best.csv"
// the other tables (all three are checked and placed together). JSON: one object with
// "attributes", "candidates", "stages" and "best". Rows are written through as they arrive.
// with_regret (--regret-clusters): CSV also writes STEM_regret.csv (csv_regret_path); JSON always
// holds "regret", "uncertainty" and "robust" arrays (docs/uncertainty.md).
std::unique_ptr<ResultWriter> make_text_result_writer(const std::string& path, bool overwrite,
                                                      TextFormat format, bool with_regret = false);
std::string csv_regret_path(const std::string& path);

// The companion file names of a CSV result: {PATH, STEM_stages.csv, STEM_best.csv}.
std::vector<std::string> csv_result_paths(const std::string& path);

}  // namespace ppsearch
