// Tests of the pipeline-schedule module (docs/algorithms.md §2). Expected values come from the
// closed forms and bounds of §2.1–§2.3, from brute-force recounts of the generated op orders, or
// from the reference simulator (for the fast path); never from the output of the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/schedule_order.hpp"
#include "support/numeric.hpp"
#include "support/schedule_inputs.hpp"

namespace ppsearch {
namespace {

using test::base_seed;
using test::near_rel;

constexpr ScheduleKind kAllKinds[] = {ScheduleKind::kGPipe, ScheduleKind::k1F1B,
                                      ScheduleKind::kInterleaved1F1B, ScheduleKind::kZBH1};

// Homogeneous input: f, b, w are one device's per-micro-batch times; each of its v chunks takes
// f/v, b/v, w/v (the convention of closed_form_time()).
ScheduleInput uniform(ScheduleKind kind, int P, int v, int M, double f, double b, double w = 0) {
  ScheduleInput in;
  in.kind = kind;
  in.devices = P;
  in.chunks = v;
  in.microbatches = M;
  const auto V = static_cast<std::size_t>(P * v);
  in.fwd_s.assign(V, f / v);
  in.bwd_s.assign(V, b / v);
  in.wgt_s.assign(V, w / v);
  return in;
}

ScheduleResult run(const ScheduleInput& in) {
  ScheduleResult r = simulate(in);
  EXPECT_TRUE(r.ok) << r.error;
  return r;
}

// ----- names ------------------------------------------------------------------------------------

TEST(ScheduleNames, RoundTripAndRejectUnknown) {
  const std::set<std::string> expected = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"};
  std::set<std::string> seen;
  for (ScheduleKind kind : kAllKinds) {
    const std::string name = to_string(kind);
    seen.insert(name);
    ScheduleKind parsed = ScheduleKind::kGPipe;
    ASSERT_TRUE(parse_schedule(name, &parsed)) << name;
    EXPECT_EQ(parsed, kind);
    EXPECT_NE(std::string(schedule_names()).find(name), std::string::npos) << name;
  }
  EXPECT_EQ(seen, expected);
  ScheduleKind untouched = ScheduleKind::kZBH1;
  for (const char* bad : {"", "1F1B", "interleaved", "zb", "gpipe "}) {
    EXPECT_FALSE(parse_schedule(bad, &untouched)) << bad;
  }
  EXPECT_EQ(untouched, ScheduleKind::kZBH1);
  P2PMode mode = P2PMode::kAsync;
  EXPECT_TRUE(parse_p2p_mode("blocking", &mode));
  EXPECT_EQ(mode, P2PMode::kBlocking);
  EXPECT_STREQ(to_string(P2PMode::kAsync), "async");
  EXPECT_FALSE(parse_p2p_mode("sync", &mode));
}

// ----- generated orders (brute-force recount)
// -----------------------------------------------------

TEST(ScheduleOrder, EveryOpExactlyOnceOnItsDeviceAndWAfterB) {
  for (ScheduleKind kind : kAllKinds) {
    for (int P : {1, 2, 3, 4, 5}) {
      for (int v : {1, 2, 3}) {
        if (kind != ScheduleKind::kInterleaved1F1B && v != 1) {
          continue;
        }
        for (int M = 1; M <= 3 * P + 2; ++M) {
          if (kind == ScheduleKind::kInterleaved1F1B && M % P != 0) {
            continue;
          }
          SCOPED_TRACE(std::string(to_string(kind)) + " P=" + std::to_string(P) +
                       " v=" + std::to_string(v) + " M=" + std::to_string(M));
          ScheduleOrder order;
          ASSERT_EQ(build_schedule_order(kind, P, v, M, &order), "");
          ASSERT_EQ(order.begin.size(), static_cast<std::size_t>(P + 1));
          const bool split = kind == ScheduleKind::kZBH1;
          std::set<std::tuple<int, int, int>> seen;  // (kind, vs, mb)
          for (int d = 0; d < P; ++d) {
            std::set<std::pair<int, int>> b_done;
            for (int i = order.begin[d]; i < order.begin[d + 1]; ++i) {
              const PipeOp& op = order.ops[static_cast<std::size_t>(i)];
              ASSERT_EQ(op.vs % P, d);
              ASSERT_GE(op.mb, 0);
              ASSERT_LT(op.mb, M);
              ASSERT_TRUE(seen.insert({static_cast<int>(op.kind), op.vs, op.mb}).second);
              if (split) {
                ASSERT_NE(op.kind, OpKind::kBW);
              } else {
                ASSERT_TRUE(op.kind == OpKind::kF || op.kind == OpKind::kBW);
              }
              if (op.kind == OpKind::kB) {
                b_done.insert({op.vs, op.mb});
              }
              if (op.kind == OpKind::kW) {
                ASSERT_EQ(b_done.count({op.vs, op.mb}), 1u) << "W before its B";
              }
            }
          }
          EXPECT_EQ(seen.size(), static_cast<std::size_t>((split ? 3 : 2) * M * P * v));
        }
      }
    }
  }
}

TEST(ScheduleOrder, WarmupLengthsMatchMegatron) {
  // 1F1B: min(P−d−1, M) forwards before the first backward (Megatron get_pp_rank_microbatches).
  // Interleaved: min(2(P−d−1) + (v−1)P, M·v). ZB-H1: device d keeps up to d Ws pending.
  auto leading_forwards = [](const ScheduleOrder& o, int d) {
    int n = 0;
    for (int i = o.begin[d]; i < o.begin[d + 1] && o.ops[i].kind == OpKind::kF; ++i) {
      ++n;
    }
    return n;
  };
  for (int P : {1, 2, 4, 7}) {
    for (int M : {1, 2, P, 2 * P + 1}) {
      ScheduleOrder o;
      ASSERT_EQ(build_schedule_order(ScheduleKind::k1F1B, P, 1, M, &o), "");
      for (int d = 0; d < P; ++d) {
        // The warm-up forwards plus the first steady-state forward.
        EXPECT_EQ(leading_forwards(o, d), std::min(P - d - 1, M) + (M > P - d - 1 ? 1 : 0));
      }
      ASSERT_EQ(build_schedule_order(ScheduleKind::kZBH1, P, 1, M, &o), "");
      for (int d = 0; d < P; ++d) {
        int pending = 0;
        int next_w = 0;
        for (int i = o.begin[d]; i < o.begin[d + 1]; ++i) {
          const PipeOp& op = o.ops[i];
          if (op.kind == OpKind::kF) {
            EXPECT_LE(pending, d) << "P=" << P << " M=" << M << " d=" << d;
          } else if (op.kind == OpKind::kB) {
            ++pending;
            EXPECT_LE(pending, d + 1);
            if (pending > d) {  // the rule: emit a W right away
              ASSERT_LT(i + 1, o.begin[d + 1]);
              EXPECT_EQ(o.ops[i + 1].kind, OpKind::kW);
            }
          } else {
            --pending;
            EXPECT_EQ(op.mb, next_w++);  // oldest pending W first
          }
        }
        EXPECT_EQ(pending, 0);
      }
    }
    for (int v : {2, 3}) {
      for (int M : {P, 2 * P, 3 * P}) {
        ScheduleOrder o;
        ASSERT_EQ(build_schedule_order(ScheduleKind::kInterleaved1F1B, P, v, M, &o), "");
        for (int d = 0; d < P; ++d) {
          const int warm = std::min(2 * (P - d - 1) + (v - 1) * P, M * v);
          EXPECT_EQ(leading_forwards(o, d), warm + (warm < M * v ? 1 : 0));
        }
      }
    }
  }
}

// ----- closed forms, homogeneous stages, no p2p (docs/algorithms.md §2.1)
// ------------------------------

TEST(ScheduleClosedForm, GPipeAnd1F1BAreBothMPlusPMinusOneTimesFPlusB) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int M : {1, 2, 3, 4, 7, 8, 16, 33}) {
        for (auto fb : {std::pair<double, double>{1.0, 2.0}, {0.7, 0.7}, {1.5, 0.25}}) {
          const double f = fb.first;
          const double b = fb.second;
          const double expected = (M + P - 1) * (f + b);  // GPipe; SC21 §2.2.1
          EXPECT_TRUE(near_rel(expected, run(uniform(kind, P, 1, M, f, b)).time_s))
              << to_string(kind) << " P=" << P << " M=" << M;
          // Fused backward: W is simply part of the backward.
          EXPECT_TRUE(
              near_rel((M + P - 1) * (f + b + 0.5), run(uniform(kind, P, 1, M, f, b, 0.5)).time_s));
          EXPECT_TRUE(near_rel(expected, closed_form_time(kind, P, 1, M, f, b, 0)));
        }
      }
    }
  }
}

