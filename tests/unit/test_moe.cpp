// Mixture of experts, MLA and FSDP with PP (docs/moe.md): closed forms and hand counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/search/explain.hpp"
#include "ppsearch/spec/check.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// DeepSeek-V3 as configs/models/deepseek-v3.ini, on the 16-GPU H200 nodes of the builders.
Problem deepseek_v3() {
  Problem p = llama70b_h200();
  ModelSpec& m = p.model;
  m.name = "deepseek-v3";
  m.layers = 61;
  m.hidden_size = 7168;
  m.ffn_hidden_size = 18432;
  m.attention_heads = 128;
  m.kv_heads = 128;
  m.head_dim = 160;
  m.vocab_size = 129280;
  m.seq_length = 4096;
  m.moe_experts = 256;
  m.moe_top_k = 8;
  m.moe_ffn_hidden_size = 2048;
  m.moe_shared_experts = 1;
  m.moe_shared_ffn_hidden_size = 2048;
  m.moe_first_dense_layers = 3;
  m.mla_q_lora_rank = 1536;
  m.mla_kv_lora_rank = 512;
  m.mla_qk_rope_head_dim = 64;
  m.mla_qk_nope_head_dim = 128;
  m.mla_v_head_dim = 128;
  p.training.global_batch_size = 1024;
  p.gpus = {1024};
  return p;
}

// A Mixtral-like model without MLA or shared experts.
Problem mixtral_like() {
  Problem p = test::llama8b_like(16);
  p.model.vocab_size = 32000;
  p.model.seq_length = 4096;
  p.model.moe_experts = 8;
  p.model.moe_top_k = 2;
  p.training.global_batch_size = 64;
  p.gpus = {64};
  return p;
}

Links links_of(const Problem& p) { return effective_links(p.cluster); }

TEST(MoeParams, DeepSeekV3TotalAndActivatedMatchThePaper) {
  // arXiv 2412.19437: 671B total, 37B activated per token (main model, without the MTP module).
  const ParamCounts pc = param_counts(deepseek_v3().model);
  EXPECT_NEAR(pc.total / 671e9, 1.0, 0.01);
  EXPECT_NEAR(pc.active / 37e9, 1.0, 0.03);
}

TEST(MoeFlops, DeepSeekV3ByHand) {
  const ModelSpec m = deepseek_v3().model;
  const double h = 7168, a = 128, s = 4096;
  // MLA projections per token (forward, 2 FLOPs per multiply-add).
  const double q = h * 1536 + 1536 * a * 192;
  const double kv = h * (512 + 64) + 512 * a * (128 + 128);
  const double o = a * 128 * h;
  const double proj = 2 * (q + kv + o);
  const double core = 2 * s * a * 192 + 2 * s * a * 128;  // QKᵀ with 192, PV with 128, full s
  const double dense_mlp = 2 * h * 18432 * 3;
  const double moe_mlp = 2 * h * 3 * (8 * 2048 + 1 * 2048);  // top-8 routed + 1 shared
  const double per_token = 61 * (proj + core) + 3 * dense_mlp + 58 * moe_mlp + 2 * h * 129280;
  const double expect = 3.0 * 1024 * s * per_token;
  EXPECT_NEAR(moe_model_flops_per_step(m, 1024, AttentionFlops::kFull) / expect, 1.0, 1e-12);
}

TEST(MoeFlops, EqualsTheDenseFormulaForADenseModel) {
  const ModelSpec m = llama70b_h200().model;
  for (AttentionFlops conv : {AttentionFlops::kFull, AttentionFlops::kCausal})
    EXPECT_NEAR(moe_model_flops_per_step(m, 256, conv) / model_flops_per_step(m, 256, conv), 1.0,
                1e-12);
}

TEST(MoeFlops, OneExpertTopOneCountsAsTheDenseMlp) {
  Problem dense = mixtral_like();
  dense.model.moe_experts = 0;
  dense.model.moe_top_k = 0;
  Problem one = mixtral_like();
  one.model.moe_experts = 1;
  one.model.moe_top_k = 1;
  EXPECT_NEAR(moe_model_flops_per_step(one.model, 64, AttentionFlops::kFull) /
                  model_flops_per_step(dense.model, 64, AttentionFlops::kFull),
              1.0, 1e-12);
}

