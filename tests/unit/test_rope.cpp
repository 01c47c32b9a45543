// YaRN RoPE without a fused kernel (docs/moe.md "YaRN RoPE"): the extra passes by hand, when
// they apply, and their place in a layer's element-wise time.
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/rope.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// GPT-OSS-120B's attention (64 query heads and 8 KV heads of 64) on a dense stand-in.
Problem gpt_oss_like(bool yarn) {
  Problem p = test::gpt_oss_dense_like();
  p.model.yarn_rope = yarn;
  return p;
}

TEST(YarnRope, ExtraBytesByHand) {
  const Problem p = gpt_oss_like(true);
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  // 8192 tokens, q and k of (64 + 8)·64 = 4608 elements per token, TP 2.
  const double elems = 8192.0 * 4608 / 2;
  const RopeExtra r = unfused_rope_extra(p, 8192, 2);
  // Unfused 24 B forward and 26 B backward, of which the fused kernel's 4 and 8 are in items.cpp.
  EXPECT_DOUBLE_EQ(r.fwd_s, 20.0 * elems / bw);
  EXPECT_DOUBLE_EQ(r.bwd_s, 18.0 * elems / bw);
}

TEST(YarnRope, OnlyYarnWithFusedElementwiseKernelsPays) {
  Problem p = gpt_oss_like(true);
  EXPECT_TRUE(rope_unfused(p));
  p.training.fused_elementwise = false;  // eager stacks already pay for unfused element-wise ops
  EXPECT_FALSE(rope_unfused(p));
  EXPECT_EQ(unfused_rope_extra(p, 4096, 1).fwd_s, 0.0);
  EXPECT_FALSE(rope_unfused(gpt_oss_like(false)));
  EXPECT_EQ(unfused_rope_extra(gpt_oss_like(false), 4096, 1).bwd_s, 0.0);
}

TEST(YarnRope, LayerGainsExactlyTheExtraPasses) {
  const Problem with = gpt_oss_like(true), without = gpt_oss_like(false);
  const Links l = effective_links(with.cluster);
  for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
    const Candidate c = make_candidate(with, 2, 1, 32, 2, Schedule::k1F1B, r, 1, 1);
    const ItemCost a = chain_costs(with, c, l).layer, b = chain_costs(without, c, l).layer;
    const RopeExtra x = unfused_rope_extra(with, 2.0 * 4096, 2);
    ASSERT_GT(x.fwd_s, 0.0);
    const double redo = r == Recompute::kFull ? x.fwd_s : 0.0;  // the replayed forward
    EXPECT_NEAR(a.fwd_s - b.fwd_s, x.fwd_s, 1e-12);
    EXPECT_NEAR(a.compute_s - b.compute_s, x.fwd_s + x.bwd_s + redo, 1e-12);
    EXPECT_DOUBLE_EQ(a.act_bytes, b.act_bytes);
  }
}

}  // namespace
}  // namespace ppsearch
