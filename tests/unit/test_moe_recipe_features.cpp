// The 26.06 MoE recipe features (docs/moe.md "26.06 recipe features"): FP8 core attention, the
// fused grouped expert MLP and Megatron-Core's combined-1F1B EP overlap, by closed form; and
// each flag off, or on where it does not apply, leaving the costs as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/builders.hpp"
#include "../support/moe_items.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// Qwen3-30B-A3B-shaped (128 experts of width 768, top 8) on an FP8 / MXFP8-capable GPU.
Problem qwen3_like(Fp8Recipe recipe) { return test::qwen3_30b_fp8_like(recipe, true); }

ItemCost moe_layer(const Problem& p, const Candidate& c) {
  return test::moe_items_of(p, c).moe_layer;
}

Candidate ep8(const Problem& p, int mbs = 2) {
  Candidate c = make_candidate(p, 1, 1, 8, mbs, Schedule::k1F1B, Recompute::kNone, 0, 1);
  c.ep = 8;
  return c;
}

// ---- FP8 attention ------------------------------------------------------------------------

TEST(Fp8Attention, SpeedupIsThePeakRatioTimesFlashAttention3sEfficiencyRatio) {
  // FA-3: 740 of 989 TFLOP/s in 16-bit, 1,200 of 1,979 in FP8.
  EXPECT_NEAR(kFp8AttentionEfficiencyRatio, (1200.0 / 1979) / (740.0 / 989), 1e-15);
  EXPECT_NEAR(kFp8AttentionEfficiencyRatio, 0.8104, 1e-4);
  Problem p = qwen3_like(Fp8Recipe::kMxfp8);
  EXPECT_EQ(fp8_attention_speedup(p.training, p.gpu), 1.0);  // key off
  p.training.fp8_attention = true;
  EXPECT_NEAR(fp8_attention_speedup(p.training, p.gpu), 1979.0 / 989 * 0.8104, 1e-3);
  p.training.precision = "bf16";  // FP8 attention needs an FP8 run
  EXPECT_EQ(fp8_attention_speedup(p.training, p.gpu), 1.0);
  p.training.precision = "fp8";
  p.gpu.peak_fp8_flop_per_s = 0;  // no FP8 tensor cores
  EXPECT_EQ(fp8_attention_speedup(p.training, p.gpu), 1.0);
}

