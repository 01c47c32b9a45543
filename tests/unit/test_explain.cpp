// The op timeline of simulate_traced(), the text Gantt, the evaluator's breakdown and the
// explain report (docs/explain.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "../support/builders.hpp"
#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/schedule_order.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/search/explain.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

ScheduleInput uniform(ScheduleKind kind, int P, int v, int M, double f, double b, double w) {
  ScheduleInput in;
  in.kind = kind;
  in.devices = P;
  in.chunks = v;
  in.microbatches = M;
  const int V = P * v;
  in.fwd_s.assign(V, f / v);
  in.bwd_s.assign(V, b / v);
  in.wgt_s.assign(V, w / v);
  return in;
}

// Every op once, no two ops overlapping on a device, each op after its producer, and the
// recorded makespan equal to the one simulate_fast() reports.
void check_timeline(const ScheduleInput& in) {
  std::vector<TimedOp> ops;
  const ScheduleResult r = simulate_traced(in, &ops);
  ASSERT_TRUE(r.ok) << r.error;
  const int P = in.devices, V = P * in.chunks, M = in.microbatches;
  const int per_cell = in.kind == ScheduleKind::kZBH1 ? 3 : 2;
  ASSERT_EQ(ops.size(), static_cast<std::size_t>(per_cell) * V * M);
  std::map<std::tuple<int, int, int>, const TimedOp*> at;  // (kind, mb, vs)
  std::vector<std::vector<const TimedOp*>> by_dev(P);
  double makespan = 0;
  for (const TimedOp& t : ops) {
    EXPECT_EQ(t.device, t.op.vs % P);
    EXPECT_LE(t.start_s, t.end_s);
    EXPECT_LE(t.end_s, t.release_s);
    EXPECT_GE(t.start_s + 1e-12, t.ready_s);
    EXPECT_TRUE(at.emplace(std::make_tuple(int(t.op.kind), t.op.mb, t.op.vs), &t).second);
    by_dev[t.device].push_back(&t);
    makespan = std::max(makespan, t.release_s);
  }
  for (auto& d : by_dev) {
    std::sort(d.begin(), d.end(),
              [](const TimedOp* a, const TimedOp* b) { return a->start_s < b->start_s; });
    for (std::size_t i = 1; i < d.size(); ++i)
      EXPECT_LE(d[i - 1]->release_s, d[i]->start_s + 1e-12);
  }
  const OpKind back = in.kind == ScheduleKind::kZBH1 ? OpKind::kB : OpKind::kBW;
  for (int mb = 0; mb < M; ++mb) {
    for (int vs = 0; vs < V; ++vs) {
      const TimedOp* f = at.at({int(OpKind::kF), mb, vs});
      const TimedOp* b = at.at({int(back), mb, vs});
      EXPECT_LE(f->release_s, b->start_s + 1e-12) << "F before B, mb " << mb << " vs " << vs;
      if (vs > 0) {
        EXPECT_LE(at.at({int(OpKind::kF), mb, vs - 1})->release_s, f->start_s + 1e-12);
      }
      if (vs + 1 < V) {
        EXPECT_LE(at.at({int(back), mb, vs + 1})->release_s, b->start_s + 1e-12);
      }
    }
  }
  EXPECT_NEAR(makespan, r.time_s, 1e-12 * r.time_s);
  EXPECT_NEAR(simulate_fast(in).time_s, r.time_s, 1e-9 * r.time_s);
}

TEST(ScheduleTrace, TimelineIsCompleteOrderedAndEndsAtTheMakespan) {
  check_timeline(uniform(ScheduleKind::k1F1B, 4, 1, 8, 1, 2, 0));
  check_timeline(uniform(ScheduleKind::kGPipe, 3, 1, 5, 1, 1.5, 0.5));
  check_timeline(uniform(ScheduleKind::kInterleaved1F1B, 4, 2, 8, 1, 2, 0));
  check_timeline(uniform(ScheduleKind::kZBH1, 4, 1, 8, 1, 1, 1));
  ScheduleInput odd = uniform(ScheduleKind::k1F1B, 4, 1, 6, 1, 2, 0);
  odd.fwd_s = {1.0, 1.3, 0.7, 1.1};
  odd.p2p_s = {0.1, 0.2, 0.05};
  check_timeline(odd);
  odd.mode = P2PMode::kBlocking;
  check_timeline(odd);
}

