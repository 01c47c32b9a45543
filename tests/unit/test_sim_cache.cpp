// SimulationCache (docs/performance.md "Simulation memo"): a hit returns exactly what a fresh
// simulate_fast() returns, every field of ScheduleInput is part of the key, and the least recently
// used entry is the one evicted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/sim_cache.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "support/builders.hpp"
#include "support/schedule_inputs.hpp"

namespace ppsearch {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_identical(const ScheduleResult& a, const ScheduleResult& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.ok, b.ok);
  EXPECT_EQ(a.error, b.error);
  EXPECT_TRUE(same_bits(a.time_s, b.time_s)) << a.time_s << " vs " << b.time_s;
  EXPECT_TRUE(same_bits(a.bubble_fraction, b.bubble_fraction));
  ASSERT_EQ(a.busy_s.size(), b.busy_s.size());
  for (std::size_t d = 0; d < a.busy_s.size(); ++d) {
    EXPECT_TRUE(same_bits(a.busy_s[d], b.busy_s[d])) << "busy_s " << d;
    EXPECT_TRUE(same_bits(a.peak_act_bytes[d], b.peak_act_bytes[d])) << "peak_act " << d;
    EXPECT_TRUE(same_bits(a.peak_wkeep_bytes[d], b.peak_wkeep_bytes[d])) << "peak_wkeep " << d;
    EXPECT_EQ(a.peak_in_flight[d], b.peak_in_flight[d]) << "peak_in_flight " << d;
    EXPECT_TRUE(same_bits(a.last_grad_end_s[d], b.last_grad_end_s[d])) << "last_grad " << d;
  }
}

ScheduleResult fresh(const ScheduleInput& in) { return simulate_fast(in); }

constexpr ScheduleKind kKinds[] = {
    ScheduleKind::kGPipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B,
    ScheduleKind::kZBH1,  ScheduleKind::kZBV,  ScheduleKind::kDualPipe};

TEST(SimulationCache, HitEqualsFreshSimulationBitForBit) {
  std::mt19937 rng(11);
  SimulationCache cache(8);
  SimWorkspace ws;
  ScheduleResult out;
  for (ScheduleKind kind : kKinds) {
    for (int rep = 0; rep < 3; ++rep) {
      const ScheduleInput in = test::random_schedule_input(kind, rng);
      const ScheduleResult ref = fresh(in);
      ASSERT_TRUE(ref.ok) << to_string(kind) << ": " << ref.error;
      EXPECT_FALSE(cache.simulate_fast(in, ws, &out));  // first time: simulated
      expect_identical(out, ref, std::string("miss ") + to_string(kind));
      out = ScheduleResult();  // a hit must fill every field itself
      EXPECT_TRUE(cache.simulate_fast(in, ws, &out));
      expect_identical(out, ref, std::string("hit ") + to_string(kind));
    }
  }
  EXPECT_EQ(cache.hits(), cache.misses());
  EXPECT_LE(cache.size(), cache.capacity());
}

// simulate_memory() through the memo: a miss keeps simulate_memory()'s figures, which answer a
// second memory query, and a simulate_fast() of the same input completes that entry in place (a
// miss, then hits) with exactly a fresh simulation's result; an entry a simulate_fast() made
// answers a memory query with the full result.
TEST(SimulationCache, MemoryEntriesAreCompletedInPlace) {
  std::mt19937 rng(12);
  SimulationCache cache(8);
  SimWorkspace ws;
  ScheduleResult out;
  for (ScheduleKind kind : kKinds) {
    const ScheduleInput in = test::random_schedule_input(kind, rng);
    const ScheduleResult ref = fresh(in);
    ScheduleResult mem;
    simulate_memory(in, ws, &mem);
    ASSERT_TRUE(ref.ok && mem.ok) << to_string(kind);
    const std::size_t size = cache.size();
    EXPECT_FALSE(cache.simulate_memory(in, ws, &out));
    expect_identical(out, mem, std::string("memory miss ") + to_string(kind));
    EXPECT_TRUE(cache.simulate_memory(in, ws, &out));
    expect_identical(out, mem, std::string("memory hit ") + to_string(kind));
    EXPECT_FALSE(cache.simulate_fast(in, ws, &out));  // the entry holds no times yet
    expect_identical(out, ref, std::string("completed ") + to_string(kind));
    EXPECT_EQ(cache.size(), size + 1);  // one entry for the input, not two
    EXPECT_TRUE(cache.simulate_fast(in, ws, &out));
    expect_identical(out, ref, std::string("full hit ") + to_string(kind));
    EXPECT_TRUE(cache.simulate_memory(in, ws, &out));
    expect_identical(out, ref, std::string("memory hit on a full entry ") + to_string(kind));
  }
}