TEST(Fp8Attention, CutsTheCoreAttentionTimeOfADenseLayerByItsSpeedup) {
  // Core attention (items.cpp): forward 0.5·4·m·s·h_q/t at peak × attention_efficiency,
  // backward 2.5×; FP8 divides both by r = fp8_attention_speedup.
  Problem off = llama70b_h200();
  off.gpu.peak_fp8_flop_per_s = 1979e12;
  off.training.precision = "fp8";
  off.training.fp8_recipe = Fp8Recipe::kCurrent;
  Problem on = off;
  on.training.fp8_attention = true;
  const int tp = 4;
  const Candidate c = make_candidate(off, tp, 1, 32, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  const Links l = effective_links(off.cluster);
  const ItemCost a = chain_costs(off, c, l).layer, b = chain_costs(on, c, l).layer;
  const double m = 8192, s = 8192, hq = 64.0 * 128;
  const double att = 0.5 * 4 * m * s * hq / tp / (989e12 * off.gpu.attention_efficiency);
  const double r = 1979.0 / 989 * kFp8AttentionEfficiencyRatio;
  EXPECT_NEAR(a.fwd_s - b.fwd_s, att * (1 - 1 / r), 1e-9 * a.fwd_s);
  EXPECT_NEAR(a.bwd_s - b.bwd_s, 2.5 * att * (1 - 1 / r), 1e-9 * a.bwd_s);
  EXPECT_DOUBLE_EQ(a.wgt_s, b.wgt_s);  // GEMMs untouched
}

TEST(Fp8Attention, LeavesABf16RunUnchanged) {
  Problem p = qwen3_like(Fp8Recipe::kMxfp8);
  p.training.precision = "bf16";
  Problem q = p;
  q.training.fp8_attention = true;
  const Candidate c = ep8(p);
  EXPECT_EQ(evaluate(p, c).iteration_time_s, evaluate(q, c).iteration_time_s);
}

// ---- Fused grouped MLP -----------------------------------------------------------------------

TEST(FusedGroupedMlp, AllExpertsTilesShareTheirWaves) {
  // 33 experts of 2 × 2 output tiles each on 132 SMs: one launch is one wave of 132 tiles (no
  // split-K, since the tiles fill the SMs), where the per-expert form pays a wave per expert.
  // HBM made fast enough that the math bounds the time.
  Problem p = qwen3_like(Fp8Recipe::kMxfp8);
  p.gpu.hbm_bytes_per_s = 100e12;
  // The FP8 grouped GEMM factor (docs/moe.md "FP8 grouped GEMM efficiency") left out here;
  // tests/unit/test_moe_grouped_fp8.cpp covers it.
  p.training.moe_grouped_gemm_efficiency_fp8 = 1.0;
  p.gpu.mxfp8_gemm_efficiency = 1.0;  // the MXFP8 GEMM rate: tests/unit/test_mxfp8.cpp
  const GpuSpec& g = p.gpu;
  ASSERT_EQ(g.sm_count, 132);
  const double E = 33, tm = g.gemm_tile_m, tn = g.gemm_tile_n, k = 4096;
  const double one_wave = 2.0 * tm * tn * (k + g.gemm_k_overhead) / (1979e12 * 0.6 / 132);
  EXPECT_NEAR(fused_grouped_gemm_time(E, 2 * tm, 2 * tn, k, p), one_wave + g.gemm_overhead_s,
              1e-9 * one_wave);
  // Rows padded to whole tiles: tm + 1 rows per expert cost as much as 2·tm rows.
  EXPECT_DOUBLE_EQ(fused_grouped_gemm_time(E, tm + 1, 2 * tn, k, p),
                   fused_grouped_gemm_time(E, 2 * tm, 2 * tn, k, p));
  // training.moe_grouped_gemm_efficiency divides the throughput.
  Problem slow = p;
  slow.training.moe_grouped_gemm_efficiency = 0.5;
  EXPECT_NEAR(fused_grouped_gemm_time(E, 2 * tm, 2 * tn, k, slow) - g.gemm_overhead_s, 2 * one_wave,
              1e-9 * one_wave);
  EXPECT_EQ(fused_grouped_gemm_time(0, tm, tn, k, p), 0.0);
}

TEST(FusedGroupedMlp, EpiloguesSaveTheActivationAndTheFc2InputCast) {
  // SwiGLU: forward 2·3 bytes (activation) + 2 (the cast's bf16 read) per element of F_e,
  // backward 4·3 (the activation backward).
  const double rows = 65536, fe = 768, bw = 3e12;
  const FusedMlpSaving s = fused_grouped_mlp_saving(rows, fe, true, 4.0 + 1.0 / 16, bw);
  EXPECT_NEAR(s.fwd_s, rows * fe * 8.0 / bw, 1e-18);
  EXPECT_NEAR(s.bwd_s, rows * fe * 12.0 / bw, 1e-18);
  const FusedMlpSaving g = fused_grouped_mlp_saving(rows, fe, false, 4.0, bw);
  EXPECT_NEAR(g.fwd_s, rows * fe * 6.0 / bw, 1e-18);
  EXPECT_NEAR(g.bwd_s, rows * fe * 8.0 / bw, 1e-18);
}

TEST(FusedGroupedMlp, OnlyMxfp8RunsTakeIt) {
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kCurrent}) {
    Problem p = qwen3_like(r), q = p;
    q.training.moe_fused_grouped_mlp = true;
    EXPECT_FALSE(fused_grouped_mlp_active(q.training, q.gpu));
    const Candidate c = ep8(p);
    EXPECT_EQ(moe_layer(p, c).fwd_s, moe_layer(q, c).fwd_s);
    EXPECT_EQ(moe_layer(p, c).bwd_s, moe_layer(q, c).bwd_s);
  }
  Problem p = qwen3_like(Fp8Recipe::kMxfp8), q = p;
  q.training.moe_fused_grouped_mlp = true;
  EXPECT_TRUE(fused_grouped_mlp_active(q.training, q.gpu));
  const Candidate c = ep8(p);
  const ItemCost a = moe_layer(p, c), b = moe_layer(q, c);
  // 16 local experts of 8192 routed copies each: fewer waves, and the epilogue savings.
  const double rows = 2.0 * 4096 * 8, fe = 768;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  EXPECT_GT(a.fwd_s - b.fwd_s, rows * fe * 8.0 / bw * 0.999);
  EXPECT_GT(a.bwd_s - b.bwd_s, rows * fe * 12.0 / bw * 0.999);
  EXPECT_LE(b.wgt_s, a.wgt_s);
}

