// ZB-V against its reference generator and its closed form (docs/algorithms.md §2.1, §2.4).
//
// Reference: the V-schedule generator of sail-sg/zero-bubble-pipeline-parallelism
// (`megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py`, `PipelineGraph`; Qi et al.,
// "Pipeline Parallelism with Controllable Memory", arXiv 2405.15362). Expected values are
// (1) op orders printed by running that generator (best of its four fill variants, transfer
// cost 0, memory limit 2P activations) for the shapes in kReference, (2) the README's closed
// form, bubble 0 at T_F = T_B = T_W with each rank counted from its first F (the period under
// optimizer post-validation), (3) brute-force recounts and an independent event model written
// here; never the output of the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
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

// Uniform stages with per-chunk times f, b, w (each device's per-micro-batch time is twice).
ScheduleInput uniform_chunks(int P, int M, double f, double b, double w, double act = 0,
                             double keep = 0) {
  ScheduleInput in;
  in.kind = ScheduleKind::kZBV;
  in.devices = P;
  in.chunks = 2;
  in.microbatches = M;
  const auto V = static_cast<std::size_t>(2 * P);
  in.fwd_s.assign(V, f);
  in.bwd_s.assign(V, b);
  in.wgt_s.assign(V, w);
  if (act > 0) {
    in.act_bytes.assign(V, act);
    in.wkeep_bytes.assign(V, keep * act);
  }
  return in;
}

// One rank's ops in zbv.py's print alphabet: F/f = forward of chunk 0 (stage d) / chunk 1
// (stage 2P−1−d); B/W = backward / weight of stage 2P−1−d (the generator's backward chunk 0,
// the first after the turn of the V), b/w = of stage d; then the micro-batch.
std::string rank_string(const ScheduleOrder& o, int P, int d) {
  std::ostringstream s;
  const int lo = o.begin[static_cast<std::size_t>(d)];
  const int hi = o.begin[static_cast<std::size_t>(d) + 1];
  for (int i = lo; i < hi; ++i) {
    const PipeOp& op = o.ops[static_cast<std::size_t>(i)];
    const bool low = op.vs < P;
    char c = '?';
    switch (op.kind) {
      case OpKind::kF:
        c = low ? 'F' : 'f';
        break;
      case OpKind::kB:
        c = low ? 'b' : 'B';
        break;
      case OpKind::kW:
        c = low ? 'w' : 'W';
        break;
      case OpKind::kBW:
        c = 'X';
        break;
    }
    if (i > lo) s << ' ';
    s << c << op.mb;
  }
  return s.str();
}

struct ReferenceCase {
  int P, M;
  double b, w, keep;  // per-chunk B and W time (F = 1) and the W state's share of F's activation
  std::vector<std::string> ranks;
};

