// HBM traffic of the optimizer step by implementation (docs/step-time.md "Optimizer step by
// implementation"): the bytes one Adam step, the gradient-norm clipping and the zeroing of the
// gradients move per parameter, for training.optimizer_impl and training.optimizer_state_dtype.
#pragma once

#include <string>

namespace ppsearch {

struct OptimizerStepBytes {
  double per_updated_param = 0;  // Adam + clipping, per parameter updated on the rank
  double per_grad_element = 0;   // zeroing, per local gradient element (the buffer's size)
};

// impl: "megatron", "torch-foreach" or "torch-fused" (training.optimizer_impl); state_dtype:
// "fp32", "bf16" or "bf16-moments" (training.optimizer_state_dtype); grad_elem_bytes: the main
// gradient's element size (4 fp32, 2 bf16). The PyTorch implementations update the fp32
// parameter shard with its fp32 gradient (FSDP2 mixed precision), so they ignore grad_elem_bytes
// and need fp32 state (spec/check.cpp refuses the others).
OptimizerStepBytes optimizer_step_bytes(const std::string& impl, const std::string& state_dtype,
                                        double grad_elem_bytes);

}  // namespace ppsearch
