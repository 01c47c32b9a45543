// llm-foundry's Triton FlashAttention (training.triton_attention, gpu.triton_attention_scale;
// docs/step-time.md "llm-foundry: the Triton kernel on Hopper"): the kernel's rate multiplies the
// attention efficiency of a stack that runs it and nothing else; without the stack flag the GPU
// key changes nothing (checked through the evaluator, against the equivalent attention
// efficiency, on a dense and on a sliding-window model: cost/attention_window.cpp charges the
// windowed layers' skipped key blocks at the same rate); the 8- to 64-GPU llm-foundry profile,
// and it alone, runs the kernel, with MPT's native fused element-wise kernels, and every row of
// that profile names it. The presets' rates (Hopper fitted, Ampere FlashAttention-2's) are
// checked through the configuration loader in tests/io/test_triton_presets.cpp.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {
namespace {

using test::llama8b_like;
using test::make_candidate;

Problem base_problem(bool windowed) {
  Problem p = llama8b_like(4);
  p.model.seq_length = 8192;  // attention is a visible share of the layer
  p.training.global_batch_size = 8;
  p.training.attention_efficiency_scale = 0.7;
  if (windowed) {
    p.model.attention_window = 1024;
    p.model.window_attn_skip_freq = 2;
  }
  return p;
}

double step(const Problem& p) {
  const Candidate c = make_candidate(p, 1, 1, 1, 1, Schedule::k1F1B, Recompute::kFull);
  const Evaluation e = evaluate(p, c);
  EXPECT_TRUE(e.feasible) << explain(e);
  return e.iteration_time_s;
}

TEST(TritonAttention, TheGpuRateActsOnlyWhenTheStackRunsTheKernel) {
  for (bool windowed : {false, true}) {
    SCOPED_TRACE(windowed ? "windowed" : "dense");
    Problem p = base_problem(windowed);
    p.training.triton_attention = false;
    const double flash = step(p);
    p.gpu.triton_attention_scale = 0.5;
    EXPECT_EQ(step(p), flash);  // no Triton kernel: the GPU's Triton rate is irrelevant

    p.training.triton_attention = true;
    p.gpu.triton_attention_scale = 1.0;
    EXPECT_EQ(step(p), flash);  // a Triton kernel as fast as FlashAttention-2

    p.gpu.triton_attention_scale = 0.5;
    const double triton = step(p);
    EXPECT_GT(triton, flash * 1.01);

    // The same as running FlashAttention-2 on a GPU whose attention efficiency is half: the
    // rate touches the core attention alone (GEMMs, element-wise ops and links unchanged).
    Problem q = base_problem(windowed);
    q.training.triton_attention = false;
    q.gpu.attention_efficiency *= 0.5;
    EXPECT_NEAR(triton, step(q), 1e-9 * triton);
  }
}

TEST(TritonAttention, TheLlmFoundry2023ProfileRunsItWithNativeFusedKernels) {
  Problem p = llama8b_like(4);
  p.training.stack = "llmfoundry-2023";
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_TRUE(p.training.triton_attention);
  EXPECT_TRUE(p.training.fused_elementwise);
  EXPECT_DOUBLE_EQ(p.training.attention_efficiency_scale, 0.7);  // the FA-2 reference rate
  // An explicit key wins over the profile.
  Problem q = llama8b_like(4);
  q.training.stack = "llmfoundry-2023";
  q.training.triton_attention = false;
  ASSERT_TRUE(apply_stack(&q, {"training.triton_attention"}));
  EXPECT_FALSE(q.training.triton_attention);
  // Every other profile, the >= 128-GPU llm-foundry one included, runs FlashAttention.
  for (const std::string& name : stack_names()) {
    if (name == "llmfoundry-2023") continue;
    Problem r = llama8b_like(4);
    r.training.stack = name;
    r.training.triton_attention = true;
    ASSERT_TRUE(apply_stack(&r, {})) << name;
    EXPECT_FALSE(r.training.triton_attention) << name;
  }
}

TEST(TritonAttention, EveryRowOfTheProfileRanTheTritonKernel) {
  // The profile's flag says what its runs executed: every llmfoundry-2023 row of the runs CSV
  // names llm-foundry's Triton kernel, and its stack turns the flag on (the Hopper presets'
  // rate: tests/io/test_triton_presets.cpp).
  const std::string text = test::validation_text("runs-public.csv");
  ASSERT_FALSE(text.empty());
  int rows = 0;
  for (const RunRecord& run : parse_runs_csv(text, "runs-public.csv")) {
    if (run.stack != "llmfoundry-2023") continue;
    ++rows;
    EXPECT_NE(run.source.find("triton flash attention"), std::string::npos) << run.id;
    Problem p = test::llama70b_h200();
    p.training.stack = run.stack;
    ASSERT_TRUE(apply_stack(&p, {})) << run.id;
    EXPECT_TRUE(p.training.triton_attention) << run.id;
  }
  EXPECT_EQ(rows, 43);  // the MPT rows of the 8- to 64-GPU H100 table (docs/validation.md)
}

}  // namespace
}  // namespace ppsearch
