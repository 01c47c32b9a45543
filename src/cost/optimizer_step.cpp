// HBM traffic of the optimizer step by implementation (docs/step-time.md "Optimizer step by
// implementation"). Every count is bytes per parameter, read plus written, of the kernels the
// implementation launches; the caller divides by the achieved HBM bandwidth.
#include "ppsearch/cost/optimizer_step.hpp"

namespace ppsearch {

OptimizerStepBytes optimizer_step_bytes(const std::string& impl, const std::string& state_dtype,
                                        double grad_elem_bytes) {
  // Gradient-norm clipping, every implementation: the norm reads the fp32 gradients (4 B) and the
  // scaling reads and writes them (8 B). Megatron optimizer.py clip_grad_norm +
  // multi_tensor_scale; PyTorch torch.nn.utils.get_total_norm (_foreach_norm) and
  // clip_grads_with_norm_ (_foreach_mul_ by the clamped coefficient, applied even when it is 1),
  // which torchtitan's clip_grad_norm_ calls (torchtitan/utils.py @9dec370,
  // torchtitan/distributed/utils.py @ce8a56fe7; train.py @3bae958db calls
  // torch.nn.utils.clip_grad_norm_(..., foreach=True), the same two passes).
  constexpr double kClip = 4.0 + 8.0;
  OptimizerStepBytes b;
  if (impl == "torch-fused") {
    // torch.optim.AdamW(fused=True): one multi-tensor kernel (FusedAdamMathFunctor,
    // aten/src/ATen/native/cuda/fused_adam_utils.cuh) loads param, grad, exp_avg and exp_avg_sq
    // (16 B) and stores param, exp_avg and exp_avg_sq (12 B); the gradient is stored only under
    // a GradScaler. FSDP2 keeps no separate 16-bit copy: the bf16 weights are cast inside the
    // next all-gather. torchtitan's default from 6e4988550 (Feb 2025, "use Fused AdamW as
    // default": optimizer.implementation = "fused", torchtitan/config/job_config.py @ce8a56fe7).
    b.per_updated_param = 28.0 + kClip;
  } else if (impl == "torch-foreach") {
    // torch.optim.AdamW(foreach=True), _multi_tensor_adamw (torch/optim/adamw.py, the same
    // passes in torch/optim/adam.py's _multi_tensor_adam with decoupled weight decay), fp32,
    // capturable off, one pass per _foreach op: mul_(params) 8 B; lerp_(exp_avgs, grads) 12 B;
    // mul_(exp_avg_sqs) 8 B; addcmul_(exp_avg_sqs, grads, grads) 12 B (the gradient read once);
    // sqrt(exp_avg_sqs) into a new list 8 B; div_ 8 B; add_(eps) 8 B; addcdiv_(params,
    // exp_avgs, denom) 16 B: 80 B. torchtitan before Feb 2025: foreach=True in train.py
    // @3bae958db; "foreach": not fused with optimizer.fused off by default in
    // torchtitan/optimizer.py @904913f7e, @3faaa1a0d and @9dec370.
    b.per_updated_param = 80.0 + kClip;
  } else {
    // Megatron (FusedAdam over the fp32 main parameters, then the 16-bit copy): read the fp32
    // gradient (4 B), read and write the fp32 main weight, m and v (24 B), write the bf16
    // weight (2 B) = 30 B; with 16-bit main gradients the shard is first copied to fp32 (read
    // 2, write 4) = 36 B. (Megatron optimizer.py step(): clip_grad_norm, multi_tensor_scale,
    // FusedAdam.)
    b.per_updated_param = (grad_elem_bytes == 4.0 ? 30.0 : 36.0) + kClip;
    // bf16 state (Apex DistributedFusedAdam dtype=bf16; docs/memory.md "Optimizer state"): read
    // the bf16 gradient (2 B), read and write the bf16 main weight, m and v (12 B), write the
    // bf16 parameter (2 B), no fp32 copy; clipping reads (2 B) and scales (4 B) the bf16
    // gradients: 22 B.
    if (state_dtype == "bf16") b.per_updated_param = 2.0 + 12.0 + 2.0 + 6.0;
    // bf16 moments (precision-aware optimizer): m and v read and written at 2 B, 8 B fewer.
    if (state_dtype == "bf16-moments") b.per_updated_param -= 8.0;
    // The contiguous gradient buffer is zeroed for the next step, in its dtype
    // (zero_grad_buffer).
    b.per_grad_element = grad_elem_bytes;
  }
  // PyTorch's Optimizer.zero_grad() sets the gradients to None (set_to_none defaults to True
  // since torch 2.0; torchtitan calls optimizers.zero_grad() each step, train.py @9dec370,
  // torchtitan/train.py @ce8a56fe7), and FSDP2 assigns the next reduce-scatter's output as the
  // new gradient: nothing is written, per_grad_element stays 0.
  return b;
}

}  // namespace ppsearch
