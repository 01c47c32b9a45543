// Optimizer-state accounting (docs/memory.md "Optimizer state"): bytes per parameter counted by
// hand for bf16 optimizer state (Apex DistributedFusedAdam dtype=bf16) and for PyTorch FSDP's
// fp32 shards as main weights, and the stack profiles that set them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

TEST(OptimizerState, DefaultsKeepTheMegatronCounts) {
  // The defaults reproduce the 3-argument form exactly (today's answers).
  for (int zero = 0; zero <= 3; ++zero) {
    for (bool fp32 : {true, false}) {
      const StaticSplit a = static_bytes_per_param(zero, 8, fp32);
      const StaticSplit b = static_bytes_per_param(zero, 8, fp32, false, false);
      EXPECT_DOUBLE_EQ(a.weight, b.weight);
      EXPECT_DOUBLE_EQ(a.grad, b.grad);
      EXPECT_DOUBLE_EQ(a.optim, b.optim);
      EXPECT_DOUBLE_EQ(a.step, b.step);
    }
  }
}

TEST(OptimizerState, Bf16StateByHand) {
  // Distributed optimizer (ZeRO-1) over d = 2 with bf16 gradients (grad_sync_dtype bf16):
  // bf16 weights 2, bf16 grad buffer 2, bf16 main weight + m + v = 6 / 2 = 3, no fp32 copy.
  const StaticSplit b = static_bytes_per_param(1, 2, false, true, false);
  EXPECT_DOUBLE_EQ(b.weight, 2.0);
  EXPECT_DOUBLE_EQ(b.grad, 2.0);
  EXPECT_DOUBLE_EQ(b.optim, 3.0);
  EXPECT_DOUBLE_EQ(b.step, 0.0);
  EXPECT_DOUBLE_EQ(b.total(), 7.0);  // against 2 + 2 + 6 + 2 = 12 with fp32 state
  EXPECT_DOUBLE_EQ(static_bytes_per_param(1, 2, false).total(), 12.0);
  // Without sharding: 2 + 2 + 6.
  EXPECT_DOUBLE_EQ(static_bytes_per_param(0, 1, false, true, false).total(), 10.0);
}

TEST(OptimizerState, FsdpFp32ShardsByHand) {
  const double d = 8;
  // ZeRO-3: fp32 parameter shard 4/d, fp32 gradient shard 4/d, fp32 m and v 8/d = 16/d,
  // against Megatron-style 2/d + 4/d + 12/d = 18/d; the same with a bf16 reduce dtype.
  for (bool fp32_reduce : {true, false}) {
    const StaticSplit b = static_bytes_per_param(3, d, fp32_reduce, false, true);
    EXPECT_DOUBLE_EQ(b.weight, 4.0 / d);
    EXPECT_DOUBLE_EQ(b.grad, 4.0 / d);
    EXPECT_DOUBLE_EQ(b.optim, 8.0 / d);
    EXPECT_DOUBLE_EQ(b.step, 0.0);
    EXPECT_DOUBLE_EQ(b.total(), 16.0 / d);
  }
  // ZeRO-2 (SHARD_GRAD_OP): the unsharded bf16 parameters stay (2), fp32 gradient shard 4/d,
  // fp32 main shard + m + v 12/d, no gradient copy.
  const StaticSplit z2 = static_bytes_per_param(2, d, false, false, true);
  EXPECT_DOUBLE_EQ(z2.weight, 2.0);
  EXPECT_DOUBLE_EQ(z2.grad, 4.0 / d);
  EXPECT_DOUBLE_EQ(z2.optim, 12.0 / d);
  EXPECT_DOUBLE_EQ(z2.step, 0.0);
  // ZeRO-1 is untouched by the FSDP flag.
  const StaticSplit z1 = static_bytes_per_param(1, d, true, false, true);
  EXPECT_DOUBLE_EQ(z1.total(), static_bytes_per_param(1, d, true).total());
}

TEST(OptimizerState, StackProfilesSetTheKeys) {
  Problem p = test::llama70b_h200();
  p.training.stack = "nemo-24.09-dfa";
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_EQ(p.training.optimizer_state_dtype, "bf16");
  EXPECT_FALSE(p.training.fsdp_fp32_params);
  EXPECT_FALSE(p.training.tp_comm_overlap);  // ub_tp_comm_overlap False in the recipe
  EXPECT_FALSE(p.training.p2p_overlap);      // overlap_p2p_comm False

  p.training.stack = "llmfoundry-2023";
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_EQ(p.training.optimizer_state_dtype, "fp32");
  EXPECT_TRUE(p.training.fsdp_fp32_params);
  EXPECT_TRUE(p.training.cross_entropy_fusion);
  EXPECT_TRUE(p.training.grad_reduce_in_fp32);  // Composer DEFAULT: fp32 reduce dtype

  p.training.stack = "megatron-core";
  p.training.optimizer_state_dtype = "bf16";  // as if a file said so
  ASSERT_TRUE(apply_stack(&p, {"training.optimizer_state_dtype"}));
  EXPECT_EQ(p.training.optimizer_state_dtype, "bf16");  // explicit key wins
  EXPECT_FALSE(p.training.fsdp_fp32_params);
  EXPECT_FALSE(p.training.overlap_grad_reduce);
  EXPECT_FALSE(p.training.tp_comm_overlap);
  EXPECT_TRUE(p.training.grad_reduce_in_fp32);

  // The default stack keeps today's optimizer accounting.
  p.training.stack = kDefaultStack;
  ASSERT_TRUE(apply_stack(&p, {}));
  EXPECT_EQ(p.training.optimizer_state_dtype, "fp32");
  EXPECT_FALSE(p.training.fsdp_fp32_params);
}

// The dgxc-benchmarking v25.01 Nemotron-4 340B rows: the tag's nemotron/configure.sh turns the
// YAML's ub_tp_comm_overlap and overlap_p2p_comm on for every run, and the YAML's
// distributed_fused_adam keeps its state in bf16 (dtype: bf16). So the ten rows name nemo-24.x
// (every overlap) and the column optimizer_state_dtype = bf16; no other row of the file states the
// column; the BF16 rows' problems carry both.
TEST(OptimizerState, DgxcNemotronRowsStateTheirRecipe) {
  const std::string text = test::validation_text("runs-public.csv");
  const std::vector<RunRecord> runs = parse_runs_csv(text, "runs-public.csv");
  int stated = 0;
  for (const RunRecord& r : runs) {
    if (r.id.rfind("dgxc-v25.01-nemotron4-340b-", 0) != 0) {
      EXPECT_TRUE(r.optimizer_state_dtype.empty()) << r.id;
      continue;
    }
    ++stated;
    EXPECT_EQ(r.stack, "nemo-24.x") << r.id;
    EXPECT_EQ(r.optimizer_state_dtype, "bf16") << r.id;
    if (r.precision != "bf16") continue;  // the builders' H200 has no FP8 peak
    Problem p = test::llama70b_h200();
    std::string why;
    ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << r.id << ": " << why;
    EXPECT_EQ(p.training.optimizer_state_dtype, "bf16") << r.id;
    EXPECT_TRUE(p.training.tp_comm_overlap) << r.id;
    EXPECT_TRUE(p.training.p2p_overlap) << r.id;
  }
  EXPECT_EQ(stated, 10);
}

}  // namespace
}  // namespace ppsearch
