// The flex dispatcher's backend (docs/moe.md "DeepEP's host wait", src/cost/moe_flex_backend.cpp):
// on DeepEP a MoE layer's pass takes GPU + host time (the dispatch's host busy-wait), on HybridEP
// max(GPU, host); DeepEP's dispatcher launches its own permutation around the fused dispatch.
#include <gtest/gtest.h>

#include "../support/moe_items.hpp"
#include "../support/runs_text.hpp"

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/host_overhead.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/moe_flex_backend.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

Problem qwen3_flex(int seq, MoeFlexBackend b) {
  Problem p = test::qwen3_30b_like(seq);
  p.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kFlex);
  p.training.moe_flex_backend = static_cast<int>(b);
  p.training.cuda_graph_scope = "none";
  return p;
}

ItemCost moe_layer_of(const Problem& p, const Candidate& c) {
  return test::moe_items_of(p, c).moe_layer;
}

Candidate ep8(const Problem& p) {
  Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  return c;
}

TEST(MoeFlexBackend, WhichDispatchersWaitSerially) {
  for (MoeFlexBackend b : {MoeFlexBackend::kHybridEp, MoeFlexBackend::kDeepEp}) {
    EXPECT_TRUE(moe_host_wait_serial(MoeDispatcher::kAllToAll, b));
    EXPECT_FALSE(moe_host_wait_serial(MoeDispatcher::kAllGather, b));
  }
  EXPECT_TRUE(moe_host_wait_serial(MoeDispatcher::kFlex, MoeFlexBackend::kDeepEp));
  EXPECT_FALSE(moe_host_wait_serial(MoeDispatcher::kFlex, MoeFlexBackend::kHybridEp));
}

TEST(MoeFlexBackend, PassTimeClosedForm) {
  const auto flex = MoeDispatcher::kFlex;
  EXPECT_DOUBLE_EQ(moe_pass_time_with_backend(flex, MoeFlexBackend::kDeepEp, 2e-3, 1e-3), 3e-3);
  EXPECT_DOUBLE_EQ(moe_pass_time_with_backend(flex, MoeFlexBackend::kHybridEp, 2e-3, 1e-3), 2e-3);
  EXPECT_DOUBLE_EQ(moe_pass_time_with_backend(flex, MoeFlexBackend::kHybridEp, 1e-3, 3e-3), 3e-3);
  // The all-to-all dispatcher ignores the backend and agrees with moe_pass_time.
  for (MoeFlexBackend b : {MoeFlexBackend::kHybridEp, MoeFlexBackend::kDeepEp})
    EXPECT_DOUBLE_EQ(moe_pass_time_with_backend(MoeDispatcher::kAllToAll, b, 2e-3, 1e-3),
                     moe_pass_time(MoeDispatcher::kAllToAll, 2e-3, 1e-3));
}

TEST(MoeFlexBackend, DeepEpCountsReplaceOnlyTheDispatchersOwn) {
  const MoeHostOps flex = moe_host_op_counts(MoeDispatcher::kFlex, 16, true, 1);
  const MoeHostOps deep = deepep_host_op_counts(flex);
  EXPECT_DOUBLE_EQ(deep.preprocess.fwd, 4.0);
  EXPECT_DOUBLE_EQ(deep.preprocess.bwd, 0.0);
  EXPECT_DOUBLE_EQ(deep.dispatch.fwd, 4 * kTeModuleOps + 11);
  EXPECT_DOUBLE_EQ(deep.dispatch.bwd, 4 * kTeModuleOps);
  EXPECT_GT(deep.dispatch.fwd, flex.dispatch.fwd);  // the permutation is its own module
  EXPECT_DOUBLE_EQ(deep.attn.fwd, flex.attn.fwd);
  EXPECT_DOUBLE_EQ(deep.router.fwd, flex.router.fwd);
  EXPECT_DOUBLE_EQ(deep.experts.fwd, flex.experts.fwd);
  EXPECT_DOUBLE_EQ(deep.experts.bwd, flex.experts.bwd);
}

