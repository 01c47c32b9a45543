// The memory model (docs/memory.md) against byte counts written out by hand, the per-stage
// breakdown against the stage memory, and the headroom at the feasibility boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// A small GQA SwiGLU model whose byte counts are easy to follow by hand.
Problem tiny() {
  Problem p = llama70b_h200();
  p.model.layers = 4;
  p.model.hidden_size = 64;       // h
  p.model.ffn_hidden_size = 160;  // F
  p.model.attention_heads = 4;    // a
  p.model.kv_heads = 2;           // g
  p.model.head_dim = 16;          // h_q = 64, h_kv = 32
  p.model.vocab_size = 1000;      // V
  p.model.seq_length = 32;        // s
  p.training.global_batch_size = 16;
  return p;
}

ChainCosts costs(const Problem& p, const Candidate& c) {
  return chain_costs(p, c, effective_links(p.cluster));
}

TEST(Memory, StaticBytesPerParameterFollowMegatronTable) {
  // Megatron-LM docs/user-guide/features/dist_optimizer.md: bf16 params, fp32 grads 18 and
  // 6 + 12/d; 16-bit params and grads 20 and 4 + 16/d. ZeRO-2/3 (Rajbhandari et al. §5).
  for (double d : {2.0, 8.0, 64.0}) {
    EXPECT_DOUBLE_EQ(static_bytes_per_param(0, d, true).total(), 18.0);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(1, d, true).total(), 6.0 + 12.0 / d);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(2, d, true).total(), 2.0 + 16.0 / d);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(3, d, true).total(), 18.0 / d);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(0, d, false).total(), 20.0);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(1, d, false).total(), 4.0 + 16.0 / d);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(1, d, false).grad, 2.0);
    EXPECT_DOUBLE_EQ(static_bytes_per_param(3, d, false).weight, 2.0 / d);
  }
}

TEST(Memory, ZeroBubbleWStateIsXAndDyOfEveryWeightGemmByHand) {
  Problem p = tiny();
  for (int sp : {0, 1}) {
    const int t = 2;
    Candidate c = make_candidate(p, t, 2, 2, 1, Schedule::kZBH1, Recompute::kNone, sp, 1);
    const ChainCosts cc = costs(p, c);
    // Tokens per GPU per micro-batch m = 32; h = 64, h_q = 64, h_kv = 32, F = 160.
    const double m = 32, tsp = sp ? t : 1;
    // Per weight GEMM: X elements + dY elements per TP rank.
    const double qkv = m * 64 / tsp + m * (64 + 2 * 32) / t;  // X: norm out; dY: dQKV
    const double proj = m * 64 / t + m * 64 / tsp;            // X: attention out; dY: d(out)
    const double fc1 = m * 64 / tsp + m * 2 * 160 / t;        // X: norm out; dY: d(gate, up)
    const double fc2 = m * 160 / t + m * 64 / tsp;            // X: SwiGLU out; dY: d(out)
    const double expect = 2.0 * (qkv + proj + fc1 + fc2) * p.gpu.activation_overhead;
    EXPECT_DOUBLE_EQ(cc.layer.wkeep_bytes, expect) << "sp=" << sp;
    // The head keeps its input and the bf16 logits gradient (V/t per token).
    const double head = 2.0 * (m * 64 / tsp + m * 1000 / t) * p.gpu.activation_overhead;
    EXPECT_DOUBLE_EQ(cc.head.wkeep_bytes, head);
  }
}

TEST(Memory, LlamaSeventyBWStateIs274kBPerTokenPerLayerAtTp1) {
  // The figure of the issue: X (106 kB) and dY (168 kB) per token per layer at TP 1.
  Problem p = llama70b_h200();
  p.gpu.activation_overhead = 1.0;
  Candidate c = make_candidate(p, 1, 8, 16, 1, Schedule::kZBH1, Recompute::kNone, 0, 1);
  const double per_token = costs(p, c).layer.wkeep_bytes / 8192.0;
  const double x = 2.0 * (8192 + 8192 + 8192 + 28672);
  const double dy = 2.0 * ((8192 + 2 * 1024) + 8192 + 2 * 28672 + 8192);
  EXPECT_DOUBLE_EQ(per_token, x + dy);
  EXPECT_NEAR(per_token / 1e3, 274.4, 0.1);
}