TEST(ScheduleClosedForm, InterleavedDividesTheBubbleByV) {
  // SC21 §2.2.2: M(f+b) + (P−1)(f+b)/v, per-chunk times f/v and b/v; M % P == 0.
  for (int v : {2, 4}) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int k : {1, 2, 3, 5}) {
        const int M = k * P;
        const double f = 1.25;
        const double b = 2.5;
        const double expected = M * (f + b) + (P - 1) * (f + b) / v;
        const ScheduleResult r = run(uniform(ScheduleKind::kInterleaved1F1B, P, v, M, f, b));
        EXPECT_TRUE(near_rel(expected, r.time_s)) << "P=" << P << " v=" << v << " M=" << M;
        EXPECT_TRUE(
            near_rel(expected, closed_form_time(ScheduleKind::kInterleaved1F1B, P, v, M, f, b, 0)));
        // Bubble / ideal = (P−1)/(v·M) (§2.2: (P−1)/(2M) is interleaving with v = 2).
        EXPECT_TRUE(near_rel((P - 1.0) / (v * M), (r.time_s - M * (f + b)) / (M * (f + b))));
      }
    }
  }
}

TEST(ScheduleClosedForm, ZBH1PaperFormulaWithinItsDomain) {
  // ZB §2.1: M(F+B+W) + (P−1)(F+B−W), worked out for F = B = W. With this order it is exact
  // when M >= P and W <= min(F, B); three ratios inside that domain:
  const double ratios[][3] = {{1, 1, 1}, {1, 2, 0.5}, {2, 1.5, 1.25}};
  for (const auto& r : ratios) {
    const double f = r[0];
    const double b = r[1];
    const double w = r[2];
    for (int P : {1, 2, 4, 8}) {
      for (int M : {P, P + 1, 2 * P, 3 * P + 2}) {
        const double expected = M * (f + b + w) + (P - 1) * (f + b - w);
        const ScheduleResult res = run(uniform(ScheduleKind::kZBH1, P, 1, M, f, b, w));
        EXPECT_TRUE(near_rel(expected, res.time_s))
            << "f=" << f << " b=" << b << " w=" << w << " P=" << P << " M=" << M;
        EXPECT_TRUE(near_rel(expected, closed_form_time(ScheduleKind::kZBH1, P, 1, M, f, b, w)));
        // Equal F/B/W: bubble / ideal = (P−1)/(3M) (§2.2).
        if (f == b && b == w) {
          EXPECT_TRUE(near_rel((P - 1.0) / (3 * M), (res.time_s - M * 3 * f) / (M * 3 * f)));
        }
      }
    }
  }
  // Outside the domain the paper's formula undercounts: a W longer than F or B cannot fit
  // into the drain bubbles, and with M < P there are not enough deferred Ws to fill them.
  for (auto fbw :
       {std::tuple<double, double, double, int>{1, 1, 2, 8}, {1, 0.5, 1, 8}, {1, 1, 1, 3}}) {
    const auto [f, b, w, M] = fbw;
    const int P = 4 + (M < 4 ? 4 : 0);
    const double paper = M * (f + b + w) + (P - 1) * (f + b - w);
    EXPECT_GT(run(uniform(ScheduleKind::kZBH1, P, 1, M, f, b, w)).time_s, paper + 0.1);
  }
}

