// Benchmarks of the layer partitioners: O(L²·S) reference DP vs the O(L·S) monotone-queue DP
// vs reachability-probe bisection (docs/algorithms.md §1.1, §1.3), for L items and S stages.
// Costs mimic a decoder-only transformer (docs/algorithms.md §1.2): a light embedding with heavy
// static memory first, a heavy LM head with a large logits transient last, 1F1B in-flight
// counts k_σ = min(S − σ, M) with M = 2S, and a capacity that binds on stage 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ppsearch/partition/partition.hpp"

namespace {

using ppsearch::PartitionProblem;

PartitionProblem realistic_problem(int items, int stages) {
  PartitionProblem p;
  p.stages = stages;
  const double layer_time = 1.0e-3;  // s per micro-batch, forward + backward
  const double layer_static = 1.0e9;
  const double layer_act = 0.25e9;
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (int l = 0; l < items; ++l) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double jitter = 1.0 + 0.02 * (static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5);
    double time = layer_time * jitter;
    double stat = layer_static;
    double act = layer_act;
    double transient = 0.0;
    if (l == 0) {  // embedding: little time, vocab-sized parameters (§1.2)
      time = 0.1 * layer_time;
      stat = 3.0e9;
      act = 0.05e9;
    } else if (l == items - 1) {  // final norm + LM head + loss (§1.2, §4.4)
      time = 2.0 * layer_time;
      stat = 3.0e9;
      act = 0.5e9;
      transient = 4.0e9;
    }
    p.time_s.push_back(time);
    p.static_bytes.push_back(stat);
    p.act_bytes.push_back(act);
    p.transient_bytes.push_back(transient);
  }
  const int micro_batches = 2 * stages;
  for (int s = 0; s < stages; ++s) {
    p.in_flight.push_back(std::min(stages - s, micro_batches));  // 1F1B (§1.1)
    p.extra_bytes.push_back(1.0e9);
    p.comm_s.push_back(s + 1 < stages ? 0.02 * layer_time : 0.0);
  }
  // Stage 0 may hold only ~60% of an even share of layers; raise the capacity until some
  // partition fits.
  const int even = std::max(1, items / stages);
  const int on_stage0 = std::max(1, static_cast<int>(0.6 * even));
  p.capacity_bytes =
      1.0e9 + 3.0e9 + on_stage0 * (layer_static + p.in_flight[0] * layer_act) + 0.5e9;
  while (!ppsearch::partition_fast(p).feasible) p.capacity_bytes *= 1.05;
  return p;
}

void partition_args(benchmark::internal::Benchmark* b) {
  for (int items : {32, 128, 512, 1024}) {
    for (int stages : {2, 4, 16, 64}) {
      if (stages <= items) b->Args({items, stages});
    }
  }
  b->ArgNames({"L", "S"});
}

void BM_PartitionReference(benchmark::State& state) {
  const PartitionProblem p =
      realistic_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    ppsearch::Partition r = ppsearch::partition_reference(p);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PartitionReference)->Apply(partition_args)->Unit(benchmark::kMicrosecond);

void BM_PartitionFast(benchmark::State& state) {
  const PartitionProblem p =
      realistic_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  ppsearch::PartitionWorkspace ws;
  for (auto _ : state) {
    const ppsearch::Partition& r = ppsearch::partition_fast(p, ws);
    benchmark::DoNotOptimize(r.bottleneck_s);
  }
}
BENCHMARK(BM_PartitionFast)->Apply(partition_args)->Unit(benchmark::kMicrosecond);

void BM_PartitionBisect(benchmark::State& state) {
  const PartitionProblem p =
      realistic_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  ppsearch::PartitionWorkspace ws;
  for (auto _ : state) {
    const ppsearch::Partition& r = ppsearch::partition_bisect_reachability(p, ws);
    benchmark::DoNotOptimize(r.bottleneck_s);
  }
}
BENCHMARK(BM_PartitionBisect)->Apply(partition_args)->Unit(benchmark::kMicrosecond);

}  // namespace
