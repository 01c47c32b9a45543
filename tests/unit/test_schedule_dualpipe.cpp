// DualPipe against an independent event model of deepseek-ai/DualPipe `DualPipe.step` and
// against the DeepSeek-V3 report's Table 2 (docs/algorithms.md §2.1, §2.4).
//
// The model below is written from the structure of `step` (its eight steps and, inside each
// chunk, the order of its receives, waits, computations and sends), not from ppsearch's
// generator: every rank runs a list of actions; a receive is posted, a wait blocks until every
// posted receive's data has been sent, and an appended send leaves at the rank's next wait
// (`_commit_and_wait_comm` issues the batched sends, then waits); a message arrives a transfer
// time c after it leaves. The makespan it gives is compared with simulate() (async p2p of c on
// every boundary) for arbitrary F, B, W and c.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/schedule_order.hpp"
#include "support/numeric.hpp"

namespace ppsearch {
namespace {

using test::base_seed;
using test::near_rel;

// A message: (is gradient, direction, sending stage, micro-batch).
using Msg = std::tuple<int, int, int, int>;

struct Action {
  enum Kind { kRecv, kSend, kWait, kCompute } kind;
  Msg msg{};
  double dur = 0;
};

// The actions of rank r (P ranks, M micro-batches, M/2 per direction) for one step.
std::vector<Action> step_actions(int r, int P, int M, double f, double b, double w) {
  const int H = P / 2, h = std::min(r, P - 1 - r), N = M / 2;
  const int second = r >= H ? 1 : 0;
  const bool middle = h == H - 1;
  const int stage[2] = {r, P - 1 - r};  // direction 0: stage r; direction 1: stage P−1−r
  int cf[2] = {0, 0}, cb[2] = {0, 0}, rf[2] = {0, 0}, rb[2] = {0, 0}, sf[2] = {0, 0},
      sb[2] = {0, 0};
  std::deque<int> wq;
  std::vector<Action> a;
  auto dir = [&](int phase) { return phase ^ second; };
  auto recv_f = [&](int ph) {
    const int d = dir(ph);
    if (stage[d] > 0) a.push_back({Action::kRecv, Msg{0, d, stage[d] - 1, rf[d]++}});
  };
  auto recv_b = [&](int ph) {
    const int d = dir(ph);
    if (stage[d] < P - 1) a.push_back({Action::kRecv, Msg{1, d, stage[d] + 1, rb[d]++}});
  };
  auto send_f = [&](int ph) {
    const int d = dir(ph);
    if (stage[d] < P - 1) a.push_back({Action::kSend, Msg{0, d, stage[d], sf[d]++}});
  };
  auto send_b = [&](int ph) {
    const int d = dir(ph);
    if (stage[d] > 0) a.push_back({Action::kSend, Msg{1, d, stage[d], sb[d]++}});
  };
  auto wait = [&] { a.push_back({Action::kWait}); };
  auto compute = [&](double t) { a.push_back({Action::kCompute, Msg{}, t}); };
  auto fwd = [&](int ph, bool recv, bool send) {
    if (recv) recv_f(ph);
    wait();
    compute(f);
    ++cf[dir(ph)];
    if (send) send_f(ph);
  };
  auto bwd = [&](int ph, bool zb, bool send) {
    recv_b(ph);
    wait();
    compute(zb ? b : b + w);  // with the weight-gradient store enabled W is deferred
    if (zb) wq.push_back(0);
    ++cb[dir(ph)];
    if (send) send_b(ph);
  };
  auto fwd_bwd = [&](int p0, int p1, bool recv0) {
    if (recv0) recv_f(p0);
    recv_b(p1);
    wait();
    compute(f + b + w);  // an overlapped pair; no overlap gain without all-to-all
    ++cf[dir(p0)];
    ++cb[dir(p1)];
    send_f(p0);
    send_b(p1);
  };
  auto weight = [&] {
    wait();
    wq.pop_front();
    compute(w);
  };
  for (int i = 0; i < 2 * (H - h - 1); ++i) fwd(0, true, true);  // 1: nF0
  recv_f(0);                                                     // 2: nF0F1
  for (int i = 0; i < h + 1; ++i) {
    fwd(0, false, middle);
    recv_f(0);
    fwd(1, true, !middle || i < h);
    if (!middle) send_f(0);
  }
  for (int i = 0; i < H - h - 1; ++i) {  // 3: nB1W1F1
    bwd(1, true, true);
    recv_f(1);
    weight();
    fwd(1, false, true);
  }
  for (int i = 0; i < N - P + h + 1; ++i) {  // 4: nF0B1F1B0
    if (i == 0 && middle) {
      fwd(0, false, false);
      send_f(1);
      bwd(1, false, false);
      send_f(0);
      send_b(1);
    } else {
      fwd_bwd(0, 1, i != 0);
    }
    fwd_bwd(1, 0, true);
  }
  for (int i = 0; i < H - h - 1; ++i) {  // 5: nB1F1B0
    bwd(1, false, true);
    fwd_bwd(1, 0, true);
  }
  bool zb = false;  // 6: nB1B0
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zb = true;
    bwd(1, zb, true);
    if (i == (h + 1) / 2 && h % 2 == 0) zb = true;
    bwd(0, zb, true);
  }
  for (int i = 0; i < H - h - 1; ++i) {  // 7: nWB0
    weight();
    bwd(0, true, true);
  }
  while (!wq.empty()) weight();  // 8: nW
  wait();
  return a;
}

// Makespan of the event model; −1 if it deadlocks.
double model_makespan(int P, int M, double f, double b, double w, double c = 0) {
  std::vector<std::vector<Action>> acts;
  for (int r = 0; r < P; ++r) acts.push_back(step_actions(r, P, M, f, b, w));
  std::map<Msg, double> sent;
  std::vector<std::size_t> ptr(static_cast<std::size_t>(P), 0);
  std::vector<double> clock(static_cast<std::size_t>(P), 0.0);
  std::vector<std::vector<Msg>> posted(static_cast<std::size_t>(P)), outbox(posted);
  for (;;) {
    bool progressed = false, done = true;
    for (std::size_t r = 0; r < acts.size(); ++r) {
      while (ptr[r] < acts[r].size()) {
        const Action& x = acts[r][ptr[r]];
        if (x.kind == Action::kRecv) {
          posted[r].push_back(x.msg);
        } else if (x.kind == Action::kSend) {
          outbox[r].push_back(x.msg);
        } else if (x.kind == Action::kWait) {
          for (const Msg& m : outbox[r]) sent[m] = clock[r] + c;
          outbox[r].clear();
          double t = clock[r];
          bool ready = true;
          for (const Msg& m : posted[r]) {
            const auto it = sent.find(m);
            if (it == sent.end()) {
              ready = false;
              break;
            }
            t = std::max(t, it->second);
          }
          if (!ready) break;
          clock[r] = t;
          posted[r].clear();
        } else {
          clock[r] += x.dur;
        }
        ++ptr[r];
        progressed = true;
      }
      done = done && ptr[r] == acts[r].size();
    }
    if (done) break;
    if (!progressed) return -1;
  }
  return *std::max_element(clock.begin(), clock.end());
}

ScheduleInput dualpipe(int P, int M, double f, double b, double w, double c = 0) {
  ScheduleInput in;
  in.kind = ScheduleKind::kDualPipe;
  in.devices = P;
  in.chunks = 2;
  in.microbatches = M;
  in.fwd_s.assign(static_cast<std::size_t>(2 * P), f);
  in.bwd_s.assign(static_cast<std::size_t>(2 * P), b);
  in.wgt_s.assign(static_cast<std::size_t>(2 * P), w);
  if (c > 0) in.p2p_s.assign(static_cast<std::size_t>(2 * P - 1), c);  // async (the default)
  return in;
}

// The event model reproduces the DeepSeek-V3 / deepseek-ai/DualPipe README figure: 8 ranks,
// 20 micro-batches, F = W = 1 cell, a full backward 2 cells: 66 cells (60 of work, 6 idle).
TEST(ScheduleDualPipe, EventModelReproducesTheReadmeFigure) {
  EXPECT_DOUBLE_EQ(model_makespan(8, 20, 1, 1, 1), 66.0);
}

// simulate() against the event model, arbitrary F, B, W and transfer time: equal makespans.
TEST(ScheduleDualPipe, SimulatorMatchesEventModel) {
  const std::uint32_t seed = base_seed() + 31;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.2, 3.0);
  for (int it = 0; it < 150; ++it) {
    const int P = 2 * (1 + static_cast<int>(rng() % 6));
    const int M = 2 * P + 2 * static_cast<int>(rng() % static_cast<unsigned>(2 * P));
    const double f = u(rng), b = u(rng), w = rng() % 5 ? 0.7 * u(rng) : 0.0;
    const double c = rng() % 3 ? 0.0 : 0.5 * u(rng);
    SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M) + " f=" + std::to_string(f) +
                 " b=" + std::to_string(b) + " w=" + std::to_string(w) + " c=" + std::to_string(c));
    const double want = model_makespan(P, M, f, b, w, c);
    ASSERT_GT(want, 0);
    const ScheduleResult r = simulate(dualpipe(P, M, f, b, w, c));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(near_rel(want, r.time_s));
    EXPECT_TRUE(near_rel(want, simulate_fast(dualpipe(P, M, f, b, w, c)).time_s));
  }
}

