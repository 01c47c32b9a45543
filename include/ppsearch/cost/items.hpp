// Per-item costs of one candidate (docs/algorithms.md §0, §3, §4, §5.4).
// The pipeline is a chain of items: the embedding, L transformer layers (all
// identical, so one ItemCost describes them) and the final norm + output layer + loss.
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/gemm.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Eager (unfused) norm, SwiGLU and RoPE kernels write and re-read their intermediates, about
// twice the bytes of the fused kernels: with training.fused_elementwise = false the evaluator
// multiplies gpu.memory_efficiency by this factor for the element-wise kernels (evaluate.cpp;
// docs/step-time.md "Attention generation and element-wise fusion").
inline constexpr double kEagerMemoryEfficiency = 0.5;

// Fused norms in eager code (training.fused_norm; docs/step-time.md "Fused RMSNorm in eager
// PyTorch"): the factor on the norms' element-wise bytes. A norm that runs as one fused kernel
// beside eager ops moves its bytes at the fused bandwidth, i.e. kEagerMemoryEfficiency of the
// time at the eager efficiency.
inline double norm_bytes_scale(const TrainingSpec& t) {
  return (!t.fused_elementwise && t.fused_norm) ? kEagerMemoryEfficiency : 1.0;
}

// Costs of one item for one micro-batch, on one GPU.
struct ItemCost {
  // Times (s). fwd/bwd/wgt include the exposed TP and CP communication; the
  // *_compute fields are the same without communication, for reporting.
  double fwd_s = 0;      // forward
  double bwd_s = 0;      // backward input-gradient part ("B"), incl. recomputation
  double wgt_s = 0;      // weight-gradient part ("W")
  double compute_s = 0;  // fwd + bwd + wgt without communication
  double tp_comm_s = 0;  // exposed TP communication in fwd + bwd
  double cp_comm_s = 0;  // exposed CP communication in fwd + bwd
  // Whole TP / CP communication in fwd + bwd, hidden and exposed (for the explain report;
  // tp_total_s − tp_comm_s is what overlap hides).
  double tp_total_s = 0;
  double cp_total_s = 0;
  // Memory (bytes), docs/memory.md.
  double params = 0;           // parameters of this item per TP rank (before ZeRO sharding)
  double weight_bytes = 0;     // bf16 weights held (sharded over DP·CP under ZeRO-3)
  double grad_bytes = 0;       // main gradients held (fp32 or bf16; sharded under ZeRO-2/3)
  double optim_bytes = 0;      // fp32 main weights + Adam m, v
  double step_bytes = 0;       // fp32 copy of 16-bit main grads, live only in the optimizer step
  double static_bytes = 0;     // weight_bytes + grad_bytes + optim_bytes (resident)
  double act_bytes = 0;        // stored per in-flight micro-batch (× activation_overhead)
  double wkeep_bytes = 0;      // held between B and W (zero-bubble): X and dY of its weight GEMMs
  double transient_bytes = 0;  // peak transient while the item runs: activations
                               // (× activation_overhead) + ZeRO-3 gathered weights and gradients
  double time_s() const { return fwd_s + bwd_s + wgt_s; }
  // Mixture of experts (docs/moe.md): expert parameters on this GPU (their gradients reduce over
  // the expert-data-parallel group, not over DP·CP; `params` holds the rest) and the expert
  // dispatch/combine all-to-all in fwd + bwd, exposed and whole.
  double expert_params = 0;
  double ep_comm_s = 0;
  double ep_total_s = 0;
  // For the TP overlap charge (docs/step-time.md; transformer layer only): GEMM time of the
  // forward and of the backward (dgrad + wgrad, + the replayed forward under full
  // recomputation), the exposed TP time inside fwd_s / bwd_s, and the whole TP time of each.
  double gemm_fwd_s = 0, gemm_bwd_s = 0;
  double tp_fwd_s = 0, tp_bwd_s = 0;
  double tp_fwd_total_s = 0, tp_bwd_total_s = 0;
};

