// Tests of the ZB-V and DualPipe schedules (docs/algorithms.md §2.1, §2.4). Expected values come
// from the closed forms of §2.1 (the zero-bubble README's ZB-V at T_F = T_B = T_W, the DeepSeek-V3
// report's Table 2 for DualPipe), from brute-force recounts of the generated op orders, or from
// the reference simulator (for the fast path); never from the output of the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
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

// Uniform stages. ZB-V: f, b, w are one device's per-micro-batch times, each of its 2 chunks
// takes half (the closed_form_time() convention). DualPipe: f, b, w are one stage's times; the
// reverse direction's copy vs = P + s gets the same values.
ScheduleInput uniform(ScheduleKind kind, int P, int M, double f, double b, double w,
                      double act = 0) {
  ScheduleInput in;
  in.kind = kind;
  in.devices = P;
  in.chunks = 2;
  in.microbatches = M;
  const double div = kind == ScheduleKind::kZBV ? 2.0 : 1.0;
  const auto V = static_cast<std::size_t>(2 * P);
  in.fwd_s.assign(V, f / div);
  in.bwd_s.assign(V, b / div);
  in.wgt_s.assign(V, w / div);
  if (act > 0) in.act_bytes.assign(V, act / div);
  return in;
}

ScheduleResult run(const ScheduleInput& in) {
  ScheduleResult r = simulate(in);
  EXPECT_TRUE(r.ok) << r.error;
  return r;
}

TEST(ScheduleV, NamesRoundTrip) {
  for (auto [kind, name] :
       {std::pair{ScheduleKind::kZBV, "zb-v"}, std::pair{ScheduleKind::kDualPipe, "dualpipe"}}) {
    EXPECT_STREQ(to_string(kind), name);
    ScheduleKind parsed = ScheduleKind::kGPipe;
    ASSERT_TRUE(parse_schedule(name, &parsed));
    EXPECT_EQ(parsed, kind);
    EXPECT_NE(std::string(schedule_names()).find(name), std::string::npos);
  }
  ScheduleKind untouched = ScheduleKind::kGPipe;
  EXPECT_FALSE(parse_schedule("zbv", &untouched));
  EXPECT_FALSE(parse_schedule("dual-pipe", &untouched));
  EXPECT_EQ(untouched, ScheduleKind::kGPipe);
}

TEST(ScheduleV, DeviceMapIsAV) {
  // Device d holds virtual stages d and 2P−1−d (ZB-V README figure; DualPipe rank r holds the
  // forward direction's stage r and the reverse direction's stage P−1−r).
  for (ScheduleKind kind : {ScheduleKind::kZBV, ScheduleKind::kDualPipe}) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int d = 0; d < P; ++d) {
        EXPECT_EQ(stage_device(kind, P, d), d);
        EXPECT_EQ(stage_device(kind, P, 2 * P - 1 - d), d);
        EXPECT_EQ(device_stage(kind, P, 0, d), d);
        EXPECT_EQ(device_stage(kind, P, 1, d), 2 * P - 1 - d);
      }
    }
  }
  EXPECT_EQ(stage_device(ScheduleKind::kInterleaved1F1B, 4, 5), 1);  // unchanged: vs mod P
  EXPECT_TRUE(chain_first(ScheduleKind::kDualPipe, 4, 4));
  EXPECT_FALSE(chain_first(ScheduleKind::kZBV, 4, 4));
  EXPECT_TRUE(chain_last(ScheduleKind::kDualPipe, 4, 8, 3));
  EXPECT_FALSE(chain_last(ScheduleKind::kZBV, 4, 8, 3));
}

