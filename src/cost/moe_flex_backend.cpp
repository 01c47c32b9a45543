// The flex token dispatcher's backend (docs/moe.md "DeepEP's host wait").
//
// Sources: M = NVIDIA/Megatron-LM @d98e8a64 (megatron/core/transformer/moe/token_dispatcher.py
// _DeepepManager, fused_a2a.py FusedDispatch / FusedCombine); D = deepseek-ai/DeepEP @2df3680
// (csrc/deep_ep.cpp Buffer::intranode_dispatch, internode_dispatch).
#include "ppsearch/cost/moe_flex_backend.hpp"

#include <algorithm>

namespace ppsearch {

MoeHostOps deepep_host_op_counts(const MoeHostOps& flex_counts) {
  const double M = kTeModuleOps;  // one autograd module call, in plain ops (host_overhead.hpp)
  MoeHostOps o = flex_counts;
  // setup_metadata (M): the routing-map and probs reshapes and torch.topk that turn the
  // multi-hot map into indices; dispatch(): the fp32 cast of the probs DeepEP requires: 4 ops
  // forward, none backward (integers and a cast whose gradient is the dispatch's).
  o.preprocess = {4, 0};
  // Forward modules (M): FusedDispatch (D's get_dispatch_layout and dispatch inside it), the
  // TE permute of get_permuted_hidden_states_by_experts, the TE unpermute and FusedCombine: 4.
  // Plain ops: torch.tensor of the host list of received tokens per expert (1); the
  // indices-to-multi-hot conversion of the received indices (_indices_to_multihot: two zeros
  // buffers, the valid mask, arange, its sum and repeat_interleave, two indexed writes: 8);
  // tokens_per_expert.sum().item() for the permutation's output size (2): 11. Backward: the
  // four modules' backward (FusedDispatch's is a DeepEP combine, FusedCombine's a dispatch).
  o.dispatch = {4 * M + 11, 4 * M};
  return o;
}

bool moe_host_wait_serial(MoeDispatcher d, MoeFlexBackend b) {
  // The all-to-all dispatcher (host_overhead.cpp, the comment above moe_pass_time).
  if (d == MoeDispatcher::kAllToAll) return true;
  // D: after notify_dispatch the host spins on moe_recv_counter / moe_recv_expert_counter
  // (host-mapped memory the GPU writes) before it allocates the receive buffers; M passes no
  // num_worst_tokens, so every forward dispatch of every MoE layer waits there. Like the
  // all-to-all dispatcher's d2h_event.synchronize() the wait empties the GPU queue, and the
  // host's launches of the rest of the layer then feed a GPU that has nothing else queued.
  return d == MoeDispatcher::kFlex && b == MoeFlexBackend::kDeepEp;
}

double moe_pass_time_with_backend(MoeDispatcher d, MoeFlexBackend b, double gpu_s, double host_s) {
  if (moe_host_wait_serial(d, b)) return gpu_s + host_s;
  return pass_time_with_host(gpu_s, host_s);
}

}  // namespace ppsearch