// Table 2 at T_F = T_B = T_W = t (B full = 2t, F&B = 3t): bubble (PP/2 − 1)(3t + 2t − 3t) =
// (PP/2 − 1)·2t, from both the event model and the simulator, for every even P and M >= 2P.
TEST(ScheduleDualPipe, UniformBubbleIsTable2) {
  for (int P = 2; P <= 16; P += 2) {
    for (int M = 2 * P; M <= 6 * P; M += 2 * std::max(1, P / 4)) {
      for (double t : {1.0, 0.37}) {
        SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M));
        const double table = M * 3 * t + (P / 2 - 1) * 2 * t;
        EXPECT_TRUE(near_rel(table, closed_form_time(ScheduleKind::kDualPipe, P, 2, M, t, t, t)));
        EXPECT_TRUE(near_rel(table, simulate(dualpipe(P, M, t, t, t)).time_s));
        if (P <= 8) {
          EXPECT_TRUE(near_rel(table, model_makespan(P, M, t, t, t)));
        }
      }
    }
  }
}

// The pairs are atomic: an overlapped F&B's forward result leaves only with the pair. Recount
// from the trace: every F that the generator linked (kLinkHold) is followed on its device by an
// op whose end is when the consumer of that F may start at the earliest.
TEST(ScheduleDualPipe, HeldForwardLeavesWithThePair) {
  const ScheduleInput in = dualpipe(4, 12, 1.0, 1.3, 0.6);
  ScheduleOrder order;
  ASSERT_EQ(build_schedule_order(ScheduleKind::kDualPipe, 4, 2, 12, &order), "");
  int linked = 0;
  for (const PipeOp& op : order.ops) linked += op.link != 0 ? 1 : 0;
  EXPECT_GT(linked, 0);
  std::vector<TimedOp> ops;
  const ScheduleResult r = simulate_traced(in, &ops);
  ASSERT_TRUE(r.ok);
  std::map<std::tuple<int, int, int>, const TimedOp*> by;
  for (const TimedOp& t : ops) by[{static_cast<int>(t.op.kind), t.op.vs, t.op.mb}] = &t;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    const TimedOp& t = ops[i];
    if (t.op.kind != OpKind::kF || (t.op.link & kLinkHold) == 0 ||
        chain_last(ScheduleKind::kDualPipe, 4, 8, t.op.vs)) {
      continue;
    }
    const TimedOp* next_on_device = nullptr;
    for (std::size_t j = i + 1; j < ops.size(); ++j) {
      if (ops[j].device == t.device) {
        next_on_device = &ops[j];
        break;
      }
    }
    ASSERT_NE(next_on_device, nullptr);
    const TimedOp* consumer = by.at({static_cast<int>(OpKind::kF), t.op.vs + 1, t.op.mb});
    EXPECT_GE(consumer->start_s + 1e-12, next_on_device->end_s);
  }
}

}  // namespace
}  // namespace ppsearch