// Printed by zbv.py: PipelineGraph(P, M, 1, b, w, 0, f_mem=1, b_mem=−(1−keep), w_mem=−keep),
// try_v_schedule for fill_b, fill_f in {True, False}, the smallest max bubble kept (the first
// on ties), as create_schedule does.
const std::vector<ReferenceCase> kReference = {
    {4,
     8,
     1,
     1,
     0.5,
     {
         "F0 F1 F2 F3 F4 F5 F6 f0 B0 W0 f1 B1 W1 f2 B2 W2 f3 B3 W3 F7 b0 w0 f4 B4 W4 b1 w1 f5 B5 "
         "W5 b2 w2 f6 B6 W6 b3 w3 f7 B7 b4 W7 b5 w4 b6 w5 b7 w6 w7",
         "F0 F1 F2 F3 F4 f0 F5 f1 B0 W0 f2 B1 W1 f3 B2 W2 F6 b0 w0 f4 B3 W3 F7 b1 w1 f5 B4 W4 b2 "
         "w2 f6 B5 W5 b3 w3 f7 B6 b4 B7 b5 W6 b6 w4 b7 W7 w5 w6 w7",
         "F0 F1 F2 f0 F3 f1 F4 f2 B0 W0 f3 B1 W1 F5 b0 w0 f4 B2 W2 F6 b1 w1 f5 B3 W3 F7 b2 w2 f6 "
         "B4 W4 b3 w3 f7 B5 b4 B6 b5 B7 b6 W5 b7 w4 W6 w5 W7 w6 w7",
         "F0 f0 F1 f1 F2 f2 F3 f3 B0 W0 F4 b0 w0 f4 B1 W1 F5 b1 w1 f5 B2 W2 F6 b2 w2 f6 B3 W3 F7 "
         "b3 w3 f7 B4 b4 B5 b5 B6 b6 B7 b7 W4 w4 W5 w5 W6 w6 W7 w7",
     }},
    {3,
     7,
     1,
     1,
     0.5,
     {
         "F0 F1 F2 F3 F4 f0 B0 W0 f1 B1 W1 f2 B2 W2 F5 b0 w0 f3 B3 W3 F6 b1 w1 f4 B4 W4 b2 w2 f5 "
         "B5 W5 b3 w3 f6 B6 b4 W6 b5 w4 b6 w5 w6",
         "F0 F1 F2 f0 F3 f1 B0 W0 f2 B1 W1 F4 b0 w0 f3 B2 W2 F5 b1 w1 f4 B3 W3 F6 b2 w2 f5 B4 W4 "
         "b3 w3 f6 B5 b4 B6 b5 W5 b6 w4 W6 w5 w6",
         "F0 f0 F1 f1 F2 f2 B0 W0 F3 b0 w0 f3 B1 W1 F4 b1 w1 f4 B2 W2 F5 b2 w2 f5 B3 W3 F6 b3 w3 "
         "f6 B4 b4 B5 b5 B6 b6 W4 w4 W5 w5 W6 w6",
     }},
    {5,
     12,
     1.5,
     0.75,
     0.5,
     {
         "F0 F1 F2 F3 F4 F5 F6 F7 F8 f0 B0 W0 f1 B1 W1 f2 B2 W2 f3 B3 W3 f4 B4 W4 F9 b0 w0 f5 B5 "
         "W5 F10 b1 w1 f6 B6 W6 F11 b2 w2 f7 B7 W7 b3 f8 B8 w3 W8 b4 f9 B9 w4 W9 b5 f10 B10 w5 W10 "
         "b6 w6 f11 B11 b7 W11 w7 b8 w8 b9 w9 b10 w10 b11 w11",
         "F0 F1 F2 F3 F4 F5 F6 f0 F7 f1 B0 W0 f2 B1 W1 f3 B2 W2 f4 B3 W3 F8 b0 w0 f5 B4 W4 F9 b1 "
         "w1 f6 B5 W5 F10 b2 w2 f7 B6 W6 F11 b3 w3 f8 B7 W7 b4 f9 B8 w4 W8 b5 f10 B9 w5 W9 b6 w6 "
         "f11 B10 b7 B11 b8 W10 w7 b9 W11 w8 b10 w9 w10 b11 w11",
         "F0 F1 F2 F3 F4 f0 F5 f1 F6 f2 B0 W0 f3 B1 W1 f4 B2 W2 F7 b0 w0 f5 B3 W3 F8 b1 w1 f6 B4 "
         "W4 F9 b2 w2 f7 B5 W5 F10 b3 w3 f8 B6 W6 F11 b4 w4 f9 B7 W7 b5 f10 B8 w5 W8 b6 w6 f11 B9 "
         "b7 B10 b8 B11 b9 W9 w7 b10 W10 w8 b11 W11 w9 w10 w11",
         "F0 F1 F2 f0 F3 f1 F4 f2 F5 f3 B0 W0 f4 B1 W1 F6 b0 w0 f5 B2 W2 F7 b1 w1 f6 B3 W3 F8 b2 "
         "w2 f7 B4 W4 F9 b3 w3 f8 B5 W5 F10 b4 w4 f9 B6 W6 F11 b5 w5 f10 B7 W7 b6 w6 f11 B8 b7 B9 "
         "b8 B10 b9 B11 b10 W8 w7 b11 W9 w8 W10 w9 W11 w10 w11",
         "F0 f0 F1 f1 F2 f2 F3 f3 F4 f4 B0 W0 F5 b0 w0 f5 B1 W1 F6 b1 w1 f6 B2 W2 F7 b2 w2 f7 B3 "
         "W3 F8 b3 w3 f8 B4 W4 F9 b4 w4 f9 B5 W5 F10 b5 w5 f10 B6 W6 F11 b6 w6 f11 B7 b7 B8 b8 B9 "
         "b9 B10 b10 B11 b11 W7 w7 W8 w8 W9 w9 W10 w10 W11 w11",
     }},
    {4,
     9,
     2,
     1,
     0,
     {
         "F0 F1 F2 F3 F4 F5 F6 f0 B0 f1 B1 f2 B2 f3 B3 F7 W0 W1 W2 b0 f4 B4 F8 b1 f5 B5 W3 b2 f6 "
         "B6 w0 b3 f7 B7 W4 b4 f8 B8 b5 w1 W5 b6 w2 W6 b7 w3 W7 b8 w4 W8 w5 w6 w7 w8",
         "F0 F1 F2 F3 F4 f0 F5 f1 B0 f2 B1 f3 B2 F6 W0 W1 b0 f4 B3 F7 b1 f5 B4 F8 b2 f6 B5 W2 b3 "
         "f7 B6 w0 b4 f8 B7 b5 B8 b6 W3 w1 b7 W4 w2 b8 W5 w3 W6 w4 W7 w5 W8 w6 w7 w8",
         "F0 F1 F2 f0 F3 f1 F4 f2 B0 f3 B1 F5 W0 b0 f4 B2 F6 b1 f5 B3 F7 b2 f6 B4 F8 b3 f7 B5 W1 "
         "b4 f8 B6 b5 B7 b6 B8 b7 w0 W2 b8 w1 W3 w2 W4 w3 W5 w4 W6 w5 W7 w6 W8 w7 w8",
         "F0 f0 F1 f1 F2 f2 F3 f3 B0 F4 b0 f4 B1 F5 b1 f5 B2 F6 b2 f6 B3 F7 b3 f7 B4 F8 b4 f8 B5 "
         "b5 B6 b6 B7 b7 B8 b8 W0 w0 W1 w1 W2 w2 W3 w3 W4 w4 W5 w5 W6 w6 W7 w7 W8 w8",
     }},
    {6,
     13,
     1,
     0.5,
     1,
     {
         "F0 F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 f0 B0 W0 f1 B1 W1 f2 B2 W2 f3 B3 W3 f4 B4 W4 f5 B5 W5 "
         "F11 b0 w0 f6 B6 W6 F12 b1 w1 f7 B7 W7 b2 w2 f8 B8 W8 b3 w3 f9 B9 W9 b4 w4 f10 B10 W10 b5 "
         "w5 f11 B11 W11 b6 w6 f12 B12 b7 W12 w7 b8 w8 b9 w9 b10 w10 b11 w11 b12 w12",
         "F0 F1 F2 F3 F4 F5 F6 F7 F8 f0 F9 f1 B0 W0 f2 B1 W1 f3 B2 W2 f4 B3 W3 f5 B4 W4 F10 b0 w0 "
         "f6 B5 W5 F11 b1 w1 f7 B6 W6 F12 b2 w2 f8 B7 W7 b3 w3 f9 B8 W8 b4 w4 f10 B9 W9 b5 w5 f11 "
         "B10 W10 b6 w6 f12 B11 b7 B12 b8 W11 w7 b9 W12 w8 b10 w9 w10 b11 w11 b12 w12",
         "F0 F1 F2 F3 F4 F5 F6 f0 F7 f1 F8 f2 B0 W0 f3 B1 W1 f4 B2 W2 f5 B3 W3 F9 b0 w0 f6 B4 W4 "
         "F10 b1 w1 f7 B5 W5 F11 b2 w2 f8 B6 W6 F12 b3 w3 f9 B7 W7 b4 w4 f10 B8 W8 b5 w5 f11 B9 W9 "
         "b6 w6 f12 B10 b7 B11 b8 B12 b9 W10 w7 b10 W11 w8 b11 W12 w9 b12 w10 w11 w12",
         "F0 F1 F2 F3 F4 f0 F5 f1 F6 f2 F7 f3 B0 W0 f4 B1 W1 f5 B2 W2 F8 b0 w0 f6 B3 W3 F9 b1 w1 "
         "f7 B4 W4 F10 b2 w2 f8 B5 W5 F11 b3 w3 f9 B6 W6 F12 b4 w4 f10 B7 W7 b5 w5 f11 B8 W8 b6 w6 "
         "f12 B9 b7 B10 b8 B11 b9 B12 b10 W9 w7 b11 W10 w8 b12 W11 w9 W12 w10 w11 w12",
         "F0 F1 F2 f0 F3 f1 F4 f2 F5 f3 F6 f4 B0 W0 f5 B1 W1 F7 b0 w0 f6 B2 W2 F8 b1 w1 f7 B3 W3 "
         "F9 b2 w2 f8 B4 W4 F10 b3 w3 f9 B5 W5 F11 b4 w4 f10 B6 W6 F12 b5 w5 f11 B7 W7 b6 w6 f12 "
         "B8 b7 B9 b8 B10 b9 B11 b10 B12 b11 W8 w7 b12 W9 w8 W10 w9 W11 w10 W12 w11 w12",
         "F0 f0 F1 f1 F2 f2 F3 f3 F4 f4 F5 f5 B0 W0 F6 b0 w0 f6 B1 W1 F7 b1 w1 f7 B2 W2 F8 b2 w2 "
         "f8 B3 W3 F9 b3 w3 f9 B4 W4 F10 b4 w4 f10 B5 W5 F11 b5 w5 f11 B6 W6 F12 b6 w6 f12 B7 b7 "
         "B8 b8 B9 b9 B10 b10 B11 b11 B12 b12 W7 w7 W8 w8 W9 w9 W10 w10 W11 w11 W12 w12",
     }},
    {2,
     3,
     1.25,
     0.25,
     0.25,
     {
         "F0 F1 F2 f0 B0 W0 f1 B1 W1 b0 f2 B2 w0 b1 W2 w1 b2 w2",
         "F0 f0 F1 f1 B0 W0 F2 b0 w0 f2 B1 b1 B2 b2 W1 w1 W2 w2",
     }},
    {5,
     4,
     1,
     1,
     0.5,
     {
         "F0 F1 F2 F3 f0 B0 f1 B1 f2 B2 f3 B3 W0 W1 b0 W2 b1 W3 b2 w0 b3 w1 w2 w3",
         "F0 F1 F2 F3 f0 f1 B0 f2 B1 f3 B2 W0 B3 b0 W1 b1 W2 b2 W3 b3 w0 w1 w2 w3",
         "F0 F1 F2 F3 f0 f1 f2 B0 f3 B1 W0 B2 b0 B3 b1 W1 b2 W2 b3 w0 W3 w1 w2 w3",
         "F0 F1 F2 f0 F3 f1 f2 f3 B0 W0 B1 b0 B2 b1 B3 b2 W1 b3 w0 W2 w1 W3 w2 w3",
         "F0 f0 F1 f1 F2 f2 F3 f3 B0 b0 B1 b1 B2 b2 B3 b3 W0 w0 W1 w1 W2 w2 W3 w3",
     }},
};