TEST(MoeAllToAll, InsideOneDomainIsNvlinkClosedForm) {
  const Problem p = mixtral_like();
  const Links l = links_of(p);
  const double bytes = 1e9;
  for (int ep : {2, 4, 8}) {
    const double expect = l.nvlink_latency_s + bytes * (ep - 1) / ep / l.nvlink_bytes_per_s;
    EXPECT_NEAR(ep_all_to_all_time(bytes, ep, 1, 8, l) / expect, 1.0, 1e-12) << ep;
  }
  EXPECT_EQ(ep_all_to_all_time(bytes, 1, 1, 8, l), 0.0);
}

TEST(MoeAllToAll, AcrossDomainsTheSlowerOfNvlinkAndNic) {
  const Problem p = mixtral_like();
  const Links l = links_of(p);
  const double bytes = 1e9;
  // EP 32 with stride 1 on 8-GPU domains: 7 peers over NVLink, 24 over the NIC.
  const double intra = l.nvlink_latency_s + bytes * 7 / 32 / l.nvlink_bytes_per_s;
  const double inter = l.network_latency_s + bytes * 24 / 32 / l.network_bytes_per_s;
  EXPECT_NEAR(ep_all_to_all_time(bytes, 32, 1, 8, l) / std::max(intra, inter), 1.0, 1e-12);
  // Stride 8 (ETP 8): every peer is in another domain.
  const double all_net = l.network_latency_s + bytes * 31 / 32 / l.network_bytes_per_s;
  EXPECT_NEAR(ep_all_to_all_time(bytes, 32, 8, 8, l) / all_net, 1.0, 1e-12);
}

