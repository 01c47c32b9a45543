// Selective recomputation of MLA's up projections alone (training.selective_recompute =
// mla-up-proj, Megatron-Core recompute_modules = [mla_up_proj]; docs/moe.md "Recomputation"):
// Q, K and V are dropped and their up GEMMs run again, the core attention and the experts'
// activation are kept, and on a model without MLA it changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// A small DeepSeek-V3-like model: MLA (stand-in head_dim = (qk + v)/2, kv_heads = heads), 8
// experts top-2, the first layer dense.
Problem small_mla_moe() {
  Problem p = llama70b_h200();
  p.model.layers = 8;
  p.model.hidden_size = 2048;
  p.model.ffn_hidden_size = 8192;
  p.model.attention_heads = 16;
  p.model.kv_heads = 16;
  p.model.mla_q_lora_rank = 512;
  p.model.mla_kv_lora_rank = 256;
  p.model.mla_qk_rope_head_dim = 64;
  p.model.mla_qk_nope_head_dim = 128;
  p.model.mla_v_head_dim = 128;
  p.model.head_dim = (128 + 64 + 128) / 2;
  p.model.vocab_size = 32000;
  p.model.seq_length = 4096;
  p.model.moe_experts = 8;
  p.model.moe_top_k = 2;
  p.model.moe_ffn_hidden_size = 1024;
  p.model.moe_first_dense_layers = 1;
  p.training.global_batch_size = 64;
  p.gpus = {16};
  return p;
}

MoeItems items_for(const Problem& p, Recompute r, SelectiveRecompute how) {
  Problem q = p;
  q.training.selective_recompute = how;
  const Links l = effective_links(q.cluster);
  Candidate c = make_candidate(q, 2, 2, 4, 1, Schedule::k1F1B, r, 1, 1);
  c.ep = 4;
  return moe_items(q, c, l, chain_costs(q, c, l).layer,
                   chain_costs(attention_only_problem(q), c, l).layer);
}

TEST(MlaUpProjRecompute, DropsQkvAndReplaysTheUpGemmsOnly) {
  const Problem p = small_mla_moe();
  const MoeItems none = items_for(p, Recompute::kNone, SelectiveRecompute::kCoreAttention);
  const MoeItems up = items_for(p, Recompute::kSelective, SelectiveRecompute::kMlaUpProj);
  const MoeItems core = items_for(p, Recompute::kSelective, SelectiveRecompute::kCoreAttention);
  const double t = 2, tokens = 4096, a = 16;
  const double hq = a * p.model.head_dim, hkv = hq;  // the stand-in's Q, K, V widths
  const double qkv = 2.0 * tokens * (hq + 2 * hkv) / t * p.gpu.activation_overhead;
  for (const auto& [n, u, k] : {std::tuple{none.moe_layer, up.moe_layer, core.moe_layer},
                                std::tuple{none.dense_layer, up.dense_layer, core.dense_layer}}) {
    // Memory: exactly Q, K and V fewer than without recomputation (the softmax statistics and
    // the experts' activation output stay).
    EXPECT_NEAR(n.act_bytes - u.act_bytes, qkv, 1.0);
    // Core-attention selective drops more (the log-sum-exp, and moe_act on a MoE layer).
    EXPECT_LT(k.act_bytes, u.act_bytes);
    // Time: the forward is the same; the backward adds the q and kv up GEMMs again.
    const GemmPrecision lp = precision_plan(p.training, p.gpu).linear;
    const double redo = gemm_time(tokens, a * 192 / t, 512, p.gpu, lp) +
                        gemm_time(tokens, a * 256 / t, 256, p.gpu, lp);
    EXPECT_DOUBLE_EQ(u.fwd_s, n.fwd_s);
    EXPECT_NEAR(u.bwd_s - n.bwd_s, redo, 1e-12);
    // The core-attention flavour also replays the core attention forward.
    EXPECT_GT(k.bwd_s, u.bwd_s);
    EXPECT_DOUBLE_EQ(u.static_bytes, n.static_bytes);
  }
}

TEST(MlaUpProjRecompute, NothingOnAModelWithoutMla) {
  Problem p = small_mla_moe();
  p.model.mla_q_lora_rank = p.model.mla_kv_lora_rank = 0;
  p.model.mla_qk_rope_head_dim = p.model.mla_qk_nope_head_dim = p.model.mla_v_head_dim = 0;
  p.model.head_dim = 128;
  p.model.kv_heads = 4;
  const MoeItems none = items_for(p, Recompute::kNone, SelectiveRecompute::kCoreAttention);
  const MoeItems up = items_for(p, Recompute::kSelective, SelectiveRecompute::kMlaUpProj);
  for (const auto& [n, u] :
       {std::pair{none.moe_layer, up.moe_layer}, std::pair{none.dense_layer, up.dense_layer}}) {
    EXPECT_DOUBLE_EQ(u.act_bytes, n.act_bytes);
    EXPECT_DOUBLE_EQ(u.transient_bytes, n.transient_bytes);
    EXPECT_DOUBLE_EQ(u.time_s(), n.time_s());
  }
  EXPECT_EQ(
      recompute_flops_per_step(p.model, 64, Recompute::kSelective, SelectiveRecompute::kMlaUpProj),
      0.0);
}

TEST(MlaUpProjRecompute, RecomputeFlopsAreTheUpGemmsByHand) {
  const Problem p = small_mla_moe();
  // Per token and layer 2·(q_lora·a·(nope + rope) + kv_lora·a·(nope + v)).
  const double per_token = 2.0 * (512.0 * 16 * 192 + 256.0 * 16 * 256);
  const double want = 64.0 * 4096 * 8 * per_token;
  EXPECT_NEAR(
      recompute_flops_per_step(p.model, 64, Recompute::kSelective, SelectiveRecompute::kMlaUpProj) /
          want,
      1.0, 1e-12);
}

TEST(MlaUpProjColumn, RowsStateTheFlavourAndTheValidatorAppliesIt) {
  const std::vector<RunRecord> runs =
      parse_runs_csv(test::validation_text("runs-moe.csv"), "runs-moe.csv");
  int stated = 0;
  for (const RunRecord& r : runs) {
    if (r.selective_recompute.empty()) continue;
    ++stated;
    EXPECT_EQ(r.selective_recompute, "mla-up-proj") << r.id;
    ASSERT_TRUE(r.recompute.has_value()) << r.id;
    EXPECT_EQ(*r.recompute, Recompute::kSelective) << r.id;
    Problem p = test::qwen3_30b_fp8_like(Fp8Recipe::kMxfp8, true);  // a loaded GPU and cluster
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << why;
    EXPECT_EQ(p.training.selective_recompute, SelectiveRecompute::kMlaUpProj) << r.id;
  }
  EXPECT_EQ(stated, 12);  // the DeepSeek-V3 rows whose recipe lists mla_up_proj alone
}

TEST(MlaUpProjColumn, ABadCellNamesItsColumnAndLine) {
  std::string text = test::validation_text("runs-moe.csv"), was;
  ASSERT_TRUE(test::replace_cell(&text, "mb2602-gb200-dsv3-fp8mx", "selective_recompute",
                                 "mla_up_proj", &was));
  ASSERT_EQ(was, "mla-up-proj");
  try {
    parse_runs_csv(text, "runs-moe.csv");
    FAIL() << "accepted";
  } catch (const ConfigError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("selective_recompute"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mla-up-proj"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runs-moe.csv:"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ppsearch
