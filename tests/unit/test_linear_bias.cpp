// Linear biases (docs/moe.md "Linear biases"): the routed experts' FC2 bias path of
// Megatron-Core (TEGroupedMLP._apply_bias) by hand, when it applies, and its place in the MoE
// layer's time and transient memory.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "../support/moe_items.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/linear_bias.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// GPT-OSS-120B's shape (configs/models/gpt-oss-120b.ini) on the builders' H200 cluster.
Problem gpt_oss_like(bool bias) {
  Problem p = test::gpt_oss_moe_like();
  p.model.linear_bias = bias;
  return p;
}

TEST(LinearBias, ExpertBiasBytesByHand) {
  const Problem p = gpt_oss_like(true);
  // 4 micro-batch sequences of 4096 tokens routed to 4 experts each: 65,536 copies of h = 2880.
  const double rows = 4.0 * 4096 * 4, elems = rows * 2880;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const ExpertBiasCost eb = expert_bias_cost(p, rows);
  // Forward 4 + (2 + 4 + 4) + (4 + 4) + (4 + 2) = 28 B, backward (2 + 4) + (4 + 2) + 12 + 12 = 36
  // B.
  EXPECT_DOUBLE_EQ(eb.fwd_s, 28.0 * elems / bw);
  EXPECT_DOUBLE_EQ(eb.bwd_s, 36.0 * elems / bw);
  EXPECT_DOUBLE_EQ(eb.transient_bytes, 8.0 * elems);
  // Linear in the routed copies.
  EXPECT_DOUBLE_EQ(expert_bias_cost(p, 2 * rows).fwd_s, 2 * eb.fwd_s);
}

TEST(LinearBias, OnlyUnfusedExpertsOfABiasedMoeModelPay) {
  Problem p = gpt_oss_like(true);
  EXPECT_TRUE(expert_bias_unfused(p));
  p.training.moe_fused_grouped_mlp = true;  // the TE op fuser folds the bias into its op
  EXPECT_FALSE(expert_bias_unfused(p));
  EXPECT_EQ(expert_bias_cost(p, 1000).fwd_s, 0.0);
  Problem nobias = gpt_oss_like(false);
  EXPECT_FALSE(expert_bias_unfused(nobias));
  EXPECT_EQ(expert_bias_cost(nobias, 1000).bwd_s, 0.0);
  Problem dense = gpt_oss_like(true);
  dense.model.moe_experts = 0;
  dense.model.moe_top_k = 0;
  EXPECT_FALSE(expert_bias_unfused(dense));
}

TEST(LinearBias, MoeLayerGainsExactlyTheBiasPasses) {
  const Problem with = gpt_oss_like(true), without = gpt_oss_like(false);
  for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
    Candidate c = make_candidate(with, 1, 1, 64, 4, Schedule::k1F1B, r, 0, 1);
    c.ep = 8;
    const ItemCost a = test::moe_items_of(with, c).moe_layer,
                   b = test::moe_items_of(without, c).moe_layer;
    const double rows = 4.0 * 4096 * 4;  // balanced: every rank's copies land on this rank
    const ExpertBiasCost eb = expert_bias_cost(with, rows);
    ASSERT_GT(eb.fwd_s, 0.0);
    const double redo = r == Recompute::kFull ? eb.fwd_s : 0.0;
    EXPECT_NEAR(a.fwd_s - b.fwd_s, eb.fwd_s, 1e-12);
    EXPECT_NEAR(a.bwd_s - b.bwd_s, eb.bwd_s + redo, 1e-12);
    EXPECT_NEAR(a.compute_s - b.compute_s, eb.fwd_s + eb.bwd_s + redo, 1e-12);
    EXPECT_NEAR(a.transient_bytes - b.transient_bytes,
                eb.transient_bytes * with.gpu.activation_overhead, 1.0);
    EXPECT_DOUBLE_EQ(a.wgt_s, b.wgt_s);
    EXPECT_DOUBLE_EQ(a.act_bytes, b.act_bytes);
  }
}

TEST(LinearBias, StepTimeGrowsOnlyForTheBiasedModel) {
  const Problem with = gpt_oss_like(true), without = gpt_oss_like(false);
  Candidate c = make_candidate(with, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  c.ep = 64;
  const Evaluation a = evaluate(with, c), b = evaluate(without, c);
  ASSERT_TRUE(a.feasible) << to_string(a.reason) << " " << a.needed_bytes / 1e9;
  ASSERT_TRUE(b.feasible);
  EXPECT_GT(a.iteration_time_s, b.iteration_time_s);
  // A dense model ignores the key.
  Problem d1 = llama70b_h200(), d2 = llama70b_h200();
  d2.model.linear_bias = true;
  const Candidate cd = make_candidate(d1, 8, 4, 4, 1, Schedule::k1F1B);
  EXPECT_DOUBLE_EQ(evaluate(d1, cd).iteration_time_s, evaluate(d2, cd).iteration_time_s);
}

}  // namespace
}  // namespace ppsearch
