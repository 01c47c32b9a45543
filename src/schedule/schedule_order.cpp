#include "ppsearch/schedule/schedule_order.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ppsearch {
namespace {

void push(std::vector<PipeOp>& out, OpKind kind, int vs, int mb) { out.push_back({kind, vs, mb}); }

// GPipe (Huang et al. 2019; docs/algorithms.md §2.4): every forward, then every backward.
void gpipe_device(int d, int M, std::vector<PipeOp>& out) {
  for (int mb = 0; mb < M; ++mb) {
    push(out, OpKind::kF, d, mb);
  }
  for (int mb = M - 1; mb >= 0; --mb) {
    push(out, OpKind::kBW, d, mb);
  }
}

// 1F1B / PipeDream-Flush (SC21 §2.2.1); warm-up = P−d−1 as in Megatron
// `schedules.py::get_pp_rank_microbatches` (docs/algorithms.md §2.1, §2.4).
// ZB-H1 (Qi et al., ICLR'24 §2.1; docs/algorithms.md §2.4) is the same order with the backward
// split: device d defers W by d micro-batches, which fills its drain bubble.
void one_f_one_b_device(int d, int P, int M, bool split, std::vector<PipeOp>& out) {
  const int warmup = std::min(P - d - 1, M);
  int next_w = 0;  // oldest micro-batch whose W has not been emitted yet
  int b_done = 0;
  auto backward = [&](int mb) {
    if (!split) {
      push(out, OpKind::kBW, d, mb);
      return;
    }
    push(out, OpKind::kB, d, mb);
    ++b_done;
    if (b_done - next_w > d) {
      push(out, OpKind::kW, d, next_w++);
    }
  };
  for (int mb = 0; mb < warmup; ++mb) {
    push(out, OpKind::kF, d, mb);
  }
  for (int i = 0; i < M - warmup; ++i) {
    push(out, OpKind::kF, d, warmup + i);
    backward(i);
  }
  for (int i = M - warmup; i < M; ++i) {
    backward(i);
  }
  if (split) {
    while (next_w < M) {
      push(out, OpKind::kW, d, next_w++);
    }
  }
}

// Interleaved 1F1B (SC21 §2.2.2), Megatron order with microbatch_group_size_per_vp_stage = P
// (docs/algorithms.md §2.1, §2.4): warm-up (P−d−1)·2 + (v−1)·P.
void interleaved_device(int d, int P, int v, int M, std::vector<PipeOp>& out) {
  const int total = M * v;
  const int pv = P * v;
  const int warmup = std::min(2 * (P - d - 1) + (v - 1) * P, total);
  auto fwd = [&](int k) {
    const int rr = k % pv;
    const int mb = (k / pv) * P + rr % P;
    const int chunk = rr / P;
    push(out, OpKind::kF, chunk * P + d, mb);
  };
  auto bwd = [&](int k) {
    const int rr = k % pv;
    const int mb = (k / pv) * P + rr % P;
    const int chunk = v - 1 - rr / P;
    push(out, OpKind::kBW, chunk * P + d, mb);
  };
  for (int k = 0; k < warmup; ++k) {
    fwd(k);
  }
  for (int i = 0; i < total - warmup; ++i) {
    fwd(warmup + i);
    bwd(i);
  }
  for (int i = total - warmup; i < total; ++i) {
    bwd(i);
  }
}

// ZB-V fallback, used only when the reference plan below (run_vplan) breaks one of its rules
// (not seen on 20,000 random shapes; docs/algorithms.md §2.4). Qi et al. 2024, arXiv 2405.15362,
// the V-shape building block; sail-sg README "ZBV": each device holds exactly 2 chunks in a V and
// keeps 1F1B's activation memory. The order is what a greedy list scheduler produces for uniform
// chunks with the per-chunk times of `hint` (cost-aware like sail-sg `scheduler/zbv.py`, with this
// module's own, simpler rules); the simulator then runs that order with the real per-stage times
// like every other order. Devices are served in the order of their clocks; a device whose clock is
// t runs
//   1. a B whose input gradient is there (the variant says which chunk first);
//   2. else an F whose input is there (chunk 1, the one nearer the turn of the V, first) if the
//      memory rule allows it;
//   3. else its oldest pending W (work-conserving: a W rather than idle time);
//   4. else it waits for the next input.
// Memory: a device holds at most 2P chunk activations, i.e. P stages' worth: 1F1B's peak on
// device 0, W states included (a B keeps `hint.w_state` of an activation until its W; zbv.py
// counts them the same way). A chunk-0 F keeps one place free for the chunk-1 F of the oldest
// micro-batch still missing it, so that the V always turns; when an F has no room the device runs
// its pending W instead, which frees it. The per-stage variant also holds the chunk-0 stage d to
// 2P−1−d and the chunk-1 stage to d+1 (1F1B's in-flight limits on a 2P-stage chain, less one on
// chunk 0).
// The four variants (B chunk order × memory rule) are planned and the shortest plan is kept, as
// zbv.py keeps the best of its variants. Each plan is a feasible schedule of the dependency
// graph, so its per-device order cannot deadlock. Returns the plan's makespan, or −1 when a
// memory rule stalls it.
double zbv_plan(int P, int M, const OrderHint& hint, bool b_chunk0_first, bool per_stage,
                std::vector<std::vector<PipeOp>>& ops) {
  const int V = 2 * P;
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t cells = static_cast<std::size_t>(V) * static_cast<std::size_t>(M);
  std::vector<double> end_f(cells, inf);
  std::vector<double> end_b(cells, inf);
  auto at = [&](std::vector<double>& e, int vs, int mb) -> double& {
    return e[static_cast<std::size_t>(mb) * V + static_cast<std::size_t>(vs)];
  };
  struct Dev {
    double clock = 0;
    bool waiting = false;  // waits at `clock` for a peer at the same time
    int nf[2] = {0, 0};
    int nb[2] = {0, 0};
    int left = 0;
    std::deque<PipeOp> pending_w;
  };
  std::vector<Dev> dev(static_cast<std::size_t>(P));
  ops.assign(static_cast<std::size_t>(P), {});
  for (int d = 0; d < P; ++d) {
    dev[static_cast<std::size_t>(d)].left = 6 * M;
    ops[static_cast<std::size_t>(d)].reserve(6 * static_cast<std::size_t>(M));
  }
  const int b_order[2] = {b_chunk0_first ? 0 : 1, b_chunk0_first ? 1 : 0};
  long long left = 3LL * static_cast<long long>(cells);
  double makespan = 0;
  while (left > 0) {
    int d = -1;
    for (int e = 0; e < P; ++e) {
      const Dev& E = dev[static_cast<std::size_t>(e)];
      if (E.left == 0) continue;
      const Dev* Dd = d < 0 ? nullptr : &dev[static_cast<std::size_t>(d)];
      if (!Dd || E.clock < Dd->clock || (E.clock == Dd->clock && Dd->waiting && !E.waiting)) {
        d = e;
      }
    }
    Dev& D = dev[static_cast<std::size_t>(d)];
    const double t = D.clock;
    const int stage[2] = {d, V - 1 - d};
    // Earliest start of each candidate (inf while its input is not scheduled).
    double ready_b[2] = {inf, inf};
    double ready_f[2] = {inf, inf};
    for (int c = 0; c < 2; ++c) {
      const int vs = stage[c];
      if (D.nb[c] < D.nf[c]) {
        const int mb = D.nb[c];
        ready_b[c] = vs == V - 1 ? at(end_f, vs, mb) : at(end_b, vs + 1, mb);
      }
      if (D.nf[c] < M) {
        ready_f[c] = vs == 0 ? 0.0 : at(end_f, vs - 1, D.nf[c]);
      }
    }
    // Memory held, in chunk activations: forwards waiting for their B, plus the W states of Bs
    // waiting for their W (w_state each).
    const int fwd_held = D.nf[0] + D.nf[1] - D.nb[0] - D.nb[1];
    const double held = fwd_held + hint.w_state * static_cast<double>(D.pending_w.size());
    const double reserve = D.nf[0] > D.nf[1] ? 1.0 : 0.0;
    bool room[2] = {held + 1 + reserve <= V + 1e-9, held + 1 <= V + 1e-9};
    if (per_stage) {
      room[0] = room[0] && D.nf[0] - D.nb[0] < V - 1 - d;
      room[1] = room[1] && D.nf[1] - D.nb[1] < d + 1;
    }
    PipeOp pick{};
    double dur = 0;
    bool found = false;
    for (int c : b_order) {
      if (!found && ready_b[c] <= t) {
        pick = {OpKind::kB, stage[c], D.nb[c]};
        dur = hint.b;
        found = true;
      }
    }
    if (!found && room[1] && ready_f[1] <= t) {
      pick = {OpKind::kF, stage[1], D.nf[1]};
      dur = hint.f;
      found = true;
    }
    if (!found && room[0] && ready_f[0] <= t) {
      pick = {OpKind::kF, stage[0], D.nf[0]};
      dur = hint.f;
      found = true;
    }
    if (!found && !D.pending_w.empty()) {
      pick = D.pending_w.front();
      D.pending_w.pop_front();
      dur = hint.w;
      found = true;
    }
    if (!found) {
      // Wait for the next input: the earliest known one, else the next moment another device
      // can change anything (its clock: every op it schedules from now on starts there or later).
      double next = std::min(ready_b[0], ready_b[1]);
      for (int c = 0; c < 2; ++c) {
        if (room[c]) next = std::min(next, ready_f[c]);
      }
      bool peer_now = false;
      for (int e = 0; e < P; ++e) {
        const Dev& E = dev[static_cast<std::size_t>(e)];
        if (e == d || E.left == 0) continue;
        if (E.clock > t) next = std::min(next, E.clock);
        peer_now = peer_now || (E.clock == t && !E.waiting);
      }
      if (next == inf && !peer_now) {
        return -1;  // every device waits: the memory rule stalls this plan
      }
      if (next == inf) {
        D.waiting = true;  // let the peers at the same time go first
      } else {
        D.clock = next;
        D.waiting = false;
      }
      continue;
    }
    const double end = t + dur;
    const int c = pick.vs < P ? 0 : 1;
    if (pick.kind == OpKind::kF) {
      at(end_f, pick.vs, pick.mb) = end;
      ++D.nf[c];
    } else if (pick.kind == OpKind::kB) {
      at(end_b, pick.vs, pick.mb) = end;
      ++D.nb[c];
      D.pending_w.push_back({OpKind::kW, pick.vs, pick.mb});
    }
    ops[static_cast<std::size_t>(d)].push_back(pick);
    D.clock = end;
    --D.left;
    --left;
    makespan = std::max(makespan, end);
    for (Dev& E : dev) E.waiting = false;  // something changed: everyone looks again
  }
  return makespan;
}

// ZB-V after the V-schedule generator of sail-sg/zero-bubble-pipeline-parallelism
// (`megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py`, `PipelineGraph.try_v_schedule`
// and `create_schedule`; Qi et al. 2024, arXiv 2405.15362, the V-shape building block;
// docs/algorithms.md §2.4). Rank d holds chunk 0 = stage d and chunk 1 = stage 2P−1−d. The plan
// runs uniform chunks with the per-chunk times of `hint`, no transfer time, and a memory limit of
// 2P chunk activations (P stages' worth, 1F1B's peak on rank 0; a B frees 1 − w_state of an
// activation, its W the rest). Its phases, as in that generator:
//   1. every rank runs F0 of micro-batch 0;
//   2. from rank P−1 down to 0, rank d runs more F0 rounds (one F0 on each rank j ≤ d) while they
//      end before the F1 input from rank d+1 arrives and fit the memory (2 + 2d places kept free),
//      then its first F1: rank d ends the warm-up with 2P−1−2d F0s before it (equal times);
//   3. from rank 1 up, F rounds (one F on each rank j ≥ d, chunks alternating) until rank d has
//      as many forwards as rank d−1 and more F1s: with equal times rank d enters the steady state
//      with 2P−1−d F0s and d+1 F1s, 2P activations;
//   4. 2M rounds of one B per rank (the chunk whose gradient is there, the chunk-1 stage — chunk 0
//      of the backward, which starts at the turn of the V — otherwise), then one F per rank (F1
//      when its input is there, else F0), each preceded by pending Ws (FIFO) that end before its
//      input arrives, and one more W where the op would otherwise wait longer than the rank's
//      share of the largest bubble so far (the "fill" variants decide this for the B of chunk 0
//      and for F); the memory limit forces Ws out first;
//   5. the remaining Ws.
// Each rank's bubble is counted from its first F. The plan is repeated with the bubbles of the
// previous plan as an allowance while the largest bubble shrinks, and the best of the four fill
// variants is kept, as that generator does. Written from that code's description, not copied.
// Returns false when a step of the plan would break a dependency or the memory limit (the plan is
// then not used).
struct VPlan {
  int P = 0;
  int M = 0;
  double cost[3] = {1, 1, 1};  // F, B, W
  double mem[3] = {1, 0, 0};   // activation change of F, B, W
  double max_mem = 0;
  bool fill_b = true;
  bool fill_f = true;
  std::vector<double> approved;  // empty: none
  // Results.
  std::vector<double> bubble;
  std::vector<std::vector<PipeOp>> ops;
  double max_bubble = 0;
};

bool run_vplan(VPlan& pl) {
  const int P = pl.P;
  const int M = pl.M;
  const int V = 2 * P;
  // end[((cat * 2 + chunk) * P + stage) * M + mb]; < 0 while not planned. As in zbv.py, the
  // backward's chunk index runs along the backward: B chunk 0 is stage 2P−1−d (rank d's chunk 1).
  std::vector<double> end(static_cast<std::size_t>(6) * P * M, -1.0);
  auto id = [&](int cat, int chunk, int stage, int mb) {
    return (static_cast<std::size_t>(cat * 2 + chunk) * P + stage) * M + mb;
  };
  std::vector<std::array<int, 6>> cnt(static_cast<std::size_t>(P), std::array<int, 6>{});
  std::vector<double> cur(static_cast<std::size_t>(P), 0.0);
  std::vector<double> mem(static_cast<std::size_t>(P), 0.0);
  std::vector<std::deque<int>> pending(static_cast<std::size_t>(P));  // chunk of each pending W
  pl.bubble.assign(static_cast<std::size_t>(P), 0.0);
  pl.ops.assign(static_cast<std::size_t>(P), {});
  double max_approved = -1;
  for (double a : pl.approved) max_approved = std::max(max_approved, a);
  auto max_bubble = [&](int stage) {
    double m = 0;
    for (double b : pl.bubble) m = std::max(m, b);
    if (stage >= 0 && !pl.approved.empty()) {
      m = std::max(m, max_approved - pl.approved[static_cast<std::size_t>(stage)]);
    }
    return m;
  };
  const double eps = 1e-9;
  auto put = [&](int cat, int chunk, int s) -> bool {
    const auto su = static_cast<std::size_t>(s);
    const int k = cnt[su][static_cast<std::size_t>(cat * 2 + chunk)];
    if (k >= M || mem[su] + pl.mem[cat] > pl.max_mem + eps) return false;
    const double no_wait = cur[su] + pl.cost[cat];
    double t = no_wait;
    if (cat > 0 || chunk > 0) {  // the op before it on the same rank must be planned
      const std::size_t prev = cat < 2
                                   ? id((cat * 2 + chunk - 1) / 2, (cat * 2 + chunk - 1) % 2, s, k)
                                   : id(1, chunk, s, k);
      if (end[prev] < 0) return false;
    }
    if (cat < 2 && ((chunk == 1 && s < P - 1) || (chunk == 0 && s > 0))) {
      const double in = end[id(cat, chunk, chunk == 1 ? s + 1 : s - 1, k)];
      if (in < 0) return false;
      t = std::max(t, in + pl.cost[cat]);
    }
    if (cnt[su][0] > 0) pl.bubble[su] += t - no_wait;
    end[id(cat, chunk, s, k)] = t;
    cur[su] = t;
    mem[su] += pl.mem[cat];
    // F chunk c runs stage c ? 2P−1−s : s; B and W chunk c run stage c ? s : 2P−1−s.
    const bool low = (cat == 0) == (chunk == 0);
    pl.ops[su].push_back({cat == 0   ? OpKind::kF
                          : cat == 1 ? OpKind::kB
                                     : OpKind::kW,
                          low ? s : V - 1 - s, k});
    if (cat == 1) pending[su].push_back(chunk);
    ++cnt[su][static_cast<std::size_t>(cat * 2 + chunk)];
    return true;
  };
  auto put_w = [&](int s) -> bool {
    auto& q = pending[static_cast<std::size_t>(s)];
    if (q.empty()) return false;
    const int chunk = q.front();
    q.pop_front();
    return put(2, chunk, s);
  };
  auto c = [&](int s, int k) {
    return cnt[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)];
  };
  // Phase 1.
  for (int s = 0; s < P; ++s) {
    if (!put(0, 0, s)) return false;
  }
  // Phase 2.
  for (int s = P - 1; s >= 0; --s) {
    if (s < P - 1) {
      const double arrive = end[id(0, 1, s + 1, 0)];
      const auto su = static_cast<std::size_t>(s);
      while (mem[su] + pl.mem[0] * (2 + 2 * s) <= pl.max_mem + eps &&
             cur[su] + pl.cost[0] <= arrive + eps && c(s, 0) < M) {
        for (int j = 0; j <= s; ++j) {
          if (!put(0, 0, j)) return false;
        }
      }
    }
    if (!put(0, 1, s)) return false;
  }
  // Phase 3.
  int chunk = 0;
  int idle = 0;
  for (int s = 1; s < P; ++s) {
    while (c(s, 0) + c(s, 1) < c(s - 1, 0) + c(s - 1, 1) ||
           (c(s, 1) <= c(s - 1, 1) && c(s - 1, 1) < M)) {
      bool any = false;
      for (int j = P - 1; j >= s; --j) {
        if (c(j, chunk) < M) {
          if (!put(0, chunk, j)) return false;
          any = true;
        }
      }
      idle = any ? 0 : idle + 1;
      if (idle >= 2) return false;  // neither chunk can run: the rule cannot be met
      chunk = 1 - chunk;
    }
  }
  // Fills the wait before an op whose input is `in_id` (or none) on stage s; `fill` allows the
  // extra W.
  auto fill_before = [&](int s, long long in_id, bool fill) -> bool {
    const auto su = static_cast<std::size_t>(s);
    if (in_id < 0) return true;
    const double in = end[static_cast<std::size_t>(in_id)];
    while (!pending[su].empty() && in >= cur[su] + pl.cost[2] - eps) {
      if (!put_w(s)) return false;
    }
    if (fill && !pending[su].empty() && in - cur[su] > max_bubble(s) - pl.bubble[su] + eps) {
      if (!put_w(s)) return false;
    }
    return true;
  };
  // Phase 4.
  for (int round = 0; round < 2 * M; ++round) {
    for (int s = 0; s < P; ++s) {
      while (mem[static_cast<std::size_t>(s)] + pl.mem[1] > pl.max_mem + eps) {
        if (!put_w(s)) return false;
      }
    }
    std::vector<std::pair<int, int>> order;  // (stage, B chunk)
    std::vector<int> b0;
    for (int s = 0; s < P; ++s) {
      bool one = false;
      if (c(s, 3) < c(s, 2)) {
        one = s == P - 1 || end[id(1, 1, s + 1, c(s, 3))] >= 0 || c(s, 2) >= M;
      }
      if (one) {
        order.insert(order.begin(), {s, 1});  // the chunk-1 Bs from the last stage down
      } else {
        b0.push_back(s);
      }
    }
    for (int s : b0) order.push_back({s, 0});
    for (auto [s, ch] : order) {
      long long in_id = -1;
      if (ch == 1 && s < P - 1) in_id = static_cast<long long>(id(1, 1, s + 1, c(s, 3)));
      if (ch == 0 && s > 0) in_id = static_cast<long long>(id(1, 0, s - 1, c(s, 2)));
      if (!fill_before(s, in_id, ch == 1 || pl.fill_b) || !put(1, ch, s)) return false;
    }
    for (int s = 0; s < P; ++s) {
      if (c(s, 1) >= M) continue;
      int item = -1;
      if (c(s, 1) >= c(s, 0)) {
        item = 0;
      } else if (s == P - 1 || end[id(0, 1, s + 1, c(s, 1))] >= 0) {
        item = 1;
      } else if (c(s, 0) < M && (s == 0 || end[id(0, 0, s - 1, c(s, 0))] >= 0)) {
        item = 0;
      }
      if (item < 0) continue;
      while (mem[static_cast<std::size_t>(s)] + pl.mem[0] > pl.max_mem + eps) {
        if (!put_w(s)) return false;
      }
      long long in_id = -1;
      if (item == 0 && s > 0) in_id = static_cast<long long>(id(0, 0, s - 1, c(s, 0)));
      if (item == 1 && s < P - 1) in_id = static_cast<long long>(id(0, 1, s + 1, c(s, 1)));
      if (!fill_before(s, in_id, pl.fill_f) || !put(0, item, s)) return false;
    }
  }
  // Phase 5.
  for (int s = 0; s < P; ++s) {
    while (!pending[static_cast<std::size_t>(s)].empty()) {
      if (!put_w(s)) return false;
    }
  }
  for (int s = 0; s < P; ++s) {
    if (pl.ops[static_cast<std::size_t>(s)].size() != static_cast<std::size_t>(6 * M)) return false;
  }
  pl.max_bubble = max_bubble(-1);
  return true;
}

