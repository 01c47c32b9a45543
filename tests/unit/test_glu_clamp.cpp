// Clamped gated activation (docs/moe.md "Clamped GLU activation"): the eager clamp of
// Megatron-Core's weighted_bias_quick_geglu_impl by hand, when it applies, and its place in the
// MoE layer's time and memory under each recomputation.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "../support/builders.hpp"
#include "../support/moe_items.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/glu_clamp.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// GPT-OSS-120B's shape (configs/models/gpt-oss-120b.ini) on the builders' H200 cluster.
Problem gpt_oss_like(double clamp) {
  Problem p = test::gpt_oss_moe_like();
  p.model.activation_clamp = clamp;
  return p;
}

TEST(GluClamp, BytesByHand) {
  const Problem p = gpt_oss_like(7.0);
  // 65,536 routed copies, FC1 output 2 × 2880 wide.
  const double rows = 4.0 * 4096 * 4, fc1_n = 2 * 2880.0, elems = rows * fc1_n;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const GluClampCost gc = glu_clamp_cost(p, rows, fc1_n, false);
  // Forward: two clamps (2 + 2) and the cat (2 + 2) per element = 8 B.
  EXPECT_DOUBLE_EQ(gc.fwd_s, 8.0 * elems / bw);
  // Backward: clamp_backward with max only: le 3 + where 5 = 8; with both bounds: ge 3 + le 3
  // + logical_and_ 3 + where 5 = 14; each on half the elements; chunk's cat 4: 15 B.
  EXPECT_DOUBLE_EQ(gc.bwd_s, ((8.0 + 14.0) / 2 + 4.0) * elems / bw);
  EXPECT_DOUBLE_EQ(gc.saved_bytes, 2.0 * elems);
  EXPECT_EQ(gc.recompute_fwd_s, 0.0);
  // Under moe_act: nothing extra saved, the forward runs again.
  const GluClampCost ra = glu_clamp_cost(p, rows, fc1_n, true);
  EXPECT_EQ(ra.saved_bytes, 0.0);
  EXPECT_DOUBLE_EQ(ra.recompute_fwd_s, gc.fwd_s);
  EXPECT_DOUBLE_EQ(ra.fwd_s, gc.fwd_s);
  // Linear in the routed copies.
  EXPECT_DOUBLE_EQ(glu_clamp_cost(p, 2 * rows, fc1_n, false).bwd_s, 2 * gc.bwd_s);
}

TEST(GluClamp, OnlyUnfusedGatedExpertsOfAClampedMoeModelPay) {
  Problem p = gpt_oss_like(7.0);
  EXPECT_TRUE(glu_clamp_unfused(p));
  p.training.moe_fused_grouped_mlp = true;  // TE's ScaledClampedQGeGLU clamps inside its op
  EXPECT_FALSE(glu_clamp_unfused(p));
  EXPECT_EQ(glu_clamp_cost(p, 1000, 5760, false).fwd_s, 0.0);
  Problem none = gpt_oss_like(0.0);
  EXPECT_FALSE(glu_clamp_unfused(none));
  EXPECT_EQ(glu_clamp_cost(none, 1000, 5760, false).bwd_s, 0.0);
  Problem gelu = gpt_oss_like(7.0);
  gelu.model.mlp = MlpKind::kGeLU;  // not gated: Megatron-Core's clamp is the GLU's
  EXPECT_FALSE(glu_clamp_unfused(gelu));
  Problem dense = gpt_oss_like(7.0);
  dense.model.moe_experts = 0;
  dense.model.moe_top_k = 0;
  EXPECT_FALSE(glu_clamp_unfused(dense));
}

