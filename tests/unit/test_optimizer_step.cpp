// Optimizer step by implementation (training.optimizer_impl; docs/step-time.md "Optimizer step by
// implementation"): the bytes per parameter of Megatron's fused Adam, PyTorch's foreach AdamW and
// PyTorch's fused AdamW, counted by hand from the kernels each launches; the torchtitan profiles
// by era; the step's optimizer time in evaluate(); the cross-field check.
#include <gtest/gtest.h>

#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/optimizer_step.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/conventions.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// Clipping: _foreach_norm reads the fp32 gradient, _foreach_mul_ reads and writes it.
constexpr double kClip = 4 + (4 + 4);

TEST(OptimizerStep, FusedAdamWIsOneKernelOverFourTensors) {
  // Loads param, grad, exp_avg, exp_avg_sq; stores param, exp_avg, exp_avg_sq (fp32 each).
  const double adam = 4 * 4 + 3 * 4;
  for (double g : {4.0, 2.0}) {  // the PyTorch step sees the fp32 shard's gradient either way
    const OptimizerStepBytes b = optimizer_step_bytes("torch-fused", "fp32", g);
    EXPECT_DOUBLE_EQ(b.per_updated_param, adam + kClip);
    EXPECT_DOUBLE_EQ(b.per_updated_param, 40.0);
    EXPECT_DOUBLE_EQ(b.per_grad_element, 0.0);  // zero_grad(set_to_none=True) writes nothing
  }
}

TEST(OptimizerStep, ForeachAdamWIsOnePassPerForeachOp) {
  // _multi_tensor_adamw, fp32, capturable off: (reads + writes) of each _foreach op, 4 B each.
  const double passes[] = {
      4 + 4,           // mul_(params, 1 - lr * wd)
      (4 + 4) + 4,     // lerp_(exp_avgs, grads)
      4 + 4,           // mul_(exp_avg_sqs, beta2)
      (4 + 4) + 4,     // addcmul_(exp_avg_sqs, grads, grads): the gradient read once
      4 + 4,           // denom = sqrt(exp_avg_sqs)
      4 + 4,           // div_(denom, bias_correction2_sqrt)
      4 + 4,           // add_(denom, eps)
      (4 + 4 + 4) + 4  // addcdiv_(params, exp_avgs, denom)
  };
  double adam = 0;
  for (double p : passes) adam += p;
  EXPECT_DOUBLE_EQ(adam, 80.0);
  const OptimizerStepBytes b = optimizer_step_bytes("torch-foreach", "fp32", 4.0);
  EXPECT_DOUBLE_EQ(b.per_updated_param, adam + kClip);
  EXPECT_DOUBLE_EQ(b.per_grad_element, 0.0);
  // More than twice the fused kernel's traffic.
  EXPECT_GT(b.per_updated_param,
            2.0 * optimizer_step_bytes("torch-fused", "fp32", 4.0).per_updated_param);
}

TEST(OptimizerStep, MegatronCountsAreUnchanged) {
  // fp32 main gradients: 30 B Adam (4 + 24 + 2) + 12 B clipping, the buffer zeroed at 4 B.
  OptimizerStepBytes b = optimizer_step_bytes("megatron", "fp32", 4.0);
  EXPECT_DOUBLE_EQ(b.per_updated_param, 42.0);
  EXPECT_DOUBLE_EQ(b.per_grad_element, 4.0);
  EXPECT_DOUBLE_EQ(b.per_updated_param + b.per_grad_element, 46.0);  // ZeRO-3: both per shard
  // bf16 main gradients: the fp32 copy first (2 + 4), the buffer zeroed at 2 B.
  b = optimizer_step_bytes("megatron", "fp32", 2.0);
  EXPECT_DOUBLE_EQ(b.per_updated_param, 48.0);
  EXPECT_DOUBLE_EQ(b.per_grad_element, 2.0);
  EXPECT_DOUBLE_EQ(optimizer_step_bytes("megatron", "bf16", 2.0).per_updated_param, 22.0);
  EXPECT_DOUBLE_EQ(optimizer_step_bytes("megatron", "bf16-moments", 4.0).per_updated_param, 34.0);
}

