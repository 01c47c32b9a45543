// Software-stack profiles (docs/step-time.md "Software stacks"): what a training framework
// overlaps and fuses by default. `training.stack = NAME` (also --stack NAME) sets the keys of
// kStackKeys that no file, --set or option gave explicitly.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// FlashAttention-2 against the presets' cuDNN / FlashAttention-3 attention rate on Hopper: about
// 0.7 (Shah et al. 2024, FlashAttention-3 §4.1). The attention scale of every profile whose
// attention runs FA-2 kernels (PyTorch SDPA, flash-attn 2), and of the validation rows whose
// recipe selects Transformer Engine's flash-attn backend (the runs CSV's flash_attention_2).
inline constexpr double kFlashAttention2Scale = 0.7;

struct StackProfile {
  const char* name;
  bool overlap_grad_reduce;   // training.overlap_grad_reduce
  bool overlap_param_gather;  // training.overlap_param_gather
  bool tp_comm_overlap;       // training.tp_comm_overlap
  bool p2p_overlap;           // training.p2p_overlap (interleaved schedules)
  double attention_scale;     // training.attention_efficiency_scale (FlashAttention generation)
  bool fused_elementwise;     // training.fused_elementwise
  bool cross_entropy_fusion;  // training.cross_entropy_fusion
  bool grad_reduce_in_fp32;   // training.grad_reduce_in_fp32
  const char* summary;        // one line for docs and --help
  // Optimizer state (docs/memory.md "Optimizer state").
  const char* optimizer_state_dtype;  // training.optimizer_state_dtype
  bool fsdp_fp32_params;              // training.fsdp_fp32_params
  // Fused cross entropy's gradient buffer (docs/memory.md "Logits").
  bool cross_entropy_inplace = true;  // training.cross_entropy_inplace
  // torch.compile's pruned recomputation (docs/step-time.md "torch.compile (torchtitan)").
  bool recompute_skip_fc2 = false;  // training.recompute_skip_fc2
  // Backward TP collectives hidden behind the gradient GEMMs (docs/step-time.md "torch.compile
  // (torchtitan)").
  bool tp_bwd_overlap = true;  // training.tp_bwd_overlap
  bool split_linears = false;  // training.split_linears
  // FSDP backward prefetch (docs/step-time.md "llm-foundry: FSDP backward prefetch").
  bool overlap_backward_gather = true;  // training.overlap_backward_gather
  // Optimizer step by implementation (docs/step-time.md "Optimizer step by implementation").
  const char* optimizer_impl = "megatron";  // training.optimizer_impl
  // Fused norms in eager code (docs/step-time.md "Fused RMSNorm in eager PyTorch").
  bool fused_norm = false;  // training.fused_norm
  // llm-foundry's Triton FlashAttention (docs/step-time.md "llm-foundry: the Triton kernel on
  // Hopper").
  bool triton_attention = false;  // training.triton_attention
  // FSDP's gradient passes (docs/step-time.md "FSDP's gradient passes and early-stopping
  // recomputation").
  const char* fsdp_impl = "none";  // training.fsdp_impl
  // PyTorch's async TP (docs/step-time.md "Async TP's own passes").
  bool tp_symm_mem = false;  // training.tp_symm_mem
};

inline constexpr const char* kDefaultStack = "nemo-25.x";

// The stack-controlled keys, in the order StackProfile lists them.
const std::vector<std::string>& stack_keys();

// Canonical profile names (megatron-2021, megatron-2022, nemo-24.x, nemo-25.x, torchtitan-2024,
// tuned, megatron-core, nemo-24.09-dfa, llmfoundry-2023, torchtitan-asynctp, torchtitan-compile,
// torchtitan-asynctp-compile, llmfoundry-2024, torchtitan-2025, torchtitan-2025-compile,
// torchtitan-2025-torch29).
const std::vector<std::string>& stack_names();

// The profile of a canonical name or of an alias the runs CSV uses (megatron, nemo,
// torchtitan); nullptr when unknown.
const StackProfile* find_stack(const std::string& name);

// Sets every key of stack_keys() that is not in `explicit_keys` from the profile named by
// problem->training.stack. Returns false (and changes nothing) when the name is unknown.
bool apply_stack(Problem* problem, const std::set<std::string>& explicit_keys);

}  // namespace ppsearch
