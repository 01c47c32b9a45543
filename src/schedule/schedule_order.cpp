#include "ppsearch/schedule/schedule_order.hpp"

#include <algorithm>
#include <string>

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

}  // namespace

std::string build_schedule_order(ScheduleKind kind, int P, int v, int M, ScheduleOrder* order) {
  if (P < 1) {
    return "devices = " + std::to_string(P) + ": must be >= 1";
  }
  if (v < 1) {
    return "chunks = " + std::to_string(v) + ": must be >= 1";
  }
  if (M < 1) {
    return "microbatches = " + std::to_string(M) + ": must be >= 1";
  }
  if (kind != ScheduleKind::kInterleaved1F1B && v != 1) {
    return "chunks = " + std::to_string(v) + ": must be 1 for schedule " + to_string(kind);
  }
  if (kind == ScheduleKind::kInterleaved1F1B && M % P != 0) {
    return "microbatches = " + std::to_string(M) + ": must be a multiple of devices (" +
           std::to_string(P) + ") for schedule " + to_string(kind);
  }
  const long long V = static_cast<long long>(P) * v;
  if (V > kMaxVirtualStages || V * M > kMaxStageMicrobatches) {
    return "microbatches * devices * chunks = " + std::to_string(V * M) +
           ": must be <= " + std::to_string(kMaxStageMicrobatches) +
           " (and devices * chunks <= " + std::to_string(kMaxVirtualStages) + ")";
  }
  const std::size_t ops_per_stage = kind == ScheduleKind::kZBH1 ? 3 : 2;
  order->ops.clear();
  order->ops.reserve(ops_per_stage * static_cast<std::size_t>(V * M));
  order->begin.assign(static_cast<std::size_t>(P) + 1, 0);
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
    }
  }
  order->begin[static_cast<std::size_t>(P)] = static_cast<int>(order->ops.size());
  return std::string();
}

}  // namespace ppsearch