// Brute-force recount of the generated orders: every op exactly once, on the device that holds
// its virtual stage, every W after its own B on that device, and the op counts of the kind.
TEST(ScheduleV, EveryOpExactlyOnceOnItsDevice) {
  const std::uint32_t seed = base_seed() + 11;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.3, 2.0);
  for (ScheduleKind kind : {ScheduleKind::kZBV, ScheduleKind::kDualPipe}) {
    for (int P = 1; P <= 8; ++P) {
      if (kind == ScheduleKind::kDualPipe && P % 2 != 0) continue;
      const int m_lo = kind == ScheduleKind::kDualPipe ? 2 * P : 1;
      for (int M = m_lo; M <= 3 * P + 4; M += kind == ScheduleKind::kDualPipe ? 2 : 1) {
        OrderHint hint;  // ZB-V plans with the times' ratios: vary them
        hint.b = u(rng);
        hint.w = rng() % 4 == 0 ? 0.0 : u(rng);
        SCOPED_TRACE(std::string(to_string(kind)) + " P=" + std::to_string(P) +
                     " M=" + std::to_string(M) + " b=" + std::to_string(hint.b) +
                     " w=" + std::to_string(hint.w));
        ScheduleOrder order;
        ASSERT_EQ(build_schedule_order(kind, P, 2, M, &order, hint), "");
        ASSERT_EQ(order.begin.size(), static_cast<std::size_t>(P + 1));
        const int Mc = kind == ScheduleKind::kDualPipe ? M / 2 : M;
        std::set<std::tuple<int, int, int>> seen;  // (F / backward / W, vs, mb)
        int n_b = 0, n_w = 0, n_bw = 0;
        for (int d = 0; d < P; ++d) {
          std::set<std::pair<int, int>> b_done;
          for (int i = order.begin[d]; i < order.begin[d + 1]; ++i) {
            const PipeOp& op = order.ops[static_cast<std::size_t>(i)];
            ASSERT_EQ(stage_device(kind, P, op.vs), d);
            ASSERT_GE(op.mb, 0);
            ASSERT_LT(op.mb, Mc);
            const int cls = op.kind == OpKind::kF ? 0 : (op.kind == OpKind::kW ? 2 : 1);
            ASSERT_TRUE(seen.insert({cls, op.vs, op.mb}).second) << "op twice";
            n_b += op.kind == OpKind::kB;
            n_w += op.kind == OpKind::kW;
            n_bw += op.kind == OpKind::kBW;
            if (op.kind == OpKind::kB) b_done.insert({op.vs, op.mb});
            if (op.kind == OpKind::kW) {
              ASSERT_EQ(b_done.count({op.vs, op.mb}), 1u) << "W before B";
            }
          }
        }
        EXPECT_EQ(n_w, n_b);
        if (kind == ScheduleKind::kZBV) {
          EXPECT_EQ(n_bw, 0);
        }
        EXPECT_EQ(n_b + n_bw, 2 * P * Mc);
        EXPECT_EQ(static_cast<int>(seen.size()), 2 * 2 * P * Mc + n_w);
      }
    }
  }
}

TEST(ScheduleV, DualPipeShapeRules) {
  // deepseek-ai/DualPipe DualPipe.step: num_ranks % 2 == 0, num_chunks even and >= 2·num_ranks.
  EXPECT_EQ(check_shape(ScheduleKind::kDualPipe, 3, 2, 12),
            "devices = 3: must be even for schedule dualpipe");
  EXPECT_EQ(check_shape(ScheduleKind::kDualPipe, 4, 2, 9),
            "microbatches = 9: must be even and at least 2 * devices (8) for schedule dualpipe");
  EXPECT_NE(check_shape(ScheduleKind::kDualPipe, 4, 2, 6), "");
  EXPECT_EQ(check_shape(ScheduleKind::kDualPipe, 4, 2, 8), "");
  EXPECT_EQ(check_shape(ScheduleKind::kZBV, 4, 1, 8), "chunks = 1: must be 2 for schedule zb-v");
  EXPECT_EQ(check_shape(ScheduleKind::kZBV, 4, 2, 1), "");
  ScheduleInput in = uniform(ScheduleKind::kDualPipe, 4, 6, 1, 1, 1);
  const ScheduleResult r = simulate(in);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("microbatches = 6"), std::string::npos) << r.error;
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::kDualPipe, 3, 2, 12, 1, 1, 1)));
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::kZBV, 4, 1, 8, 1, 1, 1)));
}

// ZB-V's closed form at equal times: tests/unit/test_schedule_zbv.cpp.

// Memory: ZB-V holds at most 2P chunk activations per device, W states included, P stages'
// worth: 1F1B's peak on device 0 (README: activation memory 1× 1F1B). With M >= 2P every device
// has 2P forwards waiting for their B at some point.
TEST(ScheduleV, ZBVPeakActivationsEqual1F1B) {
  const std::uint32_t seed = base_seed() + 12;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.3, 2.0);
  for (int it = 0; it < 300; ++it) {
    const int P = 1 + static_cast<int>(rng() % 10);
    const int M = 1 + static_cast<int>(rng() % static_cast<unsigned>(5 * P));
    const double f = u(rng), b = u(rng), w = rng() % 5 == 0 ? 0.0 : u(rng);
    SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M));
    const double A = 8.0;  // one stage's activation per micro-batch
    ScheduleInput in = uniform(ScheduleKind::kZBV, P, M, f, b, w, A);
    // A B keeps a share of the activation until its W (the W state, zero-bubble runtime.py):
    // it counts against the same 1F1B bound.
    const double keep_share = it % 3 == 0 ? 0.0 : std::uniform_real_distribution<double>(0, 1)(rng);
    in.wkeep_bytes.assign(in.act_bytes.size(), keep_share * A / 2);
    const ScheduleResult r = run(in);
    ScheduleInput ref;  // 1F1B, same stage activations
    ref.kind = ScheduleKind::k1F1B;
    ref.devices = P;
    ref.microbatches = M;
    ref.fwd_s.assign(static_cast<std::size_t>(P), f);
    ref.bwd_s.assign(static_cast<std::size_t>(P), b);
    ref.act_bytes.assign(static_cast<std::size_t>(P), A);
    const ScheduleResult one = run(ref);
    for (int d = 0; d < P; ++d) {
      EXPECT_LE(r.peak_in_flight[d], 2 * P) << "d=" << d;
      EXPECT_LE(r.peak_act_bytes[d], one.peak_act_bytes[0] + 1e-9) << "d=" << d;
      if (M >= 2 * P) {
        EXPECT_EQ(r.peak_in_flight[d], 2 * P) << "d=" << d;
      }
      EXPECT_TRUE(near_rel(M * (f + b + w), r.busy_s[d]));
    }
  }
}