// ---- EP overlap as Megatron-Core's combined 1F1B runs it -------------------------------------

TEST(CombinedOneFOneB, NothingHidesWithoutComputationAndAllBehindEnough) {
  CombinedLayerWork w;
  w.a2a = 1.0;
  EXPECT_DOUBLE_EQ(combined_1f1b_exposed_a2a(w), 4.0);  // no computation: all four exposed
  w.attn_fwd = 1.0;
  w.attn_bwd = 1.0;
  w.mlp_bwd = 1.0;
  w.mlp_fwd = 1.0;
  EXPECT_DOUBLE_EQ(combined_1f1b_exposed_a2a(w), 0.0);  // each all-to-all beside ≥ its length
  w.a2a = 0;
  EXPECT_DOUBLE_EQ(combined_1f1b_exposed_a2a(w), 0.0);
}

TEST(CombinedOneFOneB, PhasesByHand) {
  // a = 2, attention 1 / 1 + 0.5, experts fwd 1, bwd 1 + 0.5: phase 1 max(2, 1) = 2; phase 2
  // comm max(2, 1) + 2 = 4, compute max(1.5, 2) + 1 = 3 → 4; phase 3 max(2, 1.5) = 2. Total 8,
  // computation 5: 3 s exposed of 8.
  CombinedLayerWork w{2.0, 1.0, 1.0, 0.5, 1.0, 1.0, 0.5, 0.0};
  EXPECT_DOUBLE_EQ(combined_1f1b_exposed_a2a(w), 3.0);
  EXPECT_DOUBLE_EQ(moe_a2a_hidden_share(1.0, w, 1.0), 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(moe_a2a_hidden_share(0.5, w, 0.5), 0.25 * 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(moe_a2a_hidden_share(0.0, w, 1.0), 0.0);
  // SM share 0.2 of the comm kernels: a = 0.5, attention 2 / 3 + 1, experts 1 / 2 + 1.
  // Phase 1: 2 + 0.5·0.2 = 2.1; phase 2: comm max(0.5, 2) + 0.5 = 2.5, compute
  // max(3, 0.5) + 1 + min(1, 4)·0.2 = 4.2; phase 3: 4 + 0.5·0.2 = 4.1. Total 10.4 − 10.
  CombinedLayerWork s{0.5, 2.0, 3.0, 1.0, 1.0, 2.0, 1.0, 0.2};
  EXPECT_NEAR(combined_1f1b_exposed_a2a(s), 0.4, 1e-12);
}

TEST(CombinedOneFOneB, WarmUpForwardsRunAlone) {
  // pp·vpp of the n·vpp passes per rank on average (Megatron-Core get_pp_rank_microbatches
  // with the overlap's extra warm-up forward): 1 − pp/n.
  EXPECT_DOUBLE_EQ(a2a_overlap_steady_share(1, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(a2a_overlap_steady_share(4, 32), 28.0 / 32.0);
  EXPECT_DOUBLE_EQ(a2a_overlap_steady_share(4, 4), 0.0);
  EXPECT_DOUBLE_EQ(a2a_overlap_steady_share(8, 2), 0.0);
}

TEST(CombinedOneFOneB, TheMoeLayerExposesWhatTheClosedFormLeaves) {
  // EP 8 on the 8-GPU NVLink domain, 4 micro-batches of 2 (pp = 1: 3 of 4 combined).
  Problem p = qwen3_like(Fp8Recipe::kMxfp8);
  p.training.precision = "bf16";
  p.training.global_batch_size = 64;
  Problem q = p;
  q.training.moe_a2a_overlap = 1.0;
  const Candidate c = ep8(p);
  const ItemCost a = moe_layer(p, c), b = moe_layer(q, c);
  EXPECT_DOUBLE_EQ(a.ep_comm_s, a.ep_total_s);  // no overlap: all exposed
  ASSERT_GT(a.ep_total_s, 0.0);
  EXPECT_LT(b.ep_comm_s, a.ep_comm_s);
  EXPECT_GE(b.ep_comm_s, a.ep_comm_s * (1.0 - 0.75) - 1e-15);  // at most the 3/4 combined
  EXPECT_EQ(a.compute_s, b.compute_s);
}

// ---- runs-moe.csv columns -------------------------------------------------------------------

const RunRecord& find_run(const std::vector<RunRecord>& runs, const std::string& id) {
  for (const RunRecord& r : runs)
    if (r.id == id) return r;
  ADD_FAILURE() << "no row " << id;
  return runs.front();
}

TEST(RecipeFeatureColumns, AreReadAndReachTheTrainingKeys) {
  const std::string text = test::validation_text("runs-moe.csv");
  const std::vector<RunRecord> runs = parse_runs_csv(text, "runs-moe.csv");
  // DeepSeek-V3 GB200 MXFP8 26.06: overlap and the fused MLP, no FP8 attention (the recipe's
  // DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V1 sets no fp8_dot_product_attention).
  const RunRecord& g = find_run(runs, "mb2606-gb200-dsv3-fp8mx");
  ASSERT_TRUE(g.moe_a2a_overlap && g.fp8_attention && g.moe_fused_grouped_mlp);
  EXPECT_EQ(*g.moe_a2a_overlap, 1.0);
  EXPECT_FALSE(*g.fp8_attention);
  EXPECT_TRUE(*g.moe_fused_grouped_mlp);
  const RunRecord& q = find_run(runs, "mb2606-gb300-qwen3-30b-fp8mx");
  EXPECT_TRUE(q.fp8_attention.value_or(false));
  const RunRecord& b = find_run(runs, "mb2511-gb300-dsv3-bf16");
  ASSERT_TRUE(b.moe_a2a_overlap.has_value());
  EXPECT_EQ(*b.moe_a2a_overlap, 0.0);
  Problem p = qwen3_like(Fp8Recipe::kMxfp8);
  p.training.moe_a2a_overlap = 0.3;  // as a --set would leave it
  std::string why;
  ASSERT_TRUE(apply_run_to_problem(q, map_gpu(q.gpu), &p, &why)) << why;
  EXPECT_EQ(p.training.moe_a2a_overlap, 1.0);
  EXPECT_TRUE(p.training.fp8_attention);
  EXPECT_TRUE(p.training.moe_fused_grouped_mlp);
  // An empty cell keeps the loaded value.
  RunRecord e = q;
  e.moe_a2a_overlap.reset();
  e.fp8_attention.reset();
  Problem p2 = qwen3_like(Fp8Recipe::kMxfp8);
  p2.training.moe_a2a_overlap = 0.3;
  ASSERT_TRUE(apply_run_to_problem(e, map_gpu(e.gpu), &p2, &why)) << why;
  EXPECT_EQ(p2.training.moe_a2a_overlap, 0.3);
  EXPECT_FALSE(p2.training.fp8_attention);
}

TEST(RecipeFeatureColumns, ABadCellNamesItsColumnAndLine) {
  std::string text = test::validation_text("runs-moe.csv"), was;
  ASSERT_TRUE(test::replace_cell(&text, "mb2606-gb200-dsv3-fp8mx", "moe_a2a_overlap", "1.5", &was));
  ASSERT_EQ(was, "1");
  ASSERT_TRUE(test::replace_cell(&text, "mb2606-gb200-dsv3-fp8mx", "fp8_attention", "2", &was));
  ASSERT_EQ(was, "0");
  try {
    parse_runs_csv(text, "runs-moe.csv");
    FAIL() << "accepted";
  } catch (const ConfigError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("moe_a2a_overlap"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fp8_attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runs-moe.csv:"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ppsearch