// The best V plan (see run_vplan): for each fill variant, the chain of re-plans with the previous
// bubbles as allowance while the largest bubble shrinks; the earliest plan with the smallest
// largest bubble wins. False when no variant plans.
bool vplan_order(int P, int M, const OrderHint& hint, std::vector<std::vector<PipeOp>>& best) {
  bool have = false;
  double best_bubble = 0;
  for (bool fill_b : {true, false}) {
    for (bool fill_f : {true, false}) {
      VPlan pl;
      pl.P = P;
      pl.M = M;
      const double f = hint.f > 0 ? hint.f : 1;
      pl.cost[0] = f;
      pl.cost[1] = hint.b;
      pl.cost[2] = hint.w;
      const double keep = std::clamp(hint.w_state, 0.0, 1.0);
      pl.mem[0] = 1;
      pl.mem[1] = -(1 - keep);
      pl.mem[2] = -keep;
      pl.max_mem = 2.0 * P;
      pl.fill_b = fill_b;
      pl.fill_f = fill_f;
      double prev = -1;
      for (int step = 0; step < 64; ++step) {
        if (!run_vplan(pl)) break;
        if (!have || pl.max_bubble < best_bubble - 1e-9) {
          have = true;
          best_bubble = pl.max_bubble;
          best = pl.ops;
        }
        if (step > 0 && !(pl.max_bubble < prev - 1e-9)) break;
        prev = pl.max_bubble;
        pl.approved = pl.bubble;
      }
    }
  }
  return have;
}

