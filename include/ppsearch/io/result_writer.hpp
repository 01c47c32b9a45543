// HDF5 result file (interface.md §3). The only HDF5 user is src/io/hdf5_result_writer.cpp;
// this header is std-only. Rank 0 writes; rows are streamed in final (ranked) order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ppsearch {

// One row of /candidates and /best. Plain layout, mapped member by member to an HDF5 compound.
struct ResultRow {
  std::int32_t gpus, tp, pp, cp, dp, vpp, mbs, num_microbatches, global_batch_size;
  std::uint8_t schedule;   // HDF5 enum: gpipe, 1f1b, interleaved-1f1b, zb-h1 (Schedule values)
  std::uint8_t recompute;  // HDF5 enum: none, selective, full (Recompute values)
  std::uint8_t sequence_parallel;  // 0/1
  std::int8_t zero_stage;          // 0..3
  std::uint8_t feasible;           // 0/1
  std::uint8_t
      infeasible_reason;  // HDF5 enum: Infeasible values (none, memory, too_few_layers, schedule)
  double iteration_time_s, mfu, hfu, tflops_per_gpu, tokens_per_s, bubble_fraction, peak_memory_gb;
  double compute_s, tp_comm_s, cp_comm_s, pp_comm_s, dp_comm_s;
  double pipeline_s, optimizer_s;
  double needed_memory_gb;  // infeasible(memory): what the worst rank needs; else = peak
  std::int32_t worst_rank;  // pipeline rank with the highest memory need
};

// One row of /stages.
struct StageRow {
  std::int64_t candidate;  // row index into /candidates
  std::int32_t stage, pipeline_rank, first_layer, last_layer;
  double time_s, memory_gb;
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

class ResultWriter {
 public:
  virtual ~ResultWriter() = default;  // an uncommitted writer removes its temporary file
  virtual void write_candidates(const std::vector<ResultRow>& rows) = 0;  // in ranked order, once
  virtual void write_stages(
      const std::vector<StageRow>& rows) = 0;  // may be called repeatedly (appends)
  virtual void write_best(const std::vector<ResultRow>& rows) = 0;
  virtual void commit(const ResultMeta& meta) = 0;  // attributes, close, rename onto the final name
};

// Creates PATH.tmp-<pid> next to PATH. Throws OutputError (exit 4) when it cannot be created,
// and OutputError when PATH exists and !overwrite (main checks this earlier and reports exit 2).
std::unique_ptr<ResultWriter> make_hdf5_result_writer(const std::string& path, bool overwrite);

}  // namespace ppsearch