TEST(ScheduleTrace, PlainSimulationRecordsNothingAndAgrees) {
  const ScheduleInput in = uniform(ScheduleKind::k1F1B, 4, 1, 8, 1, 2, 0);
  std::vector<TimedOp> ops(3);  // cleared by simulate_traced
  const ScheduleResult a = simulate_traced(in, &ops);
  const ScheduleResult b = simulate(in);
  EXPECT_EQ(ops.size(), 64u);
  EXPECT_DOUBLE_EQ(a.time_s, b.time_s);
  EXPECT_EQ(a.busy_s, b.busy_s);
  ScheduleInput bad = in;
  bad.devices = 0;
  EXPECT_FALSE(simulate_traced(bad, &ops).ok);
  EXPECT_TRUE(ops.empty());
}

// 4 stages, 8 micro-batches, uniform f = 1, b = 2 (one slot = f): the closed form
// (M + P − 1)(f + b) gives (P − 1)(f + b) = 9 idle slots on every rank.
TEST(Gantt, OneF1BIdleSlotsMatchTheClosedForm) {
  const int P = 4, M = 8;
  const ScheduleInput in = uniform(ScheduleKind::k1F1B, P, 1, M, 1, 2, 0);
  std::vector<TimedOp> ops;
  ASSERT_TRUE(simulate_traced(in, &ops).ok);
  const std::string g = format_gantt(in, ops);
  std::vector<std::string> rows;
  std::size_t pos = 0;
  while ((pos = g.find('|', pos)) != std::string::npos) {
    const std::size_t end = g.find('|', pos + 1);
    rows.push_back(g.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(P)) << g;
  for (int d = 0; d < P; ++d) {
    const std::string& r = rows[d];
    EXPECT_EQ(r.size(), static_cast<std::size_t>((M + P - 1) * 3)) << r;
    EXPECT_EQ(std::count(r.begin(), r.end(), '.'), (P - 1) * 3) << "rank " << d << ": " << r;
    EXPECT_EQ(std::count(r.begin(), r.end(), 'B'), 2 * M) << r;
    for (int mb = 0; mb < M; ++mb)
      EXPECT_EQ(std::count(r.begin(), r.end(), char('0' + mb)), 1) << r;
    // Rank d starts after d forwards of the ranks before it.
    EXPECT_EQ(r.find_first_not_of('.'), static_cast<std::size_t>(d)) << r;
  }
  EXPECT_EQ(rows[0].substr(0, 4), "0123");
  EXPECT_EQ(rows[3].substr(0, 6), "...0BB");
  EXPECT_TRUE(format_gantt(in, {}).empty());
}

TEST(Gantt, WideSchedulesAreScaledAndZeroBubbleShowsW) {
  const ScheduleInput in = uniform(ScheduleKind::kZBH1, 4, 1, 8, 1, 1, 1);
  std::vector<TimedOp> ops;
  ASSERT_TRUE(simulate_traced(in, &ops).ok);
  const std::string g = format_gantt(in, ops);
  EXPECT_NE(g.find('W'), std::string::npos) << g;
  const std::string narrow = format_gantt(in, ops, 10);
  const std::size_t a = narrow.find('|'), b = narrow.find('|', a + 1);
  EXPECT_LE(b - a - 1, 10u) << narrow;
}

TEST(Explain, BreakdownOnlyWhenAskedAndConsistentWithTheRow) {
  const Problem p = llama70b_h200();
  const Candidate c = make_candidate(p, 4, 8, 4, 1, Schedule::k1F1B);
  Evaluator plain(p);
  const Evaluation e0 = plain.evaluate(c);
  ASSERT_TRUE(e0.feasible);
  EXPECT_FALSE(plain.breakdown().valid);

  const ExplainedRow row = explain_candidate(p, c, EvalOptions{});
  const Evaluation& e = row.eval;
  ASSERT_TRUE(e.feasible && row.detail.valid);
  EXPECT_DOUBLE_EQ(e.iteration_time_s, e0.iteration_time_s);  // the breakdown changes nothing
  const EvalBreakdown& b = row.detail;
  ASSERT_EQ(b.memory_bytes.size(), 8u);
  double peak = 0;
  for (int d = 0; d < 8; ++d) {
    EXPECT_NEAR(b.static_bytes[d] + b.activation_bytes[d] + b.transient_bytes[d] + b.reserve_bytes,
                b.memory_bytes[d], 1e-6 * b.memory_bytes[d]);
    peak = std::max(peak, b.memory_bytes[d]);
    EXPECT_GE(b.tp_total_s[d], b.tp_exposed_s[d]);
    EXPECT_GE(b.dp_total_s[d], b.dp_exposed_s[d]);
  }
  EXPECT_NEAR(peak / 1e9, e.peak_memory_gb, 1e-9);
  EXPECT_EQ(e.critical_rank, b.critical_rank);
  EXPECT_GT(e.tp_comm_total_s, e.tp_comm_s);  // tp = 4 with SP: some overlap is hidden
  EXPECT_GE(e.dp_comm_total_s, e.dp_comm_s);
  EXPECT_GT(e.pp_comm_total_s, 0);
  EXPECT_EQ(row.ops.size(), 2u * 8 * c.num_microbatches);
  double makespan = 0;
  for (const TimedOp& t : row.ops) makespan = std::max(makespan, t.release_s);
  EXPECT_NEAR(makespan, e.pipeline_s, 1e-9 * e.pipeline_s);

  const std::string text = format_explain(p, c, row);
  for (const char* want : {"Step time", "Per pipeline rank", "Communication per step",
                           "Bubble:", "Binding constraint:", "bottleneck stage: pipeline rank",
                           "memory: pipeline rank"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  // One table line per rank.
  for (int d = 0; d < 8; ++d)
    EXPECT_NE(text.find("\n     " + std::to_string(d) + " "), std::string::npos) << text;
}

TEST(Explain, InfeasibleRowSaysWhy) {
  const Problem p = llama70b_h200();
  const Candidate c = make_candidate(p, 1, 1, 128, 1, Schedule::k1F1B);
  const ExplainedRow row = explain_candidate(p, c, EvalOptions{});
  ASSERT_FALSE(row.eval.feasible);
  EXPECT_TRUE(row.ops.empty());
  EXPECT_NE(format_explain(p, c, row).find("infeasible (memory)"), std::string::npos);
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

// Asynchronous p2p (interleaved with the stack's p2p overlap) costs each pass
// gpu.comm_contention × the stage's sends and receives, forward and backward (evaluate.cpp):
// with TP = 1 and ZeRO-1 nothing else in a micro-batch depends on the contention, so every
// rank's busy time drops by exactly M × 2ρ × its p2p time at ρ = 0, and the report names it.
TEST(Explain, AsyncP2pContentionIsWhatTheReportSays) {
  Problem p = llama70b_h200();
  const Candidate c =
      make_candidate(p, 1, 8, 16, 1, Schedule::kInterleaved1F1B, Recompute::kFull, 0, 1, 2);
  const ExplainedRow row = explain_candidate(p, c, EvalOptions{});
  ASSERT_TRUE(row.eval.feasible && row.detail.valid);
  const double rho = p.gpu.comm_contention;
  ASSERT_GT(rho, 0);
  p.gpu.comm_contention = 0;
  const ExplainedRow free = explain_candidate(p, c, EvalOptions{});
  ASSERT_TRUE(free.eval.feasible && free.detail.valid);
  const double M = c.num_microbatches;
  for (int d = 0; d < 8; ++d) {
    const double p2p = row.detail.p2p_s[d];
    ASSERT_GT(p2p, 0) << d;
    EXPECT_NEAR(row.detail.busy_s[d] - free.detail.busy_s[d], M * 2 * rho * p2p,
                1e-9 * row.detail.busy_s[d])
        << d;
  }
  p.gpu.comm_contention = rho;
  EXPECT_NE(format_explain(p, c, row).find("other includes p2p kernel contention"),
            std::string::npos);
  // Blocking p2p (1F1B on a cluster with cluster.p2p = blocking) is reported as such instead.
  const Candidate b = make_candidate(p, 1, 8, 16, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  const ExplainedRow brow = explain_candidate(p, b, EvalOptions{});
  ASSERT_TRUE(brow.eval.feasible);
  if (p.cluster.p2p_blocking) {
    const std::string text = format_explain(p, b, brow);
    EXPECT_EQ(text.find("p2p kernel contention"), std::string::npos) << text;
    EXPECT_NE(text.find("plus blocking p2p"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace ppsearch
