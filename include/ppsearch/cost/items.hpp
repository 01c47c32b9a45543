// Per-item costs of one candidate (algorithms.md §0, §3, §4, §5.4).
// The pipeline is a chain of items: the embedding, L transformer layers (all
// identical, so one ItemCost describes them) and the final norm + output layer + loss.
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

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
  // Memory (bytes).
  double params = 0;           // parameters held on this GPU
  double static_bytes = 0;     // weights + gradients + optimizer state under the ZeRO stage
  double act_bytes = 0;        // stored per in-flight micro-batch (× activation_overhead)
  double wkeep_bytes = 0;      // held between B and W (zero-bubble), × activation_overhead
  double transient_bytes = 0;  // peak transient while the item runs (× activation_overhead)
  double time_s() const { return fwd_s + bwd_s + wgt_s; }
};

struct ChainCosts {
  ItemCost embed, layer, head;
  double boundary_bytes = 0;   // activation (and gradient) bytes per hop per GPU
  double extra_bytes = 0;      // per-GPU reserve: CUDA context + NCCL communicator buffers
  double capacity_bytes = 0;   // GPU memory
  double bytes_per_param = 0;  // static bytes per parameter under the ZeRO stage
};

// Model FLOPs of one optimizer step (algorithms.md §3.1), under the convention
// chosen by training.attention_flops; and the recompute FLOPs for HFU.
double model_flops_per_step(const ModelSpec&, int global_batch, AttentionFlops);
double recompute_flops_per_step(const ModelSpec&, int global_batch, Recompute);

// Time of one dense GEMM [m×k]·[k×n] on the GPU (algorithms.md §3.3 (b)):
// 2mnk / (η·peak·q_wave) + a fixed per-kernel overhead.
double gemm_time(double m, double n, double k, const GpuSpec&);

ChainCosts chain_costs(const Problem&, const Candidate&, const Links&);

}  // namespace ppsearch
