// FP8 training (docs/precision.md): the plan per recipe, the casts and memory of a layer
// against hand counts, and the refusal of fp8 on a GPU without FP8 tensor cores.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

using test::gpt175b_a100;
using test::llama70b_h200;
using test::make_candidate;

Problem fp8(Problem p, Fp8Recipe r = Fp8Recipe::kDelayed) {
  p.training.precision = "fp8";
  p.training.fp8_recipe = r;
  return p;
}

TEST(Precision, PlanPerRecipe) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  const PrecisionPlan bf16 = precision_plan(p.training, p.gpu);
  EXPECT_FALSE(bf16.fp8);
  EXPECT_EQ(bf16.cast_bytes_per_element, 0.0);
  EXPECT_EQ(bf16.weight_copy_bytes, 0.0);
  EXPECT_EQ(bf16.saved_input_bytes, 2.0);
  const PrecisionPlan delayed = precision_plan(fp8(p).training, p.gpu);
  EXPECT_EQ(delayed.linear, GemmPrecision::kFp8);
  EXPECT_EQ(delayed.cast_bytes_per_element, 4.0);  // read 2, write FP8 + transposed FP8
  EXPECT_EQ(delayed.weight_copy_bytes, 2.0);
  EXPECT_EQ(delayed.saved_input_bytes, 1.0);
  EXPECT_EQ(precision_plan(fp8(p, Fp8Recipe::kCurrent).training, p.gpu).cast_bytes_per_element,
            6.0);  // + the amax read
  EXPECT_EQ(precision_plan(fp8(p, Fp8Recipe::kMxfp8).training, p.gpu).cast_bytes_per_element,
            4.0 + 2.0 / 32);
  Problem primary = fp8(p);
  primary.training.fp8_param_gather = true;  // FP8 weight replaces the bf16 one
  EXPECT_EQ(precision_plan(primary.training, p.gpu).weight_copy_bytes, 1.0 - 2.0);
  // No FP8 tensor cores: the plan stays bf16.
  p.gpu.peak_fp8_flop_per_s = 0;
  EXPECT_FALSE(precision_plan(fp8(p).training, p.gpu).fp8);
}

// A layer in bf16 and in FP8 with FP8 GEMMs exactly as fast as bf16 ones (same peak and
// efficiency, no k fill, compute-bound shapes): the compute time differs by the casts alone.
TEST(Precision, CastsAreCountedByHand) {
  Problem p = llama70b_h200();
  p.gpu.gemm_k_overhead = 0;
  p.gpu.peak_fp8_flop_per_s = p.gpu.peak_flop_per_s;
  p.gpu.gemm_efficiency_fp8 = p.gpu.gemm_efficiency;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const ChainCosts b = chain_costs(p, c, links);
  const ChainCosts f = chain_costs(fp8(p), c, links);
  const double m = c.mbs * double(p.model.seq_length), t = c.tp;
  const double h = p.model.hidden_size, F = p.model.ffn_hidden_size;
  const double hq = double(p.model.attention_heads) * p.model.head_dim;
  const double hkv = double(p.model.kv_heads) * p.model.head_dim;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double n_micro = double(p.training.global_batch_size) / (c.dp * c.mbs);
  // Forward: X of QKV and FC1 (h/t each with SP), of the out-projection (h_q/t) and FC2 (F/t);
  // the weights once per step; backward: dY of QKV, out-projection, FC1 (gate + up), FC2.
  const double x = m * (2 * h / t + hq / t + F / t);
  const double w = (h * (hq + 2 * hkv) + hq * h + 3 * h * F) / t;
  const double dy = m * ((hq + 2 * hkv) / t + 2 * h / t + 2 * F / t);
  // Read 2 bytes, write the FP8 copy and its transpose: 4 bytes an element; but the four
  // sequence-parallel tensors (QKV's and FC1's inputs, the out-projection's and FC2's output
  // gradients, h/t each) are cast row-wise only (3 bytes) and gathered in FP8, and the backward
  // transposes the four gathered m x h tensors (read 1, write 1) for wgrad.
  const double gathered = m * 4 * h / t;
  const double cast = (4.0 * (x + w / n_micro + dy) - 1.0 * gathered + 2.0 * 4 * m * h) / bw;
  // The GEMMs match only up to the roofline's FP8 bytes, which do not bind here.
  EXPECT_NEAR(f.layer.compute_s - b.layer.compute_s, cast, 1e-6 * cast);
  EXPECT_GT(cast, 0.0);
}

