// Context-parallel attention (docs/step-time.md "Long-sequence context parallelism"): the K/V
// exchange of the CP ring, how much of it hides behind the attention kernels, and the
// memory-bound merge of the per-step partial results, for each training.cp_comm_type.
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// One transformer layer's attention on one GPU for one micro-batch.
struct CpAttentionInput {
  int cp = 1;                  // context-parallel ranks
  double tokens = 0;           // m: tokens of this rank (micro-batch × s / cp)
  double kv_width = 0;         // elements per token of K (= of V) on this rank: h_kv / t
  double q_width = 0;          // elements per token of Q (= of the output) on this rank: h_q / t
  double att_fwd_s = 0;        // the rank's attention forward kernel time (all ring steps)
  double att_bwd_s = 0;        // its backward kernel time
  bool same_domain = true;     // the CP group inside one NVLink domain
  GroupShape group;            // the CP group (for the all-gather)
  double mem_bytes_per_s = 0;  // achieved HBM bandwidth of element-wise kernels (merges)
};

struct CpAttentionCost {
  double fwd_exposed_s = 0;  // CP communication not hidden in one forward
  double bwd_exposed_s = 0;  // ... in one backward
  double fwd_total_s = 0;    // whole CP communication of one forward (hidden + exposed)
  double bwd_total_s = 0;    // ... of one backward
  double merge_fwd_s = 0;    // memory-bound merge of the partial outputs in one forward
  double merge_bwd_s = 0;    // memory-bound accumulation of the partial gradients in one backward
  // Bytes behind the figures above (for tests and the explain report).
  double kv_bytes = 0;         // K and V of this rank as exchanged
  double dkv_bytes = 0;        // their gradients as rotated in the backward
  double merge_fwd_bytes = 0;  // HBM bytes of merge_fwd_s
  double merge_bwd_bytes = 0;  // HBM bytes of merge_bwd_s
  // Buffers the ring holds at once during the layer's backward, beyond the layer's activations
  // (its peak): torch rings only; the p2p ring's two K/V chunks are in the activation count.
  double transient_bytes = 0;
};

CpAttentionCost cp_attention_cost(CpCommType, const CpAttentionInput&, const Links&);

const char* to_string(CpCommType);

}  // namespace ppsearch
