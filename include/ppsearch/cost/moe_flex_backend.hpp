// The flex token dispatcher's backend (docs/moe.md "DeepEP's host wait"). Pure core.
//
// Megatron-Core's flex dispatcher (MoEFlexTokenDispatcher) runs on one of two fused
// communication libraries, chosen by moe_flex_dispatcher_backend: HybridEP (_HybridEPManager)
// or DeepEP (_DeepepManager). They differ in what the host does per MoE layer:
//  * DeepEP's dispatch blocks the host until the GPU has counted the tokens it receives
//    (deepseek-ai/DeepEP csrc/deep_ep.cpp Buffer::intranode_dispatch / internode_dispatch,
//    "Synchronize total received tokens and tokens per expert": a CPU busy-wait on the
//    host-mapped moe_recv_counter unless num_worst_tokens is given, which Megatron-Core does not
//    give: megatron/core/transformer/moe/fused_a2a.py FusedDispatch.forward, "the CPU will wait
//    for GPU's signal to arrive"), and the permutation that follows reads the count once more
//    (token_dispatcher.py _DeepepManager.get_permuted_hidden_states_by_experts:
//    tokens_per_expert.sum().item()). The wait is the all-to-all dispatcher's
//    before_ep_alltoall synchronisation in another place, so a layer's pass takes GPU + host
//    time as under that dispatcher (host_overhead.cpp moe_pass_time).
//  * HybridEP keeps max(GPU, host). It waits on the host too when no expert-rank capacity is set
//    (token_dispatcher.py _HybridEPManager: num_permuted_tokens = None, "CPU sync in
//    dispatch"), but the HybridEP rows show no common excess over max() (host_overhead.cpp,
//    docs/moe.md "Serial host time under the all-to-all dispatcher"): the split between the two
//    backends rests on those rows, not on the code.
#pragma once

#include "ppsearch/cost/host_overhead.hpp"
#include "ppsearch/spec/host_keys.hpp"

namespace ppsearch {

// training.moe_flex_backend values.
enum class MoeFlexBackend : int { kHybridEp = 0, kDeepEp = 1 };

// The host operations of the DeepEP dispatcher's preprocessing and dispatch / combine
// (moe_flex_backend.cpp gives the count and its source); the other parts are the flex
// dispatcher's (moe_host_op_counts).
MoeHostOps deepep_host_op_counts(const MoeHostOps& flex_counts);

// Whether a MoE layer's host time adds to its GPU time (true) or overlaps it (false): the
// all-to-all dispatcher, and the flex dispatcher on DeepEP.
bool moe_host_wait_serial(MoeDispatcher d, MoeFlexBackend b);

// One pass of a MoE layer: gpu_s + host_s when moe_host_wait_serial, else max(gpu_s, host_s).
double moe_pass_time_with_backend(MoeDispatcher d, MoeFlexBackend b, double gpu_s, double host_s);

}  // namespace ppsearch
