// evaluate(): properties against closed forms and against the reference paths.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::gpt175b_a100;
using test::llama70b_h200;
using test::make_candidate;

TEST(ModelFlops, KorthikantiClosedFormForMhaGelu) {
  // Korthikanti et al. Eq. 7: 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)) for MHA, F = 4h.
  for (int h : {2048, 6144, 12288}) {
    for (int s : {1024, 2048, 8192}) {
      ModelSpec m;
      m.layers = 24;
      m.hidden_size = h;
      m.ffn_hidden_size = 4 * h;
      m.attention_heads = h / 128;
      m.kv_heads = h / 128;
      m.head_dim = 128;
      m.vocab_size = 51200;
      m.seq_length = s;
      m.mlp = MlpKind::kGeLU;
      const double B = 64, L = m.layers, H = h, S = s, V = m.vocab_size;
      const double expect = 72 * B * S * L * H * H * (1 + S / (6 * H) + V / (12 * L * H));
      EXPECT_NEAR(model_flops_per_step(m, 64, AttentionFlops::kFull) / expect, 1.0, 1e-12);
      // Causal convention halves only the core-attention term s/(6h).
      const double causal = 72 * B * S * L * H * H * (1 + S / (12 * H) + V / (12 * L * H));
      EXPECT_NEAR(model_flops_per_step(m, 64, AttentionFlops::kCausal) / causal, 1.0, 1e-12);
      // Full recompute adds one forward of the layers: 24·B·s·L·h²·(1 + s/(6h)).
      const double rec = 24 * B * S * L * H * H * (1 + S / (6 * H));
      EXPECT_NEAR(recompute_flops_per_step(m, 64, Recompute::kFull) / rec, 1.0, 1e-12);
    }
  }
}

TEST(Comm, SingleDomainAllReduceIsRingFormula) {
  ClusterSpec c;
  c.nvlink_bytes_per_s = 450e9;
  c.nvlink_efficiency = 0.8;
  c.network_bytes_per_s = 50e9;
  c.network_efficiency = 0.9;
  c.nvlink_latency_s = 1e-6;
  c.network_latency_s = 5e-6;
  const Links l = effective_links(c);
  for (int n : {2, 4, 8}) {
    const GroupShape g = group_shape(n, 1, 8);
    ASSERT_EQ(g.domains, 1);
    // 1 GB: the Simple ring, NCCL's base latency 8.4 µs plus 2(n−1) NVLink hops (one domain:
    // no tree), against LL's half bandwidth, which loses at this size.
    const double S = 1e9;
    const double ring = 8.4e-6 + 2.0 * (n - 1) * 1e-6 + S * 2.0 * (n - 1) / n / (450e9 * 0.8);
    EXPECT_NEAR(collective_time(Collective::kAllReduce, S, g, l), ring, 1e-12);
  }
  // Across domains: bus bandwidth = min(NVLink, k·NIC) (docs/algorithms.md §5.3).
  const GroupShape g = group_shape(32, 1, 8);  // 8 per domain, 4 domains
  EXPECT_EQ(g.per_domain, 8);
  EXPECT_EQ(g.domains, 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth(g, l), std::min(450e9 * 0.8, 8 * 50e9 * 0.9));
  const GroupShape one = group_shape(4, 8, 8);  // stride ≥ domain: one rank per domain
  EXPECT_EQ(one.per_domain, 1);
  EXPECT_DOUBLE_EQ(bus_bandwidth(one, l), 50e9 * 0.9);
}

