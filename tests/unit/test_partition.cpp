// Unit tests of the layer partitioner (docs/algorithms.md §1.1, §1.3). Oracles: exhaustive
// enumeration of compositions, closed forms, and the O(L²·S) reference DP.
// Set PPSEARCH_TEST_SEED to vary the random instances; failures print the instance seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../support/numeric.hpp"
#include "ppsearch/partition/partition.hpp"

namespace ppsearch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using test::uniform;
using test::uniform_int;

std::uint64_t base_seed() { return test::seed_or(20240611ULL); }

bool coin(std::mt19937_64& rng, double p) { return uniform(rng, 0.0, 1.0) < p; }

PartitionProblem uniform_problem(int items, int stages, double t) {
  PartitionProblem p;
  p.time_s.assign(items, t);
  p.static_bytes.assign(items, 0.0);
  p.act_bytes.assign(items, 0.0);
  p.transient_bytes.assign(items, 0.0);
  p.in_flight.assign(stages, 1.0);
  p.extra_bytes.assign(stages, 0.0);
  p.comm_s.assign(stages, 0.0);
  p.capacity_bytes = kInf;
  p.stages = stages;
  return p;
}

// ----- exhaustive oracle ------------------------------------------------------------------

struct BruteResult {
  bool feasible = false;
  double bottleneck = kInf;
  std::vector<int> bounds;
};

// Enumerates every composition of L items into S non-empty stages. Among optimal ones it keeps
// the latest cuts compared from the last cut backwards (the documented tie rule).
BruteResult brute_force(const PartitionProblem& p) {
  BruteResult best;
  const int n = static_cast<int>(p.time_s.size());
  const int stages = p.stages;
  if (stages > n) return best;
  // time[σ][i][j], fits[σ][i][j] through the public per-stage functions.
  const auto idx = [n](int s, int i, int j) { return (s * (n + 1) + i) * (n + 1) + j; };
  std::vector<double> time(static_cast<std::size_t>(stages) * (n + 1) * (n + 1), kInf);
  std::vector<char> fits(time.size(), 0);
  for (int s = 0; s < stages; ++s) {
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j <= n; ++j) {
        time[idx(s, i, j)] = stage_time(p, s, i, j);
        fits[idx(s, i, j)] = stage_memory(p, s, i, j) <= p.capacity_bytes;
      }
    }
  }
  std::vector<int> bounds(stages + 1, 0);
  bounds[stages] = n;
  const auto later_cuts = [stages](const std::vector<int>& a, const std::vector<int>& b) {
    for (int s = stages - 1; s >= 1; --s) {
      if (a[s] != b[s]) return a[s] > b[s];
    }
    return false;
  };
  std::function<void(int, double)> rec = [&](int s, double worst) {
    // Stage s starts at bounds[s]; choose its end.
    const int start = bounds[s];
    if (s == stages - 1) {
      if (!fits[idx(s, start, n)]) return;
      const double total = std::max(worst, time[idx(s, start, n)]);
      if (!best.feasible || total < best.bottleneck ||
          (total == best.bottleneck && later_cuts(bounds, best.bounds))) {
        best.feasible = true;
        best.bottleneck = total;
        best.bounds = bounds;
      }
      return;
    }
    for (int end = start + 1; end <= n - (stages - 1 - s); ++end) {
      if (!fits[idx(s, start, end)]) continue;
      bounds[s + 1] = end;
      rec(s + 1, std::max(worst, time[idx(s, start, end)]));
    }
  };
  rec(0, 0.0);
  return best;
}

// ----- random instances -------------------------------------------------------------------

enum class InFlight { OneFOneB, GPipe, Arbitrary };

struct Instance {
  PartitionProblem problem;
  bool binding = false;  // the memory limit raises the optimum above the unconstrained one
};

// Smallest over all partitions of the largest stage memory (direct sums; only used to pick
// capacities for random instances, so rounding differences do not matter). O(L²·S).
double min_peak_memory(const PartitionProblem& p) {
  const int n = static_cast<int>(p.time_s.size());
  std::vector<double> prev(n + 1, kInf), cur(n + 1, kInf);
  prev[0] = 0.0;
  for (int s = 0; s < p.stages; ++s) {
    std::fill(cur.begin(), cur.end(), kInf);
    for (int j = s + 1; j <= n; ++j) {
      double stat = 0, act = 0, peak = 0;
      for (int i = j - 1; i >= s; --i) {
        stat += p.static_bytes[i];
        act += p.act_bytes[i];
        peak = std::max(peak, p.transient_bytes[i]);
        const double mem = stat + p.in_flight[s] * act + peak + p.extra_bytes[s];
        cur[j] = std::min(cur[j], std::max(prev[i], mem));
      }
    }
    std::swap(prev, cur);
  }
  return prev[n];
}