std::string zbv_order(int P, int M, const OrderHint& hint, std::vector<PipeOp>& out,
                      std::vector<int>& begin) {
  std::vector<std::vector<PipeOp>> best, plan;
  double best_t = -1;
  if (vplan_order(P, M, hint, best)) {
    best_t = 0;  // the reference generator's order
  }
  for (bool per_stage : {false, true}) {
    for (bool b0 : {true, false}) {
      if (best_t >= 0) break;
      const double t = zbv_plan(P, M, hint, b0, per_stage, plan);
      if (t >= 0 && (best_t < 0 || t < best_t)) {
        best_t = t;
        best.swap(plan);
      }
    }
  }
  if (best_t < 0) {
    return "internal error: the ZB-V order generator stalls";
  }
  for (int d = 0; d < P; ++d) {
    begin[static_cast<std::size_t>(d)] = static_cast<int>(out.size());
    const auto& o = best[static_cast<std::size_t>(d)];
    out.insert(out.end(), o.begin(), o.end());
  }
  return std::string();
}

// DualPipe (DeepSeek-V3 report §3.2.1; the order of deepseek-ai/DualPipe `DualPipe.step`,
// docs/algorithms.md §2.4). Rank r holds the forward direction's stage r (vs = r) and the reverse
// direction's stage P−1−r (vs = 2P−1−r); each direction runs N = M/2 micro-batches. The code's
// "phase" p is direction p for the first half of the ranks and 1 − p for the second half;
// h = min(r, P−1−r), H = P/2. A backward that runs with WeightGradStore enabled ("zb") is a B
// whose W is queued and popped FIFO by a later weight step; otherwise it is a fused BW. The
// overlapped F&B pairs of steps 4 and 5 run as their F followed by their BW, linked as that code
// runs them (`_forward_backward_chunk`: both receives, one wait, both computations, both sends):
// the F waits for the BW's input (wait_ahead 1) and is held (kLinkHold). The rest of `step`'s
// receive and send order: step 3's W waits for the next F's input (that receive is posted before
// `_weight_chunk` waits); in step 2 each F1 waits for the next F0's input (received ahead), the
// other ranks send each F0 after the F1 that follows it, and the middle ranks send the last F1
// after step 4's first F0 and that F0 after the B1 that follows it (docs/algorithms.md §2.4).
void dualpipe_device(int r, int P, int M, std::vector<PipeOp>& out) {
  const int H = P / 2;
  const int h = std::min(r, P - 1 - r);
  const int N = M / 2;
  const int second = r >= H ? 1 : 0;
  const int stage[2] = {r, 2 * P - 1 - r};  // by direction
  int nf[2] = {0, 0};
  int nb[2] = {0, 0};
  std::deque<PipeOp> wq;
  auto F = [&](int phase) {
    const int dir = phase ^ second;
    push(out, OpKind::kF, stage[dir], nf[dir]++);
  };
  auto B = [&](int phase, bool zb) {
    const int dir = phase ^ second;
    const int mb = nb[dir]++;
    if (zb) {
      push(out, OpKind::kB, stage[dir], mb);
      wq.push_back({OpKind::kW, stage[dir], mb});
    } else {
      push(out, OpKind::kBW, stage[dir], mb);
    }
  };
  auto W = [&]() {
    out.push_back(wq.front());
    wq.pop_front();
  };
  const bool middle = h == H - 1;
  auto pair = [&] {  // the op just pushed is the F of an overlapped F&B with the next op
    out.back().wait_ahead = 1;
    out.back().link = kLinkHold;
  };
  for (int i = 0; i < 2 * (H - h - 1); ++i) F(0);  // step 1: nF0
  std::size_t last_f1 = 0;
  for (int i = 0; i < h + 1; ++i) {  // step 2: nF0F1
    F(0);
    if (!middle) out.back().link = kLinkHold;  // sent after the F1
    F(1);
    out.back().wait_ahead = 1;  // the next F0's receive is waited for with this F1's
    if (middle && i == h) out.back().link = kLinkHold;  // sent after step 4's first F0
    last_f1 = out.size() - 1;
  }
  for (int i = 0; i < H - h - 1; ++i) {  // step 3: nB1W1F1 (zero bubble)
    B(1, true);
    W();
    out.back().wait_ahead = 1;  // the F's receive is waited for before the W
    F(1);
  }
  for (int i = 0; i < N - P + h + 1; ++i) {  // step 4: nF0B1F1B0 (F&B pairs)
    F(0);
    if (i == 0) {  // the F0 received ahead in step 2
      out[last_f1].wait_ahead = static_cast<int>(out.size() - 1 - last_f1);
    }
    if (i == 0 && middle) {
      out.back().link = kLinkHold;  // not overlapped; sent after the B1
    } else {
      pair();
    }
    B(1, false);
    F(1);
    pair();
    B(0, false);
  }
  for (int i = 0; i < H - h - 1; ++i) {  // step 5: nB1F1B0
    B(1, false);
    F(1);
    pair();
    B(0, false);
  }
  bool zb = false;  // step 6: nB1B0, the second half with zero bubble
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zb = true;
    B(1, zb);
    if (i == (h + 1) / 2 && h % 2 == 0) zb = true;
    B(0, zb);
  }
  for (int i = 0; i < H - h - 1; ++i) {  // step 7: nWB0 (zero bubble)
    W();
    B(0, true);
  }
  while (!wq.empty()) W();  // step 8: nW (h + 1 of them)
}

