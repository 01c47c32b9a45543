// What the partitioners keep between calls (docs/performance.md): a workspace reused on problems
// that share their items (prefix sums not rebuilt) or not, evaluate_partition() with a workspace,
// and partition_fast()'s first limit, all give bit for bit what a fresh computation gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/partition/partition.hpp"
#include "ppsearch/partition/relaxed_memo.hpp"

namespace ppsearch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_identical(const Partition& a, const Partition& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.feasible, b.feasible);
  EXPECT_TRUE(same_bits(a.bottleneck_s, b.bottleneck_s))
      << a.bottleneck_s << " vs " << b.bottleneck_s;
  EXPECT_EQ(a.bounds, b.bounds);
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A transformer-like chain: embedding, n−2 layers with jitter, a head with a transient; 1F1B
// in-flight counts, per-stage comm, and a capacity from loose to infeasible.
PartitionProblem random_problem(std::mt19937_64& rng) {
  PartitionProblem p;
  const int n = 4 + static_cast<int>(rng() % 60);
  p.stages = 1 + static_cast<int>(rng() % std::min(n, 12));
  for (int i = 0; i < n; ++i) {
    const bool edge = i == 0 || i == n - 1;
    p.time_s.push_back((edge ? 0.5 : 1.0) * uniform(rng, 0.8, 1.2));
    p.static_bytes.push_back((edge ? 3.0 : 1.0) * uniform(rng, 0.9, 1.1));
    p.act_bytes.push_back(edge ? 0.2 : uniform(rng, 0.3, 0.5));
    p.transient_bytes.push_back(i == n - 1 ? 2.0 : (rng() % 3 == 0 ? 0.4 : 0.0));
  }
  for (int s = 0; s < p.stages; ++s) {
    p.in_flight.push_back(p.stages - s);
    p.extra_bytes.push_back(0.5);
    p.comm_s.push_back(rng() % 2 ? 0.0 : uniform(rng, 0.0, 0.3));
  }
  const double total = 3.0 * n;  // a little above all static bytes
  p.capacity_bytes = rng() % 5 == 0 ? kInf : total / p.stages * uniform(rng, 0.6, 3.0);
  return p;
}