TEST(ScheduleClosedForm, ZBH1GeneralFormulaOnRandomRatios) {
  // [derived] M(f+b+w) + (P−1)(f+b) − (min(M,P)−1)·min(f,b,w) for every M >= 1 and f,b,w >= 0.
  const std::uint32_t seed = base_seed() + 1;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> t(0.05, 3.0);
  for (int it = 0; it < 1500; ++it) {
    const double f = t(rng);
    const double b = t(rng);
    const double w = (it % 10 == 0) ? 0.0 : t(rng);
    const int P = 1 + static_cast<int>(rng() % 9);
    const int M = 1 + static_cast<int>(rng() % 25);
    const double expected =
        M * (f + b + w) + (P - 1) * (f + b) - (std::min(M, P) - 1) * std::min({f, b, w});
    ASSERT_TRUE(near_rel(expected, run(uniform(ScheduleKind::kZBH1, P, 1, M, f, b, w)).time_s))
        << "it=" << it << " f=" << f << " b=" << b << " w=" << w << " P=" << P << " M=" << M;
    ASSERT_TRUE(near_rel(expected, closed_form_time(ScheduleKind::kZBH1, P, 1, M, f, b, w)));
  }
}

TEST(ScheduleClosedForm, RejectsArgumentsOutsideTheDomain) {
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::k1F1B, 0, 1, 4, 1, 1, 0)));
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::k1F1B, 4, 1, 0, 1, 1, 0)));
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::k1F1B, 4, 2, 8, 1, 1, 0)));
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::kInterleaved1F1B, 4, 2, 6, 1, 1, 0)));
  EXPECT_TRUE(std::isnan(closed_form_time(ScheduleKind::kInterleaved1F1B, 4, 0, 8, 1, 1, 0)));
}

TEST(ScheduleClosedForm, UniformBubbleFractionAndBusy) {
  // Bubble / total for uniform 1F1B: (P−1)/(M+P−1) (docs/interface.md, bubble_fraction).
  for (int P : {1, 2, 4, 8, 16}) {
    for (int M : {1, 4, 16, 64}) {
      const double f = 1.0;
      const double b = 2.0;
      const ScheduleResult r = run(uniform(ScheduleKind::k1F1B, P, 1, M, f, b));
      EXPECT_TRUE(near_rel((P - 1.0) / (M + P - 1.0), r.bubble_fraction));
      for (int d = 0; d < P; ++d) {
        EXPECT_TRUE(near_rel(M * (f + b), r.busy_s[d]));
        // [derived] with uniform stages, device d's last backward ends d·b before the end.
        EXPECT_TRUE(near_rel(r.time_s - d * b, r.last_grad_end_s[d]));
      }
    }
  }
}

// ----- peaks ----------------------------------------------------------------------------------

TEST(SchedulePeaks, OneFOneBHoldsMinPMinusSigmaAndM) {
  for (int P : {1, 2, 4, 6}) {
    for (int M : {1, 2, 3, P, 2 * P + 3}) {
      ScheduleInput in = uniform(ScheduleKind::k1F1B, P, 1, M, 1.0, 2.0);
      for (int s = 0; s < P; ++s) {
        in.act_bytes.push_back(100.0 + 7 * s);
      }
      const ScheduleResult r = run(in);
      for (int s = 0; s < P; ++s) {
        const int expected = std::min(P - s, M);  // SC21 §2.2.1; Megatron warm-up P−σ−1
        EXPECT_EQ(r.peak_in_flight[s], expected) << "P=" << P << " M=" << M << " s=" << s;
        EXPECT_TRUE(near_rel(expected * in.act_bytes[s], r.peak_act_bytes[s]));
      }
    }
  }
  // The §2.1 example: [4, 3, 2, 1] for P = 4.
  EXPECT_EQ(run(uniform(ScheduleKind::k1F1B, 4, 1, 8, 1, 1)).peak_in_flight,
            (std::vector<int>{4, 3, 2, 1}));
}

TEST(SchedulePeaks, GPipeHoldsAllMicrobatches) {
  for (int P : {1, 3, 5}) {
    for (int M : {1, 4, 9}) {
      ScheduleInput in = uniform(ScheduleKind::kGPipe, P, 1, M, 1.0, 2.0);
      in.act_bytes.assign(static_cast<std::size_t>(P), 3.0);
      const ScheduleResult r = run(in);
      EXPECT_EQ(r.peak_in_flight, std::vector<int>(static_cast<std::size_t>(P), M));
      for (int s = 0; s < P; ++s) {
        EXPECT_TRUE(near_rel(3.0 * M, r.peak_act_bytes[s]));
      }
    }
  }
}