// ZB-H2 (Qi et al., ICLR'24 §2.2; docs/algorithms.md §2.1, §2.4). Stage d runs
// min(2(P−d)−1, M) warm-up forwards: with equal F, B, W times they fill exactly the time until
// its first input gradient arrives (stage d starts at d, the gradient of micro-batch 0 is back
// at 2P−1−d), which doubles stage 0's activations to 2P−1 micro-batches (the paper's (2P−1)·M_B).
// Then B, its W unless W is deferred, F; stage d keeps 2d Ws deferred, the tail of Ws that turns
// the trapezoid into the paper's parallelogram (stage d ends 2d ops after its last B); the rest
// are flushed at the end. Written from the paper's description, not copied from an order.
void zbh2_device(int d, int P, int M, std::vector<PipeOp>& out) {
  const int warmup = std::min(2 * (P - d) - 1, M);
  const int deferred = 2 * d;
  int next_w = 0;
  auto backward = [&](int mb) {
    push(out, OpKind::kB, d, mb);
    if (mb + 1 - next_w > deferred) {
      push(out, OpKind::kW, d, next_w++);
    }
  };
  for (int mb = 0; mb < warmup; ++mb) {
    push(out, OpKind::kF, d, mb);
  }
  for (int i = 0; i < M - warmup; ++i) {
    backward(i);
    push(out, OpKind::kF, d, warmup + i);
  }
  for (int i = M - warmup; i < M; ++i) {
    backward(i);
  }
  while (next_w < M) {
    push(out, OpKind::kW, d, next_w++);
  }
}

}  // namespace