TEST(ScheduleZBV, OrderIsTheReferenceGenerators) {
  for (const ReferenceCase& c : kReference) {
    SCOPED_TRACE("P=" + std::to_string(c.P) + " M=" + std::to_string(c.M));
    OrderHint hint;
    hint.b = c.b;
    hint.w = c.w;
    hint.w_state = c.keep;
    ScheduleOrder o;
    ASSERT_EQ(build_schedule_order(ScheduleKind::kZBV, c.P, 2, c.M, &o, hint), "");
    for (int d = 0; d < c.P; ++d) {
      EXPECT_EQ(rank_string(o, c.P, d), c.ranks[static_cast<std::size_t>(d)]) << "rank " << d;
    }
  }
}

// Warm-up, from the generator's first three phases at equal times: rank d runs 2(P−d)−1
// forwards of chunk 0, then d pairs (chunk 1, chunk 0), then chunk 1: 2P−1−d chunk-0 and d+1
// chunk-1 forwards before its first B, 2P activations (README figure "ZBV").
TEST(ScheduleZBV, WarmupCountsPerRank) {
  for (int P = 1; P <= 12; ++P) {
    for (int M : {2 * P, 2 * P + 3, 4 * P}) {
      ScheduleOrder o;
      ASSERT_EQ(build_schedule_order(ScheduleKind::kZBV, P, 2, M, &o, OrderHint()), "");
      for (int d = 0; d < P; ++d) {
        SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M) +
                     " d=" + std::to_string(d));
        std::string expected;
        int f0 = 0, f1 = 0;
        auto add = [&](char ch, int& k) {
          expected += (expected.empty() ? "" : " ") + std::string(1, ch) + std::to_string(k++);
        };
        for (int i = 0; i < 2 * (P - d) - 1; ++i) add('F', f0);
        for (int i = 0; i < d; ++i) {
          add('f', f1);
          add('F', f0);
        }
        add('f', f1);
        const std::string got = rank_string(o, P, d);
        ASSERT_GE(got.size(), expected.size());
        EXPECT_EQ(got.substr(0, expected.size()), expected);
        EXPECT_EQ(got[expected.size() + 1], 'B');  // then the first backward
      }
    }
  }
}