TEST(Memory, ZeroThreeBuffersAreTheSumOfWhatIsLiveByHand) {
  Problem p = tiny();
  for (bool fp32 : {true, false}) {
    p.training.grad_reduce_in_fp32 = fp32;
    const double g = fp32 ? 4.0 : 2.0;
    const double ovh = p.gpu.activation_overhead;
    // TP 1, DP 8, ZeRO-3, no recomputation: no activation transient in a layer.
    Candidate c = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 3);
    const ChainCosts cc = costs(p, c);
    // Layer parameters: QKV 64·(64 + 2·32), out 64·64, MLP 3·64·160, two RMSNorms 2·64.
    const double layer = 64.0 * 128 + 64.0 * 64 + 3.0 * 64 * 160 + 2 * 64;
    ASSERT_DOUBLE_EQ(cc.layer.params, layer);
    // Gathered bf16 layer + prefetched next layer + unsharded gradients of the layer.
    EXPECT_DOUBLE_EQ(cc.layer.transient_bytes, 2 * layer + 2 * layer + g * layer);
    // Head: logits (6 B each, m = 32 tokens) + gathered output layer and final norm +
    // their unsharded gradients + the last layer prefetched.
    const double head = 1000.0 * 64 + 64;
    const double logits = 6.0 * 32 * 1000 * ovh;
    EXPECT_DOUBLE_EQ(cc.head.transient_bytes, logits + head * (2 + g) + 2 * layer);
    // Embedding: its gathered table and unsharded gradients.
    EXPECT_DOUBLE_EQ(cc.embed.transient_bytes, 1000.0 * 64 * (2 + g));
    // Static: everything sharded 8 ways.
    // Resident: bf16 weights, main gradients, fp32 main weights + m + v, sharded over 8; the
    // fp32 copy of bf16 gradients (4 B) lives only in the optimizer step.
    EXPECT_DOUBLE_EQ(cc.layer.static_bytes, layer * (2 + g + 12) / 8);
    EXPECT_DOUBLE_EQ(cc.layer.step_bytes, fp32 ? 0.0 : layer * 4.0 / 8);
  }
  // Without ZeRO-3 none of these buffers exist.
  Candidate c1 = make_candidate(p, 1, 1, 8, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_EQ(costs(p, c1).layer.transient_bytes, 0.0);
}

TEST(Memory, FusedCrossEntropyKeepsOnlyTheBf16Logits) {
  Problem p = tiny();
  Candidate c = make_candidate(p, 2, 1, 4, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const double logits = 32.0 * 1000 / 2;  // m · V/t
  p.training.cross_entropy_fusion = false;
  EXPECT_DOUBLE_EQ(costs(p, c).head.transient_bytes, 6.0 * logits * p.gpu.activation_overhead);
  p.training.cross_entropy_fusion = true;
  EXPECT_DOUBLE_EQ(costs(p, c).head.transient_bytes, 2.0 * logits * p.gpu.activation_overhead);
}

TEST(Memory, BreakdownSumsToStageMemoryForRandomCandidates) {
  Problem p = llama70b_h200();
  p.gpus = {64};
  const Enumeration en = enumerate_candidates(p);
  Evaluator fast(p, EvalOptions{false, false, true});
  Evaluator full(p, EvalOptions{false, true, true});
  std::mt19937 rng(11);
  std::size_t checked = 0, with_wstate = 0;
  for (std::size_t i = 0; i < en.candidates.size(); i += 1 + rng() % 5) {
    const Candidate& c = en.candidates[i];
    for (Evaluator* ev : {&fast, &full}) {
      const Evaluation e = ev->evaluate(c);
      if (!e.feasible) continue;
      SCOPED_TRACE("candidate " + std::to_string(i));
      double peak = 0;
      for (const StageResult& r : e.stages) {
        const double sum = r.weights_gb + r.gradients_gb + r.optimizer_gb + r.activations_gb +
                           r.wstate_gb + r.transient_gb + r.workspace_gb;
        EXPECT_NEAR(sum, r.memory_gb, 1e-9 * r.memory_gb);
        for (double x : {r.weights_gb, r.gradients_gb, r.optimizer_gb, r.activations_gb,
                         r.wstate_gb, r.transient_gb, r.workspace_gb}) {
          EXPECT_GE(x, 0.0);
        }
        if (c.schedule != Schedule::kZBH1) {
          EXPECT_EQ(r.wstate_gb, 0.0);
        }
        with_wstate += r.wstate_gb > 0;
        peak = std::max(peak, r.memory_gb);
      }
      EXPECT_DOUBLE_EQ(peak, e.peak_memory_gb);
      ++checked;
    }
  }
  EXPECT_GT(checked, 200u);
  EXPECT_GT(with_wstate, 0u);
}

TEST(Memory, HeadroomShiftsFeasibilityExactlyAtTheBoundary) {
  Problem p = llama70b_h200();
  // PP 1: one stage, so the peak does not depend on the capacity the partitioner sees.
  Candidate c = make_candidate(p, 8, 1, 16, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const Evaluation base = evaluate(p, c);
  ASSERT_TRUE(base.feasible);
  const double need = base.peak_memory_gb * 1e9;
  ASSERT_LT(need, p.gpu.memory_bytes);
  // Just enough room left: still feasible, same figures.
  p.gpu.memory_headroom_bytes = p.gpu.memory_bytes - need - 1e3;
  const Evaluation fits = evaluate(p, c);
  ASSERT_TRUE(fits.feasible);
  EXPECT_EQ(fits.peak_memory_gb, base.peak_memory_gb);
  EXPECT_EQ(fits.iteration_time_s, base.iteration_time_s);
  // A kilobyte more headroom: infeasible for memory, with the figures named.
  p.gpu.memory_headroom_bytes = p.gpu.memory_bytes - need + 1e3;
  const Evaluation over = evaluate(p, c);
  EXPECT_FALSE(over.feasible);
  EXPECT_EQ(over.reason, Infeasible::kMemory);
  EXPECT_NEAR(over.needed_bytes, need, 1.0);
  EXPECT_NE(explain(over).find("headroom"), std::string::npos) << explain(over);
}

}  // namespace
}  // namespace ppsearch

