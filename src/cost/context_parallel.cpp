// Context-parallel attention costs (docs/step-time.md "Long-sequence context parallelism").
//
// p2p: Megatron-Core / Transformer Engine ring attention (AttnFuncWithCPAndKVP2P): cp − 1 steps
// pass the K and V chunks to the next rank while the current chunk's attention runs; the
// backward passes K/V and dK/dV. Each step's partial output and log-sum-exp are merged by
// separate element-wise kernels (flash_attn_fwd_out_correction and the LSE corrections,
// @jit_fuser, and fp32 dQ/dK/dV accumulation in the backward: transformer_engine/pytorch/
// attention/dot_product_attention/context_parallel.py, NVIDIA/TransformerEngine @d0067d0). They
// are not itemised (about 2-3 % of a CP2 half-sequence layer of Llama 3 70B at TP4, docs/
// step-time.md "Megatron-Bridge Llama 3 70B FP8 on H100") and sit in the calibration.
//
// torch-allgather / torch-alltoall: PyTorch's context_parallel
// (torch/distributed/tensor/experimental/_attention.py, the ring of pytorch/pytorch 1963fc8
// that torchtitan 9dec370 ran, Dec 2024; `_templated_ring_attention` and
// `_templated_ring_attention_backward`), as torchtitan calls it:
//  - load balancing on (`enable_load_balance = True`): each rank holds chunks r and 2cp−1−r,
//    so every ring step costs the same, 1/cp of the rank's attention;
//  - every ring step is its own SDPA call whose output and log-sum-exp are merged into an fp32
//    running output (`_SDPAMerger`, `convert_to_f32 = True`);
//  - all-gather rotation (`_AllGatherRotater`, torchtitan's default
//    `context_parallel_rotate_method = "allgather"`): one all-gather of every rank's K/V,
//    issued before the first (local) SDPA and waited before the second, so only the first
//    step's kernel hides it (pytorch/pytorch PR #132820: "overlap the communication with the
//    first sharded kv computation"); all-to-all rotation (`_AllToAllRotater`): one permute per
//    step, hidden behind that step's SDPA;
//  - the backward builds a new K/V rotater (the same exchange again) and rotates the fp32
//    dK/dV accumulators (`accum_dtype = float32`) with an all-to-all permute after every step
//    (`dkv_rotater`, always ALL_TO_ALL): the permute of step i is waited after step i+1's
//    kernel, and the last one after the loop, fully exposed;
//  - torchtitan's Llama repeats K/V to the query heads before SDPA (torchtitan 9dec370
//    torchtitan/models/llama/model.py, `repeat_kv`), so the exchanged K/V have the query width;
//    the caller passes that width in kv_width.
#include "ppsearch/cost/context_parallel.hpp"

#include <algorithm>

namespace ppsearch {
namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;

// HBM bytes per output element of one merge step (`_SDPAMerger._merge_one` after `step`), counted
// as one fused kernel: read the bf16 block output and the fp32 running output, write the running
// output (2 + 4 + 4; the log-sum-exp terms are head_dim times smaller). Eager execution writes
// and re-reads the intermediates of out − sigmoid(Δlse)·(out − block_out); the evaluator charges
// that as for every element-wise op, by halving the memory efficiency when
// training.fused_elementwise is off (docs/step-time.md "Element-wise fusion"). The slowest rank
// (rank cp − 1, every step on its whole local query) sets the pace, since the next collective
// waits for it.
constexpr double kMerge = kBf16 + kFp32 + kFp32;                  // 10
constexpr double kMergeEnds = (kBf16 + kFp32) + (kFp32 + kBf16);  // first upcast + final cast
// Backward per step, per element: the fp32 accumulator read, the bf16 block gradient read and
// the accumulator written (dq += ..., dK/dV added into the buffer sent on): 4 + 2 + 4.
constexpr double kAccum = kFp32 + kBf16 + kFp32;  // 10
// Every SDPA backward call runs FlashAttention-2's preprocessing and epilogue once: dot(dO, O)
// (reads dO and O, bf16), the fp32 dq accumulator cleared and converted to bf16 (w4, r4 w2)
// (flash-attention csrc/flash_attn/src/flash_bwd_launch_template.h, compute_dot_do_o and
// convert_dQ): 14 bytes per query element per call, cp − 1 calls more than without CP.
constexpr double kBwdCallExtra = 2.0 * kBf16 + kFp32 + (kFp32 + kBf16);  // 14
// The accumulators are zeroed (w4) and cast back to bf16 at the end (r4 w2).
constexpr double kAccumEnds = kFp32 + (kFp32 + kBf16);  // 10

}  // namespace

