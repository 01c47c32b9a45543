// llm-foundry's Triton FlashAttention (training.triton_attention, gpu.triton_attention_scale;
// docs/step-time.md "llm-foundry: the Triton kernel on Hopper"): the kernel's rate multiplies the
// attention efficiency of a stack that runs it and nothing else; without the stack flag the GPU
// key changes nothing. Checked through the evaluator, against the equivalent attention
// efficiency, on a dense and on a sliding-window model (cost/attention_window.cpp charges the
// windowed layers' skipped key blocks at the same rate).
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/search/evaluate.hpp"

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

}  // namespace
}  // namespace ppsearch