TEST(PartitionReuse, FirstLimitDoesNotChangeTheResult) {
  std::mt19937_64 rng(41);
  PartitionWorkspace ws;
  int feasible = 0;
  for (int t = 0; t < 300; ++t) {
    const PartitionProblem p = random_problem(rng);
    const Partition ref = partition_reference(p);
    const Partition plain = partition_fast(p);
    expect_identical(plain, ref, "no first limit vs reference");
    const double opt = ref.feasible ? ref.bottleneck_s : 1.0;
    feasible += ref.feasible;
    for (const double limit :
         {0.0, 0.5 * opt, std::nextafter(opt, 0.0), opt, std::nextafter(opt, kInf), 1.01 * opt,
          2.0 * opt, 1e300, kInf, std::numeric_limits<double>::quiet_NaN(), -1.0}) {
      const Partition got = partition_fast(p, ws, limit);
      expect_identical(got, ref,
                       "instance " + std::to_string(t) + " first limit " + std::to_string(limit));
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(feasible, 100);
}

// One workspace through a sequence in which most problems share their items with the one before
// (only stage counts, in-flight, reserves, comm or capacity change; the prepared prefix sums are
// reused) and some change a single item by one ulp or a sign of zero (they must be rebuilt):
// every answer equals that of a fresh workspace.
TEST(PartitionReuse, WorkspaceReusedOnSharedItemsEqualsFresh) {
  std::mt19937_64 rng(7);
  PartitionWorkspace ws;
  PartitionProblem p = random_problem(rng);
  for (int t = 0; t < 400; ++t) {
    const int n = static_cast<int>(p.time_s.size());
    switch (rng() % 9) {
      case 0:
        p = random_problem(rng);
        break;
      case 1: {  // another stage count, same items
        p.stages = 1 + static_cast<int>(rng() % std::min(n, 12));
        p.in_flight.assign(p.stages, 1.0);
        p.extra_bytes.assign(p.stages, 0.25);
        p.comm_s.assign(p.stages, 0.1);
        break;
      }
      case 2:
        p.capacity_bytes *= uniform(rng, 0.7, 1.4);
        break;
      case 3:
        p.in_flight.back() += 1.0;
        break;
      case 4:
        p.comm_s.front() = uniform(rng, 0.0, 0.5);
        break;
      case 5: {  // one ulp, or a change that moves the optimum
        double& x = p.time_s[rng() % n];
        x = rng() % 2 ? std::nextafter(x, kInf) : 4.0 * x;
        break;
      }
      case 6: {
        double& x = p.static_bytes[rng() % n];
        x = rng() % 2 ? std::nextafter(x, 0.0) : 3.0 * x;
        break;
      }
      case 7: {
        double& x = p.act_bytes[rng() % n];
        x = rng() % 2 ? std::nextafter(x, kInf) : 3.0 * x;
        break;
      }
      default: {
        std::vector<double>& tr = p.transient_bytes;
        const std::size_t i = rng() % tr.size();
        tr[i] = tr[i] == 0.0 ? (rng() % 2 ? 5.0 : (std::signbit(tr[i]) ? 0.0 : -0.0)) : 0.5 * tr[i];
        break;
      }
    }
    SCOPED_TRACE("step " + std::to_string(t));
    const Partition fresh = partition_fast(p);
    expect_identical(partition_fast(p, ws), fresh, "partition_fast");
    // The fresh optimum's bounds evaluated through the same workspace, and by the allocating
    // overload.
    if (fresh.feasible) {
      const Partition alloc = evaluate_partition(p, fresh.bounds);
      expect_identical(evaluate_partition(p, fresh.bounds, ws), alloc, "evaluate_partition");
      EXPECT_TRUE(alloc.feasible);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(PartitionReuse, EvaluatePartitionWithWorkspaceMatchesAndValidates) {
  std::mt19937_64 rng(3);
  PartitionWorkspace ws;
  const PartitionProblem p = random_problem(rng);
  const int n = static_cast<int>(p.time_s.size());
  std::vector<std::vector<int>> cases = {{}, {0, n}, {1, n}, {0, n - 1}};
  if (p.stages >= 2) {
    std::vector<int> even(p.stages + 1);
    for (int s = 0; s <= p.stages; ++s) even[s] = s * n / p.stages;
    cases.push_back(even);
    std::vector<int> repeated = even;
    repeated[1] = repeated[0];  // an empty stage
    cases.push_back(repeated);
  }
  for (std::size_t k = 0; k < cases.size(); ++k) {
    expect_identical(evaluate_partition(p, cases[k], ws), evaluate_partition(p, cases[k]),
                     "case " + std::to_string(k));
  }
  // A bad item value throws whatever the bounds, also right after a good problem with other
  // items was prepared in this workspace, and the workspace stays usable.
  PartitionProblem bad = p;
  bad.act_bytes[n / 2] = -1.0;
  EXPECT_THROW(evaluate_partition(bad, {}, ws), std::invalid_argument);
  EXPECT_THROW(evaluate_partition(bad, {0, n}, ws), std::invalid_argument);
  EXPECT_THROW(partition_fast(bad, ws), std::invalid_argument);
  bad.act_bytes[n / 2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(partition_fast(bad, ws), std::invalid_argument);
  expect_identical(partition_fast(p, ws), partition_fast(p), "after the throws");
}

// The time-optimal partition without a memory limit, as the evaluator computes it.
Partition relaxed(PartitionProblem p) {
  p.capacity_bytes = kInf;
  return partition_fast(p);
}

// RelaxedPartitionMemo: keyed by stages, time_s and comm_s bit for bit; whatever else differs
// (memory vectors, capacity) gives the same time-optimal partition, which the memo returns.
TEST(PartitionReuse, RelaxedMemoKeysOnStagesTimesAndComm) {
  std::mt19937_64 rng(17);
  int hits = 0;
  for (int t = 0; t < 200; ++t) {
    PartitionProblem p = random_problem(rng);
    const int n = static_cast<int>(p.time_s.size());
    RelaxedPartitionMemo memo;
    ASSERT_EQ(memo.find(p), nullptr);
    const Partition base = relaxed(p);
    ASSERT_TRUE(base.feasible);
    memo.insert(p, base.bounds);
    const std::vector<int>* hit = memo.find(p);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(*hit, base.bounds);
    // Not in the key: memory vectors and capacity. The stored answer is right for them.
    PartitionProblem q = p;
    q.static_bytes[rng() % n] *= 3.0;
    q.act_bytes[rng() % n] *= 2.0;
    q.transient_bytes[rng() % n] += 1.0;
    q.in_flight[0] += 2.0;
    q.extra_bytes.back() *= 4.0;
    q.capacity_bytes = 1.0;
    hit = memo.find(q);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(*hit, relaxed(q).bounds);
    hits += 2;
    // In the key: one ulp of any time or comm entry, or the stage count.
    PartitionProblem r = p;
    double& x = r.time_s[rng() % n];
    x = std::nextafter(x, kInf);
    EXPECT_EQ(memo.find(r), nullptr) << "time_s";
    r = p;
    double& c = r.comm_s[rng() % r.comm_s.size()];
    c = std::nextafter(c, kInf);
    EXPECT_EQ(memo.find(r), nullptr) << "comm_s";
    if (p.stages > 1) {
      r = p;
      --r.stages;
      r.in_flight.pop_back();
      r.extra_bytes.pop_back();
      r.comm_s.pop_back();
      EXPECT_EQ(memo.find(r), nullptr) << "stages";
    }
    EXPECT_EQ(memo.hits(), 2u);
  }
  EXPECT_EQ(hits, 400);
}

TEST(PartitionReuse, RelaxedMemoEvictsTheLeastRecentlyUsed) {
  std::mt19937_64 rng(23);
  const PartitionProblem a = random_problem(rng), b = random_problem(rng), c = random_problem(rng);
  RelaxedPartitionMemo memo(2);
  memo.insert(a, relaxed(a).bounds);
  memo.insert(b, relaxed(b).bounds);
  ASSERT_NE(memo.find(a), nullptr);   // a is now the most recent
  memo.insert(c, relaxed(c).bounds);  // evicts b
  EXPECT_EQ(memo.size(), 2u);
  EXPECT_EQ(memo.find(b), nullptr);
  ASSERT_NE(memo.find(a), nullptr);
  EXPECT_EQ(*memo.find(a), relaxed(a).bounds);
  ASSERT_NE(memo.find(c), nullptr);
  EXPECT_EQ(*memo.find(c), relaxed(c).bounds);
  RelaxedPartitionMemo off(0);
  off.insert(a, relaxed(a).bounds);
  EXPECT_EQ(off.find(a), nullptr);
}

}  // namespace
}  // namespace ppsearch