int stage_device(ScheduleKind kind, int P, int vs) {
  if (kind == ScheduleKind::kZBV || kind == ScheduleKind::kDualPipe) {
    return vs < P ? vs : 2 * P - 1 - vs;
  }
  return vs % P;
}

int device_stage(ScheduleKind kind, int P, int c, int d) {
  if ((kind == ScheduleKind::kZBV || kind == ScheduleKind::kDualPipe) && c == 1) {
    return 2 * P - 1 - d;
  }
  return c * P + d;
}

bool chain_first(ScheduleKind kind, int P, int vs) {
  return vs == 0 || (kind == ScheduleKind::kDualPipe && vs == P);
}

bool chain_last(ScheduleKind kind, int P, int V, int vs) {
  return vs == V - 1 || (kind == ScheduleKind::kDualPipe && vs == P - 1);
}

int chain_microbatches(ScheduleKind kind, int M) {
  return kind == ScheduleKind::kDualPipe ? M / 2 : M;
}

bool splits_backward(ScheduleKind kind) {
  return kind == ScheduleKind::kZBH1 || kind == ScheduleKind::kZBV ||
         kind == ScheduleKind::kDualPipe || kind == ScheduleKind::kZBH2;
}

std::string check_shape(ScheduleKind kind, int P, int v, int M) {
  if (P < 1) {
    return "devices = " + std::to_string(P) + ": must be >= 1";
  }
  if (v < 1) {
    return "chunks = " + std::to_string(v) + ": must be >= 1";
  }
  if (M < 1) {
    return "microbatches = " + std::to_string(M) + ": must be >= 1";
  }
  const bool two = kind == ScheduleKind::kZBV || kind == ScheduleKind::kDualPipe;
  if (two && v != 2) {
    return "chunks = " + std::to_string(v) + ": must be 2 for schedule " + to_string(kind);
  }
  if (!two && kind != ScheduleKind::kInterleaved1F1B && v != 1) {
    return "chunks = " + std::to_string(v) + ": must be 1 for schedule " + to_string(kind);
  }
  if (kind == ScheduleKind::kInterleaved1F1B && M % P != 0) {
    return "microbatches = " + std::to_string(M) + ": must be a multiple of devices (" +
           std::to_string(P) + ") for schedule " + to_string(kind);
  }
  if (kind == ScheduleKind::kDualPipe) {
    // deepseek-ai/DualPipe `DualPipe.step`: num_ranks % 2 == 0, num_chunks % 2 == 0 and
    // num_chunks >= 2 * num_ranks.
    if (P % 2 != 0) {
      return "devices = " + std::to_string(P) + ": must be even for schedule dualpipe";
    }
    if (M % 2 != 0 || M < 2 * P) {
      return "microbatches = " + std::to_string(M) + ": must be even and at least 2 * devices (" +
             std::to_string(2 * P) + ") for schedule dualpipe";
    }
  }
  return std::string();
}

