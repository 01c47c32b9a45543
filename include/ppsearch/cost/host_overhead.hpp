// Host (CPU) time of a mixture-of-experts layer per micro-batch (docs/moe.md "Host time of a MoE
// layer"). Pure core.
//
// The host launches every operation of a layer: the framework op's Python and PyTorch eager
// dispatch and its CUDA launch. Its time per layer and pass is
//
//     host = (host-launched operations of the pass, in plain-op equivalents) × gpu.host_op_us
//
// where a Transformer Engine / Megatron autograd module call counts kTeModuleOps plain ops, and
// a CUDA-graphed scope costs one graph launch (one module call) per pass instead of its own. Every
// Megatron-Core dispatcher copies the token counts per expert to the host once per MoE layer in
// the forward (the grouped GEMM's per-expert split sizes are host integers), and that
// synchronisation drains the GPU queue: the host cannot run more than one layer ahead, so per
// layer and pass the layer takes max(GPU time, host time), or GPU + host time under the
// all-to-all dispatcher (moe_pass_time).
#pragma once

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Host time of one TE module call (Linear forward) over one plain PyTorch op (torch Linear
// forward), measured on the same GB200 host: 99.66 µs / 37.08 µs (NVIDIA/TransformerEngine#2053).
inline constexpr double kTeModuleOps = 99.66 / 37.08;

struct HostOps {
  double fwd = 0, bwd = 0;  // host-launched operations of the forward, of the backward
};

// Host-launched operations of one MoE layer and micro-batch by part, before CUDA graphs.
struct MoeHostOps {
  HostOps attn;        // the attention block (scope attn)
  HostOps router;      // gate GEMM, top-k, aux loss (scope moe_router)
  HostOps preprocess;  // token counts, split sizes, their host copies (scope moe_preprocess)
  HostOps dispatch;    // permute, dispatch, combine, unpermute: the dispatcher's own
  HostOps experts;     // grouped expert GEMMs, activation, FP8 casts
};

// The operation counts (host_overhead.cpp gives each with its source). local_experts = E/EP;
// fp8: the expert GEMMs run in FP8 (one quantisation per expert and GEMM input); tp > 1 adds the
// sequence-parallel gather / scatter of the attention block; fused_mlp: the fused grouped expert
// MLP (training.moe_fused_grouped_mlp, moe_recipe.hpp) launches all experts at once.
MoeHostOps moe_host_op_counts(MoeDispatcher, double local_experts, bool fp8, int tp,
                              bool fused_mlp = false);

// Operations left after the CUDA-graph scopes of `scope_mask` (spec/host_keys.hpp bits): a
// graphed part costs one graph launch (one module call) per pass; full_iteration graphs the whole
// layer (one launch per step, nothing per layer); moe graphs router, preprocessing, dispatch and
// experts.
HostOps graphed_host_ops(const MoeHostOps&, unsigned scope_mask);

// Host seconds of one MoE layer and micro-batch, forward and backward (the backward of a fully
// recomputed layer replays the forward's operations too).
HostOps moe_layer_host_time(const Problem&, const Candidate&);

// One pass of a layer whose host time is host_s and GPU time gpu_s: max(gpu_s, host_s).
double pass_time_with_host(double gpu_s, double host_s);

// One pass of a MoE layer under dispatcher d (docs/moe.md "Serial host time under the all-to-all
// dispatcher"): with the all-to-all dispatcher the host time adds to the GPU time
// (gpu_s + host_s); with the all-gather and flex dispatchers the two overlap
// (pass_time_with_host). The flex dispatcher's backend as its default, HybridEP
// (moe_pass_time_with_backend, moe_flex_backend.hpp, takes the backend).
double moe_pass_time(MoeDispatcher d, double gpu_s, double host_s);

}  // namespace ppsearch
