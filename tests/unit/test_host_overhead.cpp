// Host time of a MoE layer per micro-batch (docs/moe.md "Host time of a MoE layer"): the
// operation count × per-operation time closed form, CUDA graphs, the max(GPU, host) regime
// switch, and the key and CSV parsing of the dispatcher and graph scopes.
#include <gtest/gtest.h>

#include "../support/moe_items.hpp"
#include "../support/runs_text.hpp"

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/host_overhead.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// A Qwen3-30B-A3B-like MoE model (128 experts, top-8, 768-wide experts) at sequence `seq`.
Problem small_moe(int seq) {
  Problem p = test::qwen3_30b_like(seq);
  return p;
}

double total(const HostOps& h) { return h.fwd + h.bwd; }

TEST(HostOverhead, OperationCountClosedForm) {
  // alltoall, 16 local experts, FP8, TP 1, in plain-op equivalents (M = one TE module call):
  // forward attention 4M + 7, router 6, preprocessing 16, dispatch 7M + 2, experts
  // 3M + 3 + 16·4; backward 4M + 6, 4, 0, 7M, 3M + 2 + 16·6.
  const double M = 99.66 / 37.08;  // TransformerEngine#2053, GB200
  EXPECT_DOUBLE_EQ(kTeModuleOps, M);
  const MoeHostOps o = moe_host_op_counts(MoeDispatcher::kAllToAll, 16, true, 1);
  const HostOps all = graphed_host_ops(o, 0);
  EXPECT_NEAR(all.fwd, (4 * M + 7) + 6 + 16 + (7 * M + 2) + (3 * M + 3 + 16 * 4), 1e-9);
  EXPECT_NEAR(all.bwd, (4 * M + 6) + 4 + 0 + 7 * M + (3 * M + 2 + 16 * 6), 1e-9);
  // Each further local expert adds its GEMMs (2 forward, 4 backward) and, in FP8, their casts.
  const HostOps more =
      graphed_host_ops(moe_host_op_counts(MoeDispatcher::kAllToAll, 17, true, 1), 0);
  EXPECT_DOUBLE_EQ(more.fwd - all.fwd, 4);
  EXPECT_DOUBLE_EQ(more.bwd - all.bwd, 6);
  const HostOps bf16 =
      graphed_host_ops(moe_host_op_counts(MoeDispatcher::kAllToAll, 16, false, 1), 0);
  EXPECT_DOUBLE_EQ(all.fwd - bf16.fwd, 2 * 16);
  EXPECT_DOUBLE_EQ(all.bwd - bf16.bwd, 2 * 16);
  // TP adds the sequence-parallel gather and scatter of the attention block.
  const HostOps tp2 =
      graphed_host_ops(moe_host_op_counts(MoeDispatcher::kAllToAll, 16, true, 2), 0);
  EXPECT_NEAR(tp2.fwd - all.fwd, 2 * M, 1e-9);
  // The fused grouped expert MLP launches all experts at once: no per-expert term.
  const MoeHostOps fused = moe_host_op_counts(MoeDispatcher::kAllToAll, 16, true, 1, true);
  EXPECT_NEAR(fused.experts.fwd, M + 3, 1e-9);
  EXPECT_NEAR(fused.experts.bwd, M + 2, 1e-9);
  EXPECT_DOUBLE_EQ(fused.dispatch.fwd, o.dispatch.fwd);
  // The fused dispatchers launch fewer operations than the NCCL all-to-all one.
  const HostOps flex = graphed_host_ops(moe_host_op_counts(MoeDispatcher::kFlex, 16, true, 1), 0);
  EXPECT_LT(total(flex), total(all));

  // Seconds = operations × gpu.host_op_us, per pass; EP sets the local experts.
  Problem p = small_moe(4096);
  p.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kAllToAll);
  p.training.cuda_graph_scope = "none";
  p.training.precision = "fp8";
  p.gpu.host_op_s = 10e-6;
  Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;  // 128 / 8 = 16 local experts
  const HostOps s = moe_layer_host_time(p, c);
  EXPECT_NEAR(s.fwd, all.fwd * 10e-6, 1e-15);
  EXPECT_NEAR(s.bwd, all.bwd * 10e-6, 1e-15);
  // Full recomputation replays the forward's operations in the backward.
  c.recompute = Recompute::kFull;
  EXPECT_NEAR(moe_layer_host_time(p, c).bwd, (all.bwd + all.fwd) * 10e-6, 1e-15);
  // A dense model has no MoE host term.
  Problem dense = p;
  dense.model.moe_experts = 0;
  EXPECT_EQ(total(moe_layer_host_time(dense, c)), 0.0);
}

