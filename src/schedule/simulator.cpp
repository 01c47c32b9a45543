// Event-driven pipeline simulator (docs/algorithms.md §2.4) and its fast path.
//
// Reference: simulate() is the worklist of §2.4. Each device runs its op list in order; an op
// starts when the device is free and its dependency has finished (plus the transfer time in the
// async p2p model); in the blocking model the sender stays busy for the transfer. Dependencies:
//   F(vs, mb)      <- F(vs−1, mb)                          (vs > 0)
//   B/BW(vs, mb)   <- B/BW(vs+1, mb), or F(V−1, mb) on the last virtual stage
//   W(vs, mb)      <- B(vs, mb)
//
// Fast path, part 1 (compiled programs): the op order, and therefore a topological order of the
// dependency DAG, depends only on (kind, P, v, M). simulate_fast() compiles it once into a flat
// list of (previous op on the device, dependency, parameter slot) triples sorted by wavefront,
// caches it in the SimWorkspace, and evaluates the longest path in one sequential pass: the same
// additions and maxima as the worklist, without its bookkeeping.
//
// Fast path, part 2 (periodicity): number the steady iterations (one F and one backward per
// device, plus one W for ZB-H1) and give device d the skew d, so that "step g" means iteration
// g + d on device d. Every dependency of an op at step g then lies in step g or g−1 (see
// PeriodicShape below). A step's end times therefore determine everything after it through a
// max-plus map that commutes with shifting all micro-batch indices by the period p (1, or P for
// interleaved; S steps). If row(g + c·S) = row(g) + D for one constant D, removing c periods
// from the middle of the schedule removes exactly D from every later end time:
// T(M) = T(M − c·p) + D. simulate_fast() runs a reduced M' ≡ M (mod c·p), finds such (g, c) and
// extrapolates. The memory peaks only depend on the op order, which repeats the same way, so the
// reduced run's peaks are the full run's. GPipe uses its exact flow-shop closed form instead
// (docs/algorithms.md §2.3). Whatever cannot be proven periodic runs the compiled full program.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/schedule_order.hpp"

