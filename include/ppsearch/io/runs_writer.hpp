/// \file
/// The HDF5 output of `ppsearch-validate --output FILE.h5`: one table /runs with a row per runs
/// CSV row (docs/validation.md). Written by src/io/hdf5_result_writer.cpp, the only HDF5 user;
/// this header is std-only.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ppsearch {

/// \brief One row of /runs. Strings are stored as variable-length UTF-8; NaN = not available.
struct RunRow {
  std::string id;
  std::uint8_t modelled = 0;  ///< 0/1
  std::string note;           ///< the reason when not modelled, else remarks ("" if none)
  std::uint8_t fit = 0;       ///< 0/1: listed in --fit-ids
  double predicted_step_time_s = std::numeric_limits<double>::quiet_NaN();
  double measured_step_time_s = std::numeric_limits<double>::quiet_NaN();
  double error_pct = std::numeric_limits<double>::quiet_NaN();      ///< 100·(pred − meas)/meas
  double predicted_mfu = std::numeric_limits<double>::quiet_NaN();  ///< row convention, 0–1
  double measured_mfu = std::numeric_limits<double>::quiet_NaN();   ///< as reported, 0–1
  double measured_mfu_recomputed = std::numeric_limits<double>::quiet_NaN();  ///< at measured time
  double engine_mfu = std::numeric_limits<double>::quiet_NaN();  ///< the engine's own MFU, 0–1
  double peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  std::string mfu_convention;  ///< the row's label ("" = none)
  // The configuration behind the prediction (zeros / "" when not modelled).
  std::int32_t gpus = 0, tp = 0, pp = 0, cp = 0, dp = 0, vpp = 0, mbs = 0;
  std::int32_t num_microbatches = 0, global_batch_size = 0;
  std::string schedule;                ///< "1f1b", "interleaved-1f1b", …
  std::string recompute;               ///< "none", "selective", "full"
  std::int8_t sequence_parallel = -1;  ///< 0/1, -1 when not modelled
  std::int8_t zero_stage = -1;         ///< 0–3, -1 when not modelled
  std::string searched;                ///< knobs the row left empty, with the chosen values
  std::int32_t candidates_evaluated = 0;
  std::int32_t candidates_feasible = 0;
  // Peak memory per GPU in GB (1e9 bytes): measured (NaN = none), predicted (also set when the
  // single stated configuration does not fit: what it would need) and 100·(pred − meas)/meas.
  double measured_peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  double predicted_peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  double memory_error_pct = std::numeric_limits<double>::quiet_NaN();
  std::string memory_metric;     ///< allocated, reserved, device ("" = no measured memory)
  std::string split;             ///< the runs CSV's split column: fit, held-out or ""
  std::uint8_t fits_memory = 1;  ///< 0 when no configuration the row allows fits (model)
};

/// \brief Writes `rows` as the 1-D compound dataset /runs of a new HDF5 file at `path`, with the
///        root attributes ppsearch_version, command_line, created_utc and runs_schema_version.
///        Like the results file it is written in a private temporary folder next to `path` and
///        moved onto it (result_writer.hpp).
/// \throws OutputTargetError (exit 2) when `path` is not a regular file or exists and
///         !overwrite; OutputError (exit 4) when the file cannot be written
void write_runs_table(const std::string& path, const std::vector<RunRow>& rows,
                      const std::string& command_line, bool overwrite);

}  // namespace ppsearch