// The closed form: sail-sg README, "ZBV" column: bubble 0 at T_F = T_B = T_W, counted per rank
// from its first F (zbv.py's stage_bubble; the period under optimizer post-validation, §4 of the
// zero-bubble paper). Running zbv.py shows that bubble is 0 exactly when M >= 2P−1 (P >= 2);
// below that the pipeline never fills. Tested: time_s = M(T_F+T_B+T_W) exactly (device times,
// 2 chunks each) for P = 1..12 and M = 2P−1..4P, and one isolated iteration (the trace's last
// end) is (P−1) chunk forwards longer: the last rank's first F waits for them. For M < 2P−1
// time_s is longer and closed_form_time() claims nothing (NaN).
TEST(ScheduleZBV, PeriodIsZeroBubbleAtEqualTimes) {
  for (int P = 1; P <= 12; ++P) {
    for (int M = 1; M <= 4 * P; ++M) {
      for (double t : {1.0, 0.37}) {
        SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M));
        const double expected = M * 3 * (2 * t);
        const double form = closed_form_time(ScheduleKind::kZBV, P, 2, M, 2 * t, 2 * t, 2 * t);
        const ScheduleInput in = uniform_chunks(P, M, t, t, t);
        std::vector<TimedOp> ops;
        const ScheduleResult r = simulate_traced(in, &ops);
        ASSERT_TRUE(r.ok) << r.error;
        if (M < 2 * P - 1) {
          EXPECT_TRUE(std::isnan(form));
          EXPECT_GT(r.time_s, expected * (1 + 1e-9));
          continue;
        }
        EXPECT_TRUE(near_rel(expected, form));
        EXPECT_TRUE(near_rel(expected, r.time_s)) << r.time_s;
        EXPECT_TRUE(near_rel(expected, simulate(in).time_s));
        double last = 0;
        for (const TimedOp& op : ops) last = std::max(last, op.end_s);
        EXPECT_TRUE(near_rel(expected + (P - 1) * t, last)) << last;
      }
    }
  }
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::kZBV, 4, 2, 8, 1, 2, 1)));  // no form
}

