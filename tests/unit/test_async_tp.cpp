// PyTorch's micro-pipelined async TP (training.tp_symm_mem; docs/step-time.md "Async TP's own
// passes"): with TP overlap and SP, each fused matmul-reduce-scatter sums its TP partial outputs
// in a separate pass (read m·h, write m·h/t) and each fused all-gather-matmul copies its local
// shard into the symmetric buffer (read and write m·h/t). Checked against the closed form per
// layer, for full and per-op selective recomputation, where it must not apply, and for the
// profiles that set the key.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama8b_like;
using test::make_candidate;

Problem async_problem() {
  Problem p = llama8b_like(4);
  p.training.tp_comm_overlap = true;
  p.training.tp_symm_mem = false;
  p.gpu.kernel_overhead_s = 0;
  return p;
}

struct Passes {
  double rs = 0;  // one reduce-scatter's partial sum
  double ag = 0;  // one all-gather's local shard copy (bf16)
};

Passes by_hand(const Problem& p, const Candidate& c) {
  const double m = double(c.mbs) * p.model.seq_length / c.cp;
  const double h = p.model.hidden_size;
  const double t = c.tp;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  Passes x;
  x.rs = (2.0 * m * h + 2.0 * m * h / t) / bw;
  x.ag = 2.0 * (2.0 * m * h / t) / bw;
  return x;
}

TEST(AsyncTp, EachFusedCollectiveAddsItsPassByHand) {
  for (int tp : {2, 4}) {
    SCOPED_TRACE(tp);
    Problem p = async_problem();
    const Candidate c = make_candidate(p, tp, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, 1);
    const Links links = effective_links(p.cluster);
    const ChainCosts off = chain_costs(p, c, links);
    p.training.tp_symm_mem = true;
    const ChainCosts on = chain_costs(p, c, links);
    const Passes x = by_hand(p, c);
    ASSERT_GT(x.rs, 0);
    // Forward: the two reduce-scatters after proj and FC2, the two gathers before QKV and FC1.
    EXPECT_NEAR(on.layer.fwd_s - off.layer.fwd_s, 2 * x.rs + 2 * x.ag, 1e-12);
    // Backward: the two input-gradient reduce-scatters and the two output-gradient gathers.
    EXPECT_NEAR(on.layer.bwd_s - off.layer.bwd_s, 2 * x.rs + 2 * x.ag, 1e-12);
    EXPECT_NEAR(on.layer.compute_s - off.layer.compute_s, 4 * x.rs + 4 * x.ag, 1e-12);
    EXPECT_EQ(on.layer.wgt_s, off.layer.wgt_s);
    // The embedding and the head keep their costs.
    EXPECT_EQ(on.embed.time_s(), off.embed.time_s());
    EXPECT_EQ(on.head.time_s(), off.head.time_s());
  }
}

TEST(AsyncTp, RecomputationReplaysThePassesOfWhatItReplays) {
  Problem p = async_problem();
  const Links links = effective_links(p.cluster);
  auto delta = [&](Recompute r, bool skip_fc2, SelectiveRecompute sel) {
    Problem q = p;
    q.training.recompute_skip_fc2 = skip_fc2;
    q.training.selective_recompute = sel;
    const Candidate c = make_candidate(q, 4, 1, 1, 1, Schedule::k1F1B, r, 1);
    const ChainCosts off = chain_costs(q, c, links);
    q.training.tp_symm_mem = true;
    const ChainCosts on = chain_costs(q, c, links);
    return on.layer.bwd_s - off.layer.bwd_s;
  };
  const Passes x = by_hand(p, make_candidate(p, 4, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, 1));
  const double own = 2 * x.rs + 2 * x.ag;
  // Full recomputation replays the forward's four; the pruned replay drops FC2's reduce-scatter.
  EXPECT_NEAR(delta(Recompute::kFull, false, SelectiveRecompute::kCoreAttention), 2 * own, 1e-12);
  EXPECT_NEAR(delta(Recompute::kFull, true, SelectiveRecompute::kCoreAttention), 2 * own - x.rs,
              1e-12);
  // Per-op selective (torchtitan) replays the two gathers of the layer's inputs.
  EXPECT_NEAR(delta(Recompute::kSelective, false, SelectiveRecompute::kPerOp), own + 2 * x.ag,
              1e-12);
  EXPECT_NEAR(delta(Recompute::kSelective, false, SelectiveRecompute::kCoreAttention), own, 1e-12);
}

TEST(AsyncTp, NothingWithoutTheOverlapSpOrTp) {
  const Links links = effective_links(async_problem().cluster);
  auto same = [&](int tp, int sp, bool overlap) {
    Problem p = async_problem();
    p.training.tp_comm_overlap = overlap;
    const Candidate c = make_candidate(p, tp, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, sp);
    const ChainCosts off = chain_costs(p, c, links);
    p.training.tp_symm_mem = true;
    const ChainCosts on = chain_costs(p, c, links);
    return on.layer.time_s() == off.layer.time_s();
  };
  EXPECT_TRUE(same(1, 0, true));   // no TP
  EXPECT_TRUE(same(4, 0, true));   // TP without SP: all-reduces, not fused by the pass
  EXPECT_TRUE(same(4, 1, false));  // no TP overlap: plain NCCL collectives
  EXPECT_FALSE(same(4, 1, true));
}

TEST(AsyncTp, OnlyTheAsyncTpProfilesSetIt) {
  for (const std::string& n : stack_names()) {
    const StackProfile* s = find_stack(n);
    ASSERT_NE(s, nullptr) << n;
    const bool async = n == "torchtitan-asynctp" || n == "torchtitan-asynctp-compile";
    EXPECT_EQ(s->tp_symm_mem, async) << n;
    EXPECT_TRUE(!async || s->tp_comm_overlap) << n;
  }
  // An explicit key wins over the profile, and the key takes booleans only.
  Problem p = async_problem();
  p.training.stack = "torchtitan-asynctp-compile";
  p.training.tp_symm_mem = false;
  ASSERT_TRUE(apply_stack(&p, {"training.tp_symm_mem"}));
  EXPECT_FALSE(p.training.tp_symm_mem);
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_TRUE(p.training.tp_symm_mem);
  EXPECT_TRUE(apply_key(p, "training.tp_symm_mem", "maybe", "test").has_value());
  EXPECT_FALSE(apply_key(p, "training.tp_symm_mem", "false", "test").has_value());
  EXPECT_FALSE(p.training.tp_symm_mem);
}

}  // namespace
}  // namespace ppsearch