TEST(MoeMemory, ExpertWeightsShardOverEpAndTheirStateOverExpertDp) {
  const Problem p = mixtral_like();
  const Links l = links_of(p);
  for (int ep : {1, 2, 8}) {
    Candidate c = make_candidate(p, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
    c.ep = ep;
    const ChainCosts cc = chain_costs(p, c, l);
    const MoeItems mi =
        moe_items(p, c, l, cc.layer, chain_costs(attention_only_problem(p), c, l).layer);
    const double h = 4096, F = 14336;
    const double expert = 8.0 / ep * 3 * h * F;  // E/ep experts of 3·h·F per GPU
    EXPECT_DOUBLE_EQ(mi.moe_layer.expert_params, expert);
    const double edp = 64.0 / ep;  // TP·CP·DP / (EP·ETP)
    EXPECT_EQ(expert_dp(c), static_cast<int>(edp));
    // ZeRO-1 (distributed optimizer): bf16 weights, fp32 gradients, 12 B of state over expert-DP
    // for the experts; the rest over DP·CP = 64.
    const double dense = mi.moe_layer.params;
    EXPECT_NEAR(mi.moe_layer.static_bytes,
                expert * (2 + 4 + 12 / edp) + dense * (2 + 4 + 12 / 64.0), 1.0);
    // Router (h·E) on every GPU, with the attention and norms of the layer.
    EXPECT_NEAR(dense - cc.layer.params + h * F * 3, h * 8, 1.0);
  }
}

TEST(MoeEvaluate, MoreExpertParallelismLessMemory) {
  const Problem p = mixtral_like();
  double last = 1e30;
  for (int ep : {1, 2, 4, 8}) {
    Candidate c = make_candidate(p, 1, 2, 32, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
    c.ep = ep;
    const Evaluation e = evaluate(p, c);
    ASSERT_TRUE(e.feasible || e.reason == Infeasible::kMemory) << ep;
    EXPECT_LT(e.needed_bytes, last) << ep;
    last = e.needed_bytes;
  }
}

TEST(MoeEvaluate, ImbalanceAndSlowerGroupedGemmsCostTime) {
  const Problem p = mixtral_like();
  Candidate c = make_candidate(p, 1, 2, 32, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  c.ep = 8;
  const double base = evaluate(p, c).iteration_time_s;
  Problem skew = p;
  skew.training.moe_load_imbalance = 1.5;
  EXPECT_GT(evaluate(skew, c).iteration_time_s, base * 1.05);
  Problem slow = p;
  slow.training.moe_grouped_gemm_efficiency = 0.5;
  EXPECT_GT(evaluate(slow, c).iteration_time_s, base * 1.05);
  // The EP overlap pairs micro-batches beyond the pipeline's warm-up (docs/moe.md "26.06 recipe
  // features"): with 2 micro-batches on 2 stages there are none, with 16 most.
  Problem hidden = p;
  hidden.training.moe_a2a_overlap = 1.0;
  EXPECT_EQ(evaluate(hidden, c).iteration_time_s, base);
  Problem many = p;
  many.training.global_batch_size = 512;
  Problem many_hidden = many;
  many_hidden.training.moe_a2a_overlap = 1.0;
  EXPECT_LT(evaluate(many_hidden, c).iteration_time_s, evaluate(many, c).iteration_time_s);
}

TEST(MoeEvaluate, OneExpertTopOneIsCloseToTheDenseModel) {
  // E = 1, k = 1: the same GEMMs as the dense MLP plus a 1-wide router and the permutation.
  Problem dense = mixtral_like();
  dense.model.moe_experts = 0;
  dense.model.moe_top_k = 0;
  Problem one = mixtral_like();
  one.model.moe_experts = 1;
  one.model.moe_top_k = 1;
  const Candidate c = make_candidate(dense, 1, 2, 32, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  const Evaluation a = evaluate(dense, c), b = evaluate(one, c);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_GT(b.iteration_time_s, a.iteration_time_s);
  EXPECT_LT(b.iteration_time_s, a.iteration_time_s * 1.10);
  EXPECT_NEAR(b.mfu * b.iteration_time_s, a.mfu * a.iteration_time_s, 1e-9);  // same model FLOPs
}

TEST(MoeEvaluate, DenseModelIgnoresTheMoeKeysOfADenseModel) {
  // With moe_experts = 0 the evaluation is the dense one whatever the (unused) MoE calibration.
  const Problem p = llama70b_h200();
  Problem q = p;
  q.training.moe_load_imbalance = 3;
  q.training.moe_grouped_gemm_efficiency = 0.2;
  q.training.moe_a2a_overlap = 1;
  for (int pp : {1, 2, 4})
    for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
      const Candidate c = make_candidate(p, 8, pp, 16 / pp, 1, Schedule::k1F1B, r, 1, 1);
      const Evaluation a = evaluate(p, c), b = evaluate(q, c);
      EXPECT_EQ(a.feasible, b.feasible);
      if (a.feasible) {
        EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);
        EXPECT_EQ(a.peak_memory_gb, b.peak_memory_gb);
      }
    }
}

TEST(MoeEnumeration, EpDividesTheExpertsAndFoldsIntoTheRanks) {
  Problem p = deepseek_v3();
  p.gpus = {256};
  p.search.mbs = {1};
  p.search.recompute = {Recompute::kFull};
  p.search.schedule = {Schedule::k1F1B};
  const Enumeration en = enumerate_candidates(p);
  ASSERT_FALSE(en.candidates.empty());
  bool some_ep = false;
  for (const Candidate& c : en.candidates) {
    EXPECT_EQ(256 % c.ep, 0);
    EXPECT_EQ((1LL * c.tp * c.cp * c.dp) % (1LL * c.ep * c.etp), 0);
    EXPECT_TRUE(c.tp == 1 || c.sp == 1);  // MoE with TP needs SP
    some_ep = some_ep || c.ep > 1;
  }
  EXPECT_TRUE(some_ep);
  EXPECT_EQ(count_candidates(p), static_cast<std::int64_t>(en.candidates.size()));
  // A dense model enumerates ep = 1 only, and an EP list removes the rest by rule.
  Problem d = llama70b_h200();
  d.search.ep = {1, 2};
  const Enumeration ed = enumerate_candidates(d);
  for (const Candidate& c : ed.candidates) EXPECT_EQ(c.ep, 1);
  bool counted = false;
  for (const RuleCount& r : ed.rules)
    if (r.name == "ep_needs_moe") counted = r.removed > 0;
  EXPECT_TRUE(counted);
}

TEST(FsdpWithPp, ZeroTwoCostsAsZeroOneAndZeroThreeKeepsFullGradients) {
  const Problem p = llama70b_h200();
  const Candidate z1 = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  Candidate z2 = z1;
  z2.zero = 2;
  Candidate z3 = z1;
  z3.zero = 3;
  const Evaluation e1 = evaluate(p, z1), e2 = evaluate(p, z2), e3 = evaluate(p, z3);
  ASSERT_TRUE(e1.feasible && e2.feasible && e3.feasible);
  EXPECT_EQ(e1.iteration_time_s, e2.iteration_time_s);
  EXPECT_EQ(e1.peak_memory_gb, e2.peak_memory_gb);
  // ZeRO-3 with PP: weights sharded over DP, gradients whole until the last backward.
  for (std::size_t s = 0; s < e3.stages.size(); ++s) {
    EXPECT_NEAR(e3.stages[s].gradients_gb, e1.stages[s].gradients_gb, 1e-9);
    EXPECT_LT(e3.stages[s].weights_gb, e1.stages[s].weights_gb / 3.9);
  }
  // Its per-micro-batch gathers cost time.
  EXPECT_GT(e3.dp_comm_total_s, e1.dp_comm_total_s);
  // The rule: off by default, lifted by search.fsdp_with_pp.
  Problem q = p;
  q.search.zero = {3};
  q.search.pp = {4};
  EXPECT_EQ(count_candidates(q), 0);
  q.search.fsdp_with_pp = true;
  EXPECT_GT(count_candidates(q), 0);
}

// Under ZeRO-2/3 without PP a MoE layer's experts are reduce-scattered (ZeRO-3: and gathered)
// over the expert-DP group every micro-batch, as its other parameters are over DP·CP; the memory
// model already held them so (cost/moe.cpp). docs/moe.md "Expert parameters under ZeRO-2/3".
// The Qwen3-30B-like model on 8 GPUs, DP 8 with EP 2: expert-DP 4.
Evaluation moe_zero_eval(int zero, int global_batch, int expert_ffn, const char* fsdp = "none") {
  Problem p = test::qwen3_30b_like();
  p.training.global_batch_size = global_batch;
  p.model.moe_ffn_hidden_size = expert_ffn;
  p.training.fsdp_impl = fsdp;
  p.cluster.step_jitter = 0;
  Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kFull, 0, zero);
  c.ep = 2;
  EvalOptions o;
  Evaluator ev(p, o);
  const Evaluation e = ev.evaluate(c);
  EXPECT_TRUE(e.feasible) << "zero " << zero << " batch " << global_batch;
  return e;
}

TEST(MoeZero23, ExpertTrafficIsPaidEveryMicroBatch) {
  // ZeRO-3: every byte of DP traffic is per micro-batch, so twice the micro-batches move twice
  // the bytes (8 and 16 micro-batches).
  const double once = moe_zero_eval(3, 64, 768).dp_comm_total_s;
  const double twice = moe_zero_eval(3, 128, 768).dp_comm_total_s;
  ASSERT_GT(once, 0);
  EXPECT_NEAR(twice, 2.0 * once, 1e-9 * twice);
  // ZeRO-2: per micro-batch plus the gather of the updated shards once per step (4, 8, 16).
  const double z4 = moe_zero_eval(2, 32, 768).dp_comm_total_s;
  const double z8 = moe_zero_eval(2, 64, 768).dp_comm_total_s;
  const double z16 = moe_zero_eval(2, 128, 768).dp_comm_total_s;
  EXPECT_NEAR(z16 - z8, 2.0 * (z8 - z4), 1e-9 * z16);
  EXPECT_GT(z8 - (z16 - z8), 0.0);  // the once-per-step gather
  // ZeRO-1 reduces once per step: the traffic does not depend on the micro-batch count.
  EXPECT_EQ(moe_zero_eval(1, 128, 768).dp_comm_total_s, moe_zero_eval(1, 64, 768).dp_comm_total_s);
}

TEST(MoeZero23, ExpertBytesMoveOverTheExpertDpGroup) {
  // Doubling the expert width doubles the expert parameters only (the router, attention and
  // norms stay): the DP traffic grows by M · layers · (2 gathers + 1 reduce-scatter) of the added
  // bytes' difference over the expert-DP group (4 ranks, EP·ETP = 2 apart).
  const Problem p = test::qwen3_30b_like();
  const int M = 8, L = p.model.layers;
  const double g = p.training.grad_reduce_in_fp32 ? 4.0 : 2.0;
  const double local_experts = p.model.moe_experts / 2.0;
  auto phi_e = [&](double fe) { return local_experts * p.model.hidden_size * fe * 3.0; };  // SwiGLU
  const Links links = effective_links(p.cluster);
  const GroupShape edp = group_shape(4, 2, p.cluster.nvlink_domain_size);
  auto per_layer = [&](double fe) {
    return 2.0 * collective_time(Collective::kAllGather, 2.0 * phi_e(fe), edp, links) +
           collective_time(Collective::kReduceScatter, g * phi_e(fe), edp, links);
  };
  const double narrow = moe_zero_eval(3, 64, 768).dp_comm_total_s;
  const double wide = moe_zero_eval(3, 64, 1536).dp_comm_total_s;
  const double expected = M * L * (per_layer(1536) - per_layer(768));
  EXPECT_NEAR(wide - narrow, expected, 1e-9 * expected);
  // ZeRO-2: the reduce-scatters only, per micro-batch, and the gather of the updated shards once.
  const double narrow2 = moe_zero_eval(2, 64, 768).dp_comm_total_s;
  const double wide2 = moe_zero_eval(2, 64, 1536).dp_comm_total_s;
  auto rs = [&](double fe) {
    return collective_time(Collective::kReduceScatter, g * phi_e(fe), edp, links);
  };
  EXPECT_GT(wide2 - narrow2, M * L * (rs(1536) - rs(768)) * (1 - 1e-9));
}

TEST(MoeZero23, FsdpPassesCountTheExperts) {
  // FSDP2's copy-in (6 B per parameter in fp32) runs over the experts' gradients too.
  Problem p = test::qwen3_30b_like();
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double g = p.training.grad_reduce_in_fp32 ? 4.0 : 2.0;
  auto passes = [&](int fe) {
    Problem q = p;
    q.model.moe_ffn_hidden_size = fe;
    q.training.fsdp_impl = "fsdp2";
    Candidate c = make_candidate(q, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
    c.ep = 2;
    const ExplainedRow row = explain_candidate(q, c, EvalOptions{});
    EXPECT_TRUE(row.eval.feasible);
    EXPECT_EQ(row.detail.fsdp_passes_s.size(), 1u);
    return row.detail.fsdp_passes_s.empty() ? 0.0 : row.detail.fsdp_passes_s[0];
  };
  const double added = p.model.layers * (p.model.moe_experts / 2.0) * p.model.hidden_size * 768 * 3;
  const double expected = (2.0 + g) * added / bw;
  EXPECT_NEAR(passes(1536) - passes(768), expected, 1e-9 * expected);
}

TEST(MoeCheck, TopKAndMlaStandInAreChecked) {
  Problem p = deepseek_v3();
  EXPECT_TRUE(check(p).empty());
  p.model.moe_top_k = 0;
  ASSERT_FALSE(check(p).empty());
  EXPECT_EQ(check(p).back().key, "model.moe_top_k");
  p = deepseek_v3();
  p.model.head_dim = 128;
  ASSERT_FALSE(check(p).empty());
  EXPECT_EQ(check(p).back().key, "model.head_dim");
  p = llama70b_h200();
  p.model.moe_top_k = 2;
  ASSERT_FALSE(check(p).empty());
  EXPECT_EQ(check(p).back().key, "model.moe_top_k");
}

TEST(MoeEvaluate, DeepSeekV3On1024GpusHasFeasibleExpertParallelRows) {
  Problem p = deepseek_v3();
  p.search.tp = {1};
  p.search.pp = {16};
  p.search.mbs = {1};
  p.search.schedule = {Schedule::k1F1B};
  p.search.recompute = {Recompute::kFull};
  p.search.zero = {1};
  const Enumeration en = enumerate_candidates(p);
  Evaluator ev(p);
  int feasible = 0;
  for (const Candidate& c : en.candidates) {
    const Evaluation e = ev.evaluate(c);
    if (!e.feasible) continue;
    ++feasible;
    EXPECT_GT(e.mfu, 0.05);
    EXPECT_LT(e.mfu, 0.8);
  }
  EXPECT_GT(feasible, 0);
}

}  // namespace
}  // namespace ppsearch