// An invalid input is memoised with its error, as simulate_fast() reports it.
TEST(SimulationCache, ErrorsAreReturnedAsASimulationWould) {
  SimulationCache cache;
  SimWorkspace ws;
  ScheduleInput in;
  in.kind = ScheduleKind::kInterleaved1F1B;
  in.devices = 4;
  in.chunks = 2;
  in.microbatches = 6;  // not a multiple of P
  in.fwd_s.assign(8, 1.0);
  in.bwd_s.assign(8, 2.0);
  const ScheduleResult ref = fresh(in);
  ASSERT_FALSE(ref.ok);
  ScheduleResult out;
  EXPECT_FALSE(cache.simulate_fast(in, ws, &out));
  expect_identical(out, ref, "miss");
  EXPECT_TRUE(cache.simulate_fast(in, ws, &out));
  expect_identical(out, ref, "hit");
}

// Changing any one field (also by one ulp, or 0.0 to -0.0, or emptying an optional vector) is
// a different key: the cache simulates the changed input and answers what a fresh simulation
// of it answers, then still answers the original from its own entry.
TEST(SimulationCache, KeyDistinguishesEveryField) {
  std::mt19937 rng(5);
  const ScheduleInput base = test::random_schedule_input(ScheduleKind::kZBH1, rng);
  using Edit = std::function<void(ScheduleInput&)>;
  auto ulp = [](double x) { return std::nextafter(x, 2 * x + 1); };
  const std::vector<std::pair<std::string, Edit>> edits = {
      {"kind", [](ScheduleInput& in) { in.kind = ScheduleKind::k1F1B; }},
      {"devices",
       [](ScheduleInput& in) {
         in.devices /= 2;
         const auto V = static_cast<std::size_t>(in.devices);
         for (auto* v : {&in.fwd_s, &in.bwd_s, &in.wgt_s, &in.act_bytes, &in.wkeep_bytes})
           v->resize(V);
         in.p2p_s.resize(V - 1);
       }},
      {"chunks",
       [](ScheduleInput& in) {
         in.kind = ScheduleKind::kInterleaved1F1B;
         in.chunks = 2;
         const auto V = static_cast<std::size_t>(2 * in.devices);
         for (auto* v : {&in.fwd_s, &in.bwd_s, &in.wgt_s, &in.act_bytes, &in.wkeep_bytes})
           v->resize(V, 1.0);
         in.p2p_s.resize(V - 1, 0.01);
       }},
      {"microbatches", [](ScheduleInput& in) { in.microbatches += in.devices; }},
      {"mode",
       [](ScheduleInput& in) {
         in.mode = in.mode == P2PMode::kAsync ? P2PMode::kBlocking : P2PMode::kAsync;
       }},
      {"fwd_s", [&](ScheduleInput& in) { in.fwd_s.back() = ulp(in.fwd_s.back()); }},
      {"bwd_s", [&](ScheduleInput& in) { in.bwd_s[1] = ulp(in.bwd_s[1]); }},
      {"wgt_s", [&](ScheduleInput& in) { in.wgt_s[0] = ulp(in.wgt_s[0]); }},
      {"wgt_s empty", [](ScheduleInput& in) { in.wgt_s.clear(); }},
      {"act_bytes", [&](ScheduleInput& in) { in.act_bytes[0] = ulp(in.act_bytes[0]); }},
      {"wkeep_bytes", [&](ScheduleInput& in) { in.wkeep_bytes.back() *= 0.5; }},
      {"p2p_s", [&](ScheduleInput& in) { in.p2p_s[0] = ulp(in.p2p_s[0]); }},
      {"p2p_s -0.0",
       [](ScheduleInput& in) {
         in.p2p_s.assign(in.p2p_s.size(), 0.0);
         in.p2p_s[0] = -0.0;
       }},
  };
  // Equal values with another sign of zero: the -0.0 edit is compared with an all +0.0 input.
  ScheduleInput zeros = base;
  zeros.p2p_s.assign(zeros.p2p_s.size(), 0.0);

  for (const auto& [name, edit] : edits) {
    SCOPED_TRACE(name);
    SimulationCache cache(4);
    SimWorkspace ws;
    ScheduleResult out;
    const ScheduleInput& original = name == "p2p_s -0.0" ? zeros : base;
    ScheduleInput changed = original;
    edit(changed);
    ASSERT_FALSE(same_schedule_input(original, changed));
    EXPECT_FALSE(cache.simulate_fast(original, ws, &out));
    EXPECT_FALSE(cache.simulate_fast(changed, ws, &out)) << "a changed input must not hit";
    expect_identical(out, fresh(changed), name + " (changed)");
    EXPECT_TRUE(cache.simulate_fast(original, ws, &out));
    expect_identical(out, fresh(original), name + " (original)");
    EXPECT_TRUE(cache.simulate_fast(changed, ws, &out));
    expect_identical(out, fresh(changed), name + " (changed again)");
  }
}