TEST(Precision, Fp8LayerIsFasterOnHopper) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.gemm_efficiency_fp8 = 0.65;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const double bf16 = chain_costs(p, c, links).layer.compute_s;
  const double f8 = chain_costs(fp8(p), c, links).layer.compute_s;
  EXPECT_LT(f8, 0.8 * bf16);
  EXPECT_GT(f8, 0.4 * bf16);  // attention, element-wise ops and casts stay
}

TEST(Precision, MemoryByHand) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const ChainCosts b = chain_costs(p, c, links);
  const ChainCosts f = chain_costs(fp8(p), c, links);
  const double m = c.mbs * double(p.model.seq_length), t = c.tp;
  const double h = p.model.hidden_size, F = p.model.ffn_hidden_size;
  const double hq = double(p.model.attention_heads) * p.model.head_dim;
  // FP8 weight + transpose next to bf16: 2 bytes per linear weight (the norms stay bf16).
  const double linear = b.layer.params - 2 * h;
  EXPECT_DOUBLE_EQ(f.layer.weight_bytes - b.layer.weight_bytes, 2.0 * linear);
  EXPECT_DOUBLE_EQ(f.layer.static_bytes - b.layer.static_bytes, 2.0 * linear);
  // Saved inputs of QKV, FC1 (SP-sharded h each), out-projection (h_q/t), FC2 (F/t): 1 byte
  // instead of 2.
  const double saved = m * (2 * h / t + (hq + F) / t);
  EXPECT_NEAR(b.layer.act_bytes - f.layer.act_bytes, saved * p.gpu.activation_overhead,
              1e-9 * saved);
  // Output layer and embedding are untouched.
  EXPECT_EQ(f.head.act_bytes, b.head.act_bytes);
  EXPECT_EQ(f.embed.static_bytes, b.embed.static_bytes);
}

// Sequence-parallel TP in FP8: the all-gathers move the quantised data (1 byte, + 1/32 for MXFP8's
// scales; MXFP8's output gradient with both copies), the reduce-scatters bf16. A layer's TP
// traffic (hidden + exposed) by hand: forward 2 AG + 2 RS, backward 2 AG of the output gradient,
// 2 RS of the input gradients and the 2 re-gathers of the SP input for wgrad (Megatron with TE,
// docs/precision.md "FP8 all-gathers").
TEST(Precision, SequenceParallelGathersMoveFp8Bytes) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.mxfp8 = true;  // to cost the MXFP8 recipe on the same problem
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const GroupShape g = group_shape(c.tp, 1, p.cluster.nvlink_domain_size);
  const double S = 2.0 * c.mbs * double(p.model.seq_length) * p.model.hidden_size;
  const double rs = collective_time(Collective::kReduceScatter, S, g, links);
  auto ag = [&](double bytes_per_element) {
    return collective_time(Collective::kAllGather, S * bytes_per_element / 2.0, g, links);
  };
  auto by_hand = [&](double gather_bytes, double grad_gather_bytes) {
    return 4.0 * ag(gather_bytes) + 2.0 * ag(grad_gather_bytes) + 4.0 * rs;
  };
  const double bf16 = chain_costs(p, c, links).layer.tp_total_s;
  EXPECT_NEAR(bf16, by_hand(2.0, 2.0), 1e-12 * bf16);
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kCurrent}) {
    const double f8 = chain_costs(fp8(p, r), c, links).layer.tp_total_s;
    EXPECT_NEAR(f8, by_hand(1.0, 1.0), 1e-12 * f8);
    EXPECT_LT(f8, bf16);
  }
  const double mx = chain_costs(fp8(p, Fp8Recipe::kMxfp8), c, links).layer.tp_total_s;
  EXPECT_NEAR(mx, by_hand(1.0 + 1.0 / 32, 2.0 + 2.0 / 32), 1e-12 * mx);
  EXPECT_EQ(precision_plan(p.training, p.gpu).gather_bytes_per_element, 2.0);
  // Without SP the layer all-reduces its bf16 GEMM outputs: FP8 changes nothing.
  const Candidate no_sp = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_EQ(chain_costs(fp8(p), no_sp, links).layer.tp_total_s,
            chain_costs(p, no_sp, links).layer.tp_total_s);
}

