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
  /// 0, or k > 0: the op does not start before the input of the k-th next op on its device
  /// (an F, B or BW) is there. deepseek-ai/DualPipe posts a receive before the wait of an
  /// earlier op: both receives of an overlapped F&B, the F's receive before a weight step, the
  /// next F0's receive in step 2 (docs/algorithms.md §2.4). Only DualPipe sets it.
  int wait_ahead = 0;
  unsigned char link = 0;  ///< kLinkHold or 0 (only DualPipe sets it)
};

/// \brief PipeOp::link: the op's output leaves its device only when the next op on the device
/// ends (deepseek-ai/DualPipe sends both results of an overlapped F&B after the pair, and sends
/// some forwards of steps 2 and 4 one op late).
constexpr unsigned char kLinkHold = 2;

/// \brief All devices' op lists, flattened: device d runs ops[begin[d]] .. ops[begin[d+1]−1]
/// in that order. begin has P + 1 entries.
struct ScheduleOrder {
  std::vector<PipeOp> ops;
  std::vector<int> begin;
};

/// \brief Device of virtual stage `vs`: vs mod P, or for the V-shaped ZB-V and DualPipe
/// (v = 2) vs for vs < P and 2P−1−vs above.
int stage_device(ScheduleKind kind, int P, int vs);
/// \brief Virtual stage of chunk c on device d (the inverse of stage_device()).
int device_stage(ScheduleKind kind, int P, int c, int d);
/// \brief True when `vs` starts a chain (its F has no predecessor): vs = 0, and for DualPipe
/// also vs = P (the reverse direction's first stage).
bool chain_first(ScheduleKind kind, int P, int vs);
/// \brief True when `vs` ends a chain (its B follows its own F): vs = V−1, and for DualPipe
/// also vs = P−1.
bool chain_last(ScheduleKind kind, int P, int V, int vs);
/// \brief Micro-batches that run through one chain: M, or M/2 for DualPipe (each direction
/// takes half). Ops carry mb in 0..chain_microbatches()−1.
int chain_microbatches(ScheduleKind kind, int M);
/// \brief True for the schedules that split the backward into B and W (ZB-H1, ZB-V, DualPipe,
/// ZB-H2).
/// DualPipe also runs fused BW ops where its reference order does (deepseek-ai/DualPipe).
bool splits_backward(ScheduleKind kind);

/// \brief The shape rules of `kind` (P, v, M >= 1; v = 1 except interleaved (any) and ZB-V /
/// DualPipe (2); interleaved M % P == 0; DualPipe P even, M even, M >= 2P). Empty when they
/// hold, else one line "field = value: constraint".
std::string check_shape(ScheduleKind kind, int P, int v, int M);

/// \brief Per-chunk F, B and W times the ZB-V generator plans its order with (the other
/// generators ignore it). The simulator passes the input's mean times, rounded (pipeline_schedule
/// .cpp), so that the order, and the compiled program it caches, depend on the time ratios only.
struct OrderHint {
  double f = 1;
  double b = 1;
  double w = 1;
  double w_state = 0;  ///< bytes a B keeps until its W, as a share of the F's activation
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
/// - ZB-H2: min(2(P−d)−1, M) warm-up forwards on device d, then pairs of B and F, then the
///   remaining Bs; right after a B, device d emits the oldest pending W whenever more than 2d Ws
///   are pending; the rest are flushed at the end (Zero Bubble ICLR'24 §2.2).
/// - ZB-V: the order of the sail-sg zero-bubble V-schedule generator (`scheduler/zbv.py`) for
///   uniform chunks with the times of `hint`: warm-up of 2P−1−d chunk-0 and d+1 chunk-1
///   forwards on rank d (equal times), then rounds of one B and one F per rank with pending Ws
///   filling waits, at most 2P chunk activations per rank (W states counted at `hint.w_state`),
///   the remaining Ws at the end; best of its four fill variants (docs/algorithms.md §2.4).
/// - DualPipe: the eight steps of deepseek-ai/DualPipe `DualPipe.step` (nF0, nF0F1, nB1W1F1,
///   nF0B1F1B0, nB1F1B0, nB1B0, nWB0, nW), with fused BW where that code runs the backward
///   without deferring W. An overlapped F&B is its F (wait_ahead 1, kLinkHold) followed by its
///   BW: it starts when both inputs are there and both results leave when it ends. The W of a
///   step nB1W1F1 waits for the next F's input; each F1 of nF0F1 for the next F0's; the sends
///   of nF0F1's F0 (other ranks) or last F1 and of nF0B1F1B0's first F0 (middle ranks) leave
///   one op late (kLinkHold), as that code does.
///
/// Returns an empty string on success, otherwise a message (P, v, M < 1, a v the kind does not
/// take, M % P != 0 for interleaved, DualPipe with odd P, odd M or M < 2P, sizes over the
/// validate() limits).
std::string build_schedule_order(ScheduleKind kind, int P, int v, int M, ScheduleOrder* order,
                                 const OrderHint& hint = OrderHint());

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
