// Element-wise passes of PyTorch FSDP's gradient reduction (docs/step-time.md "FSDP's gradient
// passes and early-stopping recomputation").
//
// FSDP1 (torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook, the torch 2.0-2.1 code
// the llm-foundry MPT campaigns ran): on the post-backward stream, `flat_param.grad.to(
// handle._reduce_dtype)` when the gradient's dtype is not the reduce dtype (bf16 parameters
// with an fp32 reduce_dtype: read 2 B, write 4 B per parameter of the unsharded gradient), then
// the default communication hook (torch/distributed/algorithms/_comm_hooks/default_hooks.py
// reduce_scatter_hook) divides the unsharded gradient in place by gradient_predivide_factor
// (> 1 for any world size above 1: read and write the reduce dtype) before
// reduce_scatter_tensor; the post-division and the accumulation into _saved_grad_shard touch
// the shard only (1/world of this, not counted).
// FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce, torch 2.4
// on): torch._chunk_cat copies the unsharded gradients into one reduce-scatter input in the
// reduce dtype (read 2 B, write 2 or 4 B); for fp32 and bf16 the division is NCCL's
// (ReduceOp.AVG, _get_gradient_divide_factors), so no pre-division pass.
#include "ppsearch/cost/fsdp_grad.hpp"

namespace ppsearch {

double fsdp_grad_pass_bytes(const TrainingSpec& t) {
  const double reduce = t.grad_reduce_in_fp32 ? 4.0 : 2.0;  // the reduce dtype's bytes
  const double grad = 2.0;                                  // bf16 gradient of bf16 parameters
  if (t.fsdp_impl == "fsdp1") {
    const double cast = reduce != grad ? grad + reduce : 0.0;
    return cast + 2.0 * reduce;  // cast, then the in-place pre-division
  }
  if (t.fsdp_impl == "fsdp2") return grad + reduce;  // copy-in, with the cast
  return 0.0;
}

}  // namespace ppsearch