// ---- Cross-check against Megatron-LM's estimator ---------------------------------------------
// megatron/training/theoretical_memory_usage.py (NVIDIA/Megatron-LM, commit d98e8a6, 2026-08),
// re-derived here from reading it: weights and optimizer state of the most loaded shard (the
// first pipeline stage: the embedding and L/P layers) and the per-layer activations of its
// SP + selective-recompute path (Korthikanti et al. Table 2). docs/memory.md explains the two
// differences the test allows for.
namespace ppsearch {
namespace {

double megatron_weight_and_optimizer(const ModelSpec& m, int t, int p, double d, bool dist) {
  const double h = m.hidden_size, a = m.attention_heads, g = m.kv_heads;
  const double kv_channels = m.head_dim;
  const double q_ratio = kv_channels * a / h;
  const double self_attn = 2.0 * h * h * ((1.0 + g / a) * q_ratio);
  const double mlp = 2.0 * h * m.ffn_hidden_size * (m.mlp == MlpKind::kSwiGLU ? 1.5 : 1.0);
  const double norm_size = 1.0;  // RMSNorm
  const double layernorm = 2.0 * h * norm_size;
  const double embedding = h * m.vocab_size;
  const double final_ln = norm_size * h;
  const double L = m.layers;
  const double sharded = ((self_attn + mlp) * L / p + embedding) / t;
  const double replicated = (layernorm * L + final_ln) / p;
  const double bytes = dist ? 6.0 + 12.0 / d : 18.0;
  return (sharded + replicated) * bytes;
}

double megatron_layer_activation_sp_selective(const ModelSpec& m, int mbs, int t) {
  const double sbh = double(m.seq_length) * mbs * m.hidden_size;
  return sbh * (18.0 + 4.0 * m.ffn_hidden_size / m.hidden_size) / t;
}

TEST(MegatronEstimator, WeightsAndOptimizerOfTheFirstStageAgree) {
  std::size_t checked = 0;
  for (int h : {4096, 8192, 12288}) {
    for (int t : {1, 2, 4, 8}) {
      for (int p : {2, 4, 8}) {
        for (int dp : {1, 4, 16}) {
          for (int zero : {0, 1}) {
            if (zero == 1 && dp == 1) continue;
            Problem pb = llama70b_h200();
            pb.model.hidden_size = h;
            pb.model.attention_heads = h / 128;
            pb.model.kv_heads = 8;
            pb.model.head_dim = 128;
            pb.model.ffn_hidden_size = 7 * h / 2;
            pb.model.layers = 32;
            Candidate c = make_candidate(pb, t, p, dp, 1, Schedule::k1F1B, Recompute::kSelective,
                                         t > 1, zero);
            const ChainCosts cc = costs(pb, c);
            const double ours = cc.embed.static_bytes + (32.0 / p) * cc.layer.static_bytes;
            const double bpp = zero ? 6.0 + 12.0 / dp : 18.0;
            // Megatron also charges the final norm (h parameters) 1/P to every stage; here it
            // lives with the head on the last stage.
            const double theirs =
                megatron_weight_and_optimizer(pb.model, t, p, dp, zero == 1) - h / double(p) * bpp;
            EXPECT_NEAR(ours / theirs, 1.0, 1e-12) << "h " << h << " t " << t << " p " << p;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(MegatronEstimator, ShardingOverContextParallelIsWhereTheyDiffer) {
  // Megatron's estimator divides the optimizer state by data_parallel_size, which excludes
  // CP; the distributed optimizer itself shards over the DP group with CP, as modelled here.
  Problem pb = llama70b_h200();
  Candidate c = make_candidate(pb, 8, 4, 2, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1, 1, 2);
  const ChainCosts cc = costs(pb, c);
  EXPECT_DOUBLE_EQ(cc.layer.optim_bytes, cc.layer.params * 12.0 / 4.0);  // DP 2 × CP 2
  EXPECT_DOUBLE_EQ(cc.layer.grad_bytes, cc.layer.params * 4.0);
}

TEST(MegatronEstimator, LayerActivationsDifferByTheDropoutMasksOnly) {
  // GPT-style MHA, GeLU, F = 4h, as Korthikanti's Table 2 assumes. Megatron's 18 + 4F/h
  // includes the two 1-byte dropout masks of a layer (attention output and MLP output);
  // the models here train without dropout, so they hold 2·s·b·h/t bytes less.
  for (int h : {2048, 6144, 12288}) {
    for (int t : {2, 4, 8}) {
      for (int mbs : {1, 2}) {
        Problem pb = test::gpt175b_a100();
        pb.model.hidden_size = h;
        pb.model.ffn_hidden_size = 4 * h;
        pb.model.attention_heads = h / 128;
        pb.model.kv_heads = h / 128;
        pb.model.head_dim = 128;
        pb.gpu.activation_overhead = 1.0;
        Candidate c = make_candidate(pb, t, 4, 2, mbs, Schedule::k1F1B, Recompute::kSelective, 1);
        const double ours = costs(pb, c).layer.act_bytes;
        const double sbh = double(pb.model.seq_length) * mbs * h;
        const double theirs = megatron_layer_activation_sp_selective(pb.model, mbs, t);
        EXPECT_NEAR(ours / (theirs - 2.0 * sbh / t), 1.0, 1e-12) << "h " << h << " t " << t;
      }
    }
  }
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

TEST(Memory, BreakdownIsTheSameUnderTheFastAndTheFullSimulation) {
  Problem p = llama70b_h200();
  p.gpus = {64};
  const Enumeration en = enumerate_candidates(p);
  Evaluator fast(p, EvalOptions{false, false, true});
  Evaluator full(p, EvalOptions{false, true, true});
  std::size_t zb = 0;
  for (std::size_t i = 0; i < en.candidates.size(); i += 3) {
    const Candidate& c = en.candidates[i];
    const Evaluation a = fast.evaluate(c), b = full.evaluate(c);
    ASSERT_EQ(a.feasible, b.feasible);
    if (!a.feasible) continue;
    SCOPED_TRACE("candidate " + std::to_string(i));
    ASSERT_EQ(a.stages.size(), b.stages.size());
    for (std::size_t s = 0; s < a.stages.size(); ++s) {
      const StageResult &x = a.stages[s], &y = b.stages[s];
      EXPECT_NEAR(x.activations_gb, y.activations_gb, 1e-9 * (1 + y.memory_gb));
      EXPECT_NEAR(x.wstate_gb, y.wstate_gb, 1e-9 * (1 + y.memory_gb));
      EXPECT_EQ(x.weights_gb, y.weights_gb);
      EXPECT_EQ(x.transient_gb, y.transient_gb);
    }
    zb += c.schedule == Schedule::kZBH1;
  }
  EXPECT_GT(zb, 10u);
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

TEST(Memory, PerOpSelectiveRecomputeKeepsEveryOtherMatmulByHand) {
  // torchtitan's per-op policy on the small model at TP 2 with SP: it keeps the block input,
  // the outputs of wq (h_q), wv (h_kv), w1 (F) and w2 (h, SP-sharded), the attention output
  // (h_q) and FlashAttention's fp32 log-sum-exp (a heads); wk, wo and w3 run again.
  Problem p = tiny();
  p.gpu.activation_overhead = 1.0;
  p.training.selective_recompute = SelectiveRecompute::kPerOp;
  Candidate c = make_candidate(p, 2, 1, 4, 1, Schedule::k1F1B, Recompute::kSelective, 1, 1);
  const double m = 32, t = 2;
  const double kept = 64 / t + 64 / t + 64 / t + 32 / t + 160 / t + 64 / t;
  const ChainCosts cc = costs(p, c);
  EXPECT_DOUBLE_EQ(cc.layer.act_bytes, 2.0 * m * kept + 4.0 * m * 4 / t);
  // It recomputes more than core attention: slower backward than Megatron's selective.
  p.training.selective_recompute = SelectiveRecompute::kCoreAttention;
  const ChainCosts core = costs(p, c);
  EXPECT_GT(cc.layer.bwd_s, core.layer.bwd_s);
  // Recompute FLOPs for HFU: wk, wo and w3 once more per token and layer.
  const double per_token = 2.0 * (64 * 32 + 64 * 64 + 64 * 160);
  EXPECT_DOUBLE_EQ(
      recompute_flops_per_step(p.model, 16, Recompute::kSelective, SelectiveRecompute::kPerOp),
      16.0 * 32 * 4 * per_token);
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

TEST(PartialRecompute, FewestLayersPerStageIsFasterThanAllAndFits) {
  // Llama-3-405B shape on 80 GB GPUs at TP 8, PP 16: recomputing every layer fits with room
  // to spare; recomputing per stage only the layers that memory requires is faster.
  Problem p = llama70b_h200();
  p.model.layers = 126;
  p.model.hidden_size = 16384;
  p.model.ffn_hidden_size = 53248;
  p.model.attention_heads = 128;
  p.model.kv_heads = 8;
  p.model.head_dim = 128;
  p.training.global_batch_size = 2048;
  p.gpu.memory_bytes = 80e9;
  Candidate all = make_candidate(p, 8, 16, 2, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  Candidate fewest = all, two = all;
  fewest.recompute_num_layers = -1;
  two.recompute_num_layers = 2;
  for (bool full_sim : {false, true}) {
    const EvalOptions opt{false, full_sim, true};
    const Evaluation a = evaluate(p, all, opt), f = evaluate(p, fewest, opt),
                     b = evaluate(p, two, opt);
    ASSERT_TRUE(a.feasible && f.feasible && b.feasible);
    EXPECT_LT(f.iteration_time_s, a.iteration_time_s);
    EXPECT_LE(f.peak_memory_gb * 1e9, p.gpu.memory_bytes);
    int recomputed = 0, layers = 0;
    for (const StageResult& r : f.stages) {
      recomputed += r.recomputed_layers;
      const int n = std::min(r.last_layer, 126) - std::max(r.first_layer, 1) + 1;
      layers += n;
      EXPECT_LE(r.recomputed_layers, n);
      EXPECT_NEAR(r.weights_gb + r.gradients_gb + r.optimizer_gb + r.activations_gb + r.wstate_gb +
                      r.transient_gb + r.workspace_gb,
                  r.memory_gb, 1e-9 * r.memory_gb);
    }
    EXPECT_EQ(layers, 126);
    EXPECT_GT(recomputed, 0);
    EXPECT_LT(recomputed, 126);
    // Recompute FLOPs (HFU) count only the recomputed layers.
    EXPECT_LT(f.hfu - f.mfu, a.hfu - a.mfu);
    // Block 2: exactly min(2, layers) per stage.
    for (const StageResult& r : b.stages) {
      const int n = std::min(r.last_layer, 126) - std::max(r.first_layer, 1) + 1;
      EXPECT_EQ(r.recomputed_layers, std::min(2, std::max(0, n)));
    }
    // Every layer recomputed: the plain full-recompute candidate reports them all.
    int all_rec = 0;
    for (const StageResult& r : a.stages) all_rec += r.recomputed_layers;
    EXPECT_EQ(all_rec, 126);
  }
}

TEST(PartialRecompute, EnumerationHasOneCandidatePerValueAndCountsStayExact) {
  Problem p = llama70b_h200();
  p.gpus = {64};
  const Enumeration base = enumerate_candidates(p);
  p.search.recompute_num_layers = {};  // auto
  const Enumeration with = enumerate_candidates(p);
  std::int64_t removed = 0;
  for (const auto& r : with.rules) removed += r.removed;
  EXPECT_EQ(removed + static_cast<std::int64_t>(with.candidates.size()), with.considered);
  std::size_t extra = 0;
  for (const Candidate& c : with.candidates) {
    if (c.recompute_num_layers != 0) {
      EXPECT_EQ(c.recompute_num_layers, -1);
      EXPECT_EQ(c.recompute, Recompute::kFull);
      EXPECT_EQ(c.vpp, 1);
      ++extra;
    }
  }
  std::size_t full_single_chunk = 0;
  for (const Candidate& c : base.candidates)
    full_single_chunk += c.recompute == Recompute::kFull && c.vpp == 1;
  // auto replaces "every layer" by "the fewest per stage" for single-chunk full recompute.
  EXPECT_EQ(extra, full_single_chunk);
  EXPECT_EQ(with.candidates.size(), base.candidates.size());
  // A list adds one candidate per value.
  p.search.recompute_num_layers = {0, 1, 4};
  const Enumeration three = enumerate_candidates(p);
  EXPECT_EQ(three.candidates.size(), base.candidates.size() + 2 * full_single_chunk);
}

}  // namespace
}  // namespace ppsearch

namespace ppsearch {
namespace {

// The optimizer step's fp32 copy of bf16 main gradients is never live with the activations
// (Megatron's distributed optimizer makes it in step() and drops it at the next zero_grad): a
// rank needs static + max(activations + transient, copy) + workspace, by hand.
TEST(Memory, OptimizerStepGradientCopyIsNotLiveWithTheActivations) {
  Problem p = tiny();
  p.training.grad_reduce_in_fp32 = false;
  bool step_phase = false, act_phase = false;
  for (int dp : {1, 4}) {  // dp 1: the copy (4 B/param) is the larger; dp 4: the activations
    Candidate c = make_candidate(p, 1, 1, dp, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
    EvalOptions opt;
    opt.want_stages = true;
    const Evaluation e = evaluate(p, c, opt);
    ASSERT_TRUE(e.feasible);
    const ChainCosts cc = costs(p, c);
    const double params = cc.embed.params + p.model.layers * cc.layer.params + cc.head.params;
    // Resident: 2 (bf16 weights) + 2 (bf16 grads) + 12/d; the copy 4/d.
    const double resident = params * (2 + 2 + 12.0 / dp);
    const double copy = params * 4.0 / dp;
    // Activations + transient of the rank without the copy: M = 16/dp micro-batches, 1F1B on
    // one rank holds one; the logits transient 6 B per logit; token ids 8 B per token.
    const double act =
        (4 * cc.layer.act_bytes + cc.embed.act_bytes + cc.head.act_bytes) + cc.head.transient_bytes;
    const StageResult& s = e.stages.at(0);
    EXPECT_NEAR(s.memory_gb * 1e9, resident + std::max(act, copy) + cc.extra_bytes, 1.0) << dp;
    EXPECT_NEAR(s.weights_gb + s.gradients_gb + s.optimizer_gb + s.activations_gb + s.wstate_gb +
                    s.transient_gb + s.workspace_gb,
                s.memory_gb, 1e-12)
        << dp;
    (copy > act ? step_phase : act_phase) = true;
  }
  EXPECT_TRUE(step_phase && act_phase);  // both branches were taken
  EXPECT_DOUBLE_EQ(static_bytes_per_param(1, 8, false).step, 0.5);
  EXPECT_DOUBLE_EQ(static_bytes_per_param(0, 8, false).step, 4.0);
  EXPECT_DOUBLE_EQ(static_bytes_per_param(1, 8, true).step, 0.0);
}

}  // namespace
}  // namespace ppsearch
