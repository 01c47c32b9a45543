// Re-evaluating chosen rows under another specification (docs/uncertainty.md):
//  * TopRowUncertainty: each GPU count's first rows again with every calibration constant at the
//    ends of its range (rank 0, inside the result sink: the rows arrive in final order, so the
//    bounds are in the rows before they are written);
//  * run_regret: the best configuration of each of several clusters, evaluated on every other
//    (collective: every cluster's search is shared by the ranks like the main one).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/runtime/run.hpp"
#include "ppsearch/search/uncertainty.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Default of --uncertainty-top: rows per GPU count whose bounds are computed.
inline constexpr int kDefaultUncertaintyTop = 10;
inline constexpr int kMaxUncertaintyTop = 1000;

class TopRowUncertainty {
 public:
  // top_n = 0 disables it (every call below then does nothing and the tables are empty).
  TopRowUncertainty(const Problem& problem, EvalOptions options, int top_n,
                    const std::vector<ConstantRange>& table = default_constant_ranges());
  ~TopRowUncertainty();
  // `rows`: the next block of the final order; `first`: the index of rows[0] in /candidates.
  // Fills iteration_time_lo_s / _hi_s of each GPU count's first top_n feasible rows; returns
  // whether any row of the block was filled.
  bool annotate(std::vector<ResultRow>& rows, std::int64_t first);
  // Whether annotate() would fill any row of `rows` (a quick scan: no evaluation).
  bool wants(const std::vector<ResultRow>& rows) const;
  // Copies the bounds found by annotate() into rows whose /candidates index is known: the
  // kept top rows (index = position) and /best (each its GPU count's first row).
  void fill_top(std::vector<ResultRow>& top) const;
  void fill_best(std::vector<ResultRow>& best) const;
  // /uncertainty (with ranks) and /robust.
  std::vector<UncertaintyRow> table() const;
  std::vector<RobustRow> robust() const;
  int top_n() const { return top_n_; }
  int variations() const;

 private:
  struct Entry {
    std::int64_t index;
    double time;
    TimeBounds bounds;
    std::vector<double> times;
  };
  int top_n_;
  std::unique_ptr<UncertaintyEvaluator> eval_;
  std::map<std::int32_t, std::vector<Entry>> by_gpus_;  // in rank order
};

// One cluster of --regret-clusters: its label and its whole problem (the same model, GPU
// counts, training and search settings; only the cluster differs).
struct RegretCluster {
  std::string label;
  Problem problem;
};

// Collective: every rank calls it with the same clusters. Searches each cluster (run_search,
// no rows written), then on rank 0 evaluates each cluster's best configuration per GPU count on
// every cluster. Returns the /regret rows on rank 0 (tuned_on major, run_on minor, per GPU count
// ascending), empty elsewhere. Throws SearchFailed on rank 0 when a search fails (after every
// rank has stopped).
std::vector<RegretRow> run_regret(const std::vector<RegretCluster>& clusters, Communicator& comm,
                                  const RunConfig& base);

}  // namespace ppsearch