TEST(OptimizerStep, TorchtitanProfilesFollowTheSourceEra) {
  // Foreach AdamW until torchtitan 6e4988550 (Feb 2025), fused from then on.
  for (const char* n : {"torchtitan-2024", "torchtitan-compile"})
    EXPECT_EQ(std::string(find_stack(n)->optimizer_impl), "torch-foreach") << n;
  for (const char* n : {"torchtitan-2025", "torchtitan-2025-compile", "torchtitan-asynctp",
                        "torchtitan-asynctp-compile"})
    EXPECT_EQ(std::string(find_stack(n)->optimizer_impl), "torch-fused") << n;
  // Every other profile keeps Megatron's count (the default answers do not move).
  for (const std::string& n : stack_names()) {
    if (n.rfind("torchtitan", 0) == 0) continue;
    EXPECT_EQ(std::string(find_stack(n)->optimizer_impl), "megatron") << n;
  }
  // The 2025 profiles differ from their 2024 twins in the optimizer only.
  const std::pair<const char*, const char*> twins[] = {
      {"torchtitan-2024", "torchtitan-2025"}, {"torchtitan-compile", "torchtitan-2025-compile"}};
  for (const auto& [old_name, new_name] : twins) {
    Problem a = llama70b_h200(), b = llama70b_h200();
    a.training.stack = old_name;
    b.training.stack = new_name;
    ASSERT_TRUE(apply_stack(&a, {}));
    ASSERT_TRUE(apply_stack(&b, {}));
    for (const std::string& k : stack_keys()) {
      if (k == "training.optimizer_impl") {
        EXPECT_NE(key_value(a, k), key_value(b, k));
      } else {
        EXPECT_EQ(key_value(a, k), key_value(b, k)) << old_name << " " << k;
      }
    }
  }
  // An explicit key wins over the profile.
  Problem p = llama70b_h200();
  p.training.stack = "torchtitan-2025";
  p.training.optimizer_impl = "torch-foreach";
  ASSERT_TRUE(apply_stack(&p, {"training.optimizer_impl"}));
  EXPECT_EQ(p.training.optimizer_impl, "torch-foreach");
}

// The optimizer time of a ZeRO-3 candidate: every implementation updates and (Megatron) zeroes
// the same local shard, so the times are in the ratio of the byte counts.
double optimizer_time(const std::string& impl) {
  Problem p = llama70b_h200();
  p.training.stack = "torchtitan-2024";
  EXPECT_TRUE(apply_stack(&p, {}));
  p.training.optimizer_impl = impl;
  const Candidate c = make_candidate(p, 1, 1, 16, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator ev(p, o);
  const Evaluation e = ev.evaluate(c);
  EXPECT_TRUE(e.feasible);
  EXPECT_DOUBLE_EQ(ev.breakdown().optimizer_s, e.optimizer_s);
  return e.optimizer_s;
}

TEST(OptimizerStep, StepTimeFollowsTheByteCounts) {
  const double mega = optimizer_time("megatron"), fused = optimizer_time("torch-fused"),
               each = optimizer_time("torch-foreach");
  ASSERT_GT(fused, 0.0);
  EXPECT_NEAR(mega / fused, 46.0 / 40.0, 1e-12);
  EXPECT_NEAR(each / fused, 92.0 / 40.0, 1e-12);
  // Closed form: 40 B per parameter of the shard (all parameters over 16 ranks, TP = PP = 1) at
  // the achieved HBM bandwidth.
  const Problem p = llama70b_h200();
  const double shard = parameter_count(p.model) / 16.0;
  const double bw = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  EXPECT_NEAR(fused, 40.0 * shard / bw, 1e-3 * fused);
}

TEST(OptimizerStep, PyTorchImplementationsNeedFp32State) {
  Problem p = llama70b_h200();
  p.training.optimizer_impl = "torch-fused";
  p.training.optimizer_state_dtype = "bf16";
  bool refused = false;
  for (const ConfigIssue& i : check(p)) refused |= i.key == "training.optimizer_state_dtype";
  EXPECT_TRUE(refused);
  p.training.optimizer_state_dtype = "fp32";
  for (const ConfigIssue& i : check(p)) EXPECT_NE(i.key, "training.optimizer_state_dtype");
  // Megatron's implementation keeps every state dtype.
  p.training.optimizer_impl = "megatron";
  p.training.optimizer_state_dtype = "bf16";
  for (const ConfigIssue& i : check(p)) EXPECT_NE(i.key, "training.optimizer_state_dtype");
  // An unknown implementation is refused by the key itself.
  EXPECT_TRUE(apply_key(p, "training.optimizer_impl", "torch-adam", "test").has_value());
  EXPECT_FALSE(apply_key(p, "training.optimizer_impl", "torch-fused", "test").has_value());
  EXPECT_EQ(p.training.optimizer_impl, "torch-fused");
}

}  // namespace
}  // namespace ppsearch
