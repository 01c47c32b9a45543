// The logits transient of the output layer (docs/memory.md "Logits") against a hand count:
// 6 bytes per logit with Megatron's fp32 copy, 2 with an in-place fused kernel (Transformer
// Engine), 4 with a fused kernel that allocates a new bf16 gradient (flash-attn's default).
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

double head_transient(const Problem& p, const Candidate& c) {
  return chain_costs(p, c, effective_links(p.cluster)).head.transient_bytes;
}

TEST(CrossEntropyMemory, BytesPerLogitFollowTheKernel) {
  Problem p = llama70b_h200();
  p.model.vocab_size = 1000;
  p.model.seq_length = 64;
  // TP 2, mbs 3, ZeRO-1: m = 3·64 = 192 tokens, 1000/2 = 500 logits each, no ZeRO-3 buffers.
  const Candidate c = make_candidate(p, 2, 2, 4, 3, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const double logits = 192.0 * 500.0;
  const double ovh = p.gpu.activation_overhead;
  p.training.cross_entropy_fusion = false;
  EXPECT_NEAR(head_transient(p, c), 6.0 * logits * ovh, 1e-6);
  p.training.cross_entropy_fusion = true;
  p.training.cross_entropy_inplace = true;
  EXPECT_NEAR(head_transient(p, c), 2.0 * logits * ovh, 1e-6);
  p.training.cross_entropy_inplace = false;
  EXPECT_NEAR(head_transient(p, c), 4.0 * logits * ovh, 1e-6);
  // Without fusion the in-place flag changes nothing: the fp32 copy is the gradient's buffer.
  p.training.cross_entropy_fusion = false;
  EXPECT_NEAR(head_transient(p, c), 6.0 * logits * ovh, 1e-6);
}

TEST(CrossEntropyMemory, OnlyTheLlmFoundryProfileAllocatesANewGradient) {
  for (const std::string& name : stack_names()) {
    Problem p = llama70b_h200();
    p.training.stack = name;
    ASSERT_TRUE(apply_stack(&p, {}));
    EXPECT_EQ(p.training.cross_entropy_inplace, name.rfind("llmfoundry-", 0) != 0) << name;
  }
  // An explicit value wins over the profile.
  Problem q = llama70b_h200();
  q.training.stack = "llmfoundry-2023";
  q.training.cross_entropy_inplace = true;
  ASSERT_TRUE(apply_stack(&q, {"training.cross_entropy_inplace"}));
  EXPECT_TRUE(q.training.cross_entropy_inplace);
}

}  // namespace
}  // namespace ppsearch
