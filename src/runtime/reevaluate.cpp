// Re-evaluating chosen rows under another specification: the uncertainty of the top rows and
// the cross-topology regret (docs/uncertainty.md).
#include "ppsearch/runtime/reevaluate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/regret.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {

// ---- Uncertainty of the top rows ----------------------------------------------------------

TopRowUncertainty::TopRowUncertainty(const Problem& problem, EvalOptions options, int top_n,
                                     const std::vector<ConstantRange>& table)
    : top_n_(std::max(0, top_n)) {
  // A tabled key the configuration no longer knows is left out rather than failing every run
  // (the unit test Uncertainty.EveryTabledKeyIsAKnownKeyWithASource reports it).
  std::vector<ConstantRange> known;
  for (const ConstantRange& r : table)
    if (is_known_key(r.key)) known.push_back(r);
  if (top_n_ > 0) eval_ = std::make_unique<UncertaintyEvaluator>(problem, known, options);
}

TopRowUncertainty::~TopRowUncertainty() = default;

int TopRowUncertainty::variations() const {
  return eval_ ? static_cast<int>(eval_->variations().size()) : 0;
}

bool TopRowUncertainty::annotate(std::vector<ResultRow>& rows, std::int64_t first) {
  if (!eval_) return false;
  bool any = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ResultRow& r = rows[i];
    if (!r.feasible) continue;
    std::vector<Entry>& seen = by_gpus_[r.gpus];
    if (static_cast<int>(seen.size()) >= top_n_) continue;
    UncertaintyEvaluator::Result u = eval_->evaluate(candidate_of(r), r.iteration_time_s);
    r.iteration_time_lo_s = u.bounds.lo;
    r.iteration_time_hi_s = u.bounds.hi;
    seen.push_back(Entry{first + static_cast<std::int64_t>(i), r.iteration_time_s, u.bounds,
                         std::move(u.times)});
    any = true;
  }
  return any;
}

bool TopRowUncertainty::wants(const std::vector<ResultRow>& rows) const {
  if (!eval_) return false;
  for (const ResultRow& r : rows) {
    if (!r.feasible) return false;  // infeasible rows come last in the order
    const auto it = by_gpus_.find(r.gpus);
    if (it == by_gpus_.end() || static_cast<int>(it->second.size()) < top_n_) return true;
  }
  return false;
}

void TopRowUncertainty::fill_top(std::vector<ResultRow>& top) const {
  for (const auto& [gpus, entries] : by_gpus_)
    for (const Entry& e : entries)
      if (e.index < static_cast<std::int64_t>(top.size())) {
        top[static_cast<std::size_t>(e.index)].iteration_time_lo_s = e.bounds.lo;
        top[static_cast<std::size_t>(e.index)].iteration_time_hi_s = e.bounds.hi;
      }
}

void TopRowUncertainty::fill_best(std::vector<ResultRow>& best) const {
  for (ResultRow& r : best) {
    const auto it = by_gpus_.find(r.gpus);
    if (!r.feasible || it == by_gpus_.end() || it->second.empty()) continue;
    r.iteration_time_lo_s = it->second.front().bounds.lo;
    r.iteration_time_hi_s = it->second.front().bounds.hi;
  }
}

std::vector<UncertaintyRow> TopRowUncertainty::table() const {
  std::vector<UncertaintyRow> out;
  if (!eval_) return out;
  const std::vector<Variation>& vars = eval_->variations();
  for (const auto& [gpus, entries] : by_gpus_) {
    const std::size_t first_out = out.size();
    for (const Entry& e : entries) {
      for (std::size_t v = 0; v < vars.size(); ++v) {
        UncertaintyRow u;
        u.candidate = e.index;
        u.gpus = gpus;
        u.constant = vars[v].key;
        u.end = vars[v].end < 0 ? "low" : "high";
        u.value = vars[v].value;
        u.iteration_time_s = e.times[v];
        out.push_back(std::move(u));
      }
    }
    // Rank of each row among its GPU count's rows under the same variation (1 = fastest; ties
    // and infeasible rows after, by /candidates index).
    for (std::size_t v = 0; v < vars.size(); ++v) {
      std::vector<std::size_t> idx;
      for (std::size_t k = 0; k < entries.size(); ++k)
        idx.push_back(first_out + k * vars.size() + v);
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        const double ta = out[a].iteration_time_s;
        const double tb = out[b].iteration_time_s;
        if (std::isnan(ta) != std::isnan(tb)) return std::isnan(tb);
        if (!std::isnan(ta) && ta != tb) return ta < tb;
        return out[a].candidate < out[b].candidate;
      });
      for (std::size_t k = 0; k < idx.size(); ++k)
        out[idx[k]].rank = static_cast<std::int32_t>(k + 1);
    }
  }
  return out;
}