TEST(Evaluate, SeedCaseIsFeasibleAndSane) {
  const Problem p = llama70b_h200();
  for (Schedule s :
       {Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved1F1B, Schedule::kZBH1}) {
    const int vpp = s == Schedule::kInterleaved1F1B ? 2 : 1;
    const Candidate c = make_candidate(p, 4, 8, 4, 1, s, Recompute::kSelective, 1, 1, vpp);
    const Evaluation e = evaluate(p, c);
    SCOPED_TRACE(to_string(s));
    if (s == Schedule::kGPipe) {
      // GPipe keeps all 64 micro-batches: 70B at TP4 cannot hold that.
      EXPECT_FALSE(e.feasible);
      EXPECT_EQ(e.reason, Infeasible::kMemory);
      EXPECT_GT(e.needed_bytes, p.gpu.memory_bytes);
      EXPECT_NE(explain(e).find("needs"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(e.feasible) << explain(e);
    EXPECT_GT(e.mfu, 0.2);
    EXPECT_LT(e.mfu, 0.8);
    EXPECT_GE(e.hfu, e.mfu);
    EXPECT_LE(e.peak_memory_gb, 141.0);
    ASSERT_EQ(static_cast<int>(e.stages.size()), 8 * vpp);
    EXPECT_EQ(e.stages.front().first_layer, 0);
    EXPECT_EQ(e.stages.back().last_layer, 81);
    for (std::size_t i = 1; i < e.stages.size(); ++i)
      EXPECT_EQ(e.stages[i].first_layer, e.stages[i - 1].last_layer + 1);
    // MFU definition.
    const double f = model_flops_per_step(p.model, 256, AttentionFlops::kFull);
    EXPECT_NEAR(e.mfu, f / (e.iteration_time_s * 128 * 989e12), 1e-12);
    EXPECT_NEAR(e.tokens_per_s, 256.0 * 8192 / e.iteration_time_s, 1e-6);
  }
}

TEST(Evaluate, BubbleOrderingMatchesTheory) {
  // 1F1B and GPipe share the bubble (P−1)/(M+P−1); interleaving divides it by v;
  // ZB-H1 is below 1F1B. Memory: 1F1B ≤ GPipe.
  Problem p = llama70b_h200();
  p.gpu.memory_bytes = 1e15;  // let GPipe fit so the bubbles can be compared
  // Uniform stages: negligible embedding/head, free p2p, so the closed forms hold.
  p.model.vocab_size = 8;
  p.cluster.network_bytes_per_s = 1e30;
  p.cluster.nvlink_bytes_per_s = 1e30;
  p.cluster.network_latency_s = 0;
  p.cluster.nvlink_latency_s = 0;
  auto ev = [&](Schedule s, int vpp) {
    return evaluate(p, make_candidate(p, 4, 8, 4, 1, s, Recompute::kSelective, 1, 1, vpp));
  };
  const Evaluation g = ev(Schedule::kGPipe, 1), o = ev(Schedule::k1F1B, 1),
                   i2 = ev(Schedule::kInterleaved1F1B, 2), z = ev(Schedule::kZBH1, 1);
  ASSERT_TRUE(g.feasible && o.feasible && i2.feasible && z.feasible);
  const double uniform = 7.0 / (64 + 7);
  EXPECT_NEAR(o.bubble_fraction, uniform, 0.005);
  EXPECT_NEAR(g.bubble_fraction, uniform, 0.005);
  // Interleaved v = 2: M(f+b) + (P−1)(f+b)/v → bubble (P−1)/v / (M + (P−1)/v).
  EXPECT_NEAR(i2.bubble_fraction, 3.5 / (64 + 3.5), 0.005);
  EXPECT_LT(i2.bubble_fraction, o.bubble_fraction);
  EXPECT_LT(z.bubble_fraction, o.bubble_fraction);
  EXPECT_GT(g.peak_memory_gb, o.peak_memory_gb);
}

TEST(Evaluate, TinyGpuIsInfeasibleValueNotCrash) {
  Problem p = llama70b_h200();
  p.gpu.memory_bytes = 10e9;
  const Evaluation e = evaluate(p, make_candidate(p, 4, 8, 4, 1, Schedule::k1F1B));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, Infeasible::kMemory);
  EXPECT_TRUE(std::isnan(e.iteration_time_s));
  EXPECT_TRUE(std::isnan(e.mfu));
  EXPECT_GT(e.needed_bytes, 10e9);
  EXPECT_GE(e.worst_rank, 0);
}

TEST(Evaluate, MorePipelineStagesThanItemsIsCounted) {
  Problem p = llama70b_h200();
  p.model.layers = 4;
  const Evaluation e = evaluate(p, make_candidate(p, 1, 8, 1, 1, Schedule::k1F1B));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, Infeasible::kTooFewLayers);
}

// Fast paths (partitioner, periodic simulation) give the same evaluation as the
// reference paths, and a reused Evaluator gives the same as a fresh one, for every
// candidate of a real enumeration.
TEST(Evaluate, FastPathsEqualReferenceOnEnumeration) {
  Problem p = llama70b_h200();
  p.gpus = {64};
  const Enumeration en = enumerate_candidates(p);
  ASSERT_GT(en.candidates.size(), 100u);
  Evaluator fast(p, EvalOptions{false, false, true});
  Evaluator ref(p, EvalOptions{true, true, true});
  std::mt19937 rng(7);
  std::size_t checked = 0;
  for (std::size_t i = 0; i < en.candidates.size(); i += 1 + rng() % 7) {
    const Candidate& c = en.candidates[i];
    const Evaluation a = fast.evaluate(c), b = ref.evaluate(c);
    const Evaluation fresh = evaluate(p, c);
    SCOPED_TRACE("candidate " + std::to_string(i));
    ASSERT_EQ(a.feasible, b.feasible);
    ASSERT_EQ(a.reason, b.reason);
    ASSERT_EQ(a.feasible, fresh.feasible);
    if (!a.feasible) continue;
    EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
    EXPECT_EQ(a.iteration_time_s, fresh.iteration_time_s);
    ASSERT_EQ(a.stages.size(), b.stages.size());
    for (std::size_t s = 0; s < a.stages.size(); ++s) {
      EXPECT_EQ(a.stages[s].first_layer, b.stages[s].first_layer);
      EXPECT_EQ(a.stages[s].first_layer, fresh.stages[s].first_layer);
    }
    ++checked;
  }
  EXPECT_GT(checked, 50u);
}

TEST(Enumerate, RulesAreCountedAndRespected) {
  Problem p = llama70b_h200();
  p.gpus = {128};
  const Enumeration en = enumerate_candidates(p);
  std::int64_t removed = 0;
  for (const auto& r : en.rules) removed += r.removed;
  EXPECT_EQ(removed + static_cast<std::int64_t>(en.candidates.size()), en.considered);
  for (const Candidate& c : en.candidates) {
    EXPECT_EQ(c.tp * c.pp * c.cp * c.dp, c.gpus);
    EXPECT_EQ(64 % c.tp, 0);
    EXPECT_EQ(8 % c.tp, 0);
    EXPECT_LE(c.tp, 8);
    EXPECT_EQ(c.mbs * c.num_microbatches * c.dp, 256);
    if (c.schedule == Schedule::kInterleaved1F1B) {
      EXPECT_GE(c.vpp, 2);
      EXPECT_EQ(c.num_microbatches % c.pp, 0);
    } else {
      EXPECT_EQ(c.vpp, 1);
    }
    if (c.sp) {
      EXPECT_GT(c.tp, 1);
    }
    if (c.zero >= 2) {
      EXPECT_EQ(c.pp, 1);
    }
  }
  // The seed's configuration is among them.
  bool seed = false;
  for (const Candidate& c : en.candidates)
    seed |= c.tp == 4 && c.pp == 8 && c.dp == 4 && c.schedule == Schedule::k1F1B;
  EXPECT_TRUE(seed);
}

}  // namespace
}  // namespace ppsearch
