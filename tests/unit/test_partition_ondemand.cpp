// Exact speed-ups of the chain choice (docs/performance.md "Candidates on demand", "Unlimited
// capacity"): the interleaved candidates in two steps equal interleaved_candidates() bit for bit,
// a capacity of +infinity gives the same partitions as a finite capacity no interval reaches,
// a workspace whose transient table was skipped (unlimited problem) answers a later problem with
// a finite capacity as a fresh one does, and the relaxed memo keeps a value beside its bounds.
// Set PPSEARCH_TEST_SEED to vary the random instances; failures print the instance seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../support/numeric.hpp"
#include "ppsearch/partition/partition.hpp"
#include "ppsearch/partition/relaxed_memo.hpp"

namespace ppsearch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using test::uniform;
using test::uniform_int;

std::uint64_t base_seed() { return test::seed_or(20261201ULL); }

// Embedding, `layers` equal layers, head; per-stage transfer charges and in-flight counts, and
// transients on every item (so that the sparse transient table is in use).
PartitionProblem chain(std::mt19937_64& rng, int layers, int stages, double capacity) {
  PartitionProblem p;
  double layer = 0;
  for (int k = 0; k < 5; ++k) layer += uniform(rng, 0.01, 0.3);
  const int n = layers + 2;
  p.time_s.assign(n, layer);
  p.time_s.front() = layer * uniform(rng, 0.05, 0.6);
  p.time_s.back() = layer * uniform(rng, 0.3, 1.4);
  p.static_bytes.assign(n, 1.0);
  p.act_bytes.assign(n, 0.5);
  p.transient_bytes.assign(n, 0.25);
  p.transient_bytes.front() = uniform(rng, 0.1, 2.0);
  p.transient_bytes.back() = uniform(rng, 0.1, 2.0);
  p.in_flight.resize(stages);
  p.extra_bytes.assign(stages, 0.0);
  p.comm_s.resize(stages);
  for (int s = 0; s < stages; ++s) {
    p.in_flight[s] = stages - s;
    p.comm_s[s] = (s % 3 == 0) ? 0.0 : layer * uniform(rng, 0.0, 0.05);
  }
  p.stages = stages;
  p.capacity_bytes = capacity;
  return p;
}

std::vector<int> interleaved_devices(int devices, int chunks) {
  std::vector<int> d(devices * chunks);
  for (int s = 0; s < devices * chunks; ++s) d[s] = s % devices;
  return d;
}

std::vector<int> v_devices(int devices) {  // ZB-V: stage s < P on s, else on 2P−1−s
  std::vector<int> d(2 * devices);
  for (int s = 0; s < 2 * devices; ++s) d[s] = s < devices ? s : 2 * devices - 1 - s;
  return d;
}

TEST(PartitionOnDemand, TwoStepsEqualInterleavedCandidates) {
  for (int inst = 0; inst < 80; ++inst) {
    const std::uint64_t seed = base_seed() + 7000 + inst;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int devices = uniform_int(rng, 2, 8);
    const bool vshape = inst % 4 == 3;
    const int chunks = vshape ? 2 : uniform_int(rng, 2, 4);
    const int stages = devices * chunks;
    const int layers = uniform_int(rng, stages, stages + 40);
    const PartitionProblem p = chain(rng, layers, stages, kInf);
    const std::vector<int> dev = vshape ? v_devices(devices) : interleaved_devices(devices, chunks);
    for (const bool ref : {false, true}) {
      SCOPED_TRACE(ref ? "reference" : "fast");
      PartitionWorkspace fresh;
      std::vector<int> all;
      ASSERT_TRUE(interleaved_candidates(p, dev, fresh, all, ref));
      ASSERT_EQ(all.size(), 3u * (stages + 1));

      PartitionWorkspace ws;
      std::vector<int> chains;
      double tie = -1;
      ASSERT_TRUE(interleaved_first_candidate(p, dev, ws, chains, &tie, ref));
      EXPECT_EQ(chains, std::vector<int>(all.begin(), all.begin() + stages + 1));
      EXPECT_GT(tie, 0.0);
      // The workspace serves other problems in between, one of them with a finite capacity
      // and other items (the prefix sums and the transient table are rebuilt).
      PartitionProblem other = chain(rng, layers + 3, stages, kInf);
      other.capacity_bytes = 1e6;
      (void)partition_fast(other, ws);
      std::vector<int> scratch;
      ASSERT_TRUE(interleaved_candidates(chain(rng, layers, stages, kInf), dev, ws, scratch, ref));
      ASSERT_TRUE(interleaved_more_candidates(p, dev, ws, chains, tie, ref));
      EXPECT_EQ(chains, all);
    }
  }
}

