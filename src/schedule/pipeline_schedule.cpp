// Names, input validation and homogeneous closed forms of the pipeline-schedule module.
#include "ppsearch/schedule/pipeline_schedule.hpp"

#include "ppsearch/schedule/schedule_order.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace ppsearch {
namespace {

struct ScheduleName {
  ScheduleKind kind;
  const char* name;
};
constexpr ScheduleName kScheduleNames[] = {
    {ScheduleKind::kGPipe, "gpipe"},
    {ScheduleKind::k1F1B, "1f1b"},
    {ScheduleKind::kInterleaved1F1B, "interleaved-1f1b"},
    {ScheduleKind::kZBH1, "zb-h1"},
    {ScheduleKind::kZBV, "zb-v"},
    {ScheduleKind::kDualPipe, "dualpipe"},
    {ScheduleKind::kZBH2, "zb-h2"},
};

std::string format_double(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

// Checks one per-virtual-stage vector: exact size (or empty when optional), finite, >= 0.
std::string check_vector(const char* field, const std::vector<double>& values, std::size_t expected,
                         bool optional) {
  if (values.size() != expected && !(optional && values.empty())) {
    return std::string(field) + ".size() = " + std::to_string(values.size()) + ": must be " +
           std::to_string(expected) + (optional ? " or 0" : "");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0) {
      return std::string(field) + "[" + std::to_string(i) + "] = " + format_double(values[i]) +
             ": must be finite and >= 0";
    }
  }
  return std::string();
}

// ZB-V at its design point T_F = T_B = T_W (sail-sg README "ZBV" table: bubble 0 at
// T_F = T_B = T_W, activation memory 1× 1F1B; its generator `scheduler/zbv.py` counts each
// rank's bubble from the rank's first F, i.e. under the optimizer post-validation it is run with).
// ppsearch's order follows that generator and the simulator reports ZB-V's time as that period,
// like ZB-H2's (max over ranks of last end − first start): M(f+b+w) for every M >= 2P−1, the
// range where zbv.py's plan has no bubble (below it the pipeline never fills) [checked
// against the simulator and an independent event model for P <= 12 in the unit tests;
// docs/algorithms.md §2.1]. One isolated iteration takes (P−1)·f/2 longer (the last rank's first
// F waits for P−1 chunk forwards). No closed form is claimed off that point (NaN): the order is a
// cost-aware plan.
double zbv_closed_form(int P, int M, double f, double b, double w) {
  if (!(f == b && b == w) || P < 1 || M < 1 || M < 2 * P - 1) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return M * (f + b + w);
}

}  // namespace

const char* to_string(ScheduleKind kind) {
  for (const auto& entry : kScheduleNames) {
    if (entry.kind == kind) {
      return entry.name;
    }
  }
  return "unknown";
}

bool parse_schedule(std::string_view name, ScheduleKind* kind) {
  for (const auto& entry : kScheduleNames) {
    if (name == entry.name) {
      *kind = entry.kind;
      return true;
    }
  }
  return false;
}

const char* schedule_names() {
  return "gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe, zb-h2";
}

const char* to_string(P2PMode mode) {
  switch (mode) {
    case P2PMode::kAsync:
      return "async";
    case P2PMode::kBlocking:
      return "blocking";
  }
  return "unknown";
}

bool parse_p2p_mode(std::string_view name, P2PMode* mode) {
  if (name == "async") {
    *mode = P2PMode::kAsync;
    return true;
  }
  if (name == "blocking") {
    *mode = P2PMode::kBlocking;
    return true;
  }
  return false;
}