TEST(SchedulePeaks, InterleavedChunkActivations) {
  // Rank r holds (v−1)P + 2(P−r−1) + 1 chunk-activations (warm-up + 1) while the warm-up is
  // shorter than its M·v forwards; otherwise all M·v. For M >= 2P the warm-up never binds.
  for (int P : {1, 2, 4, 5}) {
    for (int v : {2, 3, 4}) {
      for (int k : {1, 2, 3}) {
        const int M = k * P;
        ScheduleInput in = uniform(ScheduleKind::kInterleaved1F1B, P, v, M, 1.0, 2.0);
        const double a = 64.0;  // bytes of one device's layers for one micro-batch
        in.act_bytes.assign(static_cast<std::size_t>(P * v), a / v);
        const ScheduleResult r = run(in);
        for (int rank = 0; rank < P; ++rank) {
          const int formula = (v - 1) * P + 2 * (P - rank - 1) + 1;
          const int expected = std::min(formula, M * v);
          if (M >= 2 * P) {
            EXPECT_EQ(formula, expected);
          }
          EXPECT_EQ(r.peak_in_flight[rank], expected)
              << "P=" << P << " v=" << v << " M=" << M << " rank=" << rank;
          EXPECT_TRUE(near_rel(expected * a / v, r.peak_act_bytes[rank]));
        }
        if (M >= 2 * P) {
          // Megatron's interleave penalty on rank 0: P·(1 + (P−1)/(P·v)) stage units.
          EXPECT_TRUE(near_rel(a * P * (1.0 + (P - 1.0) / (P * v)), r.peak_act_bytes[0]));
        }
      }
    }
  }
  EXPECT_EQ(run(uniform(ScheduleKind::kInterleaved1F1B, 4, 2, 8, 1, 1)).peak_in_flight,
            (std::vector<int>{11, 9, 7, 5}));
}

TEST(SchedulePeaks, ZBH1KeepsWStateOfDeferredMicrobatches) {
  // §2.1 row: stage σ holds (P−σ) full micro-batches + σ holding only W-state (M >= P).
  // Recount for any M: warm-up w = min(P−σ−1, M); the peak follows the F of the last steady
  // iteration that still has min(M−w−1, σ) Ws pending; with no steady iteration all M are held.
  for (int P : {1, 2, 4, 6}) {
    for (int M : {1, 2, 3, P, P + 1, 3 * P}) {
      ScheduleInput in = uniform(ScheduleKind::kZBH1, P, 1, M, 1.0, 1.0, 1.0);
      for (int s = 0; s < P; ++s) {
        in.act_bytes.push_back(100.0 + s);
        in.wkeep_bytes.push_back(30.0 + 2 * s);  // W-state <= activations
      }
      const ScheduleResult r = run(in);
      for (int s = 0; s < P; ++s) {
        const double A = in.act_bytes[s];
        const double K = in.wkeep_bytes[s];
        const int w = std::min(P - s - 1, M);
        const double expected = M > w ? (w + 1) * A + std::min(M - w - 1, s) * K : M * A;
        EXPECT_TRUE(near_rel(expected, r.peak_act_bytes[s])) << "P=" << P << " M=" << M;
        if (M >= P) {
          EXPECT_TRUE(near_rel((P - s) * A + s * K, r.peak_act_bytes[s]));
        }
        EXPECT_EQ(r.peak_in_flight[s], std::min(P - s, M));
      }
    }
  }
}

// ----- heterogeneous stages (docs/algorithms.md §2.3)
// -------------------------------------------------

TEST(ScheduleHeterogeneous, GPipeExactFlowShopFormula) {
  const std::uint32_t seed = base_seed() + 2;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> t(0.1, 3.0);
  for (int it = 0; it < 2000; ++it) {
    const int P = 1 + static_cast<int>(rng() % 10);
    const int M = 1 + static_cast<int>(rng() % 40);
    ScheduleInput in;
    in.kind = ScheduleKind::kGPipe;
    in.devices = P;
    in.microbatches = M;
    for (int s = 0; s < P; ++s) {
      in.fwd_s.push_back(t(rng));
      in.bwd_s.push_back(t(rng));
    }
    // T = Σf + (M−1)·max f + Σb + (M−1)·max b  (§2.3, GPipe exact)
    auto sum = [](const std::vector<double>& x) {
      double s = 0;
      for (double e : x) s += e;
      return s;
    };
    auto mx = [](const std::vector<double>& x) { return *std::max_element(x.begin(), x.end()); };
    double expected =
        sum(in.fwd_s) + (M - 1) * mx(in.fwd_s) + sum(in.bwd_s) + (M - 1) * mx(in.bwd_s);
    ASSERT_TRUE(near_rel(expected, run(in).time_s)) << "it=" << it << " P=" << P << " M=" << M;
    // [derived] With async transfers each boundary is crossed once per phase: + 2·Σc.
    for (int s = 0; s + 1 < P; ++s) {
      in.p2p_s.push_back(0.5 * t(rng));
    }
    expected += 2 * sum(in.p2p_s);
    ASSERT_TRUE(near_rel(expected, run(in).time_s)) << "async it=" << it;
  }
}