// `crowded`: 6 <= L and L-4 <= S < L, i.e. nearly one item per stage, where the non-empty
// stage constraint dominates.
Instance random_instance(std::uint64_t seed, int max_items, int max_stages, bool crowded = false) {
  std::mt19937_64 rng(seed);
  // Mostly 2 <= S < L, where more than one partition exists; sometimes S = 1, S = L, S > L.
  const bool edge = !crowded && coin(rng, 0.1);
  const int n = uniform_int(rng, edge ? 1 : std::min(crowded ? 6 : 3, max_items), max_items);
  const int stages =
      crowded ? uniform_int(rng, n - 4, n - 1)
      : edge  ? uniform_int(rng, 1, std::min(max_stages, n + 1))
              : uniform_int(rng, std::min(2, n), std::min(max_stages, std::max(1, n - 1)));
  PartitionProblem p;
  p.stages = stages;
  const bool integer_times = coin(rng, 0.35);  // many exact ties
  for (int l = 0; l < n; ++l) {
    double t = integer_times ? uniform_int(rng, 0, 3) : uniform(rng, 0.05, 2.0);
    if ((l == 0 || l == n - 1) && coin(rng, 0.5)) t *= 2.0;  // heavy embedding / LM head
    p.time_s.push_back(t);
    p.static_bytes.push_back(coin(rng, 0.2) ? 0.0 : uniform(rng, 0.0, 1.0));
    p.act_bytes.push_back(uniform(rng, 0.0, 1.0));
    p.transient_bytes.push_back(0.0);
  }
  const int transient_kind = uniform_int(rng, 0, 2);  // none, last item only, random
  if (transient_kind == 1) p.transient_bytes[n - 1] = uniform(rng, 0.0, 3.0);
  if (transient_kind == 2) {
    for (double& x : p.transient_bytes) x = coin(rng, 0.4) ? uniform(rng, 0.0, 2.0) : 0.0;
  }
  const auto kind = static_cast<InFlight>(uniform_int(rng, 0, 2));
  const int micro_batches = uniform_int(rng, 1, 2 * stages);
  for (int s = 0; s < stages; ++s) {
    double k = 0;
    switch (kind) {
      case InFlight::OneFOneB:
        k = std::min(stages - s, micro_batches);  // docs/algorithms.md §1.1, 1F1B
        break;
      case InFlight::GPipe:
        k = micro_batches;
        break;
      case InFlight::Arbitrary:
        k = uniform(rng, 0.0, 4.0);  // not monotone: the exact methods must not need it
        break;
    }
    p.in_flight.push_back(k);
    p.extra_bytes.push_back(coin(rng, 0.5) ? uniform(rng, 0.0, 0.5) : 0.0);
    p.comm_s.push_back(
        coin(rng, 0.5) ? (integer_times ? uniform_int(rng, 0, 1) : uniform(rng, 0.0, 0.5)) : 0.0);
  }
  Instance inst;
  // Capacity: mostly between the smallest capacity any partition needs and the memory of the
  // unconstrained optimum, so that memory binds at the optimum in many instances.
  p.capacity_bytes = kInf;
  const Partition free_opt = partition_reference(p);
  const double u = uniform(rng, 0.0, 1.0);
  if (free_opt.feasible) {
    double peak = 0.0;
    for (int s = 0; s < stages; ++s) {
      peak = std::max(peak, stage_memory(p, s, free_opt.bounds[s], free_opt.bounds[s + 1]));
    }
    const double least = min_peak_memory(p);
    if (u < 0.75) {
      const double w = uniform(rng, 0.0, 1.0);
      p.capacity_bytes = least + w * w * std::max(0.0, peak - least);  // biased to tight
    } else if (u < 0.85) {
      // Exactly the memory of some stage of some partition: exercises the <= boundary.
      const int s = uniform_int(rng, 0, stages - 1);
      const int i = uniform_int(rng, 0, n - 1);
      const int j = uniform_int(rng, i + 1, n);
      p.capacity_bytes = stage_memory(p, s, i, j);
    } else if (u < 0.93) {
      p.capacity_bytes = least * uniform(rng, 0.5, 1.0);  // mostly infeasible
    }                                                     // else: no limit
  }
  const Partition constrained = partition_reference(p);
  inst.binding = constrained.feasible && constrained.bottleneck_s > free_opt.bottleneck_s;
  inst.problem = p;
  return inst;
}

void expect_valid(const PartitionProblem& p, const Partition& part, const char* who) {
  SCOPED_TRACE(who);
  ASSERT_TRUE(part.feasible);
  const Partition check = evaluate_partition(p, part.bounds);
  EXPECT_TRUE(check.feasible);
  EXPECT_EQ(check.bottleneck_s, part.bottleneck_s);
}

void expect_infeasible(const Partition& part, const char* who) {
  SCOPED_TRACE(who);
  EXPECT_FALSE(part.feasible);
  EXPECT_EQ(part.bottleneck_s, kInf);
  EXPECT_TRUE(part.bounds.empty());
}

std::string bounds_text(const std::vector<int>& b) {
  std::string s = "[";
  for (std::size_t i = 0; i < b.size(); ++i) s += (i ? "," : "") + std::to_string(b[i]);
  return s + "]";
}

// ----- 1. brute force == reference == fast == bisection -----------------------------------