std::string validate(const ScheduleInput& in) {
  bool known_kind = false;
  for (const auto& entry : kScheduleNames) {
    known_kind = known_kind || entry.kind == in.kind;
  }
  if (!known_kind) {
    return "kind = " + std::to_string(static_cast<int>(in.kind)) +
           ": unknown schedule; allowed: " + schedule_names();
  }
  if (in.mode != P2PMode::kAsync && in.mode != P2PMode::kBlocking) {
    return "mode = " + std::to_string(static_cast<int>(in.mode)) +
           ": unknown p2p mode; allowed: async, blocking";
  }
  if (const std::string shape = check_shape(in.kind, in.devices, in.chunks, in.microbatches);
      !shape.empty()) {
    return shape;
  }
  const long long V = static_cast<long long>(in.devices) * in.chunks;
  if (V > kMaxVirtualStages) {
    return "devices * chunks = " + std::to_string(V) +
           ": must be <= " + std::to_string(kMaxVirtualStages);
  }
  if (V * in.microbatches > kMaxStageMicrobatches) {
    return "microbatches * devices * chunks = " + std::to_string(V * in.microbatches) +
           ": must be <= " + std::to_string(kMaxStageMicrobatches);
  }
  const auto n = static_cast<std::size_t>(V);
  for (const std::string& issue : {
           check_vector("fwd_s", in.fwd_s, n, false),
           check_vector("bwd_s", in.bwd_s, n, false),
           check_vector("wgt_s", in.wgt_s, n, true),
           check_vector("act_bytes", in.act_bytes, n, true),
           check_vector("wkeep_bytes", in.wkeep_bytes, n, true),
           check_vector("p2p_s", in.p2p_s, n - 1, true),
       }) {
    if (!issue.empty()) {
      return issue;
    }
  }
  return std::string();
}

double closed_form_time(ScheduleKind kind, int P, int v, int M, double f, double b, double w) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (P < 1 || v < 1 || M < 1) {
    return nan;
  }
  if (!check_shape(kind, P, v, M).empty()) {
    return nan;
  }
  switch (kind) {
    case ScheduleKind::kGPipe:
    case ScheduleKind::k1F1B:
      // GPipe; SC21 §2.2.1 (1F1B has the same time as GPipe); docs/algorithms.md §2.1.
      return (M + P - 1) * (f + b + w);
    case ScheduleKind::kInterleaved1F1B:
      // SC21 §2.2.2: bubble (P−1)(f+b)/v with per-chunk times (f+b)/v; docs/algorithms.md §2.1.
      if (M % P != 0) {
        return nan;
      }
      return M * (f + b + w) + (P - 1) * (f + b + w) / v;
    case ScheduleKind::kZBH1: {
      // Zero Bubble (Qi et al., ICLR'24) §2.1 gives M(f+b+w) + (P−1)(f+b−w), derived there for
      // f = b = w (docs/algorithms.md §2.1). With this module's ZB-H1 order the exact time for any
      // f, b, w >= 0 and M >= 1 is [derived; checked against the simulator in the unit tests]
      //   M(f+b+w) + (P−1)(f+b) − (min(M, P) − 1)·min(f, b, w),
      // which equals the paper's formula exactly when M >= P and w <= min(f, b). A W longer
      // than F or B no longer fits in the drain bubbles it is meant to fill.
      const double m = std::min(f, std::min(b, w));
      return M * (f + b + w) + (P - 1) * (f + b) - (std::min(M, P) - 1) * m;
    }
    case ScheduleKind::kZBV:
      return zbv_closed_form(P, M, f, b, w);
    case ScheduleKind::kDualPipe:
      // DeepSeek-V3 report §3.2.1, Table 2: bubble (PP/2 − 1)(F&B + B − 3W), F the forward of a
      // chunk (a stage), B its *full* backward (b + w here), W its weight-gradient part, F&B an
      // overlapped forward and backward pair: f + b + w when the overlap hides nothing (the
      // simulator runs the pair back to back). Each device computes every micro-batch once (as
      // stage d in one direction or stage P−1−d in the other): M(f+b+w) of work.
      // docs/algorithms.md §2.1.
      return M * (f + b + w) + (P / 2 - 1) * ((f + b + w) + (b + w) - 3 * w);
    case ScheduleKind::kZBH2:
      // Zero Bubble (Qi et al., ICLR'24) §2.2 and Table 2: bubble (P−1)(f+b−2w), peak memory
      // (2P−1)·M_B, zero at f = b = w. It counts each stage from its own first forward (the
      // parallelogram; §4's optimizer post-validation lets the next iteration fill the rest),
      // which is what the simulator reports for ZB-H2. With this module's order it is exact when
      // every stage completes its warm-up (M >= 2P−1) and W fits the gaps (w <= min(f, b))
      // [derived; checked against the simulator]; docs/algorithms.md §2.1.
      if (M < 2 * P - 1 || w > std::min(f, b)) {
        return nan;
      }
      return M * (f + b + w) + (P - 1) * (f + b - 2 * w);
  }
  return nan;
}

}  // namespace ppsearch
