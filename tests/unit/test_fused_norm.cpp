// Fused norms in eager code (training.fused_norm; docs/step-time.md "Fused RMSNorm in eager
// PyTorch"): with training.fused_elementwise = false the two norms of a layer and the final norm
// move their bytes at the fused bandwidth (half the eager time), every other element-wise op
// stays eager, and nothing changes when the element-wise ops are fused anyway. Checked against
// the closed form of the norm bytes, through the evaluator, and for the stack profiles.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama8b_like;
using test::make_candidate;

Problem eager_problem() {
  Problem p = llama8b_like(4);
  p.training.fused_elementwise = false;
  p.training.fused_norm = false;
  p.gpu.kernel_overhead_s = 0;
  p.training.step_overhead_s = 0;
  p.cluster.step_jitter = 0;
  p.training.global_batch_size = 8;
  return p;
}

// Forward time of `elems` bf16 values per token in the (SP-sharded) h-wide region at the
// problem's bandwidth. The layer's two norms read and write h each (4h, items.cpp's "2 norms
// (r+w)"); the head charges its final norm 4h as well.
double norm_fwd_s(const Problem& p, const Candidate& c, double elems) {
  const double m = double(c.mbs) * p.model.seq_length / c.cp;
  const double tsp = c.sp ? c.tp : 1.0;
  const double mem_bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  return 2.0 * m * elems / tsp / mem_bw;
}

TEST(FusedNorm, HalvesTheNormBytesOfEagerElementwiseOps) {
  for (int tp : {1, 2}) {
    for (int sp : {0, 1}) {
      if (tp == 1 && sp == 1) continue;
      SCOPED_TRACE(std::to_string(tp) + " " + std::to_string(sp));
      Problem p = eager_problem();
      const Candidate c = make_candidate(p, tp, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, sp);
      const Links links = effective_links(p.cluster);
      const ChainCosts eager = chain_costs(p, c, links);
      p.training.fused_norm = true;
      const ChainCosts fused = chain_costs(p, c, links);

      // Half of the norms' time is saved: forward once, backward twice the forward bytes.
      const double layer_saving = 0.5 * norm_fwd_s(p, c, 4.0 * p.model.hidden_size);
      const double head_saving = 0.5 * norm_fwd_s(p, c, 4.0 * p.model.hidden_size);
      ASSERT_GT(layer_saving, 0);
      EXPECT_NEAR(eager.layer.fwd_s - fused.layer.fwd_s, layer_saving, 1e-12);
      EXPECT_NEAR(eager.layer.bwd_s - fused.layer.bwd_s, 2 * layer_saving, 1e-12);
      EXPECT_NEAR(eager.layer.compute_s - fused.layer.compute_s, 3 * layer_saving, 1e-12);
      EXPECT_NEAR(eager.head.fwd_s - fused.head.fwd_s, head_saving, 1e-12);
      EXPECT_NEAR(eager.head.bwd_s - fused.head.bwd_s, 2 * head_saving, 1e-12);
      // The GEMMs, the weight gradients, the embedding and the memory are untouched.
      EXPECT_DOUBLE_EQ(eager.layer.wgt_s, fused.layer.wgt_s);
      EXPECT_DOUBLE_EQ(eager.layer.gemm_fwd_s, fused.layer.gemm_fwd_s);
      EXPECT_DOUBLE_EQ(eager.embed.fwd_s, fused.embed.fwd_s);
      EXPECT_DOUBLE_EQ(eager.embed.bwd_s, fused.embed.bwd_s);
      EXPECT_DOUBLE_EQ(eager.layer.act_bytes, fused.layer.act_bytes);
    }
  }
}

TEST(FusedNorm, NoEffectWhenTheElementwiseOpsAreFused) {
  Problem p = eager_problem();
  p.training.fused_elementwise = true;
  const Candidate c = make_candidate(p, 2, 1, 1, 1, Schedule::k1F1B, Recompute::kFull, 1);
  const Links links = effective_links(p.cluster);
  const ChainCosts a = chain_costs(p, c, links);
  p.training.fused_norm = true;
  const ChainCosts b = chain_costs(p, c, links);
  EXPECT_DOUBLE_EQ(a.layer.fwd_s, b.layer.fwd_s);
  EXPECT_DOUBLE_EQ(a.layer.bwd_s, b.layer.bwd_s);
  EXPECT_DOUBLE_EQ(a.head.fwd_s, b.head.fwd_s);
  EXPECT_DOUBLE_EQ(a.head.bwd_s, b.head.bwd_s);
  const Evaluation ea = Evaluator(p, {}).evaluate(c);
  p.training.fused_norm = false;
  const Evaluation eb = Evaluator(p, {}).evaluate(c);
  ASSERT_TRUE(ea.feasible);
  EXPECT_DOUBLE_EQ(ea.iteration_time_s, eb.iteration_time_s);
}

TEST(FusedNorm, TheStepSavesTheNormTimeAtTheEagerBandwidth) {
  // PP 1, DP 1, no recompute: every micro-batch runs the chain once forward and once backward,
  // so the step shrinks by M times the saving, at the evaluator's eager bandwidth (half the
  // preset's memory efficiency).
  Problem p = eager_problem();
  const Candidate c = make_candidate(p, 2, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, 1);
  const Evaluation eager = Evaluator(p, {}).evaluate(c);
  p.training.fused_norm = true;
  const Evaluation fused = Evaluator(p, {}).evaluate(c);
  ASSERT_TRUE(eager.feasible);
  ASSERT_TRUE(fused.feasible);
  Problem half = p;
  half.gpu.memory_efficiency *= 0.5;
  const double norms = 4.0 * p.model.hidden_size;
  const double per_mb =
      0.5 * (p.model.layers * norm_fwd_s(half, c, norms) + norm_fwd_s(half, c, norms));
  const double expect = 3.0 * per_mb * c.num_microbatches;  // forward + twice in the backward
  EXPECT_NEAR(eager.iteration_time_s - fused.iteration_time_s, expect, 1e-9);
  EXPECT_DOUBLE_EQ(eager.peak_memory_gb, fused.peak_memory_gb);
}

TEST(FusedNorm, OnlyThePyTorch29TorchtitanProfileSetsIt) {
  for (const std::string& n : stack_names()) {
    const StackProfile* s = find_stack(n);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->fused_norm, n == "torchtitan-2025-torch29") << n;
  }
  // The profile is torchtitan-2025 with the fused norm: every other key agrees.
  Problem old_torch = llama8b_like(4), new_torch = llama8b_like(4);
  old_torch.training.stack = "torchtitan-2025";
  new_torch.training.stack = "torchtitan-2025-torch29";
  ASSERT_TRUE(apply_stack(&old_torch, {}));
  ASSERT_TRUE(apply_stack(&new_torch, {}));
  EXPECT_FALSE(old_torch.training.fused_norm);
  EXPECT_TRUE(new_torch.training.fused_norm);
  new_torch.training.fused_norm = false;
  new_torch.training.stack = old_torch.training.stack;
  EXPECT_EQ(to_ini(new_torch), to_ini(old_torch));
  // An explicit key wins over the profile.
  Problem e = llama8b_like(4);
  e.training.stack = "torchtitan-2025-torch29";
  e.training.fused_norm = false;
  ASSERT_TRUE(apply_stack(&e, {"training.fused_norm"}));
  EXPECT_FALSE(e.training.fused_norm);
}

}  // namespace
}  // namespace ppsearch