TEST(HostOverhead, CudaGraphsReplaceAScopesOperationsByOneLaunch) {
  const MoeHostOps o = moe_host_op_counts(MoeDispatcher::kAllToAll, 16, true, 1);
  unsigned mask = 0;
  ASSERT_TRUE(parse_cuda_graph_scope("attn+moe_router+moe_preprocess", &mask));
  const HostOps none = graphed_host_ops(o, 0), g = graphed_host_ops(o, mask);
  // Each graphed scope: one graph launch through TE's graphed callable (one module call).
  const double M = kTeModuleOps;
  EXPECT_NEAR(g.fwd, 3 * M + o.dispatch.fwd + o.experts.fwd, 1e-9);
  EXPECT_NEAR(g.bwd, 2 * M + o.dispatch.bwd + o.experts.bwd, 1e-9);  // no preprocess backward
  EXPECT_LT(total(g), total(none));
  // moe graphs the whole MoE block; full_iteration everything.
  ASSERT_TRUE(parse_cuda_graph_scope("moe", &mask));
  EXPECT_NEAR(graphed_host_ops(o, mask).fwd, o.attn.fwd + M, 1e-9);
  ASSERT_TRUE(parse_cuda_graph_scope("full_iteration", &mask));
  EXPECT_EQ(total(graphed_host_ops(o, mask)), 0.0);
  // mlp graphs the dense MLP, which a MoE layer does not have.
  ASSERT_TRUE(parse_cuda_graph_scope("mlp", &mask));
  EXPECT_EQ(total(graphed_host_ops(o, mask)), total(none));

  // Through the layer: a small layer whose host time is exposed gets faster with graphs.
  Problem p = small_moe(256);
  p.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kAllToAll);
  Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  p.training.cuda_graph_scope = "none";
  const ItemCost eager = test::moe_items_of(p, c).moe_layer;
  p.training.cuda_graph_scope = "attn+moe_router+moe_preprocess";
  const ItemCost graphed = test::moe_items_of(p, c).moe_layer;
  EXPECT_LT(graphed.fwd_s, eager.fwd_s);
  EXPECT_LT(graphed.bwd_s, eager.bwd_s);
}

TEST(HostOverhead, MaxOfGpuAndHostPerPass) {
  EXPECT_EQ(pass_time_with_host(2e-3, 1e-3), 2e-3);
  EXPECT_EQ(pass_time_with_host(1e-3, 3e-3), 3e-3);
  for (int seq : {256, 16384}) {
    Problem p = small_moe(seq);
    // The flex dispatcher overlaps host and GPU (the all-to-all one adds them:
    // test_moe_host_serial.cpp).
    p.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kFlex);
    p.training.cuda_graph_scope = "none";
    Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
    c.ep = 8;
    Problem gpu_only = p;
    gpu_only.gpu.host_op_s = 0;
    const ItemCost g = test::moe_items_of(gpu_only, c).moe_layer;
    const ItemCost h = test::moe_items_of(p, c).moe_layer;
    const HostOps host = moe_layer_host_time(p, c);
    // Each pass takes max(GPU, host); the GPU's own work (compute) does not change.
    EXPECT_NEAR(h.fwd_s, std::max(g.fwd_s, host.fwd), 1e-12) << seq;
    EXPECT_NEAR(h.bwd_s + h.wgt_s, std::max(g.bwd_s + g.wgt_s, host.bwd), 1e-12) << seq;
    EXPECT_EQ(h.compute_s, g.compute_s) << seq;
    if (seq == 256) {
      // A small layer (256 tokens) is host-bound: the host time shows.
      EXPECT_GT(host.fwd, g.fwd_s);
      EXPECT_GT(h.fwd_s, g.fwd_s);
    } else {
      // A large layer (16384 tokens) hides it behind its GPU time.
      EXPECT_LT(host.fwd, g.fwd_s);
      EXPECT_LT(host.bwd, g.bwd_s + g.wgt_s);
      EXPECT_EQ(h.fwd_s, g.fwd_s);
      EXPECT_EQ(h.bwd_s, g.bwd_s);
    }
  }
}

TEST(HostOverhead, LargerMicroBatchesHideTheHostTime) {
  // The README's remedy: the same tokens in fewer, larger micro-batches pay the host time fewer
  // times. The host time a layer exposes (its time less the GPU-only time), per sequence, is
  // above zero at mbs 1 and smaller at mbs 8.
  Problem p = small_moe(512);
  p.training.moe_dispatcher = static_cast<int>(MoeDispatcher::kAllToAll);
  p.training.cuda_graph_scope = "none";
  Problem gpu_only = p;
  gpu_only.gpu.host_op_s = 0;
  auto exposed_per_sequence = [&](int mbs) {
    Candidate c = make_candidate(p, 1, 1, 8, mbs, Schedule::k1F1B, Recompute::kNone, 0, 1);
    c.ep = 8;
    const ItemCost h = test::moe_items_of(p, c).moe_layer,
                   g = test::moe_items_of(gpu_only, c).moe_layer;
    return ((h.fwd_s + h.bwd_s + h.wgt_s) - (g.fwd_s + g.bwd_s + g.wgt_s)) / mbs;
  };
  const double one = exposed_per_sequence(1), eight = exposed_per_sequence(8);
  EXPECT_GT(one, 0.0);
  EXPECT_LT(eight, one);
}