// training.tp_fp8_reduce_scatter (Transformer Engine Userbuffers fp8_buf on proj_fprop and
// fc2_fprop): under delayed scaling with TP overlap the forward's two reduce-scatters move one
// byte an element; the backward's reduce-scatters of the input gradients stay bf16. Current
// scaling and MXFP8 quantise after the GEMM, and without Userbuffers there is no FP8 buffer: no
// change there.
TEST(Precision, Fp8ReduceScatterOfTheForwardByHand) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.mxfp8 = true;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const GroupShape g = group_shape(c.tp, 1, p.cluster.nvlink_domain_size);
  const double S = 2.0 * c.mbs * double(p.model.seq_length) * p.model.hidden_size;
  const double rs16 = collective_time(Collective::kReduceScatter, S, g, links);
  const double rs8 = collective_time(Collective::kReduceScatter, S / 2.0, g, links);
  ASSERT_LT(rs8, rs16);
  auto tp_total = [&](Fp8Recipe r, bool key, bool overlap) {
    Problem q = fp8(p, r);
    q.training.tp_fp8_reduce_scatter = key;
    q.training.tp_comm_overlap = overlap;
    return chain_costs(q, c, links).layer.tp_total_s;
  };
  const double off = tp_total(Fp8Recipe::kDelayed, false, true);
  const double on = tp_total(Fp8Recipe::kDelayed, true, true);
  EXPECT_NEAR(off - on, 2.0 * (rs16 - rs8), 1e-9 * off);
  Problem q = fp8(p);
  q.training.tp_fp8_reduce_scatter = true;
  EXPECT_EQ(precision_plan(q.training, q.gpu).fwd_reduce_scatter_bytes_per_element, 1.0);
  for (Fp8Recipe r : {Fp8Recipe::kCurrent, Fp8Recipe::kMxfp8})
    EXPECT_EQ(tp_total(r, true, true), tp_total(r, false, true)) << static_cast<int>(r);
  EXPECT_EQ(tp_total(Fp8Recipe::kDelayed, true, false),
            tp_total(Fp8Recipe::kDelayed, false, false));
  // In bf16 the key does nothing.
  Problem b = p;
  b.training.tp_fp8_reduce_scatter = true;
  EXPECT_EQ(chain_costs(b, c, links).layer.tp_total_s, chain_costs(p, c, links).layer.tp_total_s);
  // The forward: its exposed TP time falls as well (the recompute-free layer's fwd_s).
  Problem d = fp8(p);
  const double fwd_off = chain_costs(d, c, links).layer.fwd_s;
  d.training.tp_fp8_reduce_scatter = true;
  EXPECT_LT(chain_costs(d, c, links).layer.fwd_s, fwd_off);
}

