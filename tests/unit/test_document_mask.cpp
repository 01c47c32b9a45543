// Document-masked attention (docs/step-time.md "Document-masked attention"): closed forms of the
// keys per query and the work factor, its combination with a sliding window, the per-layer
// correction, monotonicity of the step time in the document length, and neutrality at 0.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/attention_window.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/document_mask.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// Llama 3 8B's shape at 8k tokens (torchtitan's 8B flavour) with a document mask.
Problem llama8b(int document_tokens) {
  Problem p = test::llama8b_like(32);
  p.model.seq_length = 8192;
  p.model.attention_document_tokens = document_tokens;
  p.training.global_batch_size = 16;
  p.gpus = {8};
  return p;
}

TEST(DocumentMask, KeysAndFactorClosedForm) {
  // D + one 128-key block per query against s/2 = 4096 for causal attention.
  EXPECT_DOUBLE_EQ(document_mask_keys(llama8b(550).model), 678.0);
  EXPECT_DOUBLE_EQ(document_mask_factor(llama8b(550).model), 678.0 / 4096.0);
  EXPECT_TRUE(has_document_mask(llama8b(1).model));
  // Neutral without a mask, and capped at causal when documents outgrow half the sequence.
  EXPECT_FALSE(has_document_mask(llama8b(0).model));
  EXPECT_DOUBLE_EQ(document_mask_factor(llama8b(0).model), 1.0);
  EXPECT_DOUBLE_EQ(document_mask_keys(llama8b(0).model), 0.0);
  EXPECT_DOUBLE_EQ(document_mask_factor(llama8b(4096 - 128).model), 1.0);
  EXPECT_LT(document_mask_factor(llama8b(4096 - 129).model), 1.0);
  EXPECT_DOUBLE_EQ(document_mask_factor(llama8b(100000).model), 1.0);
  // The layer correction path takes the document mask as its work factor.
  EXPECT_TRUE(has_attention_window(llama8b(550).model));
  EXPECT_DOUBLE_EQ(attention_work_factor(llama8b(550).model), 678.0 / 4096.0);
  EXPECT_DOUBLE_EQ(windowed_layer_share(llama8b(550).model), 0.0);
}

TEST(DocumentMask, CombinesWithASlidingWindowPerLayer) {
  // Every other layer windowed at w = 128 (256 keys per query); the full layers keep the
  // document mask's 678; a windowed layer takes the smaller of the two.
  Problem p = llama8b(550);
  p.model.attention_window = 128;
  p.model.window_attn_skip_freq = 2;
  EXPECT_DOUBLE_EQ(attention_work_factor(p.model), 0.5 * 256.0 / 4096.0 + 0.5 * 678.0 / 4096.0);
  p.model.attention_document_tokens = 64;  // documents shorter than the window: 192 keys
  EXPECT_DOUBLE_EQ(attention_work_factor(p.model), 192.0 / 4096.0);
  // Without a document mask the window alone, as before.
  p.model.attention_document_tokens = 0;
  EXPECT_DOUBLE_EQ(attention_work_factor(p.model), 0.5 * 256.0 / 4096.0 + 0.5);
}

TEST(DocumentMask, LayerCorrectionIsTheSkippedCoreAttention) {
  const Problem plain = llama8b(0), masked = llama8b(550);
  const Links l = effective_links(plain.cluster);
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const Candidate c = make_candidate(plain, 1, 1, 8, 2, Schedule::k1F1B, r, 0, 3);
    const ItemCost full = chain_costs(plain, c, l).layer;
    ItemCost doc = chain_costs(masked, c, l).layer;
    apply_attention_window(masked, c, &doc);
    // items.cpp: half of 4·b·s_q·s·h_q/t at peak·attention_efficiency; backward 2.5×.
    const double m_tok = 2.0 * 8192, hq = 32.0 * 128;
    const double att = 0.5 * 4.0 * m_tok * 8192 * hq / (plain.gpu.peak_flop_per_s * 0.5);
    const double cut = att * (1.0 - 678.0 / 4096.0);
    const double replay = r == Recompute::kFull ? cut : 0.0;  // selective here is Megatron's
    const double sel = r == Recompute::kSelective ? cut : 0.0;
    EXPECT_NEAR(full.fwd_s - doc.fwd_s, cut, 1e-12);
    EXPECT_NEAR(full.bwd_s - doc.bwd_s, 2.5 * cut + replay + sel, 1e-12);
    EXPECT_DOUBLE_EQ(full.act_bytes, doc.act_bytes);  // the mask changes no saved tensor
  }
}

TEST(DocumentMask, StepTimeFallsWithShorterDocumentsAndZeroChangesNothing) {
  const Candidate c =
      make_candidate(llama8b(0), 1, 1, 4, 1, Schedule::k1F1B, Recompute::kFull, 0, 3, 1, 2);
  const Evaluation causal = evaluate(llama8b(0), c);
  ASSERT_TRUE(causal.feasible);
  double previous = 0;
  for (int d : {64, 256, 550, 1024, 2048}) {
    const Evaluation e = evaluate(llama8b(d), c);
    ASSERT_TRUE(e.feasible);
    EXPECT_LT(e.iteration_time_s, causal.iteration_time_s) << d;
    EXPECT_GT(e.iteration_time_s, previous) << d;  // longer documents, more keys per query
    EXPECT_DOUBLE_EQ(e.needed_bytes, causal.needed_bytes) << d;
    previous = e.iteration_time_s;
  }
  // Documents longer than half the sequence skip no block: the same answer as causal.
  const Evaluation same = evaluate(llama8b(8192), c);
  ASSERT_TRUE(same.feasible);
  EXPECT_DOUBLE_EQ(same.iteration_time_s, causal.iteration_time_s);
}

TEST(DocumentMask, RunsCsvColumnReachesTheModel) {
  // The public CSV's torchtitan PR #1884 rows state the C4 document length; the others are empty.
  const std::string text = test::validation_text("runs-public.csv");
  ASSERT_FALSE(text.empty());
  int masked = 0;
  for (const RunRecord& run : parse_runs_csv(text, "runs-public.csv")) {
    const bool pr1884 = run.id.rfind("titan-pr1884-", 0) == 0;
    EXPECT_EQ(run.attention_document_tokens, pr1884 ? 550 : 0) << run.id;
    if (!pr1884) continue;
    ++masked;
    Problem p = llama70b_h200();
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(run, map_gpu(run.gpu), &p, &why)) << why;
    EXPECT_EQ(p.model.attention_document_tokens, 550);
  }
  EXPECT_EQ(masked, 2);
}

}  // namespace
}  // namespace ppsearch