namespace ppsearch {
namespace {

// Parameter slots: kind·V + vs with kind 0 = F, 1 = split B, 2 = W, 3 = fused BW. B and BW play
// the same part in the dependency graph (isb()); DualPipe uses both in one order.
constexpr int kSlotF = 0;
constexpr int kSlotB = 1;
constexpr int kSlotW = 2;
constexpr int kSlotBW = 3;
// Zero-time gates of PipeOp::wait_ahead (DualPipe): a compiled op that waits for the input of an
// F (gate F) or of a B / BW (gate B) at vs, with that op's transfer lag, so that the next op on
// the device starts no earlier.
constexpr int kSlotGateF = 4;
constexpr int kSlotGateB = 5;
constexpr int kSlots = 6;

int slot_kind(OpKind kind) {
  switch (kind) {
    case OpKind::kF:
      return kSlotF;
    case OpKind::kW:
      return kSlotW;
    case OpKind::kB:
      return kSlotB;
    case OpKind::kBW:
      break;
  }
  return kSlotBW;
}

bool isb(int slot) { return slot == kSlotB || slot == kSlotBW; }

// One op of a compiled program. `prev` and `dep` are program indices; the sentinel index
// ops.size() stands for "none" and holds end time 0.
struct CompiledOp {
  int prev;   // previous op on the same device
  int dep;    // dependency
  int param;  // parameter slot
};

// A compiled schedule: ops in a topological order that keeps every device's own order, plus what
// depends only on the order (in-flight peaks, the candidate states of the memory peak).
struct Program {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int P = 0;
  int v = 0;
  int M = 0;
  OrderHint hint;  // ZB-V plans its order with it (part of the cache key)
  std::uint64_t last_use = 0;
  std::vector<CompiledOp> ops;
  std::vector<int> last_op;         // per device: program index of its last op
  std::vector<int> last_grad;       // per device: program index of its last B / W / BW
  std::vector<int> peak_in_flight;  // per device
  // Memory peak. After any op, device d holds Σ_c a_c·act[cP+d] + b_c·keep[cP+d], where a_c
  // counts chunk c's forwards whose B has not run and b_c its Bs whose W has not run. Per device
  // only the Pareto-maximal (a, b) vectors are kept (act, keep >= 0), 2v ints each.
  std::vector<int> state_begin;  // P + 1 offsets into state_coef, in units of 2v ints
  std::vector<int> state_coef;
  long long steps = 0;          // G: number of periodic steps (0 if none)
  std::vector<int> step_slots;  // G rows of P·ops_per_step program indices
};

}  // namespace

struct SimWorkspace::Impl {
  // Per parameter slot (size kSlots·V), prepared from the input once per call.
  std::vector<double> cost;       // op duration + blocking send time: how long the device is held
  std::vector<double> dur;        // op duration alone (busy time)
  std::vector<double> lag;        // async transfer time before the op may start
  std::vector<double> dm;         // activation-memory delta
  std::vector<double> act, keep;  // per virtual stage: F's bytes, bytes kept from B to W
  std::vector<double> work;       // per virtual stage: F + B + W time of one micro-batch
  OrderHint hint;                 // per-chunk time ratios for the ZB-V generator
  // Reference worklist state.
  ScheduleOrder order;
  std::vector<double> end_f, end_b, end_w;  // index mb·V + vs; −1 = not run yet
  std::vector<int> ptr;
  std::vector<int> inflight;
  std::vector<double> clock, mem, keep_mem;
  // Compiled programs (small LRU cache) and their scratch.
  std::vector<Program> programs;
  std::uint64_t tick = 0;
  std::vector<int> slot_f, slot_b, slot_w;      // compile scratch: program index per (mb, vs)
  std::vector<int> pos_to_prog;                 // compile scratch: program index per list position
  std::vector<int> level, level_start, remap;   // compile scratch: wavefront ordering
  std::vector<CompiledOp> ops_tmp;              // compile scratch
  std::vector<int> state;                       // compile scratch: current (a, b) per device
  std::vector<std::vector<int>> frontier;       // compile scratch: Pareto states per device
  std::vector<double> end;                      // end time per program op (+ sentinel)
  std::vector<double> signature;                // per step: Σ_j (x_j − x_0)
  std::vector<double> device_act, device_keep;  // run_program scratch: a device's chunks' bytes
  ScheduleResult reduced;
  std::vector<TimedOp>* trace = nullptr;  // simulate_traced() only; null everywhere else
};

SimWorkspace::SimWorkspace() : m_impl(std::make_unique<Impl>()) {}
SimWorkspace::~SimWorkspace() = default;
SimWorkspace::SimWorkspace(SimWorkspace&&) noexcept = default;
SimWorkspace& SimWorkspace::operator=(SimWorkspace&&) noexcept = default;

namespace {

using Impl = SimWorkspace::Impl;

constexpr std::size_t kMaxCachedPrograms = 32;

std::size_t uz(long long x) { return static_cast<std::size_t>(x); }

double at_or_zero(const std::vector<double>& v, std::size_t i) { return v.empty() ? 0.0 : v[i]; }

// Records a memory state (total, W-state part) into the running peak. Several moments can
// reach the same peak with different splits (a stored activation and a W state of equal
// size); the split reported is the one with the least W state among them, and totals within
// a relative 1e-12 count as equal, so that the worklist (running sums) and the compiled
// program (sums of counts) report the same split.
void note_peak(double total, double keep, double* peak, double* peak_keep) {
  const double tol = 1e-12 * std::max(std::abs(total), std::abs(*peak));
  if (total > *peak + tol) {
    *peak = total;
    *peak_keep = keep;
  } else if (total >= *peak - tol) {
    *peak = std::max(*peak, total);
    *peak_keep = std::min(*peak_keep, keep);
  }
}

// What the memory figures need of the input: per virtual stage the activation and W-state
// bytes and the work per micro-batch, and the ZB-V generator's order hint (part of the
// program's key). prepare() builds the same and the timing tables on top.
void prepare_memory(const ScheduleInput& in, Impl& ws) {
  const int V = in.devices * in.chunks;
  const bool split = splits_backward(in.kind);
  ws.act.resize(uz(V));
  ws.keep.resize(uz(V));
  ws.work.resize(uz(V));
  for (int vs = 0; vs < V; ++vs) {
    const auto i = uz(vs);
    ws.act[i] = at_or_zero(in.act_bytes, i);
    ws.keep[i] = split ? at_or_zero(in.wkeep_bytes, i) : 0.0;
    ws.work[i] = in.fwd_s[i] + in.bwd_s[i] + at_or_zero(in.wgt_s, i);
  }
  ws.hint = OrderHint();
  if (in.kind == ScheduleKind::kZBV) {
    // The ZB-V generator plans with the mean F : B : W ratios, rounded to 1/16 of F, so that
    // inputs with the same ratios share one order and one compiled program.
    double f = 0, b = 0, w = 0, act = 0, keep = 0;
    for (int vs = 0; vs < V; ++vs) {
      f += in.fwd_s[uz(vs)];
      b += in.bwd_s[uz(vs)];
      w += at_or_zero(in.wgt_s, uz(vs));
      act += ws.act[uz(vs)];
      keep += ws.keep[uz(vs)];
    }
    if (f > 0) {
      ws.hint.b = std::round(16 * b / f) / 16;
      ws.hint.w = std::round(16 * w / f) / 16;
    }
    if (act > 0) {  // the W state's share, rounded up (a conservative memory plan)
      ws.hint.w_state = std::min(1.0, std::ceil(16 * keep / act) / 16);
    }
  }
}

// Turns the input into per-slot durations, transfer charges and memory deltas (docs/algorithms.md
// §2.4 "Inputs"). Independent of M.
void prepare(const ScheduleInput& in, Impl& ws) {
  const int P = in.devices;
  const int V = P * in.chunks;
  const bool blocking = in.mode == P2PMode::kBlocking;
  prepare_memory(in, ws);
  for (auto* v : {&ws.cost, &ws.dur, &ws.lag, &ws.dm}) {
    v->assign(kSlots * uz(V), 0.0);
  }
  const std::size_t f0 = 0;
  const std::size_t b0 = uz(V);
  const std::size_t w0 = 2 * uz(V);
  const std::size_t bw0 = 3 * uz(V);
  for (int vs = 0; vs < V; ++vs) {
    const auto i = uz(vs);
    const double wgt = at_or_zero(in.wgt_s, i);
    const double act = ws.act[i];
    const double keep = ws.keep[i];
    ws.dur[f0 + i] = in.fwd_s[i];
    ws.dur[b0 + i] = in.bwd_s[i];
    ws.dur[w0 + i] = wgt;
    ws.dur[bw0 + i] = in.bwd_s[i] + wgt;  // fused BW = B + W
    // F adds A; a split B frees A − Wkeep and its W frees Wkeep; a fused BW frees A (§2.4).
    ws.dm[f0 + i] = act;
    ws.dm[b0 + i] = -(act - keep);
    ws.dm[w0 + i] = -keep;
    ws.dm[bw0 + i] = -act;
  }
  for (std::size_t k = 0; k < ws.cost.size(); ++k) {
    ws.cost[k] = ws.dur[k];
  }
  // Boundary vs → vs+1 is charged only between different devices (stage_device()) and within
  // a chain (DualPipe's two directions meet at P−1 | P without a transfer).
  for (int vs = 0; vs + 1 < V; ++vs) {
    if (stage_device(in.kind, P, vs + 1) == stage_device(in.kind, P, vs) ||
        chain_last(in.kind, P, V, vs)) {
      continue;
    }
    const auto i = uz(vs);
    const double c = at_or_zero(in.p2p_s, i);
    if (blocking) {
      ws.cost[f0 + i] += c;       // F(vs) sends its output to vs+1
      ws.cost[b0 + i + 1] += c;   // B(vs+1) sends its input gradient to vs
      ws.cost[bw0 + i + 1] += c;  // (or the fused BW)
    } else {
      ws.lag[f0 + i + 1] = c;  // F(vs+1) waits for the activation from vs
      ws.lag[b0 + i] = c;      // B(vs) waits for the gradient from vs+1
      ws.lag[bw0 + i] = c;
    }
  }
  for (int vs = 0; vs < V; ++vs) {  // the gates wait with the lag of the op they wait for
    ws.lag[uz(kSlotGateF) * uz(V) + uz(vs)] = ws.lag[f0 + uz(vs)];
    ws.lag[uz(kSlotGateB) * uz(V) + uz(vs)] = ws.lag[b0 + uz(vs)];
  }
}

void resize_result(int P, ScheduleResult* out) {
  const auto n = uz(P);
  out->ok = true;
  out->error.clear();
  out->busy_s.assign(n, 0.0);
  out->peak_act_bytes.assign(n, 0.0);
  out->peak_wkeep_bytes.assign(n, 0.0);
  out->peak_in_flight.assign(n, 0);
  out->last_grad_end_s.assign(n, 0.0);
}

void finish_bubble(ScheduleResult* out) {
  const std::size_t P = out->busy_s.size();
  double sum = 0;
  if (out->time_s > 0) {
    for (std::size_t d = 0; d < P; ++d) {
      sum += (out->time_s - out->busy_s[d]) / out->time_s;
    }
  }
  out->bubble_fraction = P > 0 ? sum / static_cast<double>(P) : 0.0;
}

void set_error(const std::string& message, ScheduleResult* out) {
  *out = ScheduleResult();
  out->ok = false;
  out->error = message;
}

// ----- Reference: the §2.4 worklist ------------------------------------------------------------

// When the input of `op` is there (its dependency's end plus the async transfer), 0 for a chain's
// first F, −1 while the dependency has not run. For PipeOp::wait_ahead (DualPipe).
double linked_ready(const ScheduleInput& in, const Impl& ws, const PipeOp& op) {
  const int P = in.devices;
  const int V = P * in.chunks;
  const std::size_t idx = uz(op.mb) * uz(V) + uz(op.vs);
  const int kind = slot_kind(op.kind);
  double dep = 0;
  if (kind == kSlotF) {
    if (chain_first(in.kind, P, op.vs)) return 0.0;
    dep = ws.end_f[idx - 1];
  } else if (isb(kind)) {
    dep = chain_last(in.kind, P, V, op.vs) ? ws.end_f[idx] : ws.end_b[idx + 1];
  } else {
    dep = ws.end_b[idx];
  }
  return dep < 0 ? -1.0 : dep + ws.lag[uz(kind) * uz(V) + uz(op.vs)];
}

void reference_worklist(const ScheduleInput& in, Impl& ws, ScheduleResult* out) {
  const int P = in.devices;
  const int V = P * in.chunks;
  const int M = in.microbatches;
  const std::string err = build_schedule_order(in.kind, P, in.chunks, M, &ws.order, ws.hint);
  if (!err.empty()) {
    set_error(err, out);
    return;
  }
  const std::size_t cells = uz(V) * uz(chain_microbatches(in.kind, M));
  ws.end_f.assign(cells, -1.0);
  ws.end_b.assign(cells, -1.0);
  ws.end_w.assign(splits_backward(in.kind) ? cells : 0, -1.0);
  ws.ptr.assign(ws.order.begin.begin(), ws.order.begin.end() - 1);
  ws.clock.assign(uz(P), 0.0);
  ws.mem.assign(uz(P), 0.0);
  ws.keep_mem.assign(uz(P), 0.0);
  ws.inflight.assign(uz(P), 0);
  resize_result(P, out);

  // Ops linked by kLinkHold (DualPipe): per device, the end-time cell its held op writes when
  // the next op ends (nullptr when none is held).
  std::vector<double*> held(uz(P), nullptr);
  long long remaining = static_cast<long long>(ws.order.ops.size());
  while (remaining > 0) {
    bool progressed = false;
    for (int d = 0; d < P; ++d) {
      const auto du = uz(d);
      const int stop = ws.order.begin[du + 1];
      while (ws.ptr[du] < stop) {
        const PipeOp& op = ws.order.ops[uz(ws.ptr[du])];
        const std::size_t idx = uz(op.mb) * uz(V) + uz(op.vs);
        const int kind = slot_kind(op.kind);
        const std::size_t slot = uz(kind) * uz(V) + uz(op.vs);
        // Dependency end time (−1 while it has not run).
        double dep = 0;
        bool has_dep = true;
        if (kind == kSlotF) {
          has_dep = !chain_first(in.kind, P, op.vs);
          dep = has_dep ? ws.end_f[idx - 1] : 0.0;
        } else if (isb(kind)) {
          dep = chain_last(in.kind, P, V, op.vs) ? ws.end_f[idx] : ws.end_b[idx + 1];
        } else {
          dep = ws.end_b[idx];
        }
        if (has_dep && dep < 0) {
          break;
        }
        double ready = has_dep ? dep + ws.lag[slot] : 0.0;
        if (op.wait_ahead > 0) {
          const double next_ready =
              linked_ready(in, ws, ws.order.ops[uz(ws.ptr[du]) + uz(op.wait_ahead)]);
          if (next_ready < 0) {
            break;
          }
          ready = std::max(ready, next_ready);
        }
        const double start = std::max(ws.clock[du], ready);
        const double end = start + ws.cost[slot];
        if (ws.trace != nullptr) {
          ws.trace->push_back(
              {op, d, start, start + ws.dur[slot], end, ready, has_dep ? dep : -1.0});
        }
        ws.clock[du] = end;
        double& cell = (kind == kSlotF ? ws.end_f : (isb(kind) ? ws.end_b : ws.end_w))[idx];
        if (held[du] != nullptr) {
          *held[du] = end;  // the held op's output leaves now
          held[du] = nullptr;
        }
        if ((op.link & kLinkHold) != 0) {
          held[du] = &cell;
        } else {
          cell = end;
        }
        out->busy_s[du] += ws.dur[slot];
        ws.mem[du] += ws.dm[slot];
        // W-state bytes held: a split B adds its Wkeep, W frees it (the deltas of prepare()).
        if (kind == kSlotB) ws.keep_mem[du] += ws.keep[uz(op.vs)];
        if (kind == kSlotW) ws.keep_mem[du] -= ws.keep[uz(op.vs)];
        note_peak(ws.mem[du], ws.keep_mem[du], &out->peak_act_bytes[du],
                  &out->peak_wkeep_bytes[du]);
        if (kind == kSlotF) {
          ++ws.inflight[du];
          out->peak_in_flight[du] = std::max(out->peak_in_flight[du], ws.inflight[du]);
        } else {
          out->last_grad_end_s[du] = end;
          if (isb(kind)) {
            --ws.inflight[du];
          }
        }
        ++ws.ptr[du];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      set_error("internal error: schedule order deadlocks", out);
      return;
    }
  }
  out->time_s = *std::max_element(ws.clock.begin(), ws.clock.end());
  finish_bubble(out);
}

// ----- GPipe closed form (docs/algorithms.md §2.3, "GPipe (exact)")
// -------------------------------- Forward phase: a permutation flow shop with M identical jobs and
// transfer lags; its makespan is Σ f'_σ + Σ lag + (M−1)·max f'_σ (the longest grid path turns right
// M−1 times, best on the slowest stage, and crosses every boundary once). The backward phase starts
// on the last stage when its last F ends; every other stage is idle by then, so it is the same flow
// shop run from stage P−1 down to 0, and stage σ's last backward ends after the part of it from P−1
// to σ. f' and b' include the sender's transfer in the blocking model.
void gpipe_closed_form(const ScheduleInput& in, const Impl& ws, ScheduleResult* out) {
  const int P = in.devices;
  const int M = in.microbatches;
  const auto b0 = uz(kSlotBW) * uz(P);  // GPipe runs fused BW
  resize_result(P, out);
  double sum_f = 0;
  double max_f = 0;
  for (int s = 0; s < P; ++s) {
    const auto i = uz(s);
    sum_f += ws.cost[i] + ws.lag[i];
    max_f = std::max(max_f, ws.cost[i]);
  }
  const double t_fwd = sum_f + (M - 1) * max_f;
  double sum_b = 0;
  double max_b = 0;
  for (int s = P - 1; s >= 0; --s) {
    const auto i = uz(s);
    sum_b += ws.cost[b0 + i] + ws.lag[b0 + i];
    max_b = std::max(max_b, ws.cost[b0 + i]);
    out->last_grad_end_s[i] = t_fwd + sum_b + (M - 1) * max_b;
    out->busy_s[i] = M * (ws.dur[i] + ws.dur[b0 + i]);
    out->peak_act_bytes[i] = M * ws.dm[i];
    out->peak_in_flight[i] = M;
  }
  out->time_s = out->last_grad_end_s[0];
  finish_bubble(out);
}

// ----- Periodic structure ------------------------------------------------------------------------
// Step g on device d = steady iteration g + d. Lags of the dependencies, in steps:
// - 1F1B / ZB-H1 (warm-up w_d = P−d−1; iteration i = F(w_d + i), B(i)[, W(i−d)]):
//   F(d, w_d+i) <- F(d−1, w_d+i), which is iteration i−1 of device d−1: the same step.
//   B(d, i) <- B(d+1, i), iteration i of device d+1: the step before.
//   W(d, i−d) <- B(d, i−d), earlier on the same device: already implied by the device order.
// - Interleaved (warm-up w_d = 2(P−d−1) + (v−1)P; the k-th F and the k-th B run the same
//   (micro-batch, chunk) on every device): F at index k on d <- index k on d−1 (two iterations
//   earlier there: the step before), or for chunk c >= 1 on device 0 <- index k−P on device P−1
//   (the step before). B at index j on d <- index j on d+1 (the step before), or on device P−1
//   <- index j−P on device 0 (the step before); the last virtual stage's B waits for its F in
//   the same iteration.
struct PeriodicShape {
  int mb_period = 1;    // p: micro-batches per period
  int step_period = 1;  // S: steps per period
  int ops_per_step = 2;
};

// ZB-V, DualPipe and ZB-H2 run their compiled full program (their orders are not written as one
// repeated step; see build_schedule_order()).
bool is_periodic_kind(ScheduleKind kind) {
  return kind == ScheduleKind::k1F1B || kind == ScheduleKind::kInterleaved1F1B ||
         kind == ScheduleKind::kZBH1;
}

PeriodicShape shape_of(ScheduleKind kind, int P, int v) {
  PeriodicShape s;
  if (kind == ScheduleKind::kInterleaved1F1B) {
    s.mb_period = P;
    s.step_period = P * v;
  }
  s.ops_per_step = kind == ScheduleKind::kZBH1 ? 3 : 2;
  return s;
}

// G: the number of steps g for which iteration g + d is a steady iteration on every device
// (<= 0 when there is no steady state). For 1F1B and ZB-H1 device d has M − P + d + 1 steady
// iterations; for interleaved M·v − 2(P−d−1) − (v−1)P.
long long steps_of(ScheduleKind kind, long long P, long long v, long long M) {
  if (kind == ScheduleKind::kInterleaved1F1B) {
    return M * v - (v + 1) * P + 2;
  }
  return M - P + 1;
}

// Position (within device d's op list) of the first op of step g.
long long step_position(ScheduleKind kind, long long P, long long v, int d, long long g) {
  switch (kind) {
    case ScheduleKind::kInterleaved1F1B:
      return 2 * (P - d - 1) + (v - 1) * P + 2 * (g + d);
    case ScheduleKind::kZBH1:
      // Iterations 0..d−1 emit no W (at most d are pending), later ones emit one each.
      return (P - 1 + d) + 3 * g;
    case ScheduleKind::k1F1B:
    case ScheduleKind::kGPipe:
    case ScheduleKind::kZBV:
    case ScheduleKind::kDualPipe:
    case ScheduleKind::kZBH2:
      break;
  }
  return (P - 1 + d) + 2 * g;
}

// ----- Compiled programs -------------------------------------------------------------------------

// Adds `cand` (2v ints) to a Pareto frontier of maximal vectors.
void add_pareto(const int* cand, std::size_t width, std::vector<int>& frontier) {
  const std::size_t count = frontier.size() / width;
  for (std::size_t k = 0; k < count; ++k) {
    const int* f = frontier.data() + k * width;
    bool dominated = true;
    for (std::size_t j = 0; j < width && dominated; ++j) {
      dominated = cand[j] <= f[j];
    }
    if (dominated) {
      return;
    }
  }
  std::size_t kept = 0;
  for (std::size_t k = 0; k < count; ++k) {
    int* f = frontier.data() + k * width;
    bool below = true;
    for (std::size_t j = 0; j < width && below; ++j) {
      below = f[j] <= cand[j];
    }
    if (!below) {
      std::copy(f, f + width, frontier.data() + kept * width);
      ++kept;
    }
  }
  frontier.resize(kept * width);
  frontier.insert(frontier.end(), cand, cand + width);
}

// Reorders a program by wavefront: level(op) = 1 + max(level(prev), level(dep)); ops of equal
// level are independent. Sorting by level keeps a topological order (and every device's order,
// since levels grow along it), and puts independent ops next to each other so the evaluation
// loop overlaps many dependency chains instead of waiting on one.
void wavefront_order(Impl& ws, Program* prog) {
  const std::size_t n = prog->ops.size();
  const int none = static_cast<int>(n);
  ws.level.assign(n + 1, 0);
  int max_level = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const CompiledOp& op = prog->ops[i];
    const int l = 1 + std::max(op.prev == none ? 0 : ws.level[uz(op.prev)],
                               op.dep == none ? 0 : ws.level[uz(op.dep)]);
    ws.level[i] = l;
    max_level = std::max(max_level, l);
  }
  ws.level_start.assign(uz(max_level) + 2, 0);
  for (std::size_t i = 0; i < n; ++i) {
    ++ws.level_start[uz(ws.level[i]) + 1];
  }
  for (std::size_t l = 1; l < ws.level_start.size(); ++l) {
    ws.level_start[l] += ws.level_start[l - 1];
  }
  ws.remap.assign(n + 1, none);
  for (std::size_t i = 0; i < n; ++i) {
    ws.remap[i] = ws.level_start[uz(ws.level[i])]++;
  }
  ws.ops_tmp.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const CompiledOp& op = prog->ops[i];
    ws.ops_tmp[uz(ws.remap[i])] = {ws.remap[uz(op.prev)], ws.remap[uz(op.dep)], op.param};
  }
  prog->ops.swap(ws.ops_tmp);
  for (auto* v : {&prog->last_op, &prog->last_grad}) {
    for (int& x : *v) {
      x = ws.remap[uz(x)];
    }
  }
}

// Builds the program for (kind, P, v, M): the worklist of §2.4 without times.
std::string compile(ScheduleKind kind, int P, int v, int M, Impl& ws, Program* prog) {
  const std::string err = build_schedule_order(kind, P, v, M, &ws.order, ws.hint);
  if (!err.empty()) {
    return err;
  }
  const int V = P * v;
  const std::size_t cells = uz(V) * uz(chain_microbatches(kind, M));
  const std::size_t n = ws.order.ops.size();
  std::size_t gates = 0;  // one zero-time gate per op with a wait_ahead (DualPipe)
  for (const PipeOp& op : ws.order.ops) {
    gates += op.wait_ahead > 0 ? 1 : 0;
  }
  const int none = static_cast<int>(n + gates);
  // Program index of the op producing the input of `op`; `none` for a chain's first F, −1 while
  // that op is not compiled yet.
  auto dep_of = [&](const PipeOp& op) -> int {
    const std::size_t idx = uz(op.mb) * uz(V) + uz(op.vs);
    const int k = slot_kind(op.kind);
    if (k == kSlotF) {
      return chain_first(kind, P, op.vs) ? none : ws.slot_f[idx - 1];
    }
    if (isb(k)) {
      return chain_last(kind, P, V, op.vs) ? ws.slot_f[idx] : ws.slot_b[idx + 1];
    }
    return ws.slot_b[idx];
  };
  std::vector<int*> held(uz(P), nullptr);  // kLinkHold: the slot entry written by the next op
  const std::size_t width = 2 * uz(v);
  ws.slot_f.assign(cells, -1);
  ws.slot_b.assign(cells, -1);
  ws.slot_w.assign(splits_backward(kind) ? cells : 0, -1);
  ws.pos_to_prog.assign(n, -1);
  ws.ptr.assign(ws.order.begin.begin(), ws.order.begin.end() - 1);
  ws.inflight.assign(uz(P), 0);
  ws.state.assign(uz(P) * width, 0);
  ws.frontier.resize(uz(P));
  for (auto& f : ws.frontier) {
    f.assign(width, 0);  // the empty device: the peak is never below 0
  }
  prog->kind = kind;
  prog->P = P;
  prog->v = v;
  prog->M = M;
  prog->hint = ws.hint;
  prog->ops.clear();
  prog->ops.reserve(n + gates);
  prog->last_op.assign(uz(P), none);
  prog->last_grad.assign(uz(P), none);
  prog->peak_in_flight.assign(uz(P), 0);
  std::size_t compiled = 0;  // order positions compiled
  while (compiled < n) {
    const std::size_t before = compiled;
    for (int d = 0; d < P; ++d) {
      const auto du = uz(d);
      const int stop = ws.order.begin[du + 1];
      int* state = ws.state.data() + du * width;
      for (; ws.ptr[du] < stop; ++ws.ptr[du]) {
        const PipeOp& op = ws.order.ops[uz(ws.ptr[du])];
        const std::size_t idx = uz(op.mb) * uz(V) + uz(op.vs);
        const int k = slot_kind(op.kind);
        const int dep = dep_of(op);
        if (dep < 0) {
          break;
        }
        if (op.wait_ahead > 0) {
          // A gate on a later op's input (an F, B or BW), then the op itself.
          const PipeOp& next = ws.order.ops[uz(ws.ptr[du]) + uz(op.wait_ahead)];
          const int next_dep = dep_of(next);
          if (next_dep < 0) {
            break;
          }
          const int gate = isb(slot_kind(next.kind)) ? kSlotGateB : kSlotGateF;
          const int gate_index = static_cast<int>(prog->ops.size());
          prog->ops.push_back({prog->last_op[du], next_dep, gate * V + next.vs});
          prog->last_op[du] = gate_index;
        }
        const int self = static_cast<int>(prog->ops.size());
        prog->ops.push_back({prog->last_op[du], dep, k * V + op.vs});
        prog->last_op[du] = self;
        int& cell = (k == kSlotF ? ws.slot_f : (isb(k) ? ws.slot_b : ws.slot_w))[idx];
        if (held[du] != nullptr) {
          *held[du] = self;  // the held op's output leaves when this op ends
          held[du] = nullptr;
        }
        if ((op.link & kLinkHold) != 0) {
          held[du] = &cell;
        } else {
          cell = self;
        }
        ws.pos_to_prog[uz(ws.ptr[du])] = self;
        ++compiled;
        // Memory state: a_c in state[c], b_c in state[v + c] (chunk c = vs div P).
        const auto c = uz(op.vs / P);
        if (k == kSlotF) {
          ++state[c];
          prog->peak_in_flight[du] = std::max(prog->peak_in_flight[du], ++ws.inflight[du]);
        } else {
          prog->last_grad[du] = self;
          if (isb(k)) {
            --state[c];
            if (op.kind == OpKind::kB) {
              ++state[uz(v) + c];  // split backward: W-state stays until W
            }
            --ws.inflight[du];
          } else {
            --state[uz(v) + c];
          }
        }
        // A W or a fused BW only lowers one count: the new state lies below the one before it,
        // which the frontier already covers, so adding it would change nothing.
        if (k == kSlotF || op.kind == OpKind::kB) {
          add_pareto(state, width, ws.frontier[du]);
        }
      }
    }
    if (compiled == before) {
      return "internal error: schedule order deadlocks";
    }
  }
  wavefront_order(ws, prog);
  prog->state_begin.assign(uz(P) + 1, 0);
  prog->state_coef.clear();
  for (int d = 0; d < P; ++d) {
    const auto& f = ws.frontier[uz(d)];
    prog->state_coef.insert(prog->state_coef.end(), f.begin(), f.end());
    prog->state_begin[uz(d) + 1] = static_cast<int>(prog->state_coef.size() / width);
  }
  prog->steps = 0;
  prog->step_slots.clear();
  if (is_periodic_kind(kind)) {
    const long long G = std::max(0LL, steps_of(kind, P, v, M));
    const PeriodicShape sh = shape_of(kind, P, v);
    prog->steps = G;
    prog->step_slots.resize(uz(G) * uz(P) * uz(sh.ops_per_step));
    std::size_t k = 0;
    for (long long g = 0; g < G; ++g) {
      for (int d = 0; d < P; ++d) {
        const long long first = ws.order.begin[uz(d)] + step_position(kind, P, v, d, g);
        for (int j = 0; j < sh.ops_per_step; ++j) {
          prog->step_slots[k++] = ws.remap[uz(ws.pos_to_prog[uz(first + j)])];
        }
      }
    }
  }
  return std::string();
}

// Returns the cached program for (kind, P, v, M), compiling it into the least recently used
// cache entry on a miss. nullptr (and *err set) when the order cannot be built.
const Program* get_program(ScheduleKind kind, int P, int v, int M, Impl& ws, std::string* err) {
  ++ws.tick;
  for (Program& p : ws.programs) {
    if (p.kind == kind && p.P == P && p.v == v && p.M == M && p.hint.f == ws.hint.f &&
        p.hint.b == ws.hint.b && p.hint.w == ws.hint.w && p.hint.w_state == ws.hint.w_state) {
      p.last_use = ws.tick;
      return &p;
    }
  }
  Program* slot = nullptr;
  ws.programs.reserve(kMaxCachedPrograms);  // cached Program addresses stay valid
  if (ws.programs.size() < kMaxCachedPrograms) {
    ws.programs.emplace_back();
    slot = &ws.programs.back();
  } else {
    slot = &*std::min_element(
        ws.programs.begin(), ws.programs.end(),
        [](const Program& a, const Program& b) { return a.last_use < b.last_use; });
  }
  // compile() labels the slot with its key before filling it: if it throws (std::bad_alloc),
  // the half-built program must never match a later lookup.
  try {
    *err = compile(kind, P, v, M, ws, slot);
  } catch (...) {
    slot->P = 0;
    throw;
  }
  if (!err->empty()) {
    slot->P = 0;  // never matches a lookup
    return nullptr;
  }
  slot->last_use = ws.tick;
  return slot;
}

// Busy time of device d for one micro-batch of each chain: all its ops on all its chunks.
double busy_per_microbatch(const Impl& ws, ScheduleKind kind, int P, int V, int d) {
  double s = 0;
  for (int c = 0; c < V / P; ++c) {
    s += ws.work[uz(device_stage(kind, P, c, d))];
  }
  return s;
}

// Device d's memory peak under `prog` with the prepared bytes: the best of its Pareto states
// (total and W-state part, note_peak()).
void device_peak(const Program& prog, Impl& ws, int d, double* peak, double* peak_keep) {
  const int P = prog.P;
  const auto du = uz(d);
  const std::size_t width = 2 * uz(prog.v);
  *peak = 0;
  *peak_keep = 0;
  // The device's chunks' activation and W-state bytes, read once (the same terms below).
  ws.device_act.resize(uz(prog.v));
  ws.device_keep.resize(uz(prog.v));
  double* dact = ws.device_act.data();
  double* dkeep = ws.device_keep.data();
  for (int c = 0; c < prog.v; ++c) {
    const auto vs = uz(device_stage(prog.kind, P, c, d));
    dact[c] = ws.act[vs];
    dkeep[c] = ws.keep[vs];
  }
  if (!splits_backward(prog.kind)) {
    // No W states: their counts and bytes are 0 (prepare_memory()), so the terms dropped here
    // add +0.0 to sums of non-negative products, which leaves every bit as it was.
    for (int s = prog.state_begin[du]; s < prog.state_begin[du + 1]; ++s) {
      const int* coef = prog.state_coef.data() + uz(s) * width;
      double m = 0;
      for (int c = 0; c < prog.v; ++c) {
        m += coef[c] * dact[c];
      }
      note_peak(m, 0.0, peak, peak_keep);
    }
    return;
  }
  for (int s = prog.state_begin[du]; s < prog.state_begin[du + 1]; ++s) {
    const int* coef = prog.state_coef.data() + uz(s) * width;
    double m = 0, keep = 0;
    for (int c = 0; c < prog.v; ++c) {
      m += coef[c] * dact[c] + coef[prog.v + c] * dkeep[c];
      keep += coef[prog.v + c] * dkeep[c];
    }
    note_peak(m, keep, peak, peak_keep);
  }
}

// Evaluates a program's longest path with the prepared parameters: the same additions and
// maxima as the worklist, in a precomputed order. Busy = M × per-micro-batch sum (what the
// op-by-op sum adds up to); the memory peak is the best Pareto state.
void run_program(const Program& prog, Impl& ws, ScheduleResult* out) {
  const int P = prog.P;
  const int V = P * prog.v;
  const std::size_t n = prog.ops.size();
  resize_result(P, out);
  ws.end.resize(n + 1);
  double* end = ws.end.data();
  end[n] = 0.0;
  const CompiledOp* ops = prog.ops.data();
  const double* cost = ws.cost.data();
  const double* lag = ws.lag.data();
  for (std::size_t i = 0; i < n; ++i) {
    const CompiledOp op = ops[i];
    end[i] = std::max(end[op.prev], end[op.dep] + lag[op.param]) + cost[op.param];
  }
  double t = 0;
  for (int d = 0; d < P; ++d) {
    const auto du = uz(d);
    t = std::max(t, end[prog.last_op[du]]);
    device_peak(prog, ws, d, &out->peak_act_bytes[du], &out->peak_wkeep_bytes[du]);
    out->busy_s[du] =
        chain_microbatches(prog.kind, prog.M) * busy_per_microbatch(ws, prog.kind, P, V, d);
    out->peak_in_flight[du] = prog.peak_in_flight[du];
    out->last_grad_end_s[du] = end[prog.last_grad[du]];
  }
  out->time_s = t;
  finish_bubble(out);
}

// ----- Periodic extrapolation --------------------------------------------------------------------

// Tolerance of the "rows differ by one constant" test, relative to the reduced run's largest end
// time T'. End times are sums of at most a few thousand rounded additions, so genuine repeats
// agree to ~1e-14 relative. A max-plus map is non-expansive in the max norm, so a row pair that
// only agrees within tol = 1e-12·T' lets the error grow by at most tol per extrapolated period:
// relative to the final makespan (>= n periods of shift D) that is 1e-12·T'/D, i.e. about 1e-12
// times the number of periods in the reduced run.
constexpr double kRepeatTol = 1e-12;

struct Repeat {
  bool found = false;
  long long g = 0;
  long long c = 0;
  double shift = 0;
};

// Smallest c, then earliest g, with row(g + c·S) = row(g) + const, using the rows of the last
// run_program() of `prog`. A per-row signature Σ_j (x_j − x_0) filters candidates cheaply; it is
// computed when a comparison first needs it (the search usually ends long before the last rows,
// docs/performance.md "Periodic extrapolation").
Repeat find_repeat(const Program& prog, const PeriodicShape& sh, Impl& ws) {
  const long long G = prog.steps;
  const std::size_t width = uz(prog.P) * uz(sh.ops_per_step);
  const double* end = ws.end.data();
  const int* slots = prog.step_slots.data();
  Repeat r;
  if (G <= 0) {
    return r;
  }
  // The largest end time over all rows, entries j >= 1: a device's ops end in its order
  // (end = max(prev end, ...) + a cost >= 0) and row g holds each device's ops of step g, so
  // every row's entries end no later than the last row's of the same device, and each row's
  // entry 0 (device 0's first op of the step) no later than its entry 1 (device 0's next one).
  double scale = 0;
  {
    const int* last = slots + uz(G - 1) * width;
    for (std::size_t j = 1; j < width; ++j) {
      scale = std::max(scale, end[last[j]]);
    }
  }
  ws.signature.assign(uz(G), std::numeric_limits<double>::quiet_NaN());
  auto signature = [&](long long g) {
    double& s = ws.signature[uz(g)];
    if (std::isnan(s)) {
      const int* row = slots + uz(g) * width;
      const double x0 = end[row[0]];
      double sum = 0;
      for (std::size_t j = 1; j < width; ++j) {
        sum += end[row[j]] - x0;
      }
      s = sum;
    }
    return s;
  };
  const double tol = kRepeatTol * scale;
  for (long long c = 1; c * sh.step_period < G; ++c) {
    const long long lag = c * sh.step_period;
    for (long long g = 0; g + lag < G; ++g) {
      if (std::fabs(signature(g + lag) - signature(g)) > tol * static_cast<double>(width)) {
        continue;
      }
      const int* a = slots + uz(g) * width;
      const int* b = slots + uz(g + lag) * width;
      const double shift = end[b[0]] - end[a[0]];
      bool same = true;
      for (std::size_t j = 1; j < width && same; ++j) {
        same = std::fabs((end[b[j]] - end[a[j]]) - shift) <= tol;
      }
      if (same) {
        r.found = true;
        r.g = g;
        r.c = c;
        r.shift = shift;
        return r;
      }
    }
  }
  return r;
}

// Smallest M' ≡ 0 (mod p) with at least `min_steps` steps.
long long reduced_m(ScheduleKind kind, int P, int v, long long p, long long min_steps) {
  long long Mr = p;
  while (steps_of(kind, P, v, Mr) < min_steps) {
    Mr += p;
  }
  return Mr;
}

// The first try's number of steps: one period plus a short transient (ZB-H1's W chain adds about
// P steps).
long long first_min_steps(ScheduleKind kind, int P, const PeriodicShape& sh) {
  long long min_steps = sh.step_period + 1;
  if (sh.step_period == 1) {
    min_steps += kind == ScheduleKind::kZBH1 ? P + 8 : 8;
  }
  return min_steps;
}

// A reduced run of Mr micro-batches is only worth it well below M: a failed try costs its own
// length on top of the full evaluation.
bool worth_reducing(long long Mr, long long M) { return 4 * Mr <= 3 * M; }

// Returns true when *out holds the answer for in.microbatches; false when no period could be
// proven below M (the caller then evaluates the full program).
bool periodic_fast(const ScheduleInput& in, Impl& ws, ScheduleResult* out) {
  const int P = in.devices;
  const int v = in.chunks;
  const long long M = in.microbatches;
  const PeriodicShape sh = shape_of(in.kind, P, v);
  const long long p = sh.mb_period;
  // First try: first_min_steps(). Cyclicities up to P occur (e.g. async p2p with uniform stages,
  // where the critical cycle is the round trip over the P micro-batches in flight on device 0), so
  // the second try leaves room for a few of those; later tries double (while worth_reducing()).
  long long min_steps = first_min_steps(in.kind, P, sh);
  std::string err;
  for (int attempt = 0;; ++attempt) {
    long long Mr = reduced_m(in.kind, P, v, p, min_steps);
    if (!worth_reducing(Mr, M)) {
      return false;
    }
    const Program* prog = get_program(in.kind, P, v, static_cast<int>(Mr), ws, &err);
    if (prog == nullptr) {
      set_error(err, out);
      return true;
    }
    run_program(*prog, ws, &ws.reduced);
    const Repeat rep = find_repeat(*prog, sh, ws);
    if (!rep.found) {
      min_steps = attempt == 0 ? 3 * (sh.step_period == 1 ? P : sh.step_period) + 8 : 2 * min_steps;
      continue;
    }
    const long long cp = rep.c * p;
    const long long rem = (M - Mr) % cp;
    if (rem != 0) {
      // The rows repeat after c periods only: rerun with M' ≡ M (mod c·p). Steps g and g + c·S
      // belong to the common prefix of both runs, so the repeat holds there too.
      Mr += rem;
      if (Mr >= M) {
        return false;
      }
      prog = get_program(in.kind, P, v, static_cast<int>(Mr), ws, &err);
      if (prog == nullptr) {
        set_error(err, out);
        return true;
      }
      run_program(*prog, ws, &ws.reduced);
    }
    const double shift = static_cast<double>((M - Mr) / cp) * rep.shift;
    const ScheduleResult& red = ws.reduced;
    resize_result(P, out);
    out->time_s = red.time_s + shift;
    for (std::size_t d = 0; d < uz(P); ++d) {
      out->busy_s[d] =
          static_cast<double>(M) * busy_per_microbatch(ws, in.kind, P, P * v, static_cast<int>(d));
      out->peak_act_bytes[d] = red.peak_act_bytes[d];
      out->peak_wkeep_bytes[d] = red.peak_wkeep_bytes[d];
      out->peak_in_flight[d] = red.peak_in_flight[d];
      out->last_grad_end_s[d] = red.last_grad_end_s[d] + shift;
    }
    finish_bubble(out);
    return true;
  }
}

// ZB-H2's and ZB-V's time is the period under the Zero Bubble paper's optimizer post-validation
// (ICLR'24 §4): the next iteration's forwards start on each stage as soon as that stage is done, so
// consecutive iterations overlap in the fill and the drain and one iteration costs
// max_d (last end − first start) of device d, the paper's parallelogram (§2.2). Device d's first
// op is F(d, 0), which starts when micro-batch 0 arrives: Σ_{σ<d} (F(σ) + its send). Times are
// made relative to each device's first start. docs/algorithms.md §2.1, §2.4.
void post_validated_period(const ScheduleInput& in, const Impl& ws, ScheduleResult* out) {
  if ((in.kind != ScheduleKind::kZBH2 && in.kind != ScheduleKind::kZBV) || !out->ok) {
    return;
  }
  double first = 0;  // first start of device d
  double period = 0;
  for (int d = 0; d < in.devices; ++d) {
    const auto du = uz(d);
    if (d > 0) {
      first += ws.cost[uz(d - 1)] + ws.lag[uz(d)];  // F slots: kind 0, index vs
    }
    // Every device's last op is a W (its Ws follow its Bs), so its last gradient op ends it.
    out->last_grad_end_s[du] -= first;
    period = std::max(period, out->last_grad_end_s[du]);
  }
  out->time_s = period;
  finish_bubble(out);
}

}  // namespace

