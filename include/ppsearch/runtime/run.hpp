// The distributed search: rank 0's candidates are evaluated by every rank in
// OpenMP threads, results are gathered to rank 0 and put in a total order.
// OpenMP lives only in src/runtime/run.cpp; MPI only behind Communicator.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct RunConfig {
  int threads = 1;   // OpenMP threads on this rank
  EvalOptions eval;  // partitioner / simulation mode
  int chunk = 256;   // longest run of same-shape candidates dealt as one unit
  // Called on rank 0's main thread now and then: (done on this rank, total on this rank).
  std::function<void(std::int64_t, std::int64_t)> progress;
};

struct SearchOutput {
  std::vector<ResultRow>
      rows;  // /candidates, ranked: feasible by mfu desc, then infeasible; ties by key
  std::vector<StageRow> stages;  // /stages, candidate = index into rows
  std::vector<ResultRow> best;   // /best: per GPU count, its best row (first row of that count)
  std::int64_t evaluated = 0;
  std::int64_t feasible = 0;
  std::array<std::int64_t, kNumInfeasible> by_reason{};
  std::vector<double> rank_busy_s;  // per MPI rank
  double imbalance = 1.0;           // max / mean of rank_busy_s
};

ResultRow to_row(const Candidate& c, const Evaluation& e);
// Strict total order of rows: feasible first, mfu descending, then the candidate key.
bool row_before(const ResultRow& a, const ResultRow& b);

// Collective: every rank calls it with the same candidates. The returned output is
// complete on rank 0 and empty on the others.
SearchOutput run_search(const Problem& problem, const std::vector<Candidate>& candidates,
                        Communicator& comm, const RunConfig& config);

}  // namespace ppsearch
