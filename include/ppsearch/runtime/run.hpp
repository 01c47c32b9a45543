// The distributed search: rank 0's candidates are evaluated by every rank in OpenMP threads;
// each rank sorts its own rows, and rank 0 merges the sorted runs block by block into the total
// order, handing every row to a sink as it goes. Rank 0 keeps only what the printed report needs
// (the top rows, /best, the counts), so its memory grows with the block size, not with the sweep.
// OpenMP lives only in src/runtime/run.cpp; MPI only behind Communicator.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/search/sizing.hpp"
#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {

// Receives consecutive blocks of the final order on rank 0: the rows, and the stages of the
// feasible ones among them with StageRow::candidate = the row's index in the whole order.
// Every row is handed over exactly once; a block is never empty.
using RowSink =
    std::function<void(const std::vector<ResultRow>& rows, const std::vector<StageRow>& stages)>;

struct RunConfig {
  int threads = 1;   // OpenMP threads on this rank
  EvalOptions eval;  // partitioner / simulation mode
  int chunk = 256;   // longest run of same-shape candidates dealt as one unit
  // Called on rank 0's main thread now and then: (done on this rank, total on this rank).
  std::function<void(std::int64_t, std::int64_t)> progress;
  RowSink sink;               // rank 0: every row in final order (may be empty: nothing handed)
  std::int64_t keep_top = 0;  // rows of the final order kept in SearchOutput::top
  // Rows per block handed to the sink, and at most this many rows per block a rank sends to
  // rank 0 (0 = the defaults below). Any value gives the same order; tests use small ones.
  std::int64_t sink_rows = 0;
  std::int64_t send_rows = 0;
};

inline constexpr std::int64_t kDefaultSinkRows = 65536;
inline constexpr std::int64_t kDefaultSendRows = 32768;

// What rank 0 keeps of the search (the rows themselves went to the sink).
struct SearchOutput {
  std::vector<ResultRow> top;  // the first keep_top rows: feasible by mfu desc, then infeasible
  std::vector<StageRow> first_stages;  // stages of row 0 when it is feasible (candidate = 0)
  std::vector<ResultRow> best;  // /best: per GPU count, its best row (first row of that count)
  // The infeasible (memory) row that needs the least memory; the first in the order among equals.
  bool has_closest_miss = false;
  ResultRow closest_miss{};
  std::int64_t evaluated = 0;
  std::int64_t feasible = 0;
  std::array<std::int64_t, kNumInfeasible> by_reason{};
  std::vector<double> rank_busy_s;  // per MPI rank
  double imbalance = 1.0;           // max / mean of rank_busy_s
};

// The search could not complete: what() is the whole message (without the "ppsearch: "
// prefix), exit_code() the process exit code (ExitCode values): 2 when memory ran out (the
// sweep is too large for the memory at hand: narrowing it is the fix, like a usage error), 1 for
// a bug (an evaluation threw, a result is not finite).
class SearchFailed : public std::runtime_error {
 public:
  SearchFailed(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// "out of memory while WHAT (N candidates): narrow the sweep ... or give each rank more memory".
std::string out_of_memory_message(const std::string& what, std::int64_t candidates);

ResultRow to_row(const Candidate& c, const Evaluation& e);
// The candidate a row was made from (the inverse of to_row's candidate part), so a row read
// back or kept for the report can be evaluated again.
Candidate candidate_of(const ResultRow& r);
// Fills time_to_train_s, gpu_hours and cost of every row from training.tokens and
// cluster.price_per_gpu_hour (training_cost(); NaN where not given and in infeasible rows).
void add_training_cost(std::vector<ResultRow>& rows, const Problem& problem);
// Rows kept on rank 0 for a printed table of `top` distinct strategies (fold_near_duplicates):
// up to 50 rows per printed line, at least `top`, and no more than max(top, 100000) rows.
std::int64_t rows_kept_for_top(int top);
// Strict total order of rows: feasible first, mfu descending, then the candidate key. Rows
// compared must have a finite mfu when feasible (see row_is_finite).
bool row_before(const ResultRow& a, const ResultRow& b);
// False when a feasible row has a non-finite figure (a bug: such a row is never written).
// Infeasible rows carry NaN figures by contract and always pass.
bool row_is_finite(const ResultRow& r);
// "gpus=64 tp=8 pp=4 cp=1 dp=2 vpp=1 mbs=1 schedule=1f1b recompute=none sp=on zero=1"
std::string row_key_text(const ResultRow& r);

// One source's next rows (sorted by row_before) with the stages of its feasible rows,
// concatenated in row order; stage_count[i] is row i's number of stages (0 when infeasible).
struct RowBlock {
  std::vector<ResultRow> rows;
  std::vector<std::int32_t> stage_count;
  std::vector<StageResult> stages;
};
// Replaces blocks[s] by source s's next block for every s in `which`; an empty block means
// source s has no rows left.
using BlockFetch =
    std::function<void(const std::vector<int>& which, std::vector<RowBlock>& blocks)>;

// k-way merge of `sources` runs, each sorted by row_before and delivered in blocks by `fetch`,
// into the total order: every row goes to `sink` (when set) in blocks of at most `sink_rows`
// rows, and the returned output holds the first `keep_top` rows, /best and the counts
// (rank_busy_s and imbalance are left empty). Throws SearchFailed(1) for a feasible row with a
// non-finite figure (before it reaches the sink) and std::logic_error for an unsorted source.
SearchOutput merge_ranked(int sources, const BlockFetch& fetch, const RowSink& sink,
                          std::int64_t keep_top, std::int64_t sink_rows = kDefaultSinkRows);

// Collective: every rank calls it with the same candidates. On rank 0 it hands every row to
// config.sink in the final order (identical for any number of ranks and threads) and returns
// the summary; on the other ranks it returns an empty output, also when the search failed.
// Failures: rank 0 throws SearchFailed (memory ran out on some rank, an evaluation threw, a
// result is not finite) after every rank has stopped, so all ranks can still end together; an
// exception thrown by the sink is rethrown on rank 0 after the other ranks were released
// (std::bad_alloc becomes SearchFailed(2)). A CommError, or an exception in the middle of a
// collective call, propagates as is on the rank that saw it: the ranks are out of step then and
// the caller must end the run with Communicator::abort.
SearchOutput run_search(const Problem& problem, const std::vector<Candidate>& candidates,
                        Communicator& comm, const RunConfig& config);

}  // namespace ppsearch