TEST(PartitionOnDemand, MoreCandidatesNeedsExactlyTheFirstChain) {
  std::mt19937_64 rng(base_seed());
  const PartitionProblem p = chain(rng, 20, 8, kInf);
  const std::vector<int> dev = interleaved_devices(4, 2);
  PartitionWorkspace ws;
  std::vector<int> chains;
  double tie = 0;
  ASSERT_TRUE(interleaved_first_candidate(p, dev, ws, chains, &tie));
  std::vector<int> all = chains;
  ASSERT_TRUE(interleaved_more_candidates(p, dev, ws, all, tie));
  EXPECT_THROW(interleaved_more_candidates(p, dev, ws, all, tie), std::invalid_argument);
  std::vector<int> none;
  EXPECT_THROW(interleaved_more_candidates(p, dev, ws, none, tie), std::invalid_argument);
  std::vector<int> bad_devices = dev;
  bad_devices.pop_back();
  std::vector<int> first = chains;
  EXPECT_THROW(interleaved_more_candidates(p, bad_devices, ws, first, tie), std::invalid_argument);
}

// A capacity of +infinity skips every memory test; a finite capacity far above every interval's
// memory evaluates them all and passes them all: the same answers, bit for bit.
TEST(PartitionOnDemand, UnlimitedCapacityEqualsAnUnreachedFiniteOne) {
  for (int inst = 0; inst < 120; ++inst) {
    const std::uint64_t seed = base_seed() + 8000 + inst;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int devices = uniform_int(rng, 1, 6);
    const int chunks = uniform_int(rng, 1, 3);
    const int stages = devices * chunks;
    const int layers = uniform_int(rng, std::max(1, stages - 2), stages + 30);
    const PartitionProblem inf = chain(rng, layers, stages, kInf);
    PartitionProblem big = inf;
    big.capacity_bytes = 1e300;
    for (const bool ref : {false, true}) {
      PartitionWorkspace wa, wb;
      const Partition a = partition_robust(inf, wa, ref);
      const Partition b = partition_robust(big, wb, ref);
      ASSERT_EQ(a.feasible, b.feasible);
      EXPECT_EQ(a.bounds, b.bounds);
      EXPECT_EQ(a.bottleneck_s, b.bottleneck_s);
      if (chunks > 1) {
        const std::vector<int> dev = interleaved_devices(devices, chunks);
        for (const bool earliest : {false, true}) {
          const Partition ia =
              partition_interleaved(inf, dev, wa, ref, 0.0, kPartitionTieTolerance, earliest);
          const Partition ib =
              partition_interleaved(big, dev, wb, ref, 0.0, kPartitionTieTolerance, earliest);
          ASSERT_EQ(ia.feasible, ib.feasible);
          EXPECT_EQ(ia.bounds, ib.bounds);
          EXPECT_EQ(ia.bottleneck_s, ib.bottleneck_s);
        }
      }
    }
    const Partition fa = partition_fast(inf);
    const Partition fb = partition_fast(big);
    ASSERT_EQ(fa.feasible, fb.feasible);
    EXPECT_EQ(fa.bounds, fb.bounds);
    EXPECT_EQ(fa.bottleneck_s, fb.bottleneck_s);
    if (fa.feasible) {
      PartitionWorkspace ws;
      const Partition ea = evaluate_partition(inf, fa.bounds, ws);
      const Partition eb = evaluate_partition(big, fa.bounds);
      EXPECT_TRUE(ea.feasible);
      EXPECT_EQ(ea.feasible, eb.feasible);
      EXPECT_EQ(ea.bottleneck_s, eb.bottleneck_s);
    }
  }
}