TEST(ScheduleHeterogeneous, OneFOneBBetweenLowerAndUpperBound) {
  // §2.3: LB = max_σ [Σ_{σ'<σ} f + M·w_σ + Σ_{σ'<σ} b] <= T <= UB = Σ w + (M−1)·max w.
  // UB holds when one stage has both the largest f and the largest b (e.g. b = r·f on every
  // stage, as for stacks of identical layers); see the counterexample below otherwise. T never
  // exceeds GPipe's exact time Σf + (M−1)·max f + Σb + (M−1)·max b.
  const std::uint32_t seed = base_seed() + 3;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> t(0.1, 3.0);
  int tight_lb = 0;
  for (int it = 0; it < 3000; ++it) {
    const int P = 1 + static_cast<int>(rng() % 10);
    const int M = 1 + static_cast<int>(rng() % 40);
    const int family = it % 3;  // 0: b = r·f; 1: shared argmax; 2: unrelated f and b
    ScheduleInput in;
    in.devices = P;
    in.microbatches = M;
    const double r = 1 + t(rng) / 1.5;
    for (int s = 0; s < P; ++s) {
      in.fwd_s.push_back(t(rng));
      in.bwd_s.push_back(family == 0 ? r * in.fwd_s.back() : t(rng));
      in.wgt_s.push_back(family == 0 ? 0.25 * in.fwd_s.back() : 0.0);  // fused into BW
    }
    if (family == 1) {  // move the largest b onto the stage with the largest f
      const auto sf = std::max_element(in.fwd_s.begin(), in.fwd_s.end()) - in.fwd_s.begin();
      const auto sb = std::max_element(in.bwd_s.begin(), in.bwd_s.end()) - in.bwd_s.begin();
      std::swap(in.bwd_s[static_cast<std::size_t>(sf)], in.bwd_s[static_cast<std::size_t>(sb)]);
    }
    double lb = 0;
    double sum_w = 0;
    double max_w = 0;
    double prefix = 0;
    double sum_f = 0;
    double max_f = 0;
    double sum_b = 0;
    double max_b = 0;
    for (int s = 0; s < P; ++s) {
      const double f = in.fwd_s[s];
      const double b = in.bwd_s[s] + in.wgt_s[s];
      lb = std::max(lb, prefix + M * (f + b));
      prefix += f + b;
      sum_w += f + b;
      max_w = std::max(max_w, f + b);
      sum_f += f;
      max_f = std::max(max_f, f);
      sum_b += b;
      max_b = std::max(max_b, b);
    }
    const double ub = sum_w + (M - 1) * max_w;
    const double gpipe = sum_f + (M - 1) * max_f + sum_b + (M - 1) * max_b;
    const double T = run(in).time_s;
    ASSERT_LE(lb, T * (1 + 1e-12)) << "it=" << it << " P=" << P << " M=" << M;
    ASSERT_LE(T, gpipe * (1 + 1e-12)) << "it=" << it << " P=" << P << " M=" << M;
    if (family != 2) {
      ASSERT_LE(T, ub * (1 + 1e-12)) << "it=" << it << " P=" << P << " M=" << M;
    }
    tight_lb += std::fabs(T - lb) <= 1e-9 * T;
  }
  EXPECT_GT(tight_lb, 0);  // the LB is attained on part of the instances (§2.3: about 1/3)
}

TEST(ScheduleHeterogeneous, OneFOneBCanExceedAlpaBoundWhenFAndBPeakOnDifferentStages) {
  // P = 3, M = 2, f = [2, 5, 1], b = [5, 1, 1]. By hand: device 1 must run F1 (7..12) before B0,
  // so B0 reaches device 0 at 13 and its two backwards end at 23; UB = 15 + 7 = 22.
  ScheduleInput in;
  in.devices = 3;
  in.microbatches = 2;
  in.fwd_s = {2, 5, 1};
  in.bwd_s = {5, 1, 1};
  const ScheduleResult r = run(in);
  EXPECT_DOUBLE_EQ(r.time_s, 23.0);
  EXPECT_EQ(r.last_grad_end_s, (std::vector<double>{23, 15, 14}));
}

TEST(ScheduleHeterogeneous, OneFOneBUpperBoundExactWhenLastStageIsSlowest) {
  // §2.3: Alpa's Σw + (M−1)·max w is exact when the bottleneck is the last stage, here taken to
  // mean the last stage has both the largest f and the largest b.
  const std::uint32_t seed = base_seed() + 4;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> t(0.1, 2.0);
  for (int it = 0; it < 1000; ++it) {
    const int P = 2 + static_cast<int>(rng() % 8);
    const int M = 1 + static_cast<int>(rng() % 30);
    ScheduleInput in;
    in.devices = P;
    in.microbatches = M;
    double sum_w = 0;
    for (int s = 0; s < P; ++s) {
      in.fwd_s.push_back(t(rng) + (s == P - 1 ? 2.0 : 0.0));
      in.bwd_s.push_back(t(rng) + (s == P - 1 ? 2.0 : 0.0));
      sum_w += in.fwd_s.back() + in.bwd_s.back();
    }
    const double ub = sum_w + (M - 1) * (in.fwd_s.back() + in.bwd_s.back());
    ASSERT_TRUE(near_rel(ub, run(in).time_s)) << "it=" << it << " P=" << P << " M=" << M;
  }
}

// ----- p2p (docs/algorithms.md §2.3)
// -----------------------------------------------------------------