TEST(Partition, RandomSmallInstancesMatchBruteForce) {
  constexpr int kInstances = 5000;
  const std::uint64_t seed0 = base_seed();
  PartitionWorkspace fast_ws;    // reused across instances of different sizes
  PartitionWorkspace bisect_ws;  // likewise
  int binding = 0;
  int feasible = 0;
  int greedy_failures = 0;
  for (int t = 0; t < kInstances; ++t) {
    const std::uint64_t seed = seed0 * 1000003ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const Instance inst = random_instance(seed, 10, 6, /*crowded=*/t % 5 == 4);
    const PartitionProblem& p = inst.problem;
    binding += inst.binding;

    const BruteResult brute = brute_force(p);
    const Partition ref = partition_reference(p);
    const Partition& fast = partition_fast(p, fast_ws);
    const Partition fast_fresh = partition_fast(p);
    const Partition& bis = partition_bisect_reachability(p, bisect_ws);

    ASSERT_EQ(ref.feasible, brute.feasible);
    ASSERT_EQ(fast.feasible, brute.feasible);
    ASSERT_EQ(fast_fresh.feasible, brute.feasible);
    ASSERT_EQ(bis.feasible, brute.feasible);
    if (!brute.feasible) {
      expect_infeasible(ref, "reference");
      expect_infeasible(fast, "fast");
      expect_infeasible(bis, "bisect");
      continue;
    }
    ++feasible;
    // Same doubles compared everywhere, so the values agree exactly.
    EXPECT_EQ(ref.bottleneck_s, brute.bottleneck);
    EXPECT_EQ(fast.bottleneck_s, brute.bottleneck);
    EXPECT_EQ(fast_fresh.bottleneck_s, brute.bottleneck);
    EXPECT_EQ(bis.bottleneck_s, brute.bottleneck);
    // The documented tie rule (latest cuts) is met by every method.
    EXPECT_EQ(bounds_text(ref.bounds), bounds_text(brute.bounds));
    EXPECT_EQ(bounds_text(fast.bounds), bounds_text(brute.bounds));
    EXPECT_EQ(bounds_text(fast_fresh.bounds), bounds_text(brute.bounds));
    EXPECT_EQ(bounds_text(bis.bounds), bounds_text(brute.bounds));
    expect_valid(p, ref, "reference");
    expect_valid(p, fast, "fast");
    expect_valid(p, bis, "bisect");

    // The greedy probe is sound (true => a partition within the limit exists) but not exact.
    if (!greedy_probe_feasible(p, brute.bottleneck)) ++greedy_failures;
    EXPECT_FALSE(brute.bottleneck > 0.0 &&
                 greedy_probe_feasible(p, std::nextafter(brute.bottleneck, 0.0)));
    if (::testing::Test::HasFailure()) return;
  }
  const double binding_share = static_cast<double>(binding) / kInstances;
  std::printf(
      "[ partition ] %d instances: %d feasible, %d memory-binding (%.1f%%), "
      "greedy probe wrong on %d\n",
      kInstances, feasible, binding, 100.0 * binding_share, greedy_failures);
  EXPECT_GT(binding_share, 0.20);
  EXPECT_GT(feasible, kInstances / 2);
}

