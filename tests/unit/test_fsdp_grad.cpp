// FSDP's gradient passes (training.fsdp_impl; docs/step-time.md "FSDP's gradient passes and
// early-stopping recomputation"): the bytes per parameter that PyTorch's FSDP1 and FSDP2 move over
// the unsharded gradient before each reduce-scatter, counted by hand from their code; the
// per-micro-batch charge in evaluate() against its closed form; the profiles that set the key; the
// key's allowed values.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/fsdp_grad.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/search/explain.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/conventions.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

TEST(FsdpGrad, PassBytesByHand) {
  TrainingSpec t;
  t.grad_reduce_in_fp32 = true;
  t.fsdp_impl = "none";
  EXPECT_EQ(fsdp_grad_pass_bytes(t), 0.0);
  // FSDP1, fp32 reduce dtype: .to(fp32) reads 2 B and writes 4 B, the in-place pre-division
  // reads and writes 4 B.
  t.fsdp_impl = "fsdp1";
  EXPECT_EQ(fsdp_grad_pass_bytes(t), (2.0 + 4.0) + (4.0 + 4.0));
  // FSDP2: one copy-in with the cast (2 + 4 B), the division left to NCCL.
  t.fsdp_impl = "fsdp2";
  EXPECT_EQ(fsdp_grad_pass_bytes(t), 2.0 + 4.0);
  // bf16 reduction: no cast; FSDP1 still pre-divides (2 + 2 B), FSDP2 still copies (2 + 2 B).
  t.grad_reduce_in_fp32 = false;
  EXPECT_EQ(fsdp_grad_pass_bytes(t), 2.0 + 2.0);
  t.fsdp_impl = "fsdp1";
  EXPECT_EQ(fsdp_grad_pass_bytes(t), 2.0 + 2.0);
}

// The step of a ZeRO-3 candidate without PP (1F1B over one stage) grows by the passes of every
// micro-batch: M × bytes × parameters of the rank / the achieved HBM bandwidth (the straggler
// term, which scales the busy time, is off). ZeRO-1 (one reduce-scatter per step, not per
// micro-batch) does not change. A 16-layer Llama 3 70B, so that ZeRO-1 fits too.
Problem sixteen_layers() {
  Problem p = llama70b_h200();
  p.model.layers = 16;
  p.cluster.step_jitter = 0;
  return p;
}

double step_with(const char* impl, int zero, int* microbatches) {
  Problem p = sixteen_layers();
  p.training.fsdp_impl = impl;
  p.training.grad_reduce_in_fp32 = true;
  const Candidate c = make_candidate(p, 1, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 0, zero);
  EvalOptions o;
  Evaluator ev(p, o);
  const Evaluation e = ev.evaluate(c);
  EXPECT_TRUE(e.feasible) << impl << " zero " << zero;
  *microbatches = int(p.training.global_batch_size / (c.dp * c.mbs));
  return e.iteration_time_s;
}

TEST(FsdpGrad, EveryMicroBatchPaysThePassesOfTheWholeModel) {
  int M = 0;
  const double none = step_with("none", 3, &M);
  const double one = step_with("fsdp1", 3, &M);
  const double two = step_with("fsdp2", 3, &M);
  ASSERT_GT(M, 1);
  const Problem p = sixteen_layers();
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double params = parameter_count(p.model);  // TP = PP = 1: the whole model on each rank
  EXPECT_NEAR(one - none, M * 14.0 * params / bw, 1e-9 * (one - none));
  EXPECT_NEAR(two - none, M * 6.0 * params / bw, 1e-9 * (two - none));
  int M1 = 0;
  EXPECT_EQ(step_with("fsdp1", 1, &M1), step_with("none", 1, &M1));
}

// --explain names the passes per micro-batch, inside the rank's compute.
TEST(FsdpGrad, ExplainNamesThePassesPerMicroBatch) {
  Problem p = sixteen_layers();
  p.training.fsdp_impl = "fsdp1";
  const Candidate c = make_candidate(p, 1, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
  const ExplainedRow row = explain_candidate(p, c, EvalOptions{});
  ASSERT_TRUE(row.eval.feasible);
  ASSERT_EQ(row.detail.fsdp_passes_s.size(), 1u);
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const double per_mb = 14.0 * parameter_count(p.model) / bw;
  EXPECT_NEAR(row.detail.fsdp_passes_s[0], per_mb, 1e-9 * per_mb);
  EXPECT_LE(row.detail.fsdp_passes_s[0], row.detail.compute_s[0]);
  const std::string text = format_explain(p, c, row);
  EXPECT_NE(text.find("compute includes FSDP's gradient passes (training.fsdp_impl = fsdp1)"),
            std::string::npos)
      << text;
  p.training.fsdp_impl = "none";
  const ExplainedRow none = explain_candidate(p, c, EvalOptions{});
  EXPECT_EQ(none.detail.fsdp_passes_s[0], 0.0);
  EXPECT_EQ(format_explain(p, c, none).find("FSDP's gradient passes"), std::string::npos);
}

TEST(FsdpGrad, ProfilesNameTheirFsdp) {
  auto impl = [](const char* stack) {
    Problem p = llama70b_h200();
    p.training.stack = stack;
    EXPECT_TRUE(apply_stack(&p, {})) << stack;
    return p.training.fsdp_impl;
  };
  for (const char* s : {"llmfoundry-2023", "llmfoundry-2024"}) EXPECT_EQ(impl(s), "fsdp1") << s;
  for (const char* s :
       {"torchtitan-2024", "torchtitan-asynctp", "torchtitan-compile", "torchtitan-asynctp-compile",
        "torchtitan-2025", "torchtitan-2025-compile", "torchtitan-2025-torch29"})
    EXPECT_EQ(impl(s), "fsdp2") << s;
  for (const char* s :
       {"nemo-25.x", "nemo-24.x", "megatron-core", "megatron-2021", "tuned", "nemo-24.09-dfa"})
    EXPECT_EQ(impl(s), "none") << s;
  // An explicit key wins; an unknown implementation is refused by the key.
  Problem q = llama70b_h200();
  q.training.stack = "llmfoundry-2023";
  q.training.fsdp_impl = "none";
  ASSERT_TRUE(apply_stack(&q, {"training.fsdp_impl"}));
  EXPECT_EQ(q.training.fsdp_impl, "none");
  EXPECT_TRUE(apply_key(q, "training.fsdp_impl", "fsdp3", "test").has_value());
  EXPECT_FALSE(apply_key(q, "training.fsdp_impl", "fsdp2", "test").has_value());
  EXPECT_EQ(q.training.fsdp_impl, "fsdp2");
}

// PyTorch's non-reentrant checkpoint stops its replay before the last linear's GEMM, so the
// eager PyTorch profiles skip FC2 in full recomputation as the compiled ones do
// (docs/step-time.md "Early-stopping recomputation"); Megatron's checkpoint replays it.
TEST(FsdpGrad, EagerPyTorchProfilesStopTheReplayEarly) {
  for (const char* s : {"llmfoundry-2023", "llmfoundry-2024", "torchtitan-2024", "torchtitan-2025",
                        "torchtitan-2025-torch29"}) {
    Problem p = llama70b_h200();
    p.training.stack = s;
    ASSERT_TRUE(apply_stack(&p, {})) << s;
    EXPECT_TRUE(p.training.recompute_skip_fc2) << s;
  }
}

}  // namespace
}  // namespace ppsearch
