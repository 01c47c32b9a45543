// Pipeline-schedule simulator: the reference event simulation vs the fast path, over
// M ∈ {8, 32, 128, 512}, P ∈ {4, 8, 16, 32}, v ∈ {1, 2, 4}. v = 1 runs 1F1B and ZB-H1, v > 1
// interleaved 1F1B (only M % P == 0). Stage times mimic a partitioned transformer: equal
// stages with a ±5% ripple, the first 10% and the last 30% heavier (embedding, LM head), b = 2f,
// w = 0.6f, async p2p of 2% of a stage's forward.
//
// BM_ScheduleReference: simulate() (worklist + order generation every call).
// BM_ScheduleFast:      simulate_fast() with a reused SimWorkspace (the search's hot loop).
// BM_ScheduleFastCold:  simulate_fast() with a fresh SimWorkspace (includes compiling the order).
#include <benchmark/benchmark.h>

#include <cmath>

#include "ppsearch/schedule/pipeline_schedule.hpp"

namespace ppsearch {
namespace {

ScheduleInput bench_input(ScheduleKind kind, int P, int v, int M) {
  ScheduleInput in;
  in.kind = kind;
  in.devices = P;
  in.chunks = v;
  in.microbatches = M;
  const int V = P * v;
  for (int vs = 0; vs < V; ++vs) {
    double f = 1e-3 / v * (1.0 + 0.05 * std::sin(1.7 * vs + 0.3));
    if (vs == 0) f *= 1.1;
    if (vs == V - 1) f *= 1.3;
    in.fwd_s.push_back(f);
    in.bwd_s.push_back(2 * f);
    in.wgt_s.push_back(0.6 * f);
    in.act_bytes.push_back(2e9 / v);
    in.wkeep_bytes.push_back(0.6e9 / v);
  }
  in.p2p_s.assign(static_cast<std::size_t>(V - 1), 2e-5);
  return in;
}

// Args: {P, v, M, kind}.
void schedule_args(benchmark::internal::Benchmark* b) {
  for (int v : {1, 2, 4}) {
    for (int P : {4, 8, 16, 32}) {
      for (int M : {8, 32, 128, 512}) {
        if (v == 1) {
          b->Args({P, v, M, static_cast<int>(ScheduleKind::k1F1B)});
          b->Args({P, v, M, static_cast<int>(ScheduleKind::kZBH1)});
        } else if (M % P == 0) {
          b->Args({P, v, M, static_cast<int>(ScheduleKind::kInterleaved1F1B)});
        }
      }
    }
  }
  b->ArgNames({"P", "v", "M", "kind"});
  b->Unit(benchmark::kMicrosecond);
}

ScheduleInput input_from(const benchmark::State& state) {
  return bench_input(static_cast<ScheduleKind>(state.range(3)), static_cast<int>(state.range(0)),
                     static_cast<int>(state.range(1)), static_cast<int>(state.range(2)));
}

void set_counters(benchmark::State& state, const ScheduleInput& in, const ScheduleResult& r) {
  if (!r.ok) {
    state.SkipWithError(r.error.c_str());
    return;
  }
  const double ops =
      (in.kind == ScheduleKind::kZBH1 ? 3.0 : 2.0) * in.microbatches * in.devices * in.chunks;
  state.counters["ops"] = ops;
  state.counters["bubble"] = r.bubble_fraction;
}

void BM_ScheduleReference(benchmark::State& state) {
  const ScheduleInput in = input_from(state);
  SimWorkspace ws;
  ScheduleResult r;
  for (auto _ : state) {
    simulate(in, ws, &r);
    benchmark::DoNotOptimize(r.time_s);
  }
  set_counters(state, in, r);
}
BENCHMARK(BM_ScheduleReference)->Apply(schedule_args);

void BM_ScheduleFast(benchmark::State& state) {
  const ScheduleInput in = input_from(state);
  SimWorkspace ws;
  ScheduleResult r;
  simulate_fast(in, ws, &r);  // warm the program cache, as in the search's hot loop
  for (auto _ : state) {
    simulate_fast(in, ws, &r);
    benchmark::DoNotOptimize(r.time_s);
  }
  set_counters(state, in, r);
}
BENCHMARK(BM_ScheduleFast)->Apply(schedule_args);

void BM_ScheduleFastCold(benchmark::State& state) {
  const ScheduleInput in = input_from(state);
  ScheduleResult r;
  for (auto _ : state) {
    SimWorkspace ws;
    simulate_fast(in, ws, &r);
    benchmark::DoNotOptimize(r.time_s);
  }
  set_counters(state, in, r);
}
BENCHMARK(BM_ScheduleFastCold)
    ->Args({16, 1, 64, static_cast<int>(ScheduleKind::k1F1B)})
    ->Args({16, 1, 512, static_cast<int>(ScheduleKind::k1F1B)})
    ->Args({16, 2, 64, static_cast<int>(ScheduleKind::kInterleaved1F1B)})
    ->ArgNames({"P", "v", "M", "kind"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ppsearch
