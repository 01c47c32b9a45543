// The embedding-gradient all-reduce between the first and the last pipeline stage (tied
// embeddings, or the MTP module's embedding copy; docs/moe.md "MTP") moves the DDP buffer's
// main_grad: fp32 with training.grad_reduce_in_fp32, bf16 otherwise (Megatron-Core
// param_and_grad_buffer.py, finalize_model_grads.py).
#include <gtest/gtest.h>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

TEST(EmbeddingGradAllReduce, MovesTheMainGradientDtype) {
  Problem p = test::llama70b_h200();
  p.model.layers = 8;
  p.model.mtp_layers = 1;  // the embedding copy on the last stage
  p.training.global_batch_size = 32;
  p.gpus = {8};
  // tp 1, pp 2, dp 4: the two stages are 4 ranks apart, inside one 8-GPU NVLink domain.
  const Candidate c =
      test::make_candidate(p, 1, 2, 4, 1, Schedule::k1F1B, Recompute::kSelective, 0, 1);
  const Links l = effective_links(p.cluster);
  const GroupShape g{2, 2, 1};
  const double embed = double(p.model.vocab_size) * p.model.hidden_size;  // V·h / tp
  EvalOptions o;
  o.want_breakdown = true;
  for (bool fp32 : {true, false}) {
    p.training.grad_reduce_in_fp32 = fp32;
    Evaluator ev(p, o);
    Evaluation e;
    ev.evaluate(c, &e);
    ASSERT_TRUE(e.feasible);
    ASSERT_TRUE(ev.breakdown().valid);
    EXPECT_NEAR(ev.breakdown().tied_embedding_s,
                collective_time(Collective::kAllReduce, (fp32 ? 4.0 : 2.0) * embed, g, l), 1e-12);
  }
}

}  // namespace
}  // namespace ppsearch
