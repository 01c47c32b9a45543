// ALiBi on materialised attention scores (docs/step-time.md "ALiBi on materialised attention
// scores"): the closed form of the bias pass, its place in the layer (forward, and the replays of
// full and core-attention recomputation), neutrality unless both keys are set, the eager stacks'
// bandwidth, and the runs CSV columns.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/alibi.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::make_candidate;

// BLOOM-176B's shape (tr11-176B-ml: 70 layers, hidden 14336, 112 heads, 2048 tokens, GeLU) cut
// to 8 layers, on the A100 problem of the builders.
Problem bloom_like(bool alibi, bool unfused) {
  Problem p = test::gpt175b_a100();
  p.model.layers = 8;
  p.model.hidden_size = 14336;
  p.model.ffn_hidden_size = 4 * 14336;
  p.model.attention_heads = 112;
  p.model.kv_heads = 112;
  p.model.head_dim = 128;
  p.model.vocab_size = 250880;
  p.model.alibi = alibi;
  p.training.unfused_attention = unfused;
  p.training.global_batch_size = 16;
  p.gpus = {32};
  return p;
}

TEST(Alibi, BiasPassClosedForm) {
  Problem p = bloom_like(true, true);
  p.gpu.memory_efficiency = 0.732;
  // 4 bytes per score: micro-batch 2 x 2048 queries, 2048 keys, 112 / 4 heads.
  const double want = 4.0 * 4096.0 * 2048.0 * 28.0 / (2.039e12 * 0.732);
  EXPECT_TRUE(alibi_materialized(p));
  EXPECT_DOUBLE_EQ(alibi_bias_fwd_s(p, 4096.0, 2048.0, 28.0), want);
  // Linear in each factor.
  EXPECT_DOUBLE_EQ(alibi_bias_fwd_s(p, 8192.0, 2048.0, 28.0), 2.0 * want);
  EXPECT_DOUBLE_EQ(alibi_bias_fwd_s(p, 4096.0, 4096.0, 28.0), 2.0 * want);
  EXPECT_DOUBLE_EQ(alibi_bias_fwd_s(p, 4096.0, 2048.0, 14.0), 0.5 * want);
  // An eager stack's problem arrives with memory_efficiency halved (cost/items.cpp stack_costed);
  // the bias bytes are counted exactly, so the pass keeps the fused bandwidth.
  Problem eager = p;
  eager.training.fused_elementwise = false;
  eager.gpu.memory_efficiency = 0.5 * 0.732;
  EXPECT_DOUBLE_EQ(alibi_bias_fwd_s(eager, 4096.0, 2048.0, 28.0), want);
  // No cost with either key off (a fused kernel adds the bias in registers; no ALiBi, no bias).
  EXPECT_FALSE(alibi_materialized(bloom_like(false, true)));
  EXPECT_FALSE(alibi_materialized(bloom_like(true, false)));
  EXPECT_EQ(alibi_bias_fwd_s(bloom_like(false, true), 4096.0, 2048.0, 28.0), 0.0);
  EXPECT_EQ(alibi_bias_fwd_s(bloom_like(true, false), 4096.0, 2048.0, 28.0), 0.0);
  EXPECT_EQ(alibi_bias_fwd_s(p, 0.0, 2048.0, 28.0), 0.0);
}

TEST(Alibi, LayerPaysItInEachForwardPass) {
  const Problem plain = bloom_like(false, true), alibi = bloom_like(true, true);
  const Links l = effective_links(plain.cluster);
  const double pass = alibi_bias_fwd_s(alibi, 4096.0, 2048.0, 28.0);
  ASSERT_GT(pass, 0.0);
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const Candidate c = make_candidate(plain, 4, 1, 8, 2, Schedule::k1F1B, r, 0, 1);
    const ItemCost a = chain_costs(plain, c, l).layer;
    const ItemCost b = chain_costs(alibi, c, l).layer;
    // Full recomputation replays the forward; selective (Megatron's core-attention flavour, the
    // default) replays the core attention with its bias; none replays nothing.
    const double replay = r == Recompute::kNone ? 0.0 : pass;
    EXPECT_NEAR(b.fwd_s - a.fwd_s, pass, 1e-12 * a.fwd_s) << static_cast<int>(r);
    EXPECT_NEAR(b.bwd_s - a.bwd_s, replay, 1e-12 * a.bwd_s) << static_cast<int>(r);
    EXPECT_NEAR(b.compute_s - a.compute_s, pass + replay, 1e-12 * a.compute_s)
        << static_cast<int>(r);
    EXPECT_DOUBLE_EQ(b.wgt_s, a.wgt_s);
    EXPECT_DOUBLE_EQ(b.act_bytes, a.act_bytes);  // the scores buffer exists either way
  }
}

