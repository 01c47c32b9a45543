// Transformer Engine's flash-attn backend in the validation rows (docs/step-time.md
// "FlashAttention-2 in the NeMo DGX Cloud runs"): the runs CSV's flash_attention_2 column, the
// rows that state it and the attention scale it sets. Values other than 0, 1 or empty are
// refused by the bad-input cases csv-flash-attention-2-{yes,2} (tests/badinput/cases.tsv).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

bool exports_nvte_fused_attn_0(const std::string& id) {
  // dgxc-benchmarking v24.11.1 nemo_megatron/launch.sh and v25.01.1 nemotron/configure.sh (340b
  // branch) export NVTE_FUSED_ATTN=0; the Nemotron-4 15B branch and the Llama 3.1 recipes set 1.
  return id.rfind("dgxc-v24.11-gpt3-175b-", 0) == 0 ||
         id.rfind("dgxc-v25.01-nemotron4-340b-", 0) == 0;
}

TEST(FlashAttention2, ThePublicRowsStateTheirRecipesBackend) {
  const std::vector<RunRecord> runs =
      parse_runs_csv(test::validation_text("runs-public.csv"), "runs-public.csv");
  int flagged = 0;
  for (const RunRecord& r : runs) {
    EXPECT_EQ(r.flash_attention_2, exports_nvte_fused_attn_0(r.id)) << r.id;
    flagged += r.flash_attention_2;
  }
  EXPECT_EQ(flagged, 15);  // 5 GPT-3 175B, 10 Nemotron-4 340B
}

TEST(FlashAttention2, TheColumnSetsTheFa2ScaleAndAnEmptyCellKeepsTheStacks) {
  const std::vector<RunRecord> runs =
      parse_runs_csv(test::validation_text("runs-public.csv"), "runs-public.csv");
  const RunRecord* gpt3 = nullptr;
  for (const RunRecord& r : runs) {
    if (r.id == "dgxc-v24.11-gpt3-175b-bf16-128") gpt3 = &r;
  }
  ASSERT_NE(gpt3, nullptr);
  ASSERT_TRUE(gpt3->flash_attention_2);

  const double stack_scale = find_stack("nemo-24.x")->attention_scale;
  ASSERT_NE(stack_scale, kFlashAttention2Scale);  // the row's stack runs cuDNN attention
  std::string why;
  Problem p = test::llama70b_h200();
  p.training.attention_efficiency_scale = stack_scale;
  ASSERT_TRUE(apply_run_to_problem(*gpt3, map_gpu(gpt3->gpu), &p, &why)) << why;
  EXPECT_DOUBLE_EQ(p.training.attention_efficiency_scale, kFlashAttention2Scale);

  RunRecord unflagged = *gpt3;
  unflagged.flash_attention_2 = false;
  Problem q = test::llama70b_h200();
  q.training.attention_efficiency_scale = stack_scale;
  ASSERT_TRUE(apply_run_to_problem(unflagged, map_gpu(unflagged.gpu), &q, &why)) << why;
  EXPECT_DOUBLE_EQ(q.training.attention_efficiency_scale, stack_scale);
}

TEST(FlashAttention2, TheStacksThatRunFa2KernelsShareTheScale) {
  // PyTorch SDPA (torchtitan) and flash-attn 2 (llm-foundry) are FlashAttention-2 kernels.
  for (const std::string& name : stack_names()) {
    const StackProfile* s = find_stack(name);
    ASSERT_NE(s, nullptr) << name;
    const bool fa2 = name.rfind("torchtitan", 0) == 0 || name.rfind("llmfoundry", 0) == 0;
    if (fa2) {
      EXPECT_EQ(s->attention_scale, kFlashAttention2Scale) << name;
    } else {
      EXPECT_NE(s->attention_scale, kFlashAttention2Scale) << name;
    }
  }
}

}  // namespace
}  // namespace ppsearch