TEST(GluClamp, MoeLayerGainsExactlyTheClampPasses) {
  const Problem with = gpt_oss_like(7.0), without = gpt_oss_like(0.0);
  const double rows = 4.0 * 4096 * 4;  // balanced: every rank's copies land on this rank
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Candidate c = make_candidate(with, 1, 1, 64, 4, Schedule::k1F1B, r, 0, 1);
    c.ep = 8;
    const ItemCost a = test::moe_items_of(with, c).moe_layer,
                   b = test::moe_items_of(without, c).moe_layer;
    // selective with the default flavour recomputes moe_act (docs/moe.md "Recomputation").
    const bool moe_act = r == Recompute::kSelective;
    const GluClampCost gc = glu_clamp_cost(with, rows, 2 * 2880.0, moe_act);
    ASSERT_GT(gc.fwd_s, 0.0);
    const double redo = r == Recompute::kNone ? 0.0 : gc.fwd_s;
    EXPECT_NEAR(a.fwd_s - b.fwd_s, gc.fwd_s, 1e-12);
    EXPECT_NEAR(a.bwd_s - b.bwd_s, gc.bwd_s + redo, 1e-12);
    EXPECT_NEAR(a.compute_s - b.compute_s, gc.fwd_s + gc.bwd_s + redo, 1e-12);
    EXPECT_DOUBLE_EQ(a.wgt_s, b.wgt_s);
    const double extra = 2.0 * rows * 2 * 2880.0 * with.gpu.activation_overhead;
    if (r == Recompute::kNone) {
      EXPECT_NEAR(a.act_bytes - b.act_bytes, extra, 1.0);
      EXPECT_NEAR(a.transient_bytes, b.transient_bytes, 1.0);
    } else if (r == Recompute::kFull) {
      EXPECT_NEAR(a.transient_bytes - b.transient_bytes, extra, 1.0);
      EXPECT_NEAR(a.act_bytes, b.act_bytes, 1.0);
    } else {
      EXPECT_NEAR(a.act_bytes, b.act_bytes, 1.0);
    }
  }
}

TEST(GluClamp, StepTimeGrowsOnlyForTheClampedModel) {
  const Problem with = gpt_oss_like(7.0), without = gpt_oss_like(0.0);
  Candidate c = make_candidate(with, 1, 1, 64, 1, Schedule::k1F1B, Recompute::kFull, 0, 1);
  c.ep = 64;
  const Evaluation a = evaluate(with, c), b = evaluate(without, c);
  ASSERT_TRUE(a.feasible) << to_string(a.reason) << " " << a.needed_bytes / 1e9;
  ASSERT_TRUE(b.feasible);
  EXPECT_GT(a.iteration_time_s, b.iteration_time_s);
  // A dense model ignores the key.
  Problem d1 = llama70b_h200(), d2 = llama70b_h200();
  d2.model.activation_clamp = 7.0;
  const Candidate cd = make_candidate(d1, 8, 4, 4, 1, Schedule::k1F1B);
  EXPECT_DOUBLE_EQ(evaluate(d1, cd).iteration_time_s, evaluate(d2, cd).iteration_time_s);
}

std::string read_moe_runs() {
  const std::string path = std::string(PPSEARCH_SOURCE_DIR) + "/tests/validation/runs-moe.csv";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The runs CSV column: the GPT-OSS rows state the recipes' 7.0, every other row none; the value
// reaches the model; a bad cell is an issue naming the column and what is allowed.
TEST(GluClamp, RunsCsvColumnReachesTheModel) {
  const std::string text = read_moe_runs();
  const std::vector<RunRecord> runs = parse_runs_csv(text, "runs-moe.csv");
  int gpt_oss = 0;
  for (const RunRecord& r : runs) {
    const bool is_gpt_oss = r.id.find("gptoss") != std::string::npos;
    EXPECT_EQ(r.activation_clamp, is_gpt_oss ? 7.0 : 0.0) << r.id;
    gpt_oss += is_gpt_oss;
    // The builders' H200 has no FP8 peak: the BF16 rows carry the value to the model.
    if (!is_gpt_oss || r.precision != "bf16") continue;
    Problem p = test::llama70b_h200();
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << r.id << ": " << why;
    EXPECT_EQ(p.model.activation_clamp, 7.0) << r.id;
  }
  EXPECT_EQ(gpt_oss, 17);
  // A negative cell in the first GPT-OSS row.
  const std::size_t at = text.find("\nmb2602-gb300-gptoss-120b-bf16,");
  ASSERT_NE(at, std::string::npos);
  const std::size_t eol = text.find('\n', at + 1);
  const std::size_t comma = text.rfind(',', eol);
  ASSERT_EQ(text.substr(comma, eol - comma), ",7");
  std::string bad = text;
  bad.replace(comma, eol - comma, ",-1");
  try {
    parse_runs_csv(bad, "t.csv");
    ADD_FAILURE() << "no issue for activation_clamp = -1";
  } catch (const ConfigError& e) {
    bool found = false;
    for (const auto& i : e.issues()) {
      found |=
          i.message().find("activation_clamp = -1: a number in [0, 10000]") != std::string::npos;
    }
    EXPECT_TRUE(found) << e.what();
  }
}

}  // namespace
}  // namespace ppsearch