const char* to_string(CpCommType t) {
  switch (t) {
    case CpCommType::kP2p:
      return "p2p";
    case CpCommType::kTorchAllGather:
      return "torch-allgather";
    case CpCommType::kTorchAllToAll:
      return "torch-alltoall";
  }
  return "?";
}

CpAttentionCost cp_attention_cost(CpCommType type, const CpAttentionInput& in, const Links& links) {
  CpAttentionCost out;
  if (in.cp <= 1) return out;
  const double cp = in.cp, m = in.tokens;
  out.kv_bytes = 2.0 * kBf16 * m * in.kv_width;
  if (type == CpCommType::kP2p) {
    // cp − 1 steps, each hidden behind the whole forward's attention kernels; the backward
    // passes K/V and dK/dV (two transfers per step).
    const double step = p2p_time(out.kv_bytes, in.same_domain, links);
    out.fwd_exposed_s = std::max(0.0, (cp - 1) * step - in.att_fwd_s);
    out.bwd_exposed_s = std::max(0.0, 2.0 * (cp - 1) * step - in.att_bwd_s);
    out.fwd_total_s = (cp - 1) * step;
    out.bwd_total_s = 2.0 * (cp - 1) * step;
    out.dkv_bytes = out.kv_bytes;
    return out;
  }
  // PyTorch context_parallel: one SDPA call per step, 1/cp of the rank's attention each.
  const double fwd_step = in.att_fwd_s / cp, bwd_step = in.att_bwd_s / cp;
  double kv_fwd_exposed = 0, kv_bwd_exposed = 0, kv_total = 0;
  if (type == CpCommType::kTorchAllGather) {
    // nccl-tests convention: the gathered array, cp × the rank's K/V.
    const double ag = collective_time(Collective::kAllGather, cp * out.kv_bytes, in.group, links);
    kv_fwd_exposed = std::max(0.0, ag - fwd_step);
    kv_bwd_exposed = std::max(0.0, ag - bwd_step);
    kv_total = ag;
  } else {
    const double step = p2p_time(out.kv_bytes, in.same_domain, links);
    kv_fwd_exposed = (cp - 1) * std::max(0.0, step - fwd_step);
    kv_bwd_exposed = (cp - 1) * std::max(0.0, step - bwd_step);
    kv_total = (cp - 1) * step;
  }
  out.dkv_bytes = 2.0 * kFp32 * m * in.kv_width;
  const double g = p2p_time(out.dkv_bytes, in.same_domain, links);
  out.fwd_exposed_s = kv_fwd_exposed;
  out.fwd_total_s = kv_total;
  out.bwd_exposed_s = kv_bwd_exposed + (cp - 1) * std::max(0.0, g - bwd_step) + g;
  out.bwd_total_s = kv_total + cp * g;

  const double eq = m * in.q_width, ek = m * in.kv_width;
  out.merge_fwd_bytes = ((cp - 1) * kMerge + kMergeEnds) * eq;
  out.merge_bwd_bytes =
      cp * kAccum * (eq + 2.0 * ek) + (cp - 1) * kBwdCallExtra * eq + kAccumEnds * (eq + 2.0 * ek);
  // Live during the backward ring: the gathered K/V (cp chunks; the all-to-all rotater holds the
  // current and the next chunk), the fp32 dq accumulator, and the fp32 dK/dV being accumulated
  // into the buffer sent on beside the one received (`grad_query`, `next_grad_kv`, the
  // permute's output).
  const double kv_held =
      type == CpCommType::kTorchAllGather ? cp * out.kv_bytes : 2.0 * out.kv_bytes;
  out.transient_bytes = kv_held + kFp32 * eq + 2.0 * out.dkv_bytes;
  if (in.mem_bytes_per_s > 0) {
    out.merge_fwd_s = out.merge_fwd_bytes / in.mem_bytes_per_s;
    out.merge_bwd_s = out.merge_bwd_bytes / in.mem_bytes_per_s;
  }
  return out;
}

}  // namespace ppsearch