TEST(Partition, RandomLargerInstancesFastAndBisectMatchReference) {
  constexpr int kInstances = 400;
  const std::uint64_t seed0 = base_seed();
  PartitionWorkspace ws;
  int binding = 0;
  for (int t = 0; t < kInstances; ++t) {
    const std::uint64_t seed = seed0 * 7919ULL + 1000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const Instance inst = random_instance(seed, 90, 24);
    binding += inst.binding;
    const PartitionProblem& p = inst.problem;
    const Partition ref = partition_reference(p);
    const Partition fast = partition_fast(p, ws);
    const Partition bis = partition_bisect_reachability(p, ws);
    ASSERT_EQ(fast.feasible, ref.feasible);
    ASSERT_EQ(bis.feasible, ref.feasible);
    if (!ref.feasible) continue;
    EXPECT_EQ(fast.bottleneck_s, ref.bottleneck_s);
    EXPECT_EQ(bis.bottleneck_s, ref.bottleneck_s);
    EXPECT_EQ(bounds_text(fast.bounds), bounds_text(ref.bounds));
    EXPECT_EQ(bounds_text(bis.bounds), bounds_text(ref.bounds));
    expect_valid(p, fast, "fast");
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(binding, kInstances / 5);
}

// Transformer-like chains (embedding, L_t layers, LM head with a logits transient) under 1F1B,
// GPipe and interleaved-like in-flight counts, with capacities from "everything fits" down to
// infeasible: exercises the banded fast DP on long chains where several passes are needed.
TEST(Partition, TransformerLikeChainsMatchReference) {
  const std::uint64_t seed0 = base_seed();
  PartitionWorkspace ws;
  int feasible = 0;
  int binding = 0;
  for (int t = 0; t < 150; ++t) {
    const std::uint64_t seed = seed0 * 131ULL + 3000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int layers = uniform_int(rng, 2, 128);
    const int n = layers + 2;
    const int stages = uniform_int(rng, 1, std::min(n, 32));
    PartitionProblem p = uniform_problem(n, stages, 1.0);
    const double layer_time = uniform(rng, 1e-4, 1e-2);
    for (int l = 0; l < n; ++l) {
      p.time_s[l] = layer_time * uniform(rng, 0.97, 1.03);
      p.static_bytes[l] = 1.0e9;
      p.act_bytes[l] = uniform(rng, 0.05e9, 0.5e9);
    }
    p.time_s[0] = 0.1 * layer_time;
    p.static_bytes[0] = uniform(rng, 0.5e9, 5e9);
    p.time_s[n - 1] = uniform(rng, 0.5, 2.5) * layer_time;
    p.static_bytes[n - 1] = uniform(rng, 0.5e9, 5e9);
    p.transient_bytes[n - 1] = uniform(rng, 0.0, 8e9);
    const int micro_batches = uniform_int(rng, 1, 4 * stages);
    const bool gpipe = coin(rng, 0.2);
    for (int s = 0; s < stages; ++s) {
      p.in_flight[s] = gpipe ? micro_batches : std::min(stages - s, micro_batches);
      p.extra_bytes[s] = 1.0e9;
      p.comm_s[s] = s + 1 < stages ? uniform(rng, 0.0, 0.05) * layer_time : 0.0;
    }
    p.capacity_bytes = kInf;
    const Partition free_opt = partition_reference(p);
    ASSERT_TRUE(free_opt.feasible);
    double peak = 0.0;
    for (int s = 0; s < stages; ++s) {
      peak = std::max(peak, stage_memory(p, s, free_opt.bounds[s], free_opt.bounds[s + 1]));
    }
    const double least = min_peak_memory(p);
    p.capacity_bytes =
        coin(rng, 0.1) ? least * 0.9 : least + uniform(rng, 0.0, 1.0) * (peak - least);
    const Partition ref = partition_reference(p);
    const Partition& fast = partition_fast(p, ws);
    const Partition bis = partition_bisect_reachability(p);
    ASSERT_EQ(fast.feasible, ref.feasible);
    ASSERT_EQ(bis.feasible, ref.feasible);
    if (!ref.feasible) continue;
    ++feasible;
    binding += ref.bottleneck_s > free_opt.bottleneck_s;
    EXPECT_EQ(fast.bottleneck_s, ref.bottleneck_s);
    EXPECT_EQ(bis.bottleneck_s, ref.bottleneck_s);
    EXPECT_EQ(bounds_text(fast.bounds), bounds_text(ref.bounds));
    EXPECT_EQ(bounds_text(bis.bounds), bounds_text(ref.bounds));
    expect_valid(p, fast, "fast");
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(feasible, 100);
  EXPECT_GT(binding, 30);
}

// ----- 2. the greedy counterexample of docs/algorithms.md §1.3 ---------------------------------

PartitionProblem greedy_counterexample() {
  PartitionProblem p = uniform_problem(4, 3, 1.0);
  p.act_bytes = {0.1, 0.1, 1.0, 0.5};
  p.in_flight = {3.0, 2.0, 1.0};  // 1F1B, P = 3
  p.capacity_bytes = 1.5;
  return p;
}

TEST(Partition, GreedyCounterexampleIsSolvedExactly) {
  const PartitionProblem p = greedy_counterexample();
  const std::vector<int> expected = {0, 1, 2, 4};
  // The only feasible composition: [0] | [1] | [2, 3].
  const BruteResult brute = brute_force(p);
  ASSERT_TRUE(brute.feasible);
  EXPECT_EQ(brute.bounds, expected);
  for (const Partition& part :
       {partition_reference(p), partition_fast(p), partition_bisect_reachability(p)}) {
    EXPECT_TRUE(part.feasible);
    EXPECT_EQ(part.bounds, expected);
    EXPECT_EQ(part.bottleneck_s, 2.0);
  }
  for (double limit : {0.0, 1.0, 2.0, 3.0, 4.0, 100.0, kInf}) {
    EXPECT_FALSE(greedy_probe_feasible(p, limit)) << "limit " << limit;
  }
  // Without the stage-dependent memory limit the greedy probe is fine.
  PartitionProblem relaxed = p;
  relaxed.capacity_bytes = kInf;
  EXPECT_TRUE(greedy_probe_feasible(relaxed, 2.0));
  EXPECT_FALSE(greedy_probe_feasible(relaxed, 1.5));
}

TEST(Partition, GreedyProbeFailsOnRandomOneFOneBInstances) {
  const std::uint64_t seed0 = base_seed();
  int failures = 0;
  int checked = 0;
  for (int t = 0; t < 3000; ++t) {
    const std::uint64_t seed = seed0 * 31ULL + 5000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const Instance inst = random_instance(seed, 12, 6);
    const Partition ref = partition_reference(inst.problem);
    if (!ref.feasible) continue;
    ++checked;
    if (!greedy_probe_feasible(inst.problem, ref.bottleneck_s)) ++failures;
  }
  std::printf("[ partition ] greedy probe wrong on %d of %d feasible instances\n", failures,
              checked);
  EXPECT_GT(failures, 0);
}

// ----- 3. infeasible instances -------------------------------------------------------------

TEST(Partition, CapacityTooSmallIsInfeasible) {
  PartitionProblem p = uniform_problem(8, 3, 1.0);
  p.static_bytes.assign(8, 1.0);
  p.capacity_bytes = 0.5;  // not even one item fits
  expect_infeasible(partition_reference(p), "reference");
  expect_infeasible(partition_fast(p), "fast");
  expect_infeasible(partition_bisect_reachability(p), "bisect");
  EXPECT_FALSE(greedy_probe_feasible(p, kInf));

  p.capacity_bytes = 2.0;  // two items per stage: 6 < 8 items
  expect_infeasible(partition_reference(p), "reference");
  expect_infeasible(partition_fast(p), "fast");
  expect_infeasible(partition_bisect_reachability(p), "bisect");

  // Only the per-stage extra makes the middle stage infeasible.
  p.capacity_bytes = 10.0;
  p.extra_bytes = {0.0, 10.0, 0.0};
  expect_infeasible(partition_reference(p), "reference");
  expect_infeasible(partition_fast(p), "fast");
  expect_infeasible(partition_bisect_reachability(p), "bisect");
}

TEST(Partition, MoreStagesThanItemsIsInfeasible) {
  for (int n = 0; n <= 5; ++n) {
    const PartitionProblem p = uniform_problem(n, n + 1, 1.0);
    SCOPED_TRACE("items=" + std::to_string(n));
    expect_infeasible(partition_reference(p), "reference");
    expect_infeasible(partition_fast(p), "fast");
    expect_infeasible(partition_bisect_reachability(p), "bisect");
    EXPECT_FALSE(greedy_probe_feasible(p, kInf));
  }
  // S == L: one item per stage.
  PartitionProblem p = uniform_problem(5, 5, 1.0);
  p.time_s = {1, 4, 2, 8, 3};
  const std::vector<int> expected = {0, 1, 2, 3, 4, 5};
  for (const Partition& part :
       {partition_reference(p), partition_fast(p), partition_bisect_reachability(p)}) {
    EXPECT_EQ(part.bounds, expected);
    EXPECT_EQ(part.bottleneck_s, 8.0);
  }
}

// ----- 4. closed forms ---------------------------------------------------------------------

TEST(Partition, UniformItemsWithoutMemoryLimitGiveCeilLOverS) {
  PartitionWorkspace ws;
  for (double t : {1.0, 0.37, 3.0e-4}) {
    for (int n = 1; n <= 40; ++n) {
      for (int s = 1; s <= n; ++s) {
        SCOPED_TRACE("t=" + std::to_string(t) + " L=" + std::to_string(n) +
                     " S=" + std::to_string(s));
        const PartitionProblem p = uniform_problem(n, s, t);
        const double expected = ((n + s - 1) / s) * t;  // ceil(L/S)·t
        const Partition ref = partition_reference(p);
        const Partition& fast = partition_fast(p, ws);
        EXPECT_NEAR(fast.bottleneck_s, expected, 1e-12 * expected);
        EXPECT_EQ(fast.bottleneck_s, ref.bottleneck_s);
        EXPECT_NEAR(partition_bisect_reachability(p).bottleneck_s, expected, 1e-12 * expected);
        if (t == 1.0) {
          EXPECT_EQ(fast.bottleneck_s, expected);  // integers are exact
        }
      }
    }
  }
}

// 1F1B with activations only: stage σ holds at most u_σ = floor(Cap / (P − σ)) unit items, so
// the optimum is the smallest B with Σ_σ min(B, u_σ) ≥ L (infeasible if that needs B > L or
// some u_σ = 0).
TEST(Partition, StageDependentCapacityClosedForm) {
  PartitionWorkspace ws;
  for (int n = 1; n <= 30; ++n) {
    for (int stages = 1; stages <= std::min(n, 8); ++stages) {
      for (double cap : {1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 40.0}) {
        SCOPED_TRACE("L=" + std::to_string(n) + " S=" + std::to_string(stages) +
                     " cap=" + std::to_string(cap));
        PartitionProblem p = uniform_problem(n, stages, 1.0);
        p.act_bytes.assign(n, 1.0);
        for (int s = 0; s < stages; ++s) p.in_flight[s] = stages - s;
        p.capacity_bytes = cap;
        double expected = kInf;
        bool every_stage_fits_one = true;
        for (int s = 0; s < stages; ++s) every_stage_fits_one &= cap >= stages - s;
        for (int b = 1; b <= n && every_stage_fits_one; ++b) {
          int total = 0;
          for (int s = 0; s < stages; ++s) {
            total += std::min(b, static_cast<int>(std::floor(cap / (stages - s))));
          }
          if (total >= n) {
            expected = b;
            break;
          }
        }
        const Partition& fast = partition_fast(p, ws);
        EXPECT_EQ(fast.bottleneck_s, expected);
        EXPECT_EQ(fast.feasible, expected < kInf);
        EXPECT_EQ(partition_bisect_reachability(p).bottleneck_s, expected);
        EXPECT_EQ(partition_reference(p).bottleneck_s, expected);
      }
    }
  }
}

// S = L - 1 without memory limit: exactly one stage σ* holds two items (σ*, σ*+1), so the
// optimum is a minimum over σ* of a closed-form maximum. Per-stage c_σ make the position of the
// pair matter; the tie rule (latest cuts) picks the smallest optimal σ*.
TEST(Partition, OneMergedPairClosedForm) {
  const std::uint64_t seed0 = base_seed();
  PartitionWorkspace ws;
  for (int t = 0; t < 2000; ++t) {
    const std::uint64_t seed = seed0 * 17ULL + 11000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int n = uniform_int(rng, 3, 100);
    const int stages = n - 1;
    PartitionProblem p = uniform_problem(n, stages, 1.0);
    const bool integer_times = coin(rng, 0.3);
    for (double& x : p.time_s) x = integer_times ? uniform_int(rng, 0, 3) : uniform(rng, 0.05, 2.0);
    for (double& c : p.comm_s) {
      c = coin(rng, 0.5) ? 0.0 : (integer_times ? uniform_int(rng, 0, 1) : uniform(rng, 0.0, 0.5));
    }
    // Stage s holds item s (before the pair), items s and s+1 (the pair) or item s+1 (after).
    std::vector<double> before(stages), pair_time(stages), after(stages);
    for (int s = 0; s < stages; ++s) {
      before[s] = stage_time(p, s, s, s + 1);
      pair_time[s] = stage_time(p, s, s, s + 2);
      after[s] = stage_time(p, s, s + 1, s + 2);
    }
    double expected = kInf;
    int best_pair = -1;
    for (int pair = 0; pair < stages; ++pair) {
      double worst = pair_time[pair];
      for (int s = 0; s < pair; ++s) worst = std::max(worst, before[s]);
      for (int s = pair + 1; s < stages; ++s) worst = std::max(worst, after[s]);
      if (worst < expected) {
        expected = worst;
        best_pair = pair;
      }
    }
    std::vector<int> bounds(stages + 1);
    for (int s = 0; s <= stages; ++s) bounds[s] = s <= best_pair ? s : s + 1;
    const Partition& fast = partition_fast(p, ws);
    EXPECT_EQ(fast.bottleneck_s, expected);
    EXPECT_EQ(bounds_text(fast.bounds), bounds_text(bounds));
    const Partition bis = partition_bisect_reachability(p);
    EXPECT_EQ(bis.bottleneck_s, expected);
    EXPECT_EQ(bounds_text(bis.bounds), bounds_text(bounds));
    if (n <= 40) {
      const Partition ref = partition_reference(p);
      EXPECT_EQ(ref.bottleneck_s, expected);
      EXPECT_EQ(bounds_text(ref.bounds), bounds_text(bounds));
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// ----- further properties ------------------------------------------------------------------

TEST(Partition, MoreStagesNeverHurtWithoutMemoryAndComm) {
  const std::uint64_t seed0 = base_seed();
  for (int t = 0; t < 200; ++t) {
    const std::uint64_t seed = seed0 + 9000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int n = uniform_int(rng, 1, 60);
    double previous = kInf;
    std::vector<double> times(n);
    for (double& x : times) x = uniform(rng, 0.0, 3.0);
    for (int s = 1; s <= n; ++s) {
      PartitionProblem p = uniform_problem(n, s, 1.0);
      p.time_s = times;
      const Partition part = partition_fast(p);
      ASSERT_TRUE(part.feasible);
      EXPECT_LE(part.bottleneck_s, previous);
      // Lower bounds: the heaviest item and the average load.
      const double heaviest = *std::max_element(times.begin(), times.end());
      EXPECT_GE(part.bottleneck_s, heaviest * (1 - 1e-12));
      previous = part.bottleneck_s;
    }
  }
}

TEST(Partition, StageFunctionsMatchDirectSums) {
  const std::uint64_t seed0 = base_seed();
  for (int t = 0; t < 200; ++t) {
    const std::uint64_t seed = seed0 + 7000000ULL + static_cast<std::uint64_t>(t);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const PartitionProblem p = random_instance(seed, 40, 8).problem;
    const int n = static_cast<int>(p.time_s.size());
    std::mt19937_64 rng(seed);
    for (int q = 0; q < 20; ++q) {
      const int s = uniform_int(rng, 0, p.stages - 1);
      const int i = uniform_int(rng, 0, n - 1);
      const int j = uniform_int(rng, i + 1, n);
      double time = 0, stat = 0, act = 0, peak = 0;
      for (int l = i; l < j; ++l) {
        time += p.time_s[l];
        stat += p.static_bytes[l];
        act += p.act_bytes[l];
        peak = std::max(peak, p.transient_bytes[l]);
      }
      const double mem = stat + p.in_flight[s] * act + peak + p.extra_bytes[s];
      EXPECT_NEAR(stage_time(p, s, i, j), time + p.comm_s[s], 1e-12 * (1 + time));
      EXPECT_NEAR(stage_memory(p, s, i, j), mem, 1e-12 * (1 + mem));
    }
  }
}

TEST(Partition, EvaluatePartitionRejectsMalformedBounds) {
  PartitionProblem p = uniform_problem(6, 3, 1.0);
  EXPECT_TRUE(evaluate_partition(p, {0, 2, 4, 6}).feasible);
  EXPECT_EQ(evaluate_partition(p, {0, 1, 4, 6}).bottleneck_s, 3.0);
  for (const std::vector<int>& bad : std::vector<std::vector<int>>{
           {0, 2, 6}, {0, 2, 4, 5}, {1, 2, 4, 6}, {0, 4, 4, 6}, {0, 4, 2, 6}, {}}) {
    const Partition r = evaluate_partition(p, bad);
    EXPECT_FALSE(r.feasible) << bounds_text(bad);
    EXPECT_EQ(r.bottleneck_s, kInf) << bounds_text(bad);
  }
  p.static_bytes.assign(6, 1.0);
  p.capacity_bytes = 2.0;
  const Partition over = evaluate_partition(p, {0, 1, 4, 6});  // middle stage holds 3
  EXPECT_FALSE(over.feasible);
  EXPECT_EQ(over.bottleneck_s, 3.0);
}

TEST(Partition, MalformedProblemsThrow) {
  const PartitionProblem good = uniform_problem(4, 2, 1.0);
  EXPECT_NO_THROW(validate_partition_problem(good));
  auto expect_throw = [](const PartitionProblem& p) {
    EXPECT_THROW(validate_partition_problem(p), std::invalid_argument);
    EXPECT_THROW(partition_fast(p), std::invalid_argument);
    EXPECT_THROW(partition_reference(p), std::invalid_argument);
    EXPECT_THROW(partition_bisect_reachability(p), std::invalid_argument);
  };
  PartitionProblem p = good;
  p.stages = 0;
  expect_throw(p);
  p = good;
  p.act_bytes.pop_back();
  expect_throw(p);
  p = good;
  p.comm_s.push_back(0.0);
  expect_throw(p);
  p = good;
  p.time_s[1] = -1.0;
  expect_throw(p);
  p = good;
  p.static_bytes[0] = std::nan("");
  expect_throw(p);
  p = good;
  p.transient_bytes[3] = kInf;
  expect_throw(p);
  p = good;
  p.capacity_bytes = -1.0;
  expect_throw(p);
  EXPECT_THROW(stage_memory(good, 2, 0, 1), std::out_of_range);
  EXPECT_THROW(stage_memory(good, 0, 2, 2), std::out_of_range);
  EXPECT_THROW(stage_time(good, 0, 0, 5), std::out_of_range);
}

TEST(Partition, TransientOnLastItemOnlyAndEverywhereAgree) {
  // The three transient representations (none, single item, sparse table) give the same
  // memory as a direct max.
  PartitionProblem p = uniform_problem(9, 3, 1.0);
  p.transient_bytes.assign(9, 0.0);
  p.transient_bytes[8] = 5.0;
  EXPECT_EQ(stage_memory(p, 2, 4, 9), 5.0);
  EXPECT_EQ(stage_memory(p, 2, 4, 8), 0.0);
  p.transient_bytes = {0, 3, 0, 1, 7, 0, 2, 0, 4};
  for (int i = 0; i < 9; ++i) {
    for (int j = i + 1; j <= 9; ++j) {
      const double expected =
          *std::max_element(p.transient_bytes.begin() + i, p.transient_bytes.begin() + j);
      EXPECT_EQ(stage_memory(p, 0, i, j), expected) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace ppsearch

// ---- Partial recomputation per stage (partition_partial_recompute) ---------------------------
namespace ppsearch {
namespace {

// Brute force: every composition of L items into S non-empty stages; per stage the count of
// recomputed items is found by scanning r = 0, 1, ... (or fixed to min(N, n)), with the memory
// written out directly.
double brute_partial(const PartitionProblem& p, const PartialRecompute& rc, bool* feasible) {
  const int L = static_cast<int>(p.time_s.size()), S = p.stages;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cut(S + 1, 0);
  std::function<void(int, int)> go = [&](int s, int start) {
    if (s == S - 1) {
      cut[S - 1] = start;
      cut[S] = L;
      double bottleneck = 0;
      for (int st = 0; st < S; ++st) {
        double stat = 0, act = 0, tr = 0, T = 0;
        int n = 0;
        for (int i = cut[st]; i < cut[st + 1]; ++i) {
          stat += p.static_bytes[i];
          act += p.act_bytes[i];
          tr = std::max(tr, p.transient_bytes[i]);
          T += p.time_s[i];
          n += rc.recomputable[i] ? 1 : 0;
        }
        int chosen = -1;
        const int lo = rc.per_stage >= 0 ? std::min(rc.per_stage, n) : 0;
        const int hi = rc.per_stage >= 0 ? lo : n;
        for (int r = lo; r <= hi && chosen < 0; ++r) {
          const double t_r = r > 0 ? std::max(tr, rc.transient_bytes) : tr;
          const double mem =
              stat + p.in_flight[st] * (act - r * rc.save_bytes) + t_r + p.extra_bytes[st];
          if (mem <= p.capacity_bytes * (1 + 1e-12)) chosen = r;
        }
        if (chosen < 0) return;
        bottleneck = std::max(bottleneck, T + p.comm_s[st] + chosen * rc.extra_time_s);
      }
      best = std::min(best, bottleneck);
      return;
    }
    cut[s] = start;
    for (int next = start + 1; next <= L - (S - s - 1); ++next) go(s + 1, next);
  };
  go(0, 0);
  *feasible = best < std::numeric_limits<double>::infinity();
  return best;
}

TEST(Partition, PartialRecomputeMatchesBruteForce) {
  std::mt19937 rng(20240411);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  int feasible_seen = 0, recomputing_seen = 0;
  for (int trial = 0; trial < 400; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int L = 3 + static_cast<int>(rng() % 7), S = 1 + static_cast<int>(rng() % std::min(4, L));
    PartitionProblem p;
    p.stages = S;
    PartialRecompute rc;
    for (int i = 0; i < L; ++i) {
      const bool layer = i > 0 && i < L - 1;  // embedding and head are not recomputed
      p.time_s.push_back(u(rng));
      p.static_bytes.push_back(u(rng) * 10);
      p.act_bytes.push_back(layer ? 4.0 : u(rng));
      p.transient_bytes.push_back(i == L - 1 ? u(rng) * 3 : 0.0);
      rc.recomputable.push_back(layer ? 1 : 0);
    }
    for (int s = 0; s < S; ++s) {
      p.in_flight.push_back(double(S - s));
      p.extra_bytes.push_back(u(rng));
      p.comm_s.push_back(0.1 * u(rng));
    }
    rc.save_bytes = 3.0;
    rc.extra_time_s = 0.3 * u(rng);
    rc.transient_bytes = 4.0 * u(rng);
    rc.per_stage = trial % 3 == 0 ? static_cast<int>(rng() % 3) : -1;
    // Capacity between "nothing recomputed fits" and "everything must be recomputed".
    double total = 0;
    for (int i = 0; i < L; ++i) total += p.static_bytes[i] + S * p.act_bytes[i];
    p.capacity_bytes = total / S * (0.4 + 0.8 * u(rng) / 1.5);
    bool want_feasible = false;
    const double want = brute_partial(p, rc, &want_feasible);
    const PartialRecomputePartition got = partition_partial_recompute(p, rc);
    ASSERT_EQ(got.partition.feasible, want_feasible);
    if (!want_feasible) continue;
    ++feasible_seen;
    EXPECT_NEAR(got.partition.bottleneck_s, want, 1e-9 * want);
    // The reported partition and counts give that bottleneck and fit.
    double bottleneck = 0;
    for (int s = 0; s < S; ++s) {
      const int r = got.recomputed[s];
      recomputing_seen += r > 0;
      double stat = 0, act = 0, tr = 0, T = 0;
      int n = 0;
      for (int i = got.partition.bounds[s]; i < got.partition.bounds[s + 1]; ++i) {
        stat += p.static_bytes[i];
        act += p.act_bytes[i];
        tr = std::max(tr, p.transient_bytes[i]);
        T += p.time_s[i];
        n += rc.recomputable[i];
      }
      ASSERT_LE(r, n);
      const double t_r = r > 0 ? std::max(tr, rc.transient_bytes) : tr;
      EXPECT_LE(stat + p.in_flight[s] * (act - r * rc.save_bytes) + t_r + p.extra_bytes[s],
                p.capacity_bytes * (1 + 1e-12));
      bottleneck = std::max(bottleneck, T + p.comm_s[s] + r * rc.extra_time_s);
    }
    EXPECT_NEAR(bottleneck, got.partition.bottleneck_s, 1e-9 * bottleneck);
  }
  EXPECT_GT(feasible_seen, 50);
  EXPECT_GT(recomputing_seen, 20);
}

TEST(Partition, PartialRecomputeWithNothingToRecomputeIsTheReferenceDp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (int trial = 0; trial < 100; ++trial) {
    const int L = 4 + static_cast<int>(rng() % 12), S = 1 + static_cast<int>(rng() % 4);
    PartitionProblem p;
    p.stages = S;
    PartialRecompute rc;
    for (int i = 0; i < L; ++i) {
      p.time_s.push_back(u(rng));
      p.static_bytes.push_back(u(rng));
      p.act_bytes.push_back(u(rng));
      p.transient_bytes.push_back(0.0);
      rc.recomputable.push_back(0);
    }
    for (int s = 0; s < S; ++s) {
      p.in_flight.push_back(double(S - s));
      p.extra_bytes.push_back(0.1);
      p.comm_s.push_back(0.0);
    }
    p.capacity_bytes = 2.0 * L / S * u(rng);
    const Partition ref = partition_reference(p);
    const PartialRecomputePartition got = partition_partial_recompute(p, rc);
    ASSERT_EQ(got.partition.feasible, ref.feasible);
    if (ref.feasible) {
      EXPECT_NEAR(got.partition.bottleneck_s, ref.bottleneck_s, 1e-12);
    }
  }
}

}  // namespace
}  // namespace ppsearch
