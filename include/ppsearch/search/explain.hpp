// The explain report of one configuration: where its step time and memory go, per pipeline
// rank and per communication kind, the bubble and the binding constraint; a text Gantt of its
// schedule and a Chrome-trace (Perfetto) JSON of it (docs/explain.md). Pure core: std-only.
#pragma once

#include <string>
#include <vector>

#include "ppsearch/schedule/schedule_order.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Evaluates `c` again with the breakdown on and simulates its schedule with the op timeline.
// `ops` is empty when the candidate is infeasible.
struct ExplainedRow {
  Evaluation eval;
  EvalBreakdown detail;
  std::vector<TimedOp> ops;
};
ExplainedRow explain_candidate(const Problem& problem, const Candidate& c, EvalOptions options);

// The report text (several lines, each ending in '\n'). For an infeasible row: the reason.
std::string format_explain(const Problem& problem, const Candidate& c, const ExplainedRow& row);

// Gantt limits: larger pipelines get a one-line note instead of a chart.
constexpr int kGanttMaxRanks = 16;
constexpr int kGanttMaxMicrobatches = 32;
constexpr int kGanttMaxColumns = 160;

// One line per pipeline rank, one character per time slot: the micro-batch label (0-9, a-z,
// A-Z, repeating) for a forward, 'B' for a backward (fused or input-gradient), 'W' for a
// weight-gradient op, '>' for a blocking send, '.' for idle. The slot is the shortest op
// (or makespan / max_columns when that would be wider). Empty when `ops` is empty.
std::string format_gantt(const ScheduleInput& in, const std::vector<TimedOp>& ops,
                         int max_columns = kGanttMaxColumns);

// Chrome trace event format ("traceEvents", times in microseconds): pid 0 = the pipeline, one
// tid per pipeline rank; a complete event ("ph":"X") per op with its micro-batch, chunk and
// virtual stage; a flow arrow per cross-rank dependency; a "send" event per blocking transfer;
// then the step tail per rank: the deferred output-layer wgrad (training.defer_embedding_wgrad,
// on the rank holding the output layer), exposed DP reduction, tied-embedding all-reduce,
// gradient norm, optimizer, parameter all-gather. The tail ends at the evaluated step time.
std::string schedule_trace_json(const Candidate& c, const ExplainedRow& row);

}  // namespace ppsearch