TEST(ScheduleP2P, BlockingModel) {
  // §2.3 approximates T ≈ (M+P−1)(f+b+2c). [derived] Exact for this model: the first stage
  // sends no gradient and the last no activation, so T = (M+P−1)(f+b+2c) − 3c for P >= 3 and
  // M >= 2; P(f+b) + 2(P−1)c for M = 1; (M+1)(f+b+c) for P = 2. For P >= 3 the approximation
  // is high by a constant 3c, not growing with M; for P = 2 each device sends only one way.
  for (int P : {2, 3, 4, 8}) {
    for (int M : {1, 2, 5, 16, 64}) {
      for (double c : {0.05, 0.5, 2.0}) {
        const double f = 1.0;
        const double b = 2.0;
        ScheduleInput in = uniform(ScheduleKind::k1F1B, P, 1, M, f, b);
        in.p2p_s.assign(static_cast<std::size_t>(P - 1), c);
        in.mode = P2PMode::kBlocking;
        double exact = (M + P - 1) * (f + b + 2 * c) - 3 * c;
        if (M == 1) {
          exact = P * (f + b) + 2 * (P - 1) * c;
        } else if (P == 2) {
          exact = (M + 1) * (f + b + c);
        }
        const ScheduleResult r = run(in);
        EXPECT_TRUE(near_rel(exact, r.time_s)) << "P=" << P << " M=" << M << " c=" << c;
        const double approx = (M + P - 1) * (f + b + 2 * c);
        EXPECT_LE(r.time_s, approx + 1e-9);
        if (P >= 3) {
          EXPECT_GE(r.time_s, approx - 3 * c - 1e-9);
        }
        // Busy time excludes transfers: the blocked sender counts as bubble.
        EXPECT_TRUE(near_rel(M * (f + b), r.busy_s[0]));
      }
    }
  }
}

TEST(ScheduleP2P, AsyncModel) {
  // §2.3: T ≈ (M+P−1)(f+b) + 2c(P−1)(M+P−1)/P (steady period f + b + 2c(P−1)/P).
  // [derived] Exact minus 2c/P when P divides M; within 2c of it for every M >= P.
  const std::uint32_t seed = base_seed() + 5;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> t(0.1, 2.0);
  for (int it = 0; it < 1500; ++it) {
    const int P = 2 + static_cast<int>(rng() % 9);
    const int M = P + static_cast<int>(rng() % (3 * P));
    const double f = t(rng);
    const double b = t(rng);
    const double c = t(rng) * (it % 2 ? 1.0 : 0.1);
    ScheduleInput in = uniform(ScheduleKind::k1F1B, P, 1, M, f, b);
    in.p2p_s.assign(static_cast<std::size_t>(P - 1), c);
    const double T = run(in).time_s;
    const double approx = (M + P - 1) * (f + b) + 2 * c * (P - 1) * (M + P - 1) / P;
    ASSERT_LE(std::fabs(T - approx), 2 * c + 1e-9 * T) << "it=" << it << " P=" << P << " M=" << M;
    if (M % P == 0) {
      ASSERT_TRUE(near_rel(approx - 2 * c / P, T)) << "it=" << it << " P=" << P << " M=" << M;
    }
    // Both exceed "warm-up and cool-down only" whenever the steady state is long.
    if (M >= 4 * P) {
      ASSERT_GT(T, (M + P - 1) * (f + b) + 2 * (P - 1) * c);
    }
  }
}

TEST(ScheduleP2P, ZeroCostAndSameDeviceTransfersAreFree) {
  ScheduleInput a = uniform(ScheduleKind::k1F1B, 4, 1, 8, 1.0, 2.0);
  ScheduleInput b = a;
  b.p2p_s.assign(3, 0.0);
  b.mode = P2PMode::kBlocking;
  EXPECT_EQ(run(a).time_s, run(b).time_s);
  // P = 1: all virtual stages share the device, so boundaries cost nothing.
  ScheduleInput c = uniform(ScheduleKind::kInterleaved1F1B, 1, 4, 3, 1.0, 2.0);
  ScheduleInput d = c;
  d.p2p_s.assign(3, 5.0);
  EXPECT_EQ(run(c).time_s, run(d).time_s);
  d.mode = P2PMode::kBlocking;
  EXPECT_EQ(run(c).time_s, run(d).time_s);
  EXPECT_TRUE(near_rel(3 * 3.0, run(c).time_s));  // one device: just its work
}

// ----- fast path == reference
// ----------------------------------------------------------------------

ScheduleInput random_instance(std::mt19937& rng, bool allow_large_m) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  ScheduleInput in;
  in.kind = kAllKinds[rng() % 4];
  in.devices = 1 + static_cast<int>(rng() % 12);
  const int P = in.devices;
  in.chunks = in.kind == ScheduleKind::kInterleaved1F1B ? 1 + static_cast<int>(rng() % 4) : 1;
  const int max_m = allow_large_m ? 300 : 48;
  in.microbatches = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_m));
  if (in.kind == ScheduleKind::kInterleaved1F1B) {
    in.microbatches = P * (1 + in.microbatches / (4 * P) + static_cast<int>(rng() % 6));
  }
  in.mode = rng() % 2 ? P2PMode::kAsync : P2PMode::kBlocking;
  const int V = P * in.chunks;
  // Uniform, mildly uneven (embedding / head) and strongly uneven stage times.
  const int style = static_cast<int>(rng() % 3);
  for (int vs = 0; vs < V; ++vs) {
    const double jitter = style == 0 ? 1.0 : (style == 1 ? 1 + 0.05 * (u(rng) - 1) : u(rng));
    double scale = jitter;
    if (style == 1 && vs == 0) scale *= 1.1;
    if (style == 1 && vs == V - 1) scale *= 1.3;
    in.fwd_s.push_back(scale);
    in.bwd_s.push_back(2 * scale * (style == 2 ? u(rng) : 1.0));
    in.wgt_s.push_back(rng() % 4 ? 0.6 * scale : 0.0);
    in.act_bytes.push_back(1e9 * u(rng));
    in.wkeep_bytes.push_back(0.3e9 * u(rng));
  }
  const double c = rng() % 3 == 0 ? 0.0 : 0.05 * u(rng);
  for (int vs = 0; vs + 1 < V; ++vs) {
    in.p2p_s.push_back(style == 0 ? c : c * u(rng));
  }
  return in;
}

