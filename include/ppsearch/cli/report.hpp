// What rank 0 prints: the ranked table, the best partition as Megatron-LM takes it,
// rule and reason summaries, and the progress line.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ppsearch/cli/options.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/runtime/reevaluate.hpp"
#include "ppsearch/runtime/run.hpp"
#include "ppsearch/search/enumerate.hpp"

namespace ppsearch {

// (first_layer, last_layer) of each /stages row, in the rows' order (emit_launch_config's input).
std::vector<std::pair<int, int>> stage_spans(const std::vector<StageRow>& stages);
// recomputed_layers of each /stages row, in the rows' order.
std::vector<std::int64_t> stage_recomputed(const std::vector<StageRow>& stages);

// "best configuration as Megatron-LM arguments" and the emitted arguments (emit.hpp), indented.
void print_best_launch(std::ostream& os, const Problem& problem, const ResultRow& best,
                       const std::vector<StageRow>& stages);

// --emit: the best row's launch configuration in req.emit_format (after the report, or alone
// with --quiet); nothing when no row is feasible.
void print_emitted(std::ostream& os, const Problem& problem, const RunRequest& req,
                   const SearchOutput& out);

std::string rule_summary(const Enumeration& en);  // "rule=removed;..." in rule order
std::string reason_summary(const SearchOutput& out);

// `uncertainty` (may be null): the step-time bounds of the top rows, printed after the table
// with the robust winner (docs/uncertainty.md).
void print_report(std::ostream& os, const Problem& problem, const RunRequest& req,
                  const Enumeration& en, const SearchOutput& out, const ResultMeta& meta,
                  const TopRowUncertainty* uncertainty = nullptr);
// The --regret-clusters matrix per GPU count (docs/uncertainty.md "Cross-topology regret").
void print_regret(std::ostream& os, const std::vector<RegretRow>& rows);
void print_no_feasible(std::ostream& os, const Enumeration& en, const SearchOutput& out);

// The explain report (docs/explain.md) of the best row: printed when req.explain is set or the
// search had one candidate (the exact-configuration mode), the Gantt with it or with req.gantt
// (small pipelines only), and the --trace JSON written to req.trace_path. Returns 0, or the exit
// code of a failed trace write (2 for an unusable name, 4 for a write error) after a message
// on `err`. `quiet` suppresses the printing, not the trace.
int explain_best(std::ostream& os, std::ostream& err, const Problem& problem, const RunRequest& req,
                 const Enumeration& en, const SearchOutput& out, bool full_simulation);

// Progress on stderr. On a terminal one line (done/total, rate, ETA) redrawn at most every
// 0.2 s; elsewhere (Slurm, a pipe, a file) a plain line every `interval_s` seconds:
// "progress: 41% (163000/396336 candidates), 12.3 s elapsed, ETA 17 s".
class Progress {
 public:
  explicit Progress(bool enabled, bool terminal = true, double interval_s = 5.0);
  bool enabled() const { return enabled_; }
  void update(std::int64_t done, std::int64_t total);
  void finish();

 private:
  bool enabled_;
  bool terminal_ = true;
  double interval_s_ = 5.0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ppsearch
