#pragma once
/// \file
/// Schedule generators (docs/algorithms.md §2.4): the per-device op order of GPipe, 1F1B,
/// interleaved 1F1B and ZB-H1. Used by the simulator in pipeline_schedule.hpp and exposed for tests
/// and tools. Pure core: std-only.

#include <string>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"

namespace ppsearch {

/// \brief The kinds of pipeline ops.
enum class OpKind : unsigned char {
  kF,   ///< forward of one micro-batch on one virtual stage
  kB,   ///< input-gradient backward (split backward, ZB)
  kW,   ///< weight-gradient backward (split backward, ZB)
  kBW,  ///< fused backward (B and W as one op)
};

/// \brief One op: kind, virtual stage and micro-batch.
struct PipeOp {
  OpKind kind = OpKind::kF;
  int vs = 0;
  int mb = 0;
};

/// \brief All devices' op lists, flattened: device d runs ops[begin[d]] .. ops[begin[d+1]−1]
/// in that order. begin has P + 1 entries.
struct ScheduleOrder {
  std::vector<PipeOp> ops;
  std::vector<int> begin;
};

/// \brief Builds the op order of `kind` for P devices, v chunks and M micro-batches.
///
/// - GPipe: F(0..M−1) then BW(M−1..0).
/// - 1F1B: min(P−d−1, M) warm-up forwards, then F/BW pairs, then the remaining BWs (Megatron
///   `get_pp_rank_microbatches`).
/// - Interleaved 1F1B (Megatron, group size P): the k-th forward of a device runs micro-batch
///   (k div Pv)·P + (k mod Pv) mod P on chunk (k mod Pv) div P, the k-th backward the same
///   micro-batch on chunk v−1 − (k mod Pv) div P; warm-up min(2(P−d−1) + (v−1)P, M·v).
/// - ZB-H1: the 1F1B order with B in place of BW; right after a B, device d emits the oldest
///   pending W whenever more than d Ws are pending; the rest are flushed at the end.
///
/// Returns an empty string on success, otherwise a message (P, v, M < 1, v != 1 for a kind that
/// is not interleaved, M % P != 0 for interleaved, sizes over the validate() limits).
std::string build_schedule_order(ScheduleKind kind, int P, int v, int M, ScheduleOrder* order);

/// \brief One op as the reference simulator ran it (for the schedule report and trace).
struct TimedOp {
  PipeOp op;
  int device = 0;
  double start_s = 0;     ///< the device starts the op
  double end_s = 0;       ///< the op's own work ends (start + duration)
  double release_s = 0;   ///< the device is free again: end_s plus, in the blocking p2p model,
                          ///< the send of its output (F) or input gradient (B / fused BW)
  double ready_s = 0;     ///< its input is there: the producer's release (+ async transfer)
  double dep_end_s = -1;  ///< the producer op's release time, −1 when it has none
};

/// \brief simulate() that also records every op's times in *ops (cleared first), in the order
/// the worklist ran them. Not for hot paths: simulate() and simulate_fast() record nothing.
ScheduleResult simulate_traced(const ScheduleInput& in, std::vector<TimedOp>* ops);

}  // namespace ppsearch