void expect_same(const ScheduleResult& ref, const ScheduleResult& fast) {
  ASSERT_TRUE(ref.ok) << ref.error;
  ASSERT_TRUE(fast.ok) << fast.error;
  ASSERT_TRUE(near_rel(ref.time_s, fast.time_s)) << "time_s";
  ASSERT_TRUE(near_rel(ref.bubble_fraction, fast.bubble_fraction)) << "bubble_fraction";
  ASSERT_EQ(ref.busy_s.size(), fast.busy_s.size());
  for (std::size_t d = 0; d < ref.busy_s.size(); ++d) {
    ASSERT_TRUE(near_rel(ref.busy_s[d], fast.busy_s[d])) << "busy_s d=" << d;
    ASSERT_TRUE(near_rel(ref.peak_act_bytes[d], fast.peak_act_bytes[d])) << "peak_act d=" << d;
    ASSERT_EQ(ref.peak_in_flight[d], fast.peak_in_flight[d]) << "peak_in_flight d=" << d;
    ASSERT_TRUE(near_rel(ref.last_grad_end_s[d], fast.last_grad_end_s[d]))
        << "last_grad_end d=" << d;
  }
}

TEST(ScheduleFastPath, MatchesReferenceOnRandomInstances) {
  const std::uint32_t seed = base_seed() + 6;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  SimWorkspace ws;  // one workspace across all calls: exercises the program cache and eviction
  ScheduleResult fast;
  for (int it = 0; it < 4000; ++it) {
    const ScheduleInput in = random_instance(rng, /*allow_large_m=*/it % 4 == 0);
    SCOPED_TRACE("it=" + std::to_string(it) + " " + to_string(in.kind) +
                 " P=" + std::to_string(in.devices) + " v=" + std::to_string(in.chunks) +
                 " M=" + std::to_string(in.microbatches) + " mode=" + to_string(in.mode));
    const ScheduleResult ref = simulate(in);
    simulate_fast(in, ws, &fast);
    expect_same(ref, fast);
    if (HasFatalFailure()) {
      return;
    }
  }
}

TEST(ScheduleFastPath, LongRunsAndAllocationFreeReuse) {
  // Large M relative to P: the extrapolation carries most of the answer.
  const std::uint32_t seed = base_seed() + 7;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  SimWorkspace ws;
  ScheduleResult fast;
  ScheduleResult ref;
  for (int it = 0; it < 60; ++it) {
    ScheduleInput in = random_instance(rng, true);
    in.microbatches = in.kind == ScheduleKind::kInterleaved1F1B ? in.devices * 64 : 700 + it;
    SCOPED_TRACE("it=" + std::to_string(it) + " " + to_string(in.kind) +
                 " P=" + std::to_string(in.devices) + " v=" + std::to_string(in.chunks));
    simulate(in, ws, &ref);
    simulate_fast(in, ws, &fast);
    expect_same(ref, fast);
    // A second call with the same workspace and result gives the identical answer.
    ScheduleResult again = fast;
    simulate_fast(in, ws, &again);
    ASSERT_EQ(again.time_s, fast.time_s);
    ASSERT_EQ(again.peak_act_bytes, fast.peak_act_bytes);
    if (HasFatalFailure()) {
      return;
    }
  }
}

// ----- memory before time (docs/performance.md "Memory before time") ----------------------------

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// simulate_memory() gives simulate_fast()'s memory figures bit for bit: on the random instances
// above (the periodic kinds with M up to 300, so that the reduced run, a repeat that needs a
// longer run or M's own program gives simulate_fast()'s figures) and on the kinds that always run
// their full program, with one workspace shared by both (compiled programs reused and evicted).
TEST(ScheduleMemory, EqualsFastPathBitForBit) {
  const std::uint32_t seed = base_seed() + 8;
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  SimWorkspace ws;
  ScheduleResult fast, mem;
  for (int it = 0; it < 3000; ++it) {
    ScheduleInput in = random_instance(rng, /*allow_large_m=*/it % 3 == 0);
    if (it % 5 == 4) {  // ZB-V, DualPipe, ZB-H2 (their full programs)
      constexpr ScheduleKind kOther[] = {ScheduleKind::kZBV, ScheduleKind::kDualPipe,
                                         ScheduleKind::kZBH2};
      in = test::random_schedule_input(kOther[rng() % 3], rng, 4);
    }
    SCOPED_TRACE("it=" + std::to_string(it) + " " + to_string(in.kind) +
                 " P=" + std::to_string(in.devices) + " v=" + std::to_string(in.chunks) +
                 " M=" + std::to_string(in.microbatches) + " mode=" + to_string(in.mode));
    // Either order: the memory call first (as the evaluator does) or the full one first.
    if (it % 2 == 0) {
      simulate_memory(in, ws, &mem);
      simulate_fast(in, ws, &fast);
    } else {
      simulate_fast(in, ws, &fast);
      simulate_memory(in, ws, &mem);
    }
    ASSERT_TRUE(fast.ok) << fast.error;
    ASSERT_TRUE(mem.ok) << mem.error;
    ASSERT_EQ(mem.peak_in_flight, fast.peak_in_flight);
    ASSERT_EQ(mem.busy_s.size(), fast.busy_s.size());
    for (std::size_t d = 0; d < fast.busy_s.size(); ++d) {
      ASSERT_TRUE(same_bits(mem.peak_act_bytes[d], fast.peak_act_bytes[d]))
          << "d=" << d << ": " << mem.peak_act_bytes[d] << " vs " << fast.peak_act_bytes[d];
      ASSERT_TRUE(same_bits(mem.peak_wkeep_bytes[d], fast.peak_wkeep_bytes[d])) << "d=" << d;
      ASSERT_TRUE(same_bits(mem.busy_s[d], fast.busy_s[d])) << "d=" << d;
    }
    if (in.kind == ScheduleKind::kGPipe) {
      ASSERT_TRUE(same_bits(mem.time_s, fast.time_s));  // its closed form gives both
    } else {
      ASSERT_TRUE(std::isnan(mem.time_s));
      ASSERT_TRUE(std::isnan(mem.bubble_fraction));
      for (const double t : mem.last_grad_end_s) ASSERT_TRUE(std::isnan(t));
    }
  }
}