// The unlimited problem leaves the workspace without its transient table; the next problem on
// the same items with a finite capacity (the evaluator's memory-aware DP) must see the same
// memory as with a fresh workspace.
TEST(PartitionOnDemand, SkippedTransientTableIsBuiltWhenNeeded) {
  for (int inst = 0; inst < 100; ++inst) {
    const std::uint64_t seed = base_seed() + 9000 + inst;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int stages = uniform_int(rng, 2, 12);
    const int layers = uniform_int(rng, stages, stages + 30);
    const PartitionProblem inf = chain(rng, layers, stages, kInf);
    PartitionProblem tight = inf;
    // Around what the even split needs: some instances fit, some do not.
    const double per = (layers + 2.0) / stages;
    tight.capacity_bytes = per * (1.0 + 0.5 * stages) * uniform(rng, 0.7, 1.6);
    PartitionWorkspace reused;
    (void)partition_robust(inf, reused);
    (void)evaluate_partition(inf, partition_fast(inf).bounds, reused);
    PartitionWorkspace fresh;
    const Partition a = partition_robust(tight, reused);
    const Partition b = partition_robust(tight, fresh);
    ASSERT_EQ(a.feasible, b.feasible);
    EXPECT_EQ(a.bounds, b.bounds);
    EXPECT_EQ(a.bottleneck_s, b.bottleneck_s);
    // evaluate_partition() after an unlimited problem: the same memory verdict.
    const Partition relaxed = partition_fast(inf);
    PartitionWorkspace again;
    (void)partition_robust(inf, again);
    const Partition e1 = evaluate_partition(tight, relaxed.bounds, again);
    const Partition e2 = evaluate_partition(tight, relaxed.bounds);
    EXPECT_EQ(e1.feasible, e2.feasible);
    EXPECT_EQ(e1.bottleneck_s, e2.bottleneck_s);
  }
}

TEST(PartitionOnDemand, RelaxedMemoKeepsAuxAndUpdates) {
  std::mt19937_64 rng(base_seed() + 1);
  const PartitionProblem p = chain(rng, 12, 4, kInf);
  RelaxedPartitionMemo memo(4);
  const std::vector<int> first = {0, 3, 6, 10, 14};
  memo.insert(p, first, 4, 0.125);
  double aux = -1;
  const std::vector<int>* hit = memo.find(p, 4, &aux);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, first);
  EXPECT_EQ(aux, 0.125);
  std::vector<int> three = first;
  three.insert(three.end(), first.begin(), first.end());
  three.insert(three.end(), first.begin(), first.end());
  EXPECT_TRUE(memo.update(p, three, 4));
  aux = -1;
  hit = memo.find(p, 4, &aux);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, three);
  EXPECT_EQ(aux, 0.125);  // kept
  EXPECT_EQ(memo.size(), 1u);
  // Another layout or one ulp of a time: no entry to update, nothing stored.
  EXPECT_FALSE(memo.update(p, first, 2));
  PartitionProblem q = p;
  q.time_s[3] = std::nextafter(q.time_s[3], kInf);
  EXPECT_FALSE(memo.update(q, first, 4));
  EXPECT_EQ(memo.find(q, 4), nullptr);
  EXPECT_EQ(memo.size(), 1u);
}

}  // namespace
}  // namespace ppsearch