// DualPipe against the DeepSeek-V3 report §3.2.1, Table 2 (PP ranks, F forward chunk, B full
// backward chunk, W weight part, F&B an overlapped pair): bubble (PP/2 − 1)(F&B + B − 3W),
// activation memory PP + 1, parameters 2×. closed_form_time() is the table's form with F&B =
// F + B (no overlap gain). With T_F = T_B = T_W = t the simulated order idles exactly the table's
// (PP/2 − 1)·2t: an overlapped pair starts when both its inputs are there and sends both results
// when it ends, as deepseek-ai/DualPipe runs it (test_schedule_dualpipe.cpp checks the simulator
// against an event model of that code for arbitrary F, B, W).
TEST(ScheduleV, DualPipeAgainstTable2) {
  for (int P = 2; P <= 16; P += 2) {
    for (int M = 2 * P; M <= 6 * P; M += 2 * std::max(1, P / 4)) {
      for (double t : {1.0, 0.41}) {
        SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M));
        const double A = 3.0;
        const ScheduleResult r = run(uniform(ScheduleKind::kDualPipe, P, M, t, t, t, A));
        const double table = closed_form_time(ScheduleKind::kDualPipe, P, 2, M, t, t, t);
        EXPECT_TRUE(near_rel(M * 3 * t + (P / 2 - 1) * 2 * t, table));
        EXPECT_TRUE(near_rel(table, r.time_s));
        for (int d = 0; d < P; ++d) {
          EXPECT_EQ(r.peak_in_flight[d], P + 1) << "d=" << d;  // Table 2: PP + 1
          EXPECT_TRUE(near_rel((P + 1) * A, r.peak_act_bytes[d])) << "d=" << d;
          EXPECT_TRUE(near_rel(M * 3 * t, r.busy_s[d])) << "d=" << d;  // every mb once
        }
      }
    }
  }
}

// The table's bound also holds off the equal-times point while the backward B is the longest op
// (F <= B, W <= B: transformer layers, whose input gradient costs about a forward and more with
// recomputation). With F well above B it does not (found by sampling; e.g. P = 8, F = 3.8 B).
TEST(ScheduleV, DualPipeWithinTable2WhenWFills) {
  const std::uint32_t seed = base_seed() + 13;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.3, 2.0);
  for (int it = 0; it < 300; ++it) {
    const int P = 2 * (1 + static_cast<int>(rng() % 8));
    const int M = 2 * P + 2 * static_cast<int>(rng() % static_cast<unsigned>(2 * P));
    double v[3] = {u(rng), u(rng), u(rng)};
    std::sort(v, v + 3);
    const bool swap = rng() % 2 != 0;
    const double b = v[2], f = swap ? v[0] : v[1], w = swap ? v[1] : v[0];
    SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M) + " f=" + std::to_string(f) +
                 " b=" + std::to_string(b) + " w=" + std::to_string(w));
    const ScheduleResult r = run(uniform(ScheduleKind::kDualPipe, P, M, f, b, w));
    EXPECT_GE(r.time_s, M * (f + b + w) - 1e-9);
    EXPECT_LE(r.time_s, closed_form_time(ScheduleKind::kDualPipe, P, 2, M, f, b, w) + 1e-9);
  }
}

