// Element-wise passes of PyTorch FSDP's gradient reduction (docs/step-time.md "FSDP's gradient
// passes and early-stopping recomputation"): the HBM bytes per parameter that FSDP moves over each
// unit's unsharded gradient, every micro-batch, before its reduce-scatter.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// training.fsdp_impl: "none" (gradient buffers reduce-scattered as they are, Megatron-style) → 0;
// "fsdp1" (PyTorch FullyShardedDataParallel): the cast of the bf16 gradient to the reduce dtype
// (2 + 4 B) when that is fp32, then the in-place pre-division (4 + 4 B in fp32, 2 + 2 B in bf16);
// "fsdp2" (fully_shard): the copy-in into the reduce-scatter buffer in the reduce dtype (2 + 4 B,
// or 2 + 2 B), no pre-division. The reduce dtype is fp32 when training.grad_reduce_in_fp32.
double fsdp_grad_pass_bytes(const TrainingSpec& t);

}  // namespace ppsearch