TEST(Alibi, StepTimeGrowsOnlyWithBothKeysAndMemoryStays) {
  const Candidate c =
      make_candidate(bloom_like(false, false), 4, 1, 8, 2, Schedule::k1F1B, Recompute::kFull, 0);
  const Evaluation base = evaluate(bloom_like(false, false), c);
  ASSERT_TRUE(base.feasible);
  for (bool a : {false, true}) {
    for (bool u : {false, true}) {
      const Evaluation e = evaluate(bloom_like(a, u), c);
      ASSERT_TRUE(e.feasible);
      if (a && u) {
        EXPECT_GT(e.iteration_time_s, base.iteration_time_s);
      } else {
        EXPECT_EQ(e.iteration_time_s, base.iteration_time_s) << a << u;
      }
      EXPECT_DOUBLE_EQ(e.needed_bytes, base.needed_bytes);
      EXPECT_DOUBLE_EQ(e.mfu * e.iteration_time_s, base.mfu * base.iteration_time_s);
    }
  }
  // The bias grows with the sequence (s^2 scores against s tokens): longer, larger share.
  Problem s1 = bloom_like(true, true), s0 = bloom_like(false, true);
  const double share2k = evaluate(s1, c).iteration_time_s / evaluate(s0, c).iteration_time_s;
  s1.model.seq_length = s0.model.seq_length = 4096;
  const double share4k = evaluate(s1, c).iteration_time_s / evaluate(s0, c).iteration_time_s;
  EXPECT_GT(share4k, share2k);
}

TEST(Alibi, RunsCsvColumnsReachTheProblem) {
  // The public CSV's BLOOM rows (Megatron-DeepSpeed, --position-embedding-type alibi, no
  // FlashAttention) set both columns; every other row leaves them empty.
  const std::string text = test::validation_text("runs-public.csv");
  ASSERT_FALSE(text.empty());
  int bloom = 0;
  for (const RunRecord& run : parse_runs_csv(text, "runs-public.csv")) {
    const bool is_bloom = run.id.rfind("bloom-", 0) == 0;
    EXPECT_EQ(run.alibi, is_bloom) << run.id;
    EXPECT_EQ(run.unfused_attention.has_value(), is_bloom) << run.id;
    if (!is_bloom) continue;
    ++bloom;
    Problem p = test::llama70b_h200();
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(run, map_gpu(run.gpu), &p, &why)) << why;
    EXPECT_TRUE(p.model.alibi);
    EXPECT_TRUE(p.training.unfused_attention);
  }
  EXPECT_EQ(bloom, 2);
}