std::vector<RobustRow> TopRowUncertainty::robust() const {
  std::vector<RobustRow> out;
  for (const auto& [gpus, entries] : by_gpus_) {
    if (entries.empty()) continue;
    std::vector<double> hi;
    std::vector<int> infeasible;
    for (const Entry& e : entries) {
      hi.push_back(e.bounds.hi);
      int n = 0;
      for (double t : e.times) n += std::isnan(t) ? 1 : 0;
      infeasible.push_back(n);
    }
    const std::int64_t k = robust_index(hi, infeasible);
    if (k < 0) continue;
    const Entry& e = entries[static_cast<std::size_t>(k)];
    RobustRow r;
    r.gpus = gpus;
    r.candidate = e.index;
    r.best_candidate = entries.front().index;
    r.iteration_time_s = e.time;
    r.iteration_time_lo_s = e.bounds.lo;
    r.iteration_time_hi_s = e.bounds.hi;
    r.rows_compared = static_cast<std::int32_t>(entries.size());
    out.push_back(r);
  }
  return out;
}

// ---- Cross-topology regret ----------------------------------------------------------------

namespace {

const char* reason_name(std::uint8_t r) {
  return r < kNumInfeasible ? to_string(static_cast<Infeasible>(r)) : "unknown";
}

RegretRow regret_row(std::int32_t gpus, const std::string& tuned_on, const std::string& run_on,
                     const ResultRow& config) {
  RegretRow g;
  g.gpus = gpus;
  g.tuned_on = tuned_on;
  g.run_on = run_on;
  g.tp = config.tp;
  g.pp = config.pp;
  g.cp = config.cp;
  g.dp = config.dp;
  g.vpp = config.vpp;
  g.mbs = config.mbs;
  g.num_microbatches = config.num_microbatches;
  g.schedule = to_string(static_cast<Schedule>(config.schedule));
  g.recompute = to_string(static_cast<Recompute>(config.recompute));
  g.sequence_parallel = static_cast<std::int8_t>(config.sequence_parallel);
  g.zero_stage = config.zero_stage;
  g.recompute_num_layers = config.recompute_num_layers;
  g.ep = std::max(1, config.ep);
  g.etp = std::max(1, config.etp);
  return g;
}

}  // namespace