void simulate(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out) {
  const std::string err = validate(in);
  if (!err.empty()) {
    set_error(err, out);
    return;
  }
  Impl& w = ws.impl();
  prepare(in, w);
  reference_worklist(in, w, out);
  post_validated_period(in, w, out);
}

void simulate_fast(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out) {
  const std::string err = validate(in);
  if (!err.empty()) {
    set_error(err, out);
    return;
  }
  Impl& w = ws.impl();
  prepare(in, w);
  if (in.kind == ScheduleKind::kGPipe) {
    gpipe_closed_form(in, w, out);
    return;
  }
  if (is_periodic_kind(in.kind) && periodic_fast(in, w, out)) {
    return;
  }
  std::string perr;
  const Program* prog = get_program(in.kind, in.devices, in.chunks, in.microbatches, w, &perr);
  if (prog == nullptr) {
    set_error(perr, out);
    return;
  }
  run_program(*prog, w, out);
  post_validated_period(in, w, out);
}

void simulate_memory(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out) {
  const std::string err = validate(in);
  if (!err.empty()) {
    set_error(err, out);
    return;
  }
  Impl& w = ws.impl();
  if (in.kind == ScheduleKind::kGPipe) {
    prepare(in, w);
    gpipe_closed_form(in, w, out);
    return;
  }
  prepare_memory(in, w);
  const int P = in.devices;
  const int v = in.chunks;
  // The program whose states simulate_fast() evaluates first: the periodic kinds' first reduced
  // run, which visits the same states in the same order as any longer one (below), else M's.
  long long M = in.microbatches;
  if (is_periodic_kind(in.kind)) {
    const PeriodicShape sh = shape_of(in.kind, P, v);
    const long long Mr = reduced_m(in.kind, P, v, sh.mb_period, first_min_steps(in.kind, P, sh));
    if (worth_reducing(Mr, M)) {
      M = Mr;
    }
  }
  std::string perr;
  const Program* prog = get_program(in.kind, P, v, static_cast<int>(M), w, &perr);
  if (prog == nullptr) {
    set_error(perr, out);
    return;
  }
  resize_result(P, out);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int d = 0; d < P; ++d) {
    const auto du = uz(d);
    device_peak(*prog, w, d, &out->peak_act_bytes[du], &out->peak_wkeep_bytes[du]);
    out->busy_s[du] = static_cast<double>(chain_microbatches(in.kind, in.microbatches)) *
                      busy_per_microbatch(w, in.kind, P, P * v, d);
    out->peak_in_flight[du] = prog->peak_in_flight[du];
    out->last_grad_end_s[du] = nan;
  }
  out->time_s = nan;
  out->bubble_fraction = nan;
}

ScheduleResult simulate_traced(const ScheduleInput& in, std::vector<TimedOp>* ops) {
  SimWorkspace ws;
  ScheduleResult out;
  ops->clear();
  const std::string err = validate(in);
  if (!err.empty()) {
    set_error(err, &out);
    return out;
  }
  Impl& w = ws.impl();
  w.trace = ops;
  prepare(in, w);
  reference_worklist(in, w, &out);
  post_validated_period(in, w, &out);  // the trace keeps absolute times
  return out;
}

ScheduleResult simulate(const ScheduleInput& in) {
  SimWorkspace ws;
  ScheduleResult out;
  simulate(in, ws, &out);
  return out;
}

ScheduleResult simulate_fast(const ScheduleInput& in) {
  SimWorkspace ws;
  ScheduleResult out;
  simulate_fast(in, ws, &out);
  return out;
}

}  // namespace ppsearch