TEST(MoeFlexBackend, DeepEpLayerAddsItsHostTimeHybridEpHidesIt) {
  // A GPU-bound layer (16384 tokens): under HybridEP max() hides the host time, under DeepEP the
  // pass is its GPU-only time plus the (larger) DeepEP host time.
  const int seq = 16384;
  const Problem hy = qwen3_flex(seq, MoeFlexBackend::kHybridEp);
  const Problem de = qwen3_flex(seq, MoeFlexBackend::kDeepEp);
  Problem de0 = de, hy0 = hy;
  de0.gpu.host_op_s = 0;
  hy0.gpu.host_op_s = 0;
  const Candidate c = ep8(hy);
  const ItemCost gh = moe_layer_of(hy0, c), h = moe_layer_of(hy, c);
  const ItemCost gd = moe_layer_of(de0, c), d = moe_layer_of(de, c);
  const HostOps host_h = moe_layer_host_time(hy, c), host_d = moe_layer_host_time(de, c);
  ASSERT_LT(host_h.fwd, gh.fwd_s);  // GPU-bound
  EXPECT_GT(host_d.fwd, host_h.fwd);
  EXPECT_GT(host_d.bwd, host_h.bwd);
  EXPECT_NEAR(h.fwd_s, gh.fwd_s, 1e-12);
  EXPECT_NEAR(d.fwd_s, gd.fwd_s + host_d.fwd, 1e-12);
  EXPECT_NEAR(d.bwd_s + d.wgt_s, gd.bwd_s + gd.wgt_s + host_d.bwd, 1e-12);
  EXPECT_EQ(d.compute_s, gd.compute_s);  // the wait is idle GPU, not compute
  // The GPU-only layer does not depend on the backend.
  EXPECT_DOUBLE_EQ(gd.fwd_s, gh.fwd_s);
}

TEST(MoeFlexBackend, BackendIsIgnoredOutsideTheFlexDispatcher) {
  Problem a = test::qwen3_30b_like(4096);
  a.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kAllToAll);
  a.training.cuda_graph_scope = "none";
  Problem b = a;
  b.training.moe_flex_backend = static_cast<int>(MoeFlexBackend::kDeepEp);
  const Candidate c = ep8(a);
  const HostOps ha = moe_layer_host_time(a, c), hb = moe_layer_host_time(b, c);
  EXPECT_DOUBLE_EQ(ha.fwd, hb.fwd);
  EXPECT_DOUBLE_EQ(ha.bwd, hb.bwd);
  EXPECT_DOUBLE_EQ(moe_layer_of(a, c).fwd_s, moe_layer_of(b, c).fwd_s);
}

TEST(MoeFlexBackend, KeyParsesAndDefaultsToHybridEp) {
  Problem p;
  EXPECT_EQ(p.training.moe_flex_backend, 0);
  EXPECT_EQ(key_value(p, "training.moe_flex_backend"), "hybridep");
  EXPECT_FALSE(apply_key(p, "training.moe_flex_backend", "deepep", "test"));
  EXPECT_EQ(p.training.moe_flex_backend, static_cast<int>(MoeFlexBackend::kDeepEp));
  const auto issue = apply_key(p, "training.moe_flex_backend", "nccl", "test");
  ASSERT_TRUE(issue);
  EXPECT_EQ(p.training.moe_flex_backend, static_cast<int>(MoeFlexBackend::kDeepEp));  // untouched
}

std::string csv_with(const std::string& dispatcher) {
  return test::moe_row_csv(dispatcher, "none");
}

TEST(MoeFlexBackend, CsvDispatcherCellNamesTheBackend) {
  const auto deep = parse_runs_csv(csv_with("flex:deepep"), "t.csv");
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_EQ(deep[0].moe_dispatcher, "flex");
  EXPECT_EQ(deep[0].moe_flex_backend, "deepep");
  const auto hy = parse_runs_csv(csv_with("Flex:HybridEP"), "t.csv");
  EXPECT_EQ(hy[0].moe_dispatcher, "flex");
  EXPECT_EQ(hy[0].moe_flex_backend, "hybridep");
  const auto plain = parse_runs_csv(csv_with("flex"), "t.csv");
  EXPECT_EQ(plain[0].moe_flex_backend, "");
  for (const char* bad : {"flex:nccl", "alltoall:deepep", "flex:"}) {
    try {
      parse_runs_csv(csv_with(bad), "t.csv");
      FAIL() << bad << " accepted";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("t.csv:2"), std::string::npos) << what;
      EXPECT_NE(what.find("moe_dispatcher"), std::string::npos) << what;
      EXPECT_NE(what.find("flex:deepep"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace ppsearch