ScheduleInput random_instance(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  ScheduleInput in;
  in.kind = rng() % 2 ? ScheduleKind::kZBV : ScheduleKind::kDualPipe;
  const bool dual = in.kind == ScheduleKind::kDualPipe;
  in.devices = dual ? 2 * (1 + static_cast<int>(rng() % 6)) : 1 + static_cast<int>(rng() % 10);
  const int P = in.devices;
  in.chunks = 2;
  in.microbatches =
      dual ? 2 * P + 2 * static_cast<int>(rng() % 20) : 1 + static_cast<int>(rng() % 60);
  in.mode = rng() % 2 ? P2PMode::kAsync : P2PMode::kBlocking;
  const int V = 2 * P;
  for (int vs = 0; vs < V; ++vs) {
    in.fwd_s.push_back(u(rng));
    in.bwd_s.push_back(1.3 * u(rng));
    in.wgt_s.push_back(rng() % 4 ? 0.8 * u(rng) : 0.0);
    in.act_bytes.push_back(1e9 * u(rng));
    in.wkeep_bytes.push_back(0.3e9 * u(rng));
  }
  for (int vs = 0; vs + 1 < V; ++vs) in.p2p_s.push_back(rng() % 3 ? 0.05 * u(rng) : 0.0);
  return in;
}

TEST(ScheduleV, FastPathAndTraceMatchReference) {
  const std::uint32_t seed = base_seed() + 14;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  SimWorkspace ws;
  ScheduleResult fast;
  for (int it = 0; it < 400; ++it) {
    const ScheduleInput in = random_instance(rng);
    SCOPED_TRACE("it=" + std::to_string(it) + " " + to_string(in.kind) +
                 " P=" + std::to_string(in.devices) + " M=" + std::to_string(in.microbatches));
    const ScheduleResult ref = simulate(in);
    ASSERT_TRUE(ref.ok) << ref.error;
    simulate_fast(in, ws, &fast);
    ASSERT_TRUE(fast.ok) << fast.error;
    ASSERT_TRUE(near_rel(ref.time_s, fast.time_s));
    std::vector<TimedOp> ops;
    const ScheduleResult traced = simulate_traced(in, &ops);
    ASSERT_TRUE(near_rel(ref.time_s, traced.time_s));
    for (std::size_t d = 0; d < ref.busy_s.size(); ++d) {
      ASSERT_TRUE(near_rel(ref.busy_s[d], fast.busy_s[d]));
      ASSERT_TRUE(near_rel(ref.peak_act_bytes[d], fast.peak_act_bytes[d]));
      ASSERT_EQ(ref.peak_in_flight[d], fast.peak_in_flight[d]);
      ASSERT_TRUE(near_rel(ref.last_grad_end_s[d], fast.last_grad_end_s[d]));
    }
    // Recount from the trace: every op's start respects its dependency (dependencies of §2.4,
    // with DualPipe's two chains) and its device's previous op.
    std::map<std::tuple<int, int, int>, double> release;
    const int V = 2 * in.devices;
    for (const TimedOp& t : ops) {
      const int cls = t.op.kind == OpKind::kF ? 0 : (t.op.kind == OpKind::kW ? 2 : 1);
      release[{cls, t.op.vs, t.op.mb}] = t.release_s;
    }
    for (const TimedOp& t : ops) {
      double dep = -1;
      if (t.op.kind == OpKind::kF && !chain_first(in.kind, in.devices, t.op.vs)) {
        dep = release.at({0, t.op.vs - 1, t.op.mb});
      } else if (t.op.kind == OpKind::kB || t.op.kind == OpKind::kBW) {
        dep = chain_last(in.kind, in.devices, V, t.op.vs) ? release.at({0, t.op.vs, t.op.mb})
                                                          : release.at({1, t.op.vs + 1, t.op.mb});
      } else if (t.op.kind == OpKind::kW) {
        dep = release.at({1, t.op.vs, t.op.mb});
      }
      ASSERT_GE(t.start_s + 1e-12, dep);
    }
  }
}

// ZB-V (its post-validated period) never loses to 1F1B on the same stages in the regime of
// transformer layers: B between F and 2F (up to full recomputation), W between B/2 and B
// (docs/algorithms.md §2.4).
TEST(ScheduleV, ZBVBeats1F1BForLayerLikeTimes) {
  const std::uint32_t seed = base_seed() + 15;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int it = 0; it < 200; ++it) {
    const int P = 2 + static_cast<int>(rng() % 11);
    const int M = 2 * P + static_cast<int>(rng() % static_cast<unsigned>(4 * P));
    const double f = 1.0, b = 1.0 + u(rng), w = b * (0.5 + 0.5 * u(rng));
    SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M) + " b=" + std::to_string(b) +
                 " w=" + std::to_string(w));
    const ScheduleResult r = run(uniform(ScheduleKind::kZBV, P, M, f, b, w));
    EXPECT_LT(r.time_s, closed_form_time(ScheduleKind::k1F1B, P, 1, M, f, b, w));
  }
}

}  // namespace
}  // namespace ppsearch
