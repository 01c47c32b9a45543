// Transformer Engine's flash-attn backend in the validation rows (docs/step-time.md
// "FlashAttention-2 in the NeMo DGX Cloud runs"): the runs CSV's flash_attention_2 column, the
// rows that state it and the attention scale it sets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/util/error.hpp"
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

TEST(FlashAttention2, AValueOtherThanZeroOrOneIsRefusedWithItsColumn) {
  const std::string text = test::validation_text("runs-public.csv");
  const std::string header = text.substr(0, text.find('\n'));
  // The first data row with its (last) flash_attention_2 cell set to 2.
  const std::size_t b = text.find('\n') + 1;
  std::string row = text.substr(b, text.find('\n', b) - b);
  ASSERT_EQ(header.substr(header.rfind(',') + 1), "flash_attention_2");
  ASSERT_EQ(row.back(), ',');  // the first row leaves it empty
  row += "2";
  std::vector<std::string> messages;
  try {
    parse_runs_csv(header + "\n" + row + "\n", "r.csv");
  } catch (const ConfigError& e) {
    for (const auto& i : e.issues()) messages.push_back(i.message());
  }
  ASSERT_EQ(messages.size(), 1u) << "flash_attention_2 = 2 was accepted";
  EXPECT_NE(messages[0].find("r.csv:2: flash_attention_2 = 2: 0 or 1"), std::string::npos)
      << messages[0];
}

}  // namespace
}  // namespace ppsearch