// The same errors as simulate_fast() for an invalid input.
TEST(ScheduleMemory, ReportsTheFastPathsErrors) {
  ScheduleInput in = uniform(ScheduleKind::kInterleaved1F1B, 4, 2, 6, 1.0, 2.0);  // M % P != 0
  const ScheduleResult fast = simulate_fast(in);
  ASSERT_FALSE(fast.ok);
  SimWorkspace ws;
  ScheduleResult mem;
  simulate_memory(in, ws, &mem);
  EXPECT_FALSE(mem.ok);
  EXPECT_EQ(mem.error, fast.error);
  in = uniform(ScheduleKind::k1F1B, 4, 1, 8, 1.0, 2.0);
  in.act_bytes.assign(4, -1.0);
  simulate_memory(in, ws, &mem);
  EXPECT_FALSE(mem.ok);
  EXPECT_EQ(mem.error, simulate_fast(in).error);
}

// ----- invalid input -----------------------------------------------------------------------------

TEST(ScheduleInvalid, ReportsInsteadOfThrowing) {
  const ScheduleInput good = uniform(ScheduleKind::k1F1B, 4, 1, 8, 1.0, 2.0);
  ASSERT_EQ(validate(good), "");
  struct Case {
    const char* field;
    ScheduleInput in;
  };
  std::vector<Case> cases;
  auto with = [&](const char* field, auto mutate) {
    ScheduleInput in = good;
    mutate(in);
    cases.push_back({field, in});
  };
  with("devices", [](ScheduleInput& in) { in.devices = 0; });
  with("chunks", [](ScheduleInput& in) { in.chunks = 0; });
  with("microbatches", [](ScheduleInput& in) { in.microbatches = 0; });
  with("microbatches", [](ScheduleInput& in) { in.microbatches = -3; });
  with("chunks", [](ScheduleInput& in) {  // chunks > 1 needs the interleaved schedule
    in.chunks = 2;
    in.fwd_s.assign(8, 1.0);
    in.bwd_s.assign(8, 1.0);
  });
  with("microbatches", [](ScheduleInput& in) {  // interleaved needs M % P == 0
    in.kind = ScheduleKind::kInterleaved1F1B;
    in.chunks = 2;
    in.microbatches = 6;
    in.fwd_s.assign(8, 1.0);
    in.bwd_s.assign(8, 1.0);
  });
  with("fwd_s", [](ScheduleInput& in) { in.fwd_s.pop_back(); });
  with("bwd_s", [](ScheduleInput& in) { in.bwd_s.clear(); });
  with("wgt_s", [](ScheduleInput& in) { in.wgt_s.assign(3, 0.0); });
  with("act_bytes", [](ScheduleInput& in) { in.act_bytes.assign(5, 0.0); });
  with("p2p_s", [](ScheduleInput& in) { in.p2p_s.assign(4, 0.0); });
  with("fwd_s", [](ScheduleInput& in) { in.fwd_s[1] = -1.0; });
  with("bwd_s", [](ScheduleInput& in) { in.bwd_s[2] = std::numeric_limits<double>::quiet_NaN(); });
  with("wkeep_bytes", [](ScheduleInput& in) {
    in.wkeep_bytes.assign(4, 1.0);
    in.wkeep_bytes[3] = std::numeric_limits<double>::infinity();
  });
  with("p2p_s", [](ScheduleInput& in) { in.p2p_s = {0.0, -0.5, 0.0}; });
  with("kind", [](ScheduleInput& in) { in.kind = static_cast<ScheduleKind>(17); });
  with("mode", [](ScheduleInput& in) { in.mode = static_cast<P2PMode>(5); });
  with("microbatches", [](ScheduleInput& in) {  // far beyond the size limit
    in.microbatches = 2000000000;
  });
  with("devices", [](ScheduleInput& in) {
    in.kind = ScheduleKind::kInterleaved1F1B;
    in.devices = 1 << 20;
    in.chunks = 1 << 12;  // V overflows int: must not wrap around
    in.microbatches = in.devices;
  });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    const std::string msg = validate(c.in);
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    for (int fast = 0; fast < 2; ++fast) {
      ScheduleResult r;
      EXPECT_NO_THROW(r = fast ? simulate_fast(c.in) : simulate(c.in));
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.error, msg);
      EXPECT_TRUE(r.busy_s.empty());
    }
  }
  ScheduleOrder order;
  EXPECT_NE(build_schedule_order(ScheduleKind::kInterleaved1F1B, 4, 2, 6, &order), "");
  EXPECT_NE(build_schedule_order(ScheduleKind::kGPipe, 4, 2, 8, &order), "");
}

TEST(ScheduleInvalid, OptionalVectorsMayBeEmpty) {
  ScheduleInput in;
  in.devices = 3;
  in.microbatches = 5;
  in.fwd_s = {1, 1, 1};
  in.bwd_s = {2, 2, 2};
  const ScheduleResult r = run(in);
  EXPECT_TRUE(near_rel(7 * 3.0, r.time_s));
  EXPECT_EQ(r.peak_act_bytes, std::vector<double>(3, 0.0));
}

}  // namespace
}  // namespace ppsearch