TEST(HostOverhead, GraphScopeParsing) {
  unsigned m = 99;
  EXPECT_TRUE(parse_cuda_graph_scope("none", &m));
  EXPECT_EQ(m, 0u);
  EXPECT_TRUE(parse_cuda_graph_scope("moe_preprocess+attn", &m));
  EXPECT_EQ(m, unsigned(kGraphAttn | kGraphMoePreprocess));
  EXPECT_EQ(cuda_graph_scope_text(m), "attn+moe_preprocess");
  for (const char* bad : {"", "+", "attn+", "attn+attn", "none+attn", "ATTN", "attn,mlp", "moes"})
    EXPECT_FALSE(parse_cuda_graph_scope(bad, &m)) << bad;
}

TEST(HostOverhead, KeysRefuseBadValuesNamingTheAllowedSet) {
  Problem p = small_moe(4096);
  auto issue = apply_key(p, "training.moe_dispatcher", "deepep", "test");
  ASSERT_TRUE(issue.has_value());
  EXPECT_EQ(issue->key, "training.moe_dispatcher");
  EXPECT_NE(issue->allowed.find("alltoall, allgather, flex"), std::string::npos);
  EXPECT_FALSE(apply_key(p, "training.moe_dispatcher", "alltoall", "test").has_value());
  EXPECT_EQ(p.training.moe_dispatcher, static_cast<int>(MoeDispatcher::kAllToAll));

  EXPECT_FALSE(apply_key(p, "training.cuda_graph_scope", "attn+bogus", "test").has_value());
  const auto issues = check(p);  // the list is checked with the other cross-field rules
  bool found = false;
  for (const auto& i : issues) {
    if (i.key != "training.cuda_graph_scope") continue;
    found = true;
    EXPECT_EQ(i.value, "attn+bogus");
    EXPECT_NE(i.allowed.find("moe_preprocess"), std::string::npos);
  }
  EXPECT_TRUE(found);

  // Megatron-Core's own rules: moe_preprocess needs moe_router; full_iteration stands alone.
  for (const char* bad : {"moe_preprocess", "attn+full_iteration"}) {
    Problem q = small_moe(4096);
    EXPECT_FALSE(apply_key(q, "training.cuda_graph_scope", bad, "test").has_value());
    bool refused = false;
    for (const auto& i : check(q)) refused |= i.key == "training.cuda_graph_scope";
    EXPECT_TRUE(refused) << bad;
  }
  {
    Problem q = small_moe(4096);
    EXPECT_FALSE(
        apply_key(q, "training.cuda_graph_scope", "moe_router+moe_preprocess", "t").has_value());
    for (const auto& i : check(q)) EXPECT_NE(i.key, "training.cuda_graph_scope");
  }

  issue = apply_key(p, "gpu.host_op_us", "-1", "test");
  ASSERT_TRUE(issue.has_value());
  EXPECT_FALSE(apply_key(p, "gpu.host_op_us", "20", "test").has_value());
  EXPECT_DOUBLE_EQ(p.gpu.host_op_s, 20e-6);
}

std::string csv_with(const std::string& dispatcher, const std::string& scope) {
  return test::moe_row_csv(dispatcher, scope);
}

TEST(HostOverhead, CsvColumnsParseAndRefuseBadValues) {
  const auto ok = parse_runs_csv(csv_with("alltoall", "attn+moe_router"), "t.csv");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].moe_dispatcher, "alltoall");
  EXPECT_EQ(ok[0].cuda_graph_scope, "attn+moe_router");
  const auto empty = parse_runs_csv(csv_with("", ""), "t.csv");
  EXPECT_EQ(empty[0].moe_dispatcher, "");
  EXPECT_EQ(empty[0].cuda_graph_scope, "");
  try {
    parse_runs_csv(csv_with("deepep", "attn"), "t.csv");
    FAIL() << "deepep accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.csv:2"), std::string::npos) << what;
    EXPECT_NE(what.find("moe_dispatcher"), std::string::npos) << what;
    EXPECT_NE(what.find("deepep"), std::string::npos) << what;
    EXPECT_NE(what.find("alltoall, allgather or flex"), std::string::npos) << what;
  }
  try {
    parse_runs_csv(csv_with("flex", "attn+attn"), "t.csv");
    FAIL() << "attn+attn accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuda_graph_scope"), std::string::npos) << what;
    EXPECT_NE(what.find("attn+attn"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ppsearch