std::vector<RegretRow> run_regret(const std::vector<RegretCluster>& clusters, Communicator& comm,
                                  const RunConfig& base) {
  const bool root = comm.rank() == 0;
  const std::size_t n = clusters.size();
  std::vector<std::vector<ResultRow>> best(n);      // per cluster: /best of its search
  std::vector<std::vector<Candidate>> searched(n);  // per cluster: its candidates, sorted
  for (std::size_t k = 0; k < n; ++k) {
    Enumeration en;
    if (root) en = enumerate_candidates(clusters[k].problem);
    broadcast_pod(comm, en.candidates, 0);
    RunConfig rc;
    rc.threads = base.threads;
    rc.eval = base.eval;
    rc.eval.want_stages = false;
    rc.chunk = base.chunk;
    rc.keep_top = 1;
    // run_search throws on rank 0 only; every rank learns the outcome before the next search.
    std::int32_t failed = 0;
    std::string message;
    SearchOutput out;
    try {
      out = run_search(clusters[k].problem, en.candidates, comm, rc);
    } catch (const SearchFailed& e) {
      failed = e.exit_code();
      message = e.what();
    }
    broadcast_pod(comm, failed, 0);
    if (failed != 0) {
      if (root)
        throw SearchFailed(failed,
                           "--regret-clusters: searching " + clusters[k].label + ": " + message);
      return {};
    }
    if (root) {
      best[k] = std::move(out.best);
      searched[k] = std::move(en.candidates);
      std::sort(searched[k].begin(), searched[k].end(), key_less);
    }
  }
  if (!root) return {};

  // GPU counts: the same for every cluster (the same --gpus), in ascending order.
  std::vector<std::int32_t> counts;
  for (const auto& b : best)
    for (const ResultRow& r : b) counts.push_back(r.gpus);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());

  EvalOptions eo = base.eval;
  eo.want_stages = false;
  eo.want_breakdown = false;
  std::vector<Evaluator> evaluators;
  evaluators.reserve(n);
  for (const RegretCluster& c : clusters) evaluators.emplace_back(c.problem, eo);

  std::vector<RegretRow> rows;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::int32_t g : counts) {
    // Each cluster's best at g (nullptr: none feasible).
    std::vector<const ResultRow*> winner(n, nullptr);
    for (std::size_t k = 0; k < n; ++k)
      for (const ResultRow& r : best[k])
        if (r.gpus == g && r.feasible) winner[k] = &r;
    // The clusters with a winner form the matrix; times[i][j] of winner i on cluster j.
    std::vector<std::size_t> in;
    for (std::size_t k = 0; k < n; ++k)
      if (winner[k]) in.push_back(k);
    std::vector<std::vector<double>> times(in.size(), std::vector<double>(in.size(), nan));
    std::vector<std::vector<RegretRow>> cell(in.size(), std::vector<RegretRow>(in.size()));
    for (std::size_t a = 0; a < in.size(); ++a) {
      const std::size_t i = in[a];
      const Candidate c = candidate_of(*winner[i]);
      for (std::size_t b = 0; b < in.size(); ++b) {
        const std::size_t j = in[b];
        RegretRow row = regret_row(g, clusters[i].label, clusters[j].label, *winner[i]);
        row.in_search_space =
            std::binary_search(searched[j].begin(), searched[j].end(), c, key_less) ? 1 : 0;
        if (i == j) {  // the search's own row: the diagonal is exact
          row.feasible = 1;
          row.infeasible_reason = "none";
          row.iteration_time_s = winner[i]->iteration_time_s;
        } else {
          const Evaluation e = evaluators[j].evaluate(c);
          row.feasible = e.feasible ? 1 : 0;
          row.infeasible_reason = reason_name(static_cast<std::uint8_t>(e.reason));
          row.iteration_time_s = e.feasible ? e.iteration_time_s : nan;
        }
        times[a][b] = row.iteration_time_s;
        cell[a][b] = std::move(row);
      }
    }
    RegretMatrix m;
    if (!in.empty()) m = regret_matrix(times);
    for (std::size_t a = 0; a < in.size(); ++a)
      for (std::size_t b = 0; b < in.size(); ++b) {
        RegretRow& row = cell[a][b];
        row.best_time_s = times[b][b];
        row.regret_pct = m.regret_pct[a][b];
        row.worst_regret_pct = m.worst_pct[a];
        row.robust = static_cast<int>(a) == m.robust ? 1 : 0;
      }
    // Rows in cluster order, the clusters without a feasible configuration included.
    for (std::size_t i = 0; i < n; ++i) {
      const auto a = std::find(in.begin(), in.end(), i);
      for (std::size_t j = 0; j < n; ++j) {
        const auto b = std::find(in.begin(), in.end(), j);
        if (a != in.end() && b != in.end()) {
          rows.push_back(cell[static_cast<std::size_t>(a - in.begin())]
                             [static_cast<std::size_t>(b - in.begin())]);
          continue;
        }
        // No best on tuned_on, or none on run_on to compare with: a counted outcome.
        RegretRow row = winner[i]
                            ? regret_row(g, clusters[i].label, clusters[j].label, *winner[i])
                            : regret_row(g, clusters[i].label, clusters[j].label, ResultRow{});
        row.feasible = 0;
        row.infeasible_reason = !winner[i] ? "no feasible configuration on tuned_on"
                                           : "no feasible configuration on run_on";
        row.iteration_time_s = nan;
        if (winner[i] && !winner[j]) {  // it may still run there: shown, with no regret
          const Evaluation e = evaluators[j].evaluate(candidate_of(*winner[i]));
          row.iteration_time_s = e.feasible ? e.iteration_time_s : nan;
          row.feasible = e.feasible ? 1 : 0;
          if (!e.feasible) row.infeasible_reason = reason_name(static_cast<std::uint8_t>(e.reason));
        }
        row.best_time_s = winner[j] ? winner[j]->iteration_time_s : nan;
        row.regret_pct = nan;
        row.worst_regret_pct = std::numeric_limits<double>::infinity();
        row.robust = 0;
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

}  // namespace ppsearch