TEST(Alibi, RunsCsvRejectsOtherValues) {
  const std::string header =
      "id,source,layers,hidden_size,ffn_hidden_size,attention_heads,kv_heads,vocab_size,"
      "seq_length,mlp,gpu,gpus,gpus_per_node,network_gbit_per_s,tp,pp,vpp,cp,dp,mbs,"
      "global_batch_size,recompute,sequence_parallel,zero_stage,measured_step_time_s,"
      "step_time_derivation,measured_mfu_pct,mfu_convention,trust,alibi,unfused_attention\n";
  const std::string row =
      "r1,src,2,1024,4096,16,16,50000,2048,gelu,a100-80gb,8,8,200,1,1,1,1,8,1,8,full,off,1,"
      "1.0,reported,,,A,";
  EXPECT_NO_THROW(parse_runs_csv(header + row + "1,1\n", "t.csv"));
  EXPECT_NO_THROW(parse_runs_csv(header + row + ",\n", "t.csv"));
  try {
    parse_runs_csv(header + row + "2,\n", "t.csv");
    FAIL() << "alibi = 2 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("alibi"), std::string::npos) << e.what();
  }
  try {
    parse_runs_csv(header + row + "0,yes\n", "t.csv");
    FAIL() << "unfused_attention = yes accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unfused_attention"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

// DeepSpeed's BF16 optimizer (docs/step-time.md "DeepSpeed's BF16 optimizer"): under ZeRO-1 the
// fp32 gradients are all-reduced, not reduce-scattered; ZeRO-0 and ZeRO-3 are unchanged.
Problem bloom_dp() {
  Problem p = bloom_like(false, false);
  p.model.layers = 2;                      // ZeRO-0 must fit too
  p.training.overlap_grad_reduce = false;  // DeepSpeed's pipeline engine: after the flush
  p.training.grad_reduce_in_fp32 = true;
  return p;
}

TEST(Zero1GradAllreduce, ChargesTheFullAllReduceUnderZero1Only) {
  for (int zero : {0, 1, 3}) {
    const Candidate c =
        make_candidate(bloom_dp(), 4, 1, 8, 2, Schedule::k1F1B, Recompute::kFull, 0, zero);
    Problem off = bloom_dp(), on = bloom_dp();
    on.training.zero1_grad_allreduce = true;
    const Evaluation a = evaluate(off, c), b = evaluate(on, c);
    ASSERT_TRUE(a.feasible) << zero;
    ASSERT_TRUE(b.feasible) << zero;
    EXPECT_DOUBLE_EQ(b.needed_bytes, a.needed_bytes) << zero;
    EXPECT_DOUBLE_EQ(b.compute_s, a.compute_s) << zero;
    if (zero == 1) {
      EXPECT_GT(b.dp_comm_total_s, a.dp_comm_total_s);
      EXPECT_GT(b.iteration_time_s, a.iteration_time_s);
      // The all-reduce replaces the reduce-scatter: the added traffic is less than the ZeRO-0
      // all-reduce of the same gradients, and the gather of the updated shards stays.
      const Candidate c0 =
          make_candidate(bloom_dp(), 4, 1, 8, 2, Schedule::k1F1B, Recompute::kFull, 0, 0);
      const Evaluation z0 = evaluate(off, c0);
      ASSERT_TRUE(z0.feasible);
      EXPECT_LT(b.dp_comm_total_s - a.dp_comm_total_s, z0.dp_comm_total_s);
      EXPECT_GT(b.dp_comm_total_s, z0.dp_comm_total_s);
    } else {
      EXPECT_EQ(b.iteration_time_s, a.iteration_time_s) << zero;
      EXPECT_EQ(b.dp_comm_total_s, a.dp_comm_total_s) << zero;
    }
  }
}

TEST(Zero1GradAllreduce, RunsCsvColumnsReachTheProblem) {
  // BLOOM (Megatron-DeepSpeed, BF16_Optimizer, TiedLayerSpec) sets both columns; the Megatron
  // GPT, NeMo GPT-3 175B and llm-foundry MPT rows tie their embeddings; the rest leave them empty.
  const std::string text = test::validation_text("runs-public.csv");
  ASSERT_FALSE(text.empty());
  int tied = 0, allreduce = 0;
  for (const RunRecord& run : parse_runs_csv(text, "runs-public.csv")) {
    const bool is_bloom = run.id.rfind("bloom-", 0) == 0;
    EXPECT_EQ(run.zero1_grad_allreduce.has_value(), is_bloom) << run.id;
    if (is_bloom) {
      EXPECT_TRUE(run.tied_embeddings) << run.id;
    }
    if (run.id.rfind("dgxc-v25", 0) == 0 || run.id.rfind("titan-", 0) == 0) {
      EXPECT_FALSE(run.tied_embeddings) << run.id;  // Llama and Nemotron: untied
    }
    tied += run.tied_embeddings;
    if (run.precision.rfind("fp8", 0) == 0) continue;  // the H200 test problem has no FP8 peak
    Problem p = test::llama70b_h200();
    p.model.tied_embeddings = !run.tied_embeddings;  // the row decides
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(run, map_gpu(run.gpu), &p, &why)) << why;
    EXPECT_EQ(p.model.tied_embeddings, run.tied_embeddings) << run.id;
    if (is_bloom) {
      ++allreduce;
      EXPECT_TRUE(p.training.zero1_grad_allreduce);
    }
  }
  EXPECT_EQ(allreduce, 2);
  EXPECT_EQ(tied, 82);
}

}  // namespace
}  // namespace ppsearch