// The runs CSV column tp_fp8_reduce_scatter: the six dgxc-benchmarking v25.01 Llama 3.1 405B FP8
// rows state it (configure.sh sets fp8_buf on proj_fprop and fc2_fprop in its 405b branch when
// FP8 is on), every other row leaves it empty; the value reaches the key; a bad cell is an issue
// naming the column and what is allowed.
TEST(Precision, Fp8ReduceScatterColumnReachesTheKey) {
  const std::string text = test::validation_text("runs-public.csv");
  const std::vector<RunRecord> runs = parse_runs_csv(text, "runs-public.csv");
  int stated = 0;
  for (const RunRecord& r : runs) {
    const bool row = r.id.rfind("dgxc-v25.01-llama31-405b-fp8-", 0) == 0;
    if (!row) {
      EXPECT_FALSE(r.tp_fp8_reduce_scatter.has_value()) << r.id;
      continue;
    }
    ASSERT_TRUE(r.tp_fp8_reduce_scatter.has_value()) << r.id;
    EXPECT_TRUE(*r.tp_fp8_reduce_scatter) << r.id;
    ++stated;
    Problem p = llama70b_h200();
    p.gpu.peak_fp8_flop_per_s = 1979e12;
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << r.id << ": " << why;
    EXPECT_TRUE(p.training.tp_fp8_reduce_scatter) << r.id;
  }
  EXPECT_EQ(stated, 6);
  std::string bad = text, was;
  ASSERT_TRUE(test::replace_cell(&bad, "dgxc-v25.01-llama31-405b-fp8-96", "tp_fp8_reduce_scatter",
                                 "2", &was));
  ASSERT_EQ(was, "1");
  try {
    parse_runs_csv(bad, "t.csv");
    ADD_FAILURE() << "no issue for tp_fp8_reduce_scatter = 2";
  } catch (const ConfigError& e) {
    bool found = false;
    for (const auto& i : e.issues())
      found |= i.message().find("tp_fp8_reduce_scatter = 2: 0 or 1, or empty") != std::string::npos;
    EXPECT_TRUE(found) << e.what();
  }
}

// The attention-only layer of a MoE model (F = 0, cost/moe.cpp) without shared experts gathers
// only its attention side's two tensors (QKV's input, the out-projection's output gradient): the
// row-wise-only casts and the transposes of the MLP side's pair are not charged there.
TEST(Precision, AttentionOnlyLayerWithoutSharedExpertsGathersOnePair) {
  Problem p = fp8(llama70b_h200());
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.model.ffn_hidden_size = 0;
  const Candidate c = make_candidate(p, 8, 4, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const Links links = effective_links(p.cluster);
  const double alone = chain_costs(p, c, links).layer.compute_s;
  p.model.moe_shared_experts = 1;
  const double shared = chain_costs(p, c, links).layer.compute_s;
  const double m = c.mbs * double(p.model.seq_length), h = p.model.hidden_size, t = c.tp;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  // One byte fewer in each of the pair's two local casts, 2 bytes per element of its two
  // gathered m x h transposes.
  const double pair = (-2.0 * m * h / t + 2.0 * 2 * m * h) / bw;
  EXPECT_NEAR(shared - alone, pair, 1e-6 * pair);
}

TEST(Precision, Fp8OnA100IsAConfigurationIssue) {
  Problem p = fp8(gpt175b_a100());
  p.gpu.peak_fp8_flop_per_s = 0;
  const std::vector<ConfigIssue> issues = check(p);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "training.precision");
  EXPECT_EQ(issues[0].value, "fp8");
  EXPECT_EQ(issues[0].allowed,
            "bf16 (gpu 'a100-80gb' has no FP8 tensor cores: gpu.fp8_peak_tflops = 0)")
      << issues[0].allowed;
  // MXFP8 on Hopper is refused the same way.
  Problem h = fp8(llama70b_h200(), Fp8Recipe::kMxfp8);
  h.gpu.peak_fp8_flop_per_s = 1979e12;
  const std::vector<ConfigIssue> mx = check(h);
  ASSERT_EQ(mx.size(), 1u);
  EXPECT_EQ(mx[0].key, "training.fp8_recipe");
  h.gpu.mxfp8 = true;
  EXPECT_TRUE(check(h).empty());
}

TEST(Precision, MfuBasisNamesTheBf16Peak) {
  Problem p = llama70b_h200();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  EXPECT_EQ(mfu_basis(p),
            "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = 989 TFLOP/s, the dense BF16 "
            "peak); precision bf16");
  EXPECT_EQ(mfu_basis(fp8(p, Fp8Recipe::kCurrent)),
            "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = 989 TFLOP/s, the dense BF16 "
            "peak); precision fp8 (recipe current, linear GEMMs against gpu.fp8_peak_tflops = "
            "1979 TFLOP/s)");
}

}  // namespace
}  // namespace ppsearch