struct ChainCosts {
  ItemCost embed, layer, head;
  double boundary_bytes = 0;  // activation (and gradient) bytes per hop per GPU
  double extra_bytes = 0;     // per-GPU workspace: CUDA context + library workspaces + NCCL buffers
  double capacity_bytes = 0;  // usable GPU memory: gpu.memory_gb − gpu.memory_headroom_gb
  double bytes_per_param = 0;  // static bytes per parameter under the ZeRO stage
  // training.defer_embedding_wgrad: the output layer's deferred weight-gradient GEMMs of one
  // step, run by the rank that holds the output layer after its last backward (0 otherwise).
  double head_deferred_wgrad_s = 0;
};

// Model FLOPs of one optimizer step (docs/algorithms.md §3.1), under the convention
// chosen by training.attention_flops; and the recompute FLOPs for HFU.
double model_flops_per_step(const ModelSpec&, int global_batch, AttentionFlops);
double recompute_flops_per_step(const ModelSpec&, int global_batch, Recompute,
                                SelectiveRecompute = SelectiveRecompute::kCoreAttention);
// FLOPs of the FC2 GEMMs that full recomputation with training.recompute_skip_fc2 does not
// replay (a dense model's layers; subtracted from the recompute FLOPs of HFU).
double skipped_fc2_flops_per_step(const ModelSpec&, int global_batch);

// gemm_time (one dense GEMM by shape and precision) lives in cost/gemm.hpp.

// Static bytes per parameter split into weights, gradients and optimizer state under a ZeRO
// stage, `dr` = ranks sharing the optimizer state (DP × CP), fp32 or bf16 main gradients
// (docs/memory.md "Static memory"); `step` is live only during the optimizer step.
struct StaticSplit {
  double weight = 0, grad = 0, optim = 0;
  double step = 0;  // fp32 copy of 16-bit main gradients, made in the optimizer step only
  double resident() const { return weight + grad + optim; }
  double total() const { return weight + grad + optim + step; }  // Megatron's table
};
// bf16_state: main weights and moments in bf16 (training.optimizer_state_dtype = bf16);
// fsdp_fp32_params: ZeRO-3 shards are the fp32 main weights (training.fsdp_fp32_params);
// bf16_moments: fp32 main weights, bf16 Adam moments (training.optimizer_state_dtype =
// bf16-moments, Megatron-Core's precision-aware optimizer).
StaticSplit static_bytes_per_param(int zero, double dr, bool fp32_grads, bool bf16_state = false,
                                   bool fsdp_fp32_params = false, bool bf16_moments = false);

// Per-GPU workspace outside the training tensors (docs/memory.md "Workspace"): the CUDA context
// and library workspaces (gpu.memory_reserved_gb) plus gpu.comm_buffer_gb per NCCL communicator
// the candidate's ranks use. ChainCosts::extra_bytes is this figure.
double workspace_bytes(const Problem&, const Candidate&);

// The problem as the cost functions take it (chain_costs, moe_items, add_mtp): the GPU's rates
// as the software stack and the power limit set them. Core attention runs at
// gpu.attention_efficiency × attention_scale() (the stack's FlashAttention generation and the
// Triton kernel's rate, capped at 1); eager element-wise kernels at kEagerMemoryEfficiency of
// gpu.memory_efficiency; and a power limit below the fitted part's (gpu.clock_scale) slows the
// compute-bound GEMM and attention kernels in proportion, not the memory-bound kernels or the
// links (docs/step-time.md "Power-capped GPUs"). Every cost function of a layer, dense or MoE,
// must see the same rates: the evaluator builds this problem once and hands it to all of them.
Problem stack_costed(const Problem&);

ChainCosts chain_costs(const Problem&, const Candidate&, const Links&);

}  // namespace ppsearch
