// Serial host time under the all-to-all dispatcher (docs/moe.md "Serial host time under the
// all-to-all dispatcher", src/cost/host_overhead.cpp moe_pass_time): a MoE layer's pass takes
// GPU + host time with the all-to-all dispatcher and max(GPU, host) with the others.
#include <gtest/gtest.h>

#include <algorithm>

#include "../support/builders.hpp"
#include "../support/moe_items.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/host_overhead.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/host_keys.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// A Qwen3-30B-A3B-like MoE model (128 experts, top-8, 768-wide experts) at sequence `seq`.
Problem qwen3_like(int seq, MoeDispatcher d, const char* scope) {
  Problem p = test::qwen3_30b_like(seq);
  p.training.moe_dispatcher = static_cast<int>(d);
  p.training.cuda_graph_scope = scope;
  return p;
}

ItemCost moe_layer_of(const Problem& p, const Candidate& c) {
  return test::moe_items_of(p, c).moe_layer;
}

Candidate ep8(const Problem& p, int mbs) {
  Candidate c = make_candidate(p, 1, 1, 8, mbs, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  return c;
}

TEST(MoeHostSerial, ClosedFormPerDispatcher) {
  EXPECT_DOUBLE_EQ(moe_pass_time(MoeDispatcher::kAllToAll, 2e-3, 1e-3), 3e-3);
  EXPECT_DOUBLE_EQ(moe_pass_time(MoeDispatcher::kAllToAll, 1e-3, 3e-3), 4e-3);
  EXPECT_DOUBLE_EQ(moe_pass_time(MoeDispatcher::kAllToAll, 1e-3, 0.0), 1e-3);
  for (MoeDispatcher d : {MoeDispatcher::kFlex, MoeDispatcher::kAllGather}) {
    EXPECT_DOUBLE_EQ(moe_pass_time(d, 2e-3, 1e-3), 2e-3);
    EXPECT_DOUBLE_EQ(moe_pass_time(d, 1e-3, 3e-3), 3e-3);
  }
}

TEST(MoeHostSerial, AllToAllLayerAddsTheHostTimeEvenWhenGpuBound) {
  // Small (256 tokens, host-bound) and large (16384 tokens, GPU-bound) layers: every pass of the
  // all-to-all dispatcher's layer is its GPU-only time plus its host time; the compute is the
  // GPU-only one.
  for (int seq : {256, 16384}) {
    const Problem p = qwen3_like(seq, MoeDispatcher::kAllToAll, "none");
    Problem gpu_only = p;
    gpu_only.gpu.host_op_s = 0;
    const Candidate c = ep8(p, 1);
    const ItemCost g = moe_layer_of(gpu_only, c), h = moe_layer_of(p, c);
    const HostOps host = moe_layer_host_time(p, c);
    ASSERT_GT(host.fwd, 0.0);
    ASSERT_GT(host.bwd, 0.0);
    EXPECT_NEAR(h.fwd_s, g.fwd_s + host.fwd, 1e-12) << seq;
    EXPECT_NEAR(h.bwd_s + h.wgt_s, g.bwd_s + g.wgt_s + host.bwd, 1e-12) << seq;
    EXPECT_EQ(h.compute_s, g.compute_s) << seq;
    if (seq == 16384) {  // GPU-bound: max() would hide the host time, the sum does not
      EXPECT_LT(host.fwd, g.fwd_s);
      EXPECT_GT(h.fwd_s, g.fwd_s);
    }
  }
}

TEST(MoeHostSerial, OnlyTheAllToAllDispatcherIsSerial) {
  // The same GPU-bound layer under the flex dispatcher hides its host time (max).
  const int seq = 16384;
  const Problem flex = qwen3_like(seq, MoeDispatcher::kFlex, "none");
  Problem flex0 = flex;
  flex0.gpu.host_op_s = 0;
  const Candidate c = ep8(flex, 1);
  const ItemCost gf = moe_layer_of(flex0, c), hf = moe_layer_of(flex, c);
  const HostOps host_f = moe_layer_host_time(flex, c);
  ASSERT_LT(host_f.fwd, gf.fwd_s);
  EXPECT_EQ(hf.fwd_s, gf.fwd_s);
  EXPECT_EQ(hf.bwd_s, gf.bwd_s);
}

TEST(MoeHostSerial, FullIterationGraphsLeaveNoHostTime) {
  // A captured step launches nothing per layer: the all-to-all layer is its GPU-only time.
  const Problem p = qwen3_like(4096, MoeDispatcher::kAllToAll, "full_iteration");
  Problem gpu_only = p;
  gpu_only.gpu.host_op_s = 0;
  const Candidate c = ep8(p, 1);
  const ItemCost g = moe_layer_of(gpu_only, c), h = moe_layer_of(p, c);
  EXPECT_EQ(h.fwd_s, g.fwd_s);
  EXPECT_EQ(h.bwd_s, g.bwd_s);
}

TEST(MoeHostSerial, ExposedHostTimeIsPaidOncePerMicroBatch) {
  // Serial host time is paid once per micro-batch (the host operations do not grow with the
  // tokens): the same at MBS 1 and 4, so per sequence it falls as 1/mbs.
  const Problem p = qwen3_like(1024, MoeDispatcher::kAllToAll, "none");
  Problem gpu_only = p;
  gpu_only.gpu.host_op_s = 0;
  auto exposed = [&](int mbs) {
    const Candidate c = ep8(p, mbs);
    const ItemCost h = moe_layer_of(p, c), g = moe_layer_of(gpu_only, c);
    return (h.fwd_s + h.bwd_s + h.wgt_s) - (g.fwd_s + g.bwd_s + g.wgt_s);
  };
  const double one = exposed(1), four = exposed(4);
  EXPECT_GT(one, 0.0);
  EXPECT_NEAR(four, one, 1e-12 + 1e-9 * one);  // per micro-batch, the same host time
}

}  // namespace
}  // namespace ppsearch