std::string build_schedule_order(ScheduleKind kind, int P, int v, int M, ScheduleOrder* order,
                                 const OrderHint& hint) {
  if (const std::string err = check_shape(kind, P, v, M); !err.empty()) {
    return err;
  }
  const long long V = static_cast<long long>(P) * v;
  if (V > kMaxVirtualStages || V * M > kMaxStageMicrobatches) {
    return "microbatches * devices * chunks = " + std::to_string(V * M) +
           ": must be <= " + std::to_string(kMaxStageMicrobatches) +
           " (and devices * chunks <= " + std::to_string(kMaxVirtualStages) + ")";
  }
  const std::size_t ops_per_stage = splits_backward(kind) ? 3 : 2;
  order->ops.clear();
  order->ops.reserve(ops_per_stage * static_cast<std::size_t>(V * chain_microbatches(kind, M)));
  order->begin.assign(static_cast<std::size_t>(P) + 1, 0);
  if (kind == ScheduleKind::kZBV) {
    const std::string err = zbv_order(P, M, hint, order->ops, order->begin);
    order->begin[static_cast<std::size_t>(P)] = static_cast<int>(order->ops.size());
    return err;
  }
  for (int d = 0; d < P; ++d) {
    order->begin[static_cast<std::size_t>(d)] = static_cast<int>(order->ops.size());
    switch (kind) {
      case ScheduleKind::kGPipe:
        gpipe_device(d, M, order->ops);
        break;
      case ScheduleKind::k1F1B:
        one_f_one_b_device(d, P, M, /*split=*/false, order->ops);
        break;
      case ScheduleKind::kZBH1:
        one_f_one_b_device(d, P, M, /*split=*/true, order->ops);
        break;
      case ScheduleKind::kInterleaved1F1B:
        interleaved_device(d, P, v, M, order->ops);
        break;
      case ScheduleKind::kDualPipe:
        dualpipe_device(d, P, M, order->ops);
        break;
      case ScheduleKind::kZBH2:
        zbh2_device(d, P, M, order->ops);
        break;
      case ScheduleKind::kZBV:
        break;  // built above
    }
  }
  order->begin[static_cast<std::size_t>(P)] = static_cast<int>(order->ops.size());
  return std::string();
}

}  // namespace ppsearch