// Brute force over random shapes and time ratios: every (kind, stage, micro-batch) exactly
// once on the rank that holds the stage, and an independent event model (each rank runs its
// list in order; an op starts when the rank is free and its producer has ended: F(vs) after
// F(vs−1), B(vs) after B(vs+1), B(2P−1) after F(2P−1), W after its B) runs every list to the
// end (no deadlock). Its period, max over ranks of (last end − first start), equals
// simulate()'s time_s. Memory recount: F +1 activation, B −(1 − keep), W −keep never exceeds 2P
// on any rank (1F1B's rank 0: P stages of 2 chunks).
TEST(ScheduleZBV, DependenciesMemoryAndEventModel) {
  const std::uint32_t seed = base_seed() + 41;
  std::mt19937 rng(seed);
  for (int it = 0; it < 300; ++it) {
    const int P = 1 + static_cast<int>(rng() % 10);
    const int M = 1 + static_cast<int>(rng() % static_cast<unsigned>(5 * P));
    const double f = 1.0;
    const double b = static_cast<double>(8 + rng() % 33) / 16;  // 0.5 .. 2.5
    const double w = static_cast<double>(rng() % 33) / 16;      // 0 .. 2
    const double keep = static_cast<double>(rng() % 17) / 16;
    SCOPED_TRACE("seed=" + std::to_string(seed) + " it=" + std::to_string(it) +
                 " P=" + std::to_string(P) + " M=" + std::to_string(M) + " b=" + std::to_string(b) +
                 " w=" + std::to_string(w) + " keep=" + std::to_string(keep));
    const ScheduleInput in = uniform_chunks(P, M, f, b, w, 4.0, keep);
    const ScheduleResult r = simulate(in);
    ASSERT_TRUE(r.ok) << r.error;
    OrderHint hint;  // what the simulator plans with: the ratios and the W-state share
    hint.b = b;
    hint.w = w;
    hint.w_state = keep;
    ScheduleOrder o;
    ASSERT_EQ(build_schedule_order(ScheduleKind::kZBV, P, 2, M, &o, hint), "");
    const int V = 2 * P;
    std::map<std::tuple<int, int, int>, int> seen;  // (kind, vs, mb) -> count
    for (int d = 0; d < P; ++d) {
      double held = 0, peak = 0;
      for (int i = o.begin[static_cast<std::size_t>(d)];
           i < o.begin[static_cast<std::size_t>(d) + 1]; ++i) {
        const PipeOp& op = o.ops[static_cast<std::size_t>(i)];
        ASSERT_TRUE(op.kind == OpKind::kF || op.kind == OpKind::kB || op.kind == OpKind::kW);
        ASSERT_TRUE(op.vs == d || op.vs == V - 1 - d) << "vs=" << op.vs << " on rank " << d;
        ASSERT_TRUE(op.mb >= 0 && op.mb < M);
        ++seen[{static_cast<int>(op.kind), op.vs, op.mb}];
        held += op.kind == OpKind::kF ? 1.0 : op.kind == OpKind::kB ? -(1 - keep) : -keep;
        peak = std::max(peak, held);
      }
      EXPECT_LE(peak, 2 * P + 1e-9) << "rank " << d;
      EXPECT_NEAR(held, 0.0, 1e-9);
    }
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(3 * V * M));
    for (const auto& [key, n] : seen) EXPECT_EQ(n, 1);
    // Event model.
    std::map<std::tuple<int, int, int>, double> end;
    std::vector<int> next(static_cast<std::size_t>(P));
    std::vector<double> clock(static_cast<std::size_t>(P), 0),
        first(static_cast<std::size_t>(P), -1);
    for (int d = 0; d < P; ++d)
      next[static_cast<std::size_t>(d)] = o.begin[static_cast<std::size_t>(d)];
    int done = 0;
    bool moved = true;
    while (moved) {
      moved = false;
      for (int d = 0; d < P; ++d) {
        const auto du = static_cast<std::size_t>(d);
        while (next[du] < o.begin[du + 1]) {
          const PipeOp& op = o.ops[static_cast<std::size_t>(next[du])];
          std::tuple<int, int, int> dep{-1, 0, 0};
          if (op.kind == OpKind::kF && op.vs > 0) dep = {0, op.vs - 1, op.mb};
          if (op.kind == OpKind::kB)
            dep = op.vs == V - 1 ? std::tuple{0, op.vs, op.mb} : std::tuple{1, op.vs + 1, op.mb};
          if (op.kind == OpKind::kW) dep = {1, op.vs, op.mb};
          double start = clock[du];
          if (std::get<0>(dep) >= 0) {
            const auto e = end.find(dep);
            if (e == end.end()) break;
            start = std::max(start, e->second);
          }
          const double dur = op.kind == OpKind::kF ? f : op.kind == OpKind::kB ? b : w;
          if (first[du] < 0) first[du] = start;
          clock[du] = start + dur;
          end[{op.kind == OpKind::kF   ? 0
               : op.kind == OpKind::kB ? 1
                                       : 2,
               op.vs, op.mb}] = clock[du];
          ++next[du];
          ++done;
          moved = true;
        }
      }
    }
    ASSERT_EQ(done, 3 * V * M) << "the event model deadlocks";
    double period = 0;
    for (int d = 0; d < P; ++d) {
      period =
          std::max(period, clock[static_cast<std::size_t>(d)] - first[static_cast<std::size_t>(d)]);
    }
    EXPECT_TRUE(near_rel(period, r.time_s)) << period << " vs " << r.time_s;
  }
}

// Memory equal to 1F1B's: at equal times with M >= 2P every rank reaches 2P chunk activations
// (P stages' worth, 1F1B's rank-0 peak) and never more (README: ZBV activation memory 1×).
TEST(ScheduleZBV, PeakIs1F1BsOnEveryRank) {
  for (int P = 1; P <= 12; ++P) {
    for (int M : {2 * P, 3 * P + 1}) {
      const ScheduleResult r = simulate(uniform_chunks(P, M, 1, 1, 1, 2.0, 0.5));
      ASSERT_TRUE(r.ok) << r.error;
      for (int d = 0; d < P; ++d) {
        EXPECT_EQ(r.peak_in_flight[static_cast<std::size_t>(d)], 2 * P) << "P=" << P << " d=" << d;
        EXPECT_LE(r.peak_act_bytes[static_cast<std::size_t>(d)], 2 * P * 2.0 + 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace ppsearch