TEST(SimulationCache, EqualInputsHaveEqualFingerprints) {
  std::mt19937 rng(3);
  for (ScheduleKind kind : kKinds) {
    const ScheduleInput a = test::random_schedule_input(kind, rng);
    ScheduleInput b;  // built separately, same values
    b.kind = a.kind;
    b.devices = a.devices;
    b.chunks = a.chunks;
    b.microbatches = a.microbatches;
    b.mode = a.mode;
    b.fwd_s = a.fwd_s;
    b.bwd_s = a.bwd_s;
    b.wgt_s = a.wgt_s;
    b.act_bytes = a.act_bytes;
    b.wkeep_bytes = a.wkeep_bytes;
    b.p2p_s = a.p2p_s;
    EXPECT_TRUE(same_schedule_input(a, b));
    EXPECT_EQ(schedule_input_hash(a), schedule_input_hash(b));
  }
}

TEST(SimulationCache, EvictsTheLeastRecentlyUsedEntry) {
  std::mt19937 rng(9);
  const ScheduleInput a = test::random_schedule_input(ScheduleKind::k1F1B, rng);
  const ScheduleInput b = test::random_schedule_input(ScheduleKind::k1F1B, rng);
  const ScheduleInput c = test::random_schedule_input(ScheduleKind::k1F1B, rng);
  SimulationCache cache(2);
  SimWorkspace ws;
  ScheduleResult out;
  EXPECT_FALSE(cache.simulate_fast(a, ws, &out));
  EXPECT_FALSE(cache.simulate_fast(b, ws, &out));
  EXPECT_TRUE(cache.simulate_fast(a, ws, &out));   // a is now the most recent
  EXPECT_FALSE(cache.simulate_fast(c, ws, &out));  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.simulate_fast(a, ws, &out));
  EXPECT_TRUE(cache.simulate_fast(c, ws, &out));
  EXPECT_FALSE(cache.simulate_fast(b, ws, &out));  // was evicted
  expect_identical(out, fresh(b), "b after eviction");
}

TEST(SimulationCache, CapacityZeroAlwaysSimulates) {
  std::mt19937 rng(2);
  const ScheduleInput a = test::random_schedule_input(ScheduleKind::kInterleaved1F1B, rng);
  SimulationCache cache(0);
  SimWorkspace ws;
  ScheduleResult out;
  EXPECT_FALSE(cache.simulate_fast(a, ws, &out));
  EXPECT_FALSE(cache.simulate_fast(a, ws, &out));
  expect_identical(out, fresh(a), "capacity 0");
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.hits(), 0u);
}

// Every field the search reports, bit for bit (feasible candidates), or the same reason.
void expect_same_evaluation(const Evaluation& a, const Evaluation& b) {
  ASSERT_EQ(a.feasible, b.feasible);
  ASSERT_EQ(a.reason, b.reason);
  ASSERT_EQ(a.worst_rank, b.worst_rank);
  ASSERT_TRUE(same_bits(a.needed_bytes, b.needed_bytes));
  if (!a.feasible) return;
  for (const auto f : {&Evaluation::iteration_time_s, &Evaluation::mfu, &Evaluation::hfu,
                       &Evaluation::bubble_fraction, &Evaluation::peak_memory_gb,
                       &Evaluation::compute_s, &Evaluation::pp_comm_s, &Evaluation::dp_comm_s,
                       &Evaluation::pipeline_s, &Evaluation::optimizer_s}) {
    ASSERT_TRUE(same_bits(a.*f, b.*f)) << a.*f << " vs " << b.*f;
  }
  ASSERT_EQ(a.critical_rank, b.critical_rank);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t s = 0; s < a.stages.size(); ++s) {
    ASSERT_EQ(a.stages[s].first_layer, b.stages[s].first_layer);
    ASSERT_EQ(a.stages[s].last_layer, b.stages[s].last_layer);
    ASSERT_TRUE(same_bits(a.stages[s].time_s, b.stages[s].time_s));
    ASSERT_TRUE(same_bits(a.stages[s].memory_gb, b.stages[s].memory_gb));
    ASSERT_TRUE(same_bits(a.stages[s].activations_gb, b.stages[s].activations_gb));
  }
}

// The Evaluator's memos (simulations, time-optimal partitions, partition workspace) in a real
// sweep: every candidate of an enumeration, evaluated in order by
// one Evaluator (memo warm, hits from candidates several places back), gives bit for bit what a
// fresh Evaluator gives (memo empty) and what one with EvalOptions::memo off gives.
TEST(EvaluatorMemos, ReusedEvaluatorEqualsFreshOnEnumeration) {
  Problem p = test::llama70b_h200();
  p.gpus = {64};
  const Enumeration en = enumerate_candidates(p);
  ASSERT_GT(en.candidates.size(), 1000u);
  Evaluator reused(p);
  EvalOptions no_memo;
  no_memo.memo = false;
  Evaluator off(p, no_memo);
  std::size_t feasible = 0;
  for (std::size_t i = 0; i < en.candidates.size(); ++i) {
    const Candidate& c = en.candidates[i];
    const Evaluation a = reused.evaluate(c);
    // A fresh Evaluator (memos empty) every other candidate, the one without memos otherwise.
    const Evaluation b = i % 2 ? evaluate(p, c) : off.evaluate(c);
    SCOPED_TRACE("candidate " + std::to_string(i));
    expect_same_evaluation(a, b);
    if (HasFatalFailure()) return;
    feasible += a.feasible ? 1 : 0;
  }
  EXPECT_GT(feasible, 100u);
}

// Memory before time (docs/performance.md): the evaluator that simulates a layout's memory
// first once the candidate was over the capacity reports what the one that always simulates in
// full reports, on an enumeration where a few thousand layouts are over the capacity, with the
// memos on (memory-only entries completed later) and off.
TEST(EvaluatorMemos, MemoryFirstEqualsAlwaysFullOnEnumeration) {
  for (const int gpus : {64, 128}) {
    Problem p = test::llama70b_h200();
    p.gpus = {gpus};
    const Enumeration en = enumerate_candidates(p);
    ASSERT_GT(en.candidates.size(), 1000u);
    EvalOptions full;
    full.memory_first = false;
    EvalOptions full_no_memo = full, first_no_memo;
    full_no_memo.memo = first_no_memo.memo = false;
    Evaluator first(p), always(p, full), first_nm(p, first_no_memo), always_nm(p, full_no_memo);
    std::size_t feasible = 0, memory = 0;
    for (std::size_t i = 0; i < en.candidates.size(); ++i) {
      const Candidate& c = en.candidates[i];
      SCOPED_TRACE("gpus " + std::to_string(gpus) + " candidate " + std::to_string(i));
      const Evaluation a = first.evaluate(c);
      expect_same_evaluation(a, always.evaluate(c));
      if (HasFatalFailure()) return;
      if (i % 7 == 0) {
        expect_same_evaluation(first_nm.evaluate(c), always_nm.evaluate(c));
        if (HasFatalFailure()) return;
      }
      feasible += a.feasible ? 1 : 0;
      memory += !a.feasible && a.reason == Infeasible::kMemory ? 1 : 0;
    }
    EXPECT_GT(feasible, 100u);
    // Candidates over the capacity, whose later layouts take the memory-first path (32.5 k
    // memory-first placements over the two enumerations, counted when this test was written).
    EXPECT_GT(memory, 100u);
  }
}

}  // namespace
}  // namespace ppsearch
