// Layer partitioner: contiguous min-max split of a chain of items into pipeline stages under
// stage-index-dependent memory limits. Formulas and algorithms: docs/algorithms.md §1.1 (PipeDream
// DP, Narayanan et al., SOSP'19, §3.1) and §1.3 (exact reachability probe, monotone DP).
#include "ppsearch/partition/partition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ppsearch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Transient range-max representations (PartitionWorkspace::m_transient_mode).
constexpr int kTransientNone = 0;    // every transient is zero
constexpr int kTransientSingle = 1;  // exactly one item has a non-zero transient
// band_dp_in() for a capacity of +infinity: Mem(σ, i, j) is a sum of finite non-negative
// entries (checked), never NaN, so it is never above +infinity and no memory is computed
// (docs/performance.md "Unlimited capacity").
constexpr int kUnlimited = 3;
constexpr int kTransientTable = 2;  // general case: sparse table, O(1) query

int floor_log2(unsigned x) {  // x >= 1
#if defined(__GNUC__) || defined(__clang__)
  return 31 - __builtin_clz(x);
#else
  int r = 0;
  while (x >>= 1) ++r;
  return r;
#endif
}

// The single expression for a stage time, T(i, j) + c(σ) with T from prefix sums
// (docs/algorithms.md §1.1). Rounding is monotone, so the value is non-increasing in i and
// non-decreasing in j, exactly as the real-valued sum is.
inline double time_of(const double* prefix_time, int i, int j, double comm) {
  return (prefix_time[j] - prefix_time[i]) + comm;
}

// The single expression for Mem(σ, i, j) (docs/algorithms.md §1.1, "How memory enters"):
// Σ static + k_σ·Σ act + max transient + E_σ. With non-negative inputs it is monotone under
// interval inclusion, also after rounding.
inline double memory_of(const double* prefix_static, const double* prefix_act, int i, int j,
                        double in_flight, double transient_max, double extra) {
  return ((prefix_static[j] - prefix_static[i]) + in_flight * (prefix_act[j] - prefix_act[i])) +
         transient_max + extra;
}

// Order-preserving map of non-negative doubles to integers (IEEE-754 bit patterns of
// non-negative doubles sort like the values). `+ 0.0` turns -0.0 into +0.0.
std::int64_t order_key(double x) {
  const double y = x + 0.0;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &y, sizeof bits);
  return static_cast<std::int64_t>(bits);
}

double from_order_key(std::int64_t key) {
  const auto bits = static_cast<std::uint64_t>(key);
  double x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

[[noreturn]] void invalid(const std::string& message) {
  throw std::invalid_argument("PartitionProblem: " + message);
}

void check_entries(const std::vector<double>& values, const char* name, std::size_t expected,
                   const char* what) {
  if (values.size() != expected) {
    invalid(std::string(name) + " has " + std::to_string(values.size()) + " entries, expected " +
            std::to_string(expected) + " (" + what + ")");
  }
  bool all_ok = true;  // branch-free first pass; NaN fails both comparisons
  for (const double v : values) all_ok &= (v >= 0.0) & (v < kInf);
  if (all_ok) return;
  for (std::size_t l = 0; l < values.size(); ++l) {
    const double v = values[l];
    if (!(v >= 0.0) || !(v < kInf)) {
      invalid(std::string(name) + "[" + std::to_string(l) + "] = " + std::to_string(v) +
              ": must be finite and >= 0");
    }
  }
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void reset(Partition& result) {
  result.feasible = false;
  result.bottleneck_s = kInf;
  result.bounds.clear();
}

void check_interval(const PartitionProblem& problem, int stage, int first_item, int end_item) {
  const auto items = static_cast<int>(problem.time_s.size());
  if (stage < 0 || stage >= problem.stages || first_item < 0 || first_item >= end_item ||
      end_item > items) {
    throw std::out_of_range("partition: stage " + std::to_string(stage) + " items [" +
                            std::to_string(first_item) + ", " + std::to_string(end_item) +
                            ") is not a non-empty interval of a chain of " + std::to_string(items) +
                            " items split into " + std::to_string(problem.stages) + " stages");
  }
}

}  // namespace

namespace {

// Everything but the per-item values, which prepare() checks while it sums them.
void validate_shape(const PartitionProblem& problem) {
  if (problem.stages < 1) {
    invalid("stages = " + std::to_string(problem.stages) + ": must be >= 1");
  }
  const std::size_t items = problem.time_s.size();
  if (items > static_cast<std::size_t>(std::numeric_limits<int>::max() - 1)) {
    invalid("too many items");
  }
  const auto stages = static_cast<std::size_t>(problem.stages);
  const auto check_size = [](const std::vector<double>& values, const char* name,
                             std::size_t expected, const char* what) {
    if (values.size() != expected) {
      invalid(std::string(name) + " has " + std::to_string(values.size()) + " entries, expected " +
              std::to_string(expected) + " (" + what + ")");
    }
  };
  check_size(problem.static_bytes, "static_bytes", items, "one per item");
  check_size(problem.act_bytes, "act_bytes", items, "one per item");
  check_size(problem.transient_bytes, "transient_bytes", items, "one per item");
  check_entries(problem.in_flight, "in_flight", stages, "one per stage");
  check_entries(problem.extra_bytes, "extra_bytes", stages, "one per stage");
  check_entries(problem.comm_s, "comm_s", stages, "one per stage");
  if (!(problem.capacity_bytes >= 0.0)) {
    invalid("capacity_bytes = " + std::to_string(problem.capacity_bytes) + ": must be >= 0");
  }
}

}  // namespace

void validate_partition_problem(const PartitionProblem& problem) {
  validate_shape(problem);
  const std::size_t items = problem.time_s.size();
  check_entries(problem.time_s, "time_s", items, "one per item");
  check_entries(problem.static_bytes, "static_bytes", items, "one per item");
  check_entries(problem.act_bytes, "act_bytes", items, "one per item");
  check_entries(problem.transient_bytes, "transient_bytes", items, "one per item");
}

namespace detail {

struct PartitionKernels {
  // Prefix sums and the transient range-max structure. O(L) (+ O(L log L) for a table).
  // Requires validate_shape(); checks the per-item values on the way (and throws through
  // validate_partition_problem() if one is negative or not finite).
  // `table` = false: the transient table is not built (yet); a caller that evaluates no memory
  // (capacity +infinity, kUnlimited) passes it. A later prepare() with `table` builds it.
  static void prepare(const PartitionProblem& p, PartitionWorkspace& ws, bool table = true) {
    // Same items (bit for bit) as the last prepare() of this workspace: everything below is a
    // function of them only, and they were checked then (docs/performance.md).
    if (ws.m_prepared && same_bits(p.time_s, ws.m_items_time) &&
        same_bits(p.static_bytes, ws.m_items_static) && same_bits(p.act_bytes, ws.m_items_act) &&
        same_bits(p.transient_bytes, ws.m_items_transient)) {
      if (table && !ws.m_table_ready) build_table(p, ws);
      return;
    }
    ws.m_prepared = false;
    build_prefix(p, ws, table);
    ws.m_items_time = p.time_s;
    ws.m_items_static = p.static_bytes;
    ws.m_items_act = p.act_bytes;
    ws.m_items_transient = p.transient_bytes;
    ws.m_prepared = true;
  }

  static void build_prefix(const PartitionProblem& p, PartitionWorkspace& ws, bool table) {
    const auto n = static_cast<int>(p.time_s.size());
    ws.m_prefix_time.resize(n + 1);
    ws.m_prefix_static.resize(n + 1);
    ws.m_prefix_act.resize(n + 1);
    double* pt = ws.m_prefix_time.data();
    double* ps = ws.m_prefix_static.data();
    double* pa = ws.m_prefix_act.data();
    pt[0] = ps[0] = pa[0] = 0.0;
    int nonzero = 0;
    int nonzero_item = -1;
    double heaviest = 0.0;
    bool all_ok = true;  // NaN fails every comparison
    for (int l = 0; l < n; ++l) {
      const double t = p.time_s[l];
      const double w = p.static_bytes[l];
      const double a = p.act_bytes[l];
      const double x = p.transient_bytes[l];
      all_ok &= (t >= 0.0) & (t < kInf) & (w >= 0.0) & (w < kInf) & (a >= 0.0) & (a < kInf) &
                (x >= 0.0) & (x < kInf);
      heaviest = std::max(heaviest, t);
      pt[l + 1] = pt[l] + t;
      ps[l + 1] = ps[l] + w;
      pa[l + 1] = pa[l] + a;
      if (x > 0.0) {
        ++nonzero;
        nonzero_item = l;
      }
    }
    if (!all_ok) validate_partition_problem(p);  // throws with the offending entry
    if (!(pt[n] < kInf) || !(ps[n] < kInf) || !(pa[n] < kInf)) {
      invalid("the per-item sums overflow a double");
    }
    ws.m_heaviest_item_s = heaviest;
    ws.m_transient_item = nonzero_item;
    if (nonzero == 0) {
      ws.m_transient_mode = kTransientNone;
    } else if (nonzero == 1) {
      ws.m_transient_mode = kTransientSingle;
    } else {
      ws.m_transient_mode = kTransientTable;
    }
    ws.m_table_ready = ws.m_transient_mode != kTransientTable;
    if (table) build_table(p, ws);
  }

  // The sparse table of the transients (kTransientTable), if not built yet.
  static void build_table(const PartitionProblem& p, PartitionWorkspace& ws) {
    if (ws.m_table_ready) return;
    {
      const auto n = static_cast<int>(p.time_s.size());
      // Sparse table: level k holds max over [i, i + 2^k).
      const int levels = floor_log2(static_cast<unsigned>(n)) + 1;
      ws.m_transient_table.resize(static_cast<std::size_t>(levels) * n);
      double* t = ws.m_transient_table.data();
      std::copy(p.transient_bytes.begin(), p.transient_bytes.end(), t);
      for (int k = 1; k < levels; ++k) {
        const int half = 1 << (k - 1);
        const double* below = t + static_cast<std::size_t>(k - 1) * n;
        double* level = t + static_cast<std::size_t>(k) * n;
        for (int i = 0; i + 2 * half <= n; ++i) level[i] = std::max(below[i], below[i + half]);
      }
    }
    ws.m_table_ready = true;
  }

  // max of transient_bytes over [i, j), j > i.
  static double transient_max(const PartitionProblem& p, const PartitionWorkspace& ws, int i,
                              int j) {
    switch (ws.m_transient_mode) {
      case kTransientNone:
        return 0.0;
      case kTransientSingle:
        return (i <= ws.m_transient_item && ws.m_transient_item < j)
                   ? p.transient_bytes[ws.m_transient_item]
                   : 0.0;
      default: {
        if (!ws.m_table_ready) throw std::logic_error("partition: transient table not built");
        const auto n = static_cast<int>(p.time_s.size());
        const int k = floor_log2(static_cast<unsigned>(j - i));
        const double* level = ws.m_transient_table.data() + static_cast<std::size_t>(k) * n;
        return std::max(level[i], level[j - (1 << k)]);
      }
    }
  }

  static double memory(const PartitionProblem& p, const PartitionWorkspace& ws, int stage, int i,
                       int j) {
    return memory_of(ws.m_prefix_static.data(), ws.m_prefix_act.data(), i, j, p.in_flight[stage],
                     transient_max(p, ws, i, j), p.extra_bytes[stage]);
  }

  // memory() with the transient representation fixed at compile time (band_dp's inner loops):
  // the same value, without the switch on every call.
  template <int Mode>
  static double memory_in(const PartitionProblem& p, const PartitionWorkspace& ws, int stage, int i,
                          int j) {
    double tr = 0.0;
    if constexpr (Mode == kTransientSingle) {
      tr = (i <= ws.m_transient_item && ws.m_transient_item < j)
               ? p.transient_bytes[ws.m_transient_item]
               : 0.0;
    } else if constexpr (Mode == kTransientTable) {
      const auto n = static_cast<int>(p.time_s.size());
      const int k = floor_log2(static_cast<unsigned>(j - i));
      const double* level = ws.m_transient_table.data() + static_cast<std::size_t>(k) * n;
      tr = std::max(level[i], level[j - (1 << k)]);
    }
    return memory_of(ws.m_prefix_static.data(), ws.m_prefix_act.data(), i, j, p.in_flight[stage],
                     tr, p.extra_bytes[stage]);
  }

  // Whether Mem(σ, i, j) <= cap (mem_fits) / > cap (mem_over), as memory_in<Mode>() tells;
  // kUnlimited: cap = +infinity, which no memory exceeds.
  template <int Mode>
  static bool mem_fits(const PartitionProblem& p, const PartitionWorkspace& ws, int stage, int i,
                       int j, double cap) {
    if constexpr (Mode == kUnlimited) {
      return true;
    } else {
      return memory_in<Mode>(p, ws, stage, i, j) <= cap;
    }
  }
  template <int Mode>
  static bool mem_over(const PartitionProblem& p, const PartitionWorkspace& ws, int stage, int i,
                       int j, double cap) {
    if constexpr (Mode == kUnlimited) {
      return false;
    } else {
      return memory_in<Mode>(p, ws, stage, i, j) > cap;
    }
  }

  // A capacity of +infinity: no interval is above it (see kUnlimited).
  static bool unlimited(const PartitionProblem& p) { return p.capacity_bytes == kInf; }

  // Canonical backtrack (latest cuts, see the header) through the banded DP table of the last
  // band_dp() call: row s holds D'[s][i] for i in [band_lo[s], band_hi[s]]. For each stage it
  // takes the largest split point in the band with D' <= optimum. The split points that fit the
  // stage (time <= optimum, memory) form a suffix of [0, end), and the canonical one lies in it
  // and in the band (see band_dp), so a split point that does not fit ends the search.
  static void backtrack(const PartitionProblem& p, const PartitionWorkspace& ws, double optimum,
                        std::vector<int>& bounds) {
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    const double* pt = ws.m_prefix_time.data();
    const bool unbounded = unlimited(p);
    bounds.resize(stages + 1);
    bounds[stages] = n;
    for (int stage = stages - 1; stage >= 1; --stage) {
      const int end = bounds[stage + 1];
      const double* row = ws.m_best.data() + static_cast<std::size_t>(stage) * stride;
      const int band_lo = ws.m_band_lo[stage];
      int i = std::min(end - 1, ws.m_band_hi[stage]);
      for (;; --i) {
        if (i < band_lo || time_of(pt, i, end, p.comm_s[stage]) > optimum ||
            (!unbounded && memory(p, ws, stage, i, end) > p.capacity_bytes)) {
          throw std::logic_error("partition: DP backtrack found no split point");
        }
        if (row[i] <= optimum) break;
      }
      bounds[stage] = i;
    }
    bounds[0] = 0;
  }

  // Largest j in [from, L] with fits(j), for a predicate that holds on a prefix of
  // (from, L] (fits(from), the empty interval, is taken as true). Galloping search:
  // O(log(j - from)) evaluations.
  template <class Fits>
  static int gallop_forward(int from, int n, Fits fits) {
    int good = from;
    int step = 1;
    while (good + step <= n && fits(good + step)) {
      good += step;
      step *= 2;
    }
    int bad = std::min(good + step, n + 1);
    while (bad - good > 1) {
      const int mid = good + (bad - good) / 2;
      if (fits(mid)) {
        good = mid;
      } else {
        bad = mid;
      }
    }
    return good;
  }

  // Smallest i in [0, to] with fits(i), for a predicate that holds on a suffix of [0, to)
  // (fits(to) is taken as true).
  template <class Fits>
  static int gallop_backward(int to, Fits fits) {
    int good = to;
    int step = 1;
    while (good - step >= 0 && fits(good - step)) {
      good -= step;
      step *= 2;
    }
    int bad = std::max(good - step, -1);
    while (good - bad > 1) {
      const int mid = bad + (good - bad) / 2;
      if (fits(mid)) {
        good = mid;
      } else {
        bad = mid;
      }
    }
    return good;
  }

  // One pass of the exact DP (docs/algorithms.md §1.1), S >= 2, restricted to the cells that a
  // partition with bottleneck <= `limit` can use. Returns D'[S][L] (+inf if no partition lies
  // in the band); if that value is <= limit it is the exact optimum.
  //
  // Band. Any partition with all stage times <= limit has b_s <= band_hi[s], the latest end
  // of stage s-1 reached by the greedy walk that extends every stage while time <= limit and
  // memory <= Cap: if b_{s-1} <= r_{s-1}, then [r_{s-1}, b_s) is a sub-interval of
  // [b_{s-1}, b_s) on the same stage index, so it fits too and r_s >= b_s. (The classical
  // greedy probe fails for another reason: a longer early stage can leave too little for the
  // later, non-empty stages.) Symmetrically b_s >= band_lo[s] from the backward walk. D' is the
  // DP restricted to the band; D' >= D everywhere, and the optimal partition runs inside the
  // band when its value is <= limit, so then D'[S][L] equals the optimum exactly.
  //
  // Rows. D'[s][j] = min over split points i of max(D'[s-1][i], T(i, j) + c_{s-1}) with
  // Mem(s-1, i, j) <= Cap. The memory-feasible i form a window [lo(j), j-1] whose both ends
  // only move right as j grows (monotone Mem, docs/algorithms.md §1.3). In the window, a split
  // point i1 < i2 with D[i1] >= D[i2] can never beat i2 (T(i2, j) <= T(i1, j)) and leaves the
  // window first, so a monotone queue keeps only points with strictly increasing D and, along it,
  // non-increasing T. The optimum sits where D crosses T, and that crossing only moves right
  // as j grows (T(i, j) grows with j), so one pointer finds it in amortised O(1). Unlike the
  // split-point argument of §1.3b this needs neither D monotone in i nor k_σ non-increasing.
  // Every value is a min/max over doubles the reference DP also compares, so the result is
  // bit-identical to partition_reference().
  static double band_dp(const PartitionProblem& p, PartitionWorkspace& ws, double limit) {
    if (unlimited(p)) return band_dp_in<kUnlimited>(p, ws, limit);
    if (!ws.m_table_ready) throw std::logic_error("partition: transient table not built");
    switch (ws.m_transient_mode) {
      case kTransientNone:
        return band_dp_in<kTransientNone>(p, ws, limit);
      case kTransientSingle:
        return band_dp_in<kTransientSingle>(p, ws, limit);
      default:
        return band_dp_in<kTransientTable>(p, ws, limit);
    }
  }

  template <int Mode>
  static double band_dp_in(const PartitionProblem& p, PartitionWorkspace& ws, double limit) {
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    const double* pt = ws.m_prefix_time.data();
    const double cap = p.capacity_bytes;
    double* best = ws.m_best.data();
    int* queue = ws.m_queue.data();
    int* band_lo = ws.m_band_lo.data();
    int* band_hi = ws.m_band_hi.data();

    // Forward walk: latest possible end of each stage.
    band_hi[0] = 0;
    for (int s = 1, r = 0; s < stages; ++s) {
      const int stage = s - 1;
      const double comm = p.comm_s[stage];
      r = gallop_forward(r, n, [&](int j) {
        return time_of(pt, r, j, comm) <= limit && mem_fits<Mode>(p, ws, stage, r, j, cap);
      });
      band_hi[s] = std::min(r, n - (stages - s));
    }
    band_hi[stages] = n;
    // Backward walk: earliest possible start of each stage.
    band_lo[stages] = n;
    for (int s = stages - 1, l = n; s >= 1; --s) {
      const double comm = p.comm_s[s];
      l = gallop_backward(l, [&](int i) {
        return time_of(pt, i, l, comm) <= limit && mem_fits<Mode>(p, ws, s, i, l, cap);
      });
      band_lo[s] = std::max(l, s);
      if (band_lo[s] > band_hi[s]) return kInf;
    }
    band_lo[0] = 0;

    // Stage 0 (row 1): the split point is 0, and the forward walk checked time and memory.
    {
      double* out = best + stride;
      for (int j = band_lo[1]; j <= band_hi[1]; ++j) out[j] = time_of(pt, 0, j, p.comm_s[0]);
    }

    // Middle stages (rows 2..S-1): monotone queue over the previous row's band.
    for (int s = 2; s < stages; ++s) {
      const int stage = s - 1;
      const double comm = p.comm_s[stage];
      const double* prev = best + static_cast<std::size_t>(s - 1) * stride;
      double* out = best + static_cast<std::size_t>(s) * stride;
      const int i_last = band_hi[s - 1];
      int next = band_lo[s - 1];  // next split point to enter the queue
      int lo = next;              // first memory-feasible split point for the current j
      int head = 0;
      int tail = 0;
      int cross = 0;  // queue position of the first split point with D >= T
      bool any = false;
      for (int j = band_lo[s]; j <= band_hi[s]; ++j) {
        while (lo < j && mem_over<Mode>(p, ws, stage, lo, j, cap)) ++lo;
        for (const int last = std::min(j - 1, i_last); next <= last; ++next) {
          const double d = prev[next];
          if (!(d < kInf)) continue;
          while (tail > head && prev[queue[tail - 1]] >= d) --tail;
          queue[tail++] = next;
          cross = std::min(cross, tail - 1);
        }
        // kUnlimited: lo stays at the first split point the queue ever holds, so no split point
        // leaves the window and head stays 0.
        if constexpr (Mode != kUnlimited) {
          while (head < tail && queue[head] < lo) ++head;
        }
        cross = std::max(cross, head);
        if (head == tail) {
          out[j] = kInf;
          continue;
        }
        while (cross < tail && prev[queue[cross]] < time_of(pt, queue[cross], j, comm)) ++cross;
        double value = kInf;
        if (cross < tail) value = prev[queue[cross]];
        if (cross > head) value = std::min(value, time_of(pt, queue[cross - 1], j, comm));
        out[j] = value;
        any = true;
      }
      if (!any) return kInf;
    }

    // Last stage: only j = L. Scanning i downwards T grows, so stop once T alone is no better.
    const int stage = stages - 1;
    const double comm = p.comm_s[stage];
    const double* prev = best + static_cast<std::size_t>(stage) * stride;
    double optimum = kInf;
    for (int i = std::min(n - 1, band_hi[stage]); i >= band_lo[stage]; --i) {
      const double t = time_of(pt, i, n, comm);
      if (t >= optimum || mem_over<Mode>(p, ws, stage, i, n, cap)) break;
      optimum = std::min(optimum, std::max(prev[i], t));
    }
    return optimum;
  }

  // Exact fast partitioner: band_dp() with a growing limit. The first limit is a lower-bound
  // estimate (mean stage load, heaviest item, memory-limited reaches); if the pass finds a
  // partition worth
  // more than the limit, that value is the next limit (and the next pass succeeds); if it
  // finds none, the limit grows by a doubling step; once the limit covers every interval the
  // band is everything and the pass is the plain O(L·S) DP. Cost O(L + S·w) per pass for a band
  // of w items, O(L·S) at worst.
  // With tau > 0 the backtrack runs at optimum·(1 + tau) (partition_robust()): the table of a
  // pass holds every cell of every partition within its limit (see band_dp), so the pass that
  // found the optimum serves if its limit reaches that far; otherwise one more pass at it.
  // `checked`: the caller has run validate_shape(p) already.
  static const Partition& fast(const PartitionProblem& p, PartitionWorkspace& ws,
                               double first_limit = 0.0, double tau = 0.0, bool checked = false) {
    if (!checked) validate_shape(p);
    const bool unbounded = unlimited(p);
    prepare(p, ws, !unbounded);  // no memory is evaluated for an unlimited capacity
    Partition& result = ws.m_result;
    reset(result);
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    if (stages > n) return result;
    const double* pt = ws.m_prefix_time.data();
    const double cap = p.capacity_bytes;
    if (stages == 1) {
      if (!unbounded && memory(p, ws, 0, 0, n) > cap) return result;
      result.bounds = {0, n};
      result.bottleneck_s = time_of(pt, 0, n, p.comm_s[0]);
      result.feasible = true;
      return result;
    }
    // The first item must fit on stage 0 and the last one on stage S-1.
    if (!unbounded && (memory(p, ws, 0, 0, 1) > cap || memory(p, ws, stages - 1, n - 1, n) > cap)) {
      return result;
    }
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    ws.m_best.resize((static_cast<std::size_t>(stages) + 1) * stride);
    ws.m_queue.resize(n);
    ws.m_band_lo.resize(stages + 1);
    ws.m_band_hi.resize(stages + 1);

    // First limit: a lower bound on the optimum (up to rounding; it is only a guess). The
    // heaviest item and the largest c_σ bound it. By the exchange argument of band_dp, stages
    // 0..s-1 end no later than the memory-only forward reach r_s, so stages s..S-1 carry at
    // least T(r_s, L) + Σ_{σ≥s} c_σ and one of them at least the mean of that; symmetrically
    // with the memory-only backward reach l_s and stages 0..s-1.
    double comm_sum = 0.0;
    double comm_min = kInf;
    double comm_max = 0.0;
    for (double c : p.comm_s) {
      comm_sum += c;
      comm_min = std::min(comm_min, c);
      comm_max = std::max(comm_max, c);
    }
    const double total = pt[n];
    double limit =
        std::max({(total + comm_sum) / stages, ws.m_heaviest_item_s + comm_min, comm_max});
    {
      double comm_rest = comm_sum;  // Σ_{σ≥s} c_σ
      for (int s = 1, r = 0; s <= stages; ++s) {
        const int stage = s - 1;
        // Unlimited: every interval fits, and the search would end at n.
        r = unbounded
                ? n
                : gallop_forward(r, n, [&](int j) { return memory(p, ws, stage, r, j) <= cap; });
        if (s == stages) {
          if (r < n) return result;  // even memory alone cannot reach the end: infeasible
          break;
        }
        comm_rest -= p.comm_s[stage];
        limit = std::max(limit, ((pt[n] - pt[r]) + comm_rest) / (stages - s));
      }
      double comm_head = comm_sum;  // Σ_{σ<s} c_σ
      for (int s = stages - 1, l = n; s >= 1; --s) {
        l = unbounded ? 0
                      : gallop_backward(l, [&](int i) { return memory(p, ws, s, i, l) <= cap; });
        comm_head -= p.comm_s[s];
        limit = std::max(limit, (pt[l] + comm_head) / s);
      }
    }
    // A caller's guess (docs/performance.md "Partition first limit"): any value gives the same
    // result, since a pass succeeds exactly when its limit is at or above the optimum and the
    // canonical partition then lies in its band; a guess at or above the optimum (the bottleneck
    // of a known feasible partition) saves the passes below it.
    if (first_limit > limit) limit = first_limit;
    const double everything = total + comm_max;  // >= every stage time
    double step = total / n;
    double optimum = kInf;
    for (;;) {
      if (!(limit < everything) || !(step > 0.0)) limit = kInf;
      const double value = band_dp(p, ws, limit);
      if (value < kInf && value <= limit) {
        optimum = value;
        break;
      }
      if (!(limit < kInf)) return result;  // the full DP found nothing: infeasible
      if (value < kInf) {
        // The next pass finds the optimum; with a tolerance, its table also serves the
        // backtrack at optimum·(1 + tau) if its limit reaches that far.
        limit = tau > 0.0 ? value * (1.0 + 2.0 * tau) : value;
      } else {
        limit += step;
        step *= 2.0;
      }
    }
    double cut_limit = optimum;
    if (tau > 0.0) {
      cut_limit = optimum * (1.0 + tau);
      if (limit < cut_limit && !(band_dp(p, ws, cut_limit) == optimum)) {
        throw std::logic_error("partition: the pass at the tolerance limit lost the optimum");
      }
    }
    ws.m_tie_limit = cut_limit;
    backtrack(p, ws, cut_limit, result.bounds);
    result.feasible = true;
    result.bottleneck_s = tau > 0.0 ? chain_bottleneck(p, ws, result.bounds) : optimum;
    return result;
  }

  // Exact reachability probe for a bottleneck `limit` (docs/algorithms.md §1.3a). Row by row keeps,
  // for every end index x, the largest reachable split point <= x ("last reach"). For stage σ
  // and end j the admissible split points are the suffix [max(lo_mem, lo_time), j-1]; j is
  // reachable iff the last reachable point before j lies in it. The predecessor stored is that
  // largest point, which yields the latest-cut witness.
  // If infeasible and `next` is given, *next receives the smallest stage time above `limit`
  // that could change the answer: for every unreachable j blocked by time, the time of the
  // interval from the largest reachable point before the time-window. For any limit below
  // *next every row is unchanged (induction over rows), so the answer stays false.
  static bool probe(const PartitionProblem& p, PartitionWorkspace& ws, double limit, double* next) {
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    const double* pt = ws.m_prefix_time.data();
    const double cap = p.capacity_bytes;
    int* last_prev = ws.m_last_reach[0].data();
    int* last_cur = ws.m_last_reach[1].data();
    int* pred = ws.m_pred.data();
    double candidate = kInf;
    for (int x = 0; x <= n - stages; ++x) last_prev[x] = 0;  // row 0: only index 0
    for (int stage = 0; stage < stages; ++stage) {
      const int s = stage + 1;
      const int j_max = n - (stages - s);
      const int j_min = (s == stages) ? n : s;
      const double comm = p.comm_s[stage];
      int* pred_row = pred + static_cast<std::size_t>(stage) * stride;
      int lo_mem = stage;
      int lo_time = stage;
      int last = -1;
      for (int j = j_min; j <= j_max; ++j) {
        while (lo_mem < j && memory(p, ws, stage, lo_mem, j) > cap) ++lo_mem;
        while (lo_time < j && time_of(pt, lo_time, j, comm) > limit) ++lo_time;
        const int y = last_prev[j - 1];
        if (y >= lo_mem && y >= lo_time) {
          last = j;
          pred_row[j] = y;
        } else if (next != nullptr && lo_time > lo_mem) {
          const int z = last_prev[lo_time - 1];
          if (z >= lo_mem) candidate = std::min(candidate, time_of(pt, z, j, comm));
        }
        last_cur[j] = last;
      }
      if (last < 0) {
        if (next != nullptr) *next = candidate;
        return false;
      }
      std::swap(last_prev, last_cur);
    }
    return true;
  }

  // Bounds of the probe's witness (valid after a true probe); returns its bottleneck.
  static double witness(const PartitionProblem& p, const PartitionWorkspace& ws,
                        std::vector<int>& bounds) {
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    const double* pt = ws.m_prefix_time.data();
    bounds.resize(stages + 1);
    bounds[stages] = n;
    double worst = 0.0;
    for (int stage = stages - 1; stage >= 0; --stage) {
      const int end = bounds[stage + 1];
      bounds[stage] = ws.m_pred[static_cast<std::size_t>(stage) * stride + end];
      worst = std::max(worst, time_of(pt, bounds[stage], end, p.comm_s[stage]));
    }
    return worst;
  }

  static const Partition& bisect(const PartitionProblem& p, PartitionWorkspace& ws) {
    validate_shape(p);
    prepare(p, ws);
    Partition& result = ws.m_result;
    reset(result);
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    if (stages > n) return result;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    ws.m_last_reach[0].resize(stride);
    ws.m_last_reach[1].resize(stride);
    ws.m_pred.resize(static_cast<std::size_t>(stages) * stride);
    if (!probe(p, ws, kInf, nullptr)) return result;  // memory alone rules it out
    // `high` is always the bottleneck of the witness in result.bounds, hence attained. That
    // witness is also the canonical (latest-cut) partition for the limit `high`: the probe's
    // witness at a limit x is the reverse-lexicographic maximum over partitions with bottleneck
    // <= x; if its own bottleneck is w <= x, it is in the smaller set for w, so it is also the
    // maximum there. No final re-probe is needed.
    double high = witness(p, ws, result.bounds);
    // Lower bound: every stage time is >= its c_σ, and the stage holding item l takes at least
    // T(l, l+1) + min c (monotone rounding makes both exact bounds). key_low is infeasible.
    const double* pt = ws.m_prefix_time.data();
    double comm_min = kInf;
    double low_bound = 0.0;
    for (double c : p.comm_s) {
      low_bound = std::max(low_bound, c);
      comm_min = std::min(comm_min, c);
    }
    for (int l = 0; l < n; ++l) low_bound = std::max(low_bound, time_of(pt, l, l + 1, comm_min));
    std::int64_t key_low = order_key(low_bound) - 1;
    while (order_key(high) - key_low > 1) {
      const std::int64_t key_high = order_key(high);
      // Midpoint in value; in bit patterns (which always makes progress) if that is degenerate.
      const double low = from_order_key(std::max<std::int64_t>(key_low, 0));
      std::int64_t key_mid = order_key(low + (high - low) / 2);
      if (key_mid <= key_low || key_mid >= key_high) key_mid = key_low + (key_high - key_low) / 2;
      const double mid = from_order_key(key_mid);
      double next = kInf;
      if (probe(p, ws, mid, &next)) {
        high = witness(p, ws, result.bounds);
        if (!(high <= mid)) throw std::logic_error("partition: probe witness exceeds its limit");
      } else {
        // No limit below `next` is feasible: the largest known infeasible key is key(next) - 1.
        key_low = std::max(key_mid, order_key(next) - 1);
        key_low = std::min(key_low, key_high - 1);
      }
    }
    result.feasible = true;
    result.bottleneck_s = high;
    return result;
  }

  static bool greedy(const PartitionProblem& p, double limit) {
    validate_partition_problem(p);
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    if (stages > n) return false;
    PartitionWorkspace ws;
    prepare(p, ws);
    const double* pt = ws.m_prefix_time.data();
    const double cap = p.capacity_bytes;
    int start = 0;
    for (int stage = 0; stage < stages; ++stage) {
      const double comm = p.comm_s[stage];
      if (stage == stages - 1) {
        return time_of(pt, start, n, comm) <= limit && memory(p, ws, stage, start, n) <= cap;
      }
      const int max_end = n - (stages - 1 - stage);  // leave one item per later stage
      int end = start;
      while (end < max_end && time_of(pt, start, end + 1, comm) <= limit &&
             memory(p, ws, stage, start, end + 1) <= cap) {
        ++end;
      }
      if (end == start) return false;
      start = end;
    }
    return false;  // not reached
  }

  // O(L²·S) DP (docs/algorithms.md §1.1). Tries every split point; the transient max is a running
  // max over the split point, independent of the sparse table used elsewhere.
  // With tau > 0 the backtrack runs at the limit optimum·(1 + tau) instead of the optimum: the
  // latest-cut partition among those within it (partition_robust()); D[s][i] <= limit says that
  // stages 0..s-1 can cover [0, i) within the limit, the same test as the probe's reachability.
  static Partition reference(const PartitionProblem& p, double tau = 0.0,
                             double* limit_out = nullptr) {
    validate_partition_problem(p);
    Partition result;
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    if (stages > n) return result;
    PartitionWorkspace ws;
    prepare(p, ws);
    const double* pt = ws.m_prefix_time.data();
    const double* ps = ws.m_prefix_static.data();
    const double* pa = ws.m_prefix_act.data();
    const double cap = p.capacity_bytes;
    const std::size_t stride = static_cast<std::size_t>(n) + 1;
    std::vector<double> best((static_cast<std::size_t>(stages) + 1) * stride, kInf);
    best[0] = 0.0;
    for (int s = 1; s <= stages; ++s) {
      const int stage = s - 1;
      const double comm = p.comm_s[stage];
      const double k = p.in_flight[stage];
      const double extra = p.extra_bytes[stage];
      const double* prev = best.data() + static_cast<std::size_t>(s - 1) * stride;
      double* out = best.data() + static_cast<std::size_t>(s) * stride;
      for (int j = s; j <= n; ++j) {
        double value = kInf;
        double transient = 0.0;
        for (int i = j - 1; i >= s - 1; --i) {
          transient = std::max(transient, p.transient_bytes[i]);
          if (!(prev[i] < kInf)) continue;
          if (memory_of(ps, pa, i, j, k, transient, extra) > cap) continue;
          value = std::min(value, std::max(prev[i], time_of(pt, i, j, comm)));
        }
        out[j] = value;
      }
    }
    const double optimum = best[static_cast<std::size_t>(stages) * stride + n];
    if (!(optimum < kInf)) return result;
    const double limit = tau > 0.0 ? optimum * (1.0 + tau) : optimum;
    if (limit_out != nullptr) *limit_out = limit;
    // Latest-cut backtrack, checking every split point.
    result.bounds.assign(stages + 1, 0);
    result.bounds[stages] = n;
    for (int stage = stages - 1; stage >= 1; --stage) {
      const int end = result.bounds[stage + 1];
      const double* row = best.data() + static_cast<std::size_t>(stage) * stride;
      int chosen = -1;
      double transient = 0.0;
      for (int i = end - 1; i >= stage; --i) {
        transient = std::max(transient, p.transient_bytes[i]);
        const bool fits =
            memory_of(ps, pa, i, end, p.in_flight[stage], transient, p.extra_bytes[stage]) <= cap;
        if (fits && row[i] <= limit && time_of(pt, i, end, p.comm_s[stage]) <= limit) {
          chosen = i;
          break;
        }
      }
      if (chosen < 0) throw std::logic_error("partition: reference backtrack failed");
      result.bounds[stage] = chosen;
    }
    result.feasible = true;
    result.bottleneck_s = optimum;
    if (tau > 0.0) {
      double worst = 0.0;
      for (int stage = 0; stage < stages; ++stage) {
        worst = std::max(
            worst, time_of(pt, result.bounds[stage], result.bounds[stage + 1], p.comm_s[stage]));
      }
      result.bottleneck_s = worst;
    }
    return result;
  }

  // partition_robust(): the exact optimum B*, then the latest-cut partition within B*·(1 + tau)
  // (the probe's witness; the reference path backtracks its own table at that limit).
  static const Partition& robust(const PartitionProblem& p, PartitionWorkspace& ws, bool ref,
                                 double first_limit, double tau, bool checked = false) {
    if (!(tau >= 0.0) || !(tau < 1.0)) {
      throw std::invalid_argument("partition_robust: tau = " + std::to_string(tau) +
                                  ": must be in [0, 1)");
    }
    if (ref) {
      ws.m_result = reference(p, tau, &ws.m_tie_limit);
      prepare(p, ws, !unlimited(p));  // the balancing that may follow reads the prefix sums
      return ws.m_result;
    }
    // A first limit just above the tolerance limit lets one pass serve both (fast()).
    return fast(p, ws, first_limit * (1.0 + 2.0 * tau), tau, checked);
  }

  static void check_devices(const PartitionProblem& p, const std::vector<int>& stage_device) {
    if (stage_device.size() != static_cast<std::size_t>(p.stages)) {
      invalid("stage_device has " + std::to_string(stage_device.size()) + " entries, expected " +
              std::to_string(p.stages) + " (one per stage)");
    }
    for (std::size_t s = 0; s < stage_device.size(); ++s) {
      if (stage_device[s] < 0) {
        invalid("stage_device[" + std::to_string(s) + "] = " + std::to_string(stage_device[s]) +
                ": must be >= 0");
      }
    }
  }

  // Per device: the sum of its stage times, in stage order. Returns the number of devices.
  static int device_loads(const PartitionProblem& p, const PartitionWorkspace& ws,
                          const std::vector<int>& stage_device, const std::vector<int>& b,
                          std::vector<double>& load) {
    int devices = 0;
    for (const int d : stage_device) devices = std::max(devices, d + 1);
    load.assign(devices, 0.0);
    const double* pt = ws.m_prefix_time.data();
    for (int s = 0; s < p.stages; ++s)
      load[stage_device[s]] += time_of(pt, b[s], b[s + 1], p.comm_s[s]);
    return devices;
  }

  // Device balancing of partition_interleaved(): first-improvement local search on the bounds
  // `b` (valid, every stage within `limit` and memory). Moves and acceptance: see the header.
  // Scan order: devices at the maximum by index, their stages in chain order, passing right
  // before left, the nearest receiving stage first. At most 4·S moves (each lowers the number of
  // devices at the maximum or the maximum itself).
  static void balance(const PartitionProblem& p, PartitionWorkspace& ws,
                      const std::vector<int>& dev, double limit, double tau, std::vector<int>& b) {
    const int S = p.stages;
    const double* pt = ws.m_prefix_time.data();
    const double cap = p.capacity_bytes;
    std::vector<double>& load = ws.m_device_load;
    std::vector<double>& trial = ws.m_trial_load;
    const int devices = device_loads(p, ws, dev, b, load);
    if (devices >= S) return;  // one stage per device: nothing to balance
    auto t = [&](int s, int i, int j) { return time_of(pt, i, j, p.comm_s[s]); };
    const bool unbounded = unlimited(p);
    auto fits = [&](int s, int i, int j) {
      return i < j && t(s, i, j) <= limit && (unbounded || memory(p, ws, s, i, j) <= cap);
    };
    for (int move = 0; move < 4 * S; ++move) {
      double top = 0.0;
      for (const double x : load) top = std::max(top, x);
      const double level = top * (1.0 - tau);
      const double ceiling = top * (1.0 + tau);
      int at_top = 0;
      for (const double x : load) at_top += x >= level ? 1 : 0;
      // Whether the loads in `trial` are an improvement.
      auto better = [&]() {
        int count = 0;
        for (const double x : trial) {
          if (x > ceiling) return false;
          count += x >= level ? 1 : 0;
        }
        return count < at_top;
      };
      bool moved = false;
      for (int d = 0; d < devices && !moved; ++d) {
        if (!(load[d] >= level)) continue;
        for (int a = 0; a < S && !moved; ++a) {
          if (dev[a] != d) continue;
          // Pass the last item of stage a to the right: cuts a+1..r move one item left.
          if (a + 1 < S && fits(a, b[a], b[a + 1] - 1)) {
            trial = load;
            trial[d] += t(a, b[a], b[a + 1] - 1) - t(a, b[a], b[a + 1]);
            for (int r = a + 1; r < S; ++r) {
              const double before = trial[dev[r]];
              if (fits(r, b[r] - 1, b[r + 1])) {  // stage r receives
                trial[dev[r]] += t(r, b[r] - 1, b[r + 1]) - t(r, b[r], b[r + 1]);
                if (trial[dev[r]] <= ceiling && better()) {
                  for (int k = a + 1; k <= r; ++k) --b[k];
                  moved = true;
                  break;
                }
                trial[dev[r]] = before;
              }
              // Stage r passes it on: it shifts by one item.
              if (r + 1 >= S || !fits(r, b[r] - 1, b[r + 1] - 1)) break;
              trial[dev[r]] += t(r, b[r] - 1, b[r + 1] - 1) - t(r, b[r], b[r + 1]);
            }
            if (moved) break;
          }
          // Pass the first item of stage a to the left: cuts r+1..a move one item right.
          if (a > 0 && fits(a, b[a] + 1, b[a + 1])) {
            trial = load;
            trial[d] += t(a, b[a] + 1, b[a + 1]) - t(a, b[a], b[a + 1]);
            for (int r = a - 1; r >= 0; --r) {
              const double before = trial[dev[r]];
              if (fits(r, b[r], b[r + 1] + 1)) {
                trial[dev[r]] += t(r, b[r], b[r + 1] + 1) - t(r, b[r], b[r + 1]);
                if (trial[dev[r]] <= ceiling && better()) {
                  for (int k = r + 1; k <= a; ++k) ++b[k];
                  moved = true;
                  break;
                }
                trial[dev[r]] = before;
              }
              if (r == 0 || !fits(r, b[r] + 1, b[r + 1] + 1)) break;
              trial[dev[r]] += t(r, b[r] + 1, b[r + 1] + 1) - t(r, b[r], b[r + 1]);
            }
          }
        }
      }
      if (!moved) return;
      device_loads(p, ws, dev, b, load);  // afresh, not from the differences
    }
  }

  static double max_load(const PartitionProblem& p, const std::vector<int>& stage_device,
                         const std::vector<int>& bounds) {
    PartitionWorkspace ws;
    if (!(evaluate(p, bounds, ws).bottleneck_s < kInf)) return kInf;
    check_devices(p, stage_device);
    device_loads(p, ws, stage_device, bounds, ws.m_device_load);
    double top = 0.0;
    for (const double x : ws.m_device_load) top = std::max(top, x);
    return top;
  }

  // The starting chain of partition_interleaved() in ws.m_result, its limit X in m_tie_limit.
  // The callers have run validate_shape(p) (the mirrored problem then passes it too: the same
  // entries in reverse order).
  static void start_chain(const PartitionProblem& p, PartitionWorkspace& ws, bool ref,
                          double first_limit, double tau, bool earliest) {
    if (!earliest) {
      robust(p, ws, ref, first_limit, tau, true);
      return;
    }
    // The earliest-cut chain is the latest-cut chain of the mirrored problem (items and
    // stages in reverse order), mirrored back.
    if (!ws.m_mirror_ws) ws.m_mirror_ws = std::make_unique<PartitionWorkspace>();
    PartitionWorkspace& mws = *ws.m_mirror_ws;
    PartitionProblem& mirror = ws.m_mirror;
    mirror.time_s.assign(p.time_s.rbegin(), p.time_s.rend());
    mirror.static_bytes.assign(p.static_bytes.rbegin(), p.static_bytes.rend());
    mirror.act_bytes.assign(p.act_bytes.rbegin(), p.act_bytes.rend());
    mirror.transient_bytes.assign(p.transient_bytes.rbegin(), p.transient_bytes.rend());
    mirror.in_flight.assign(p.in_flight.rbegin(), p.in_flight.rend());
    mirror.extra_bytes.assign(p.extra_bytes.rbegin(), p.extra_bytes.rend());
    mirror.comm_s.assign(p.comm_s.rbegin(), p.comm_s.rend());
    mirror.capacity_bytes = p.capacity_bytes;
    mirror.stages = p.stages;
    // Its own workspace: the prefix sums of neither problem are rebuilt on the next call.
    robust(mirror, mws, ref, first_limit, tau, true);
    prepare(p, ws, !unlimited(p));  // a no-op when ws holds this problem's items already
    ws.m_tie_limit = mws.m_tie_limit;
    Partition& mirrored = ws.m_result;
    mirrored = mws.m_result;
    if (!mirrored.feasible) return;
    const auto n = static_cast<int>(p.time_s.size());
    std::vector<int>& b = mirrored.bounds;
    std::reverse(b.begin(), b.end());
    for (int& x : b) x = n - x;
  }

  static double chain_bottleneck(const PartitionProblem& p, const PartitionWorkspace& ws,
                                 const std::vector<int>& b) {
    double worst = 0.0;
    for (int s = 0; s < p.stages; ++s) {
      worst = std::max(worst, time_of(ws.m_prefix_time.data(), b[s], b[s + 1], p.comm_s[s]));
    }
    return worst;
  }

  static const Partition& interleaved(const PartitionProblem& p,
                                      const std::vector<int>& stage_device, PartitionWorkspace& ws,
                                      bool ref, double first_limit, double tau, bool earliest,
                                      bool balanced) {
    validate_shape(p);
    check_devices(p, stage_device);
    start_chain(p, ws, ref, first_limit, tau, earliest);
    Partition& result = ws.m_result;
    if (!result.feasible) return result;
    // Every stage stays within X = B*·(1 + tau), the limit robust() chose within.
    if (balanced) balance(p, ws, stage_device, ws.m_tie_limit, tau, result.bounds);
    result.bottleneck_s = chain_bottleneck(p, ws, result.bounds);
    return result;
  }

  // Three chains of interleaved() at once: latest-cut, latest-cut balanced, earliest-cut.
  static bool candidates(const PartitionProblem& p, const std::vector<int>& stage_device,
                         PartitionWorkspace& ws, std::vector<int>& out, bool ref,
                         double first_limit, double tau) {
    double tie_limit = 0.0;
    return first_candidate(p, stage_device, ws, out, ref, first_limit, tau, &tie_limit) &&
           more_candidates(p, stage_device, ws, out, ref, tie_limit, tau, true);
  }

  // The first of candidates(): the latest-cut chain into `out` (S + 1 cuts), its limit X in
  // *tie_limit.
  static bool first_candidate(const PartitionProblem& p, const std::vector<int>& stage_device,
                              PartitionWorkspace& ws, std::vector<int>& out, bool ref,
                              double first_limit, double tau, double* tie_limit) {
    validate_shape(p);
    check_devices(p, stage_device);
    out.clear();
    start_chain(p, ws, ref, first_limit, tau, false);
    if (!ws.m_result.feasible) return false;
    *tie_limit = ws.m_tie_limit;
    const std::vector<int>& b = ws.m_result.bounds;
    out.assign(b.begin(), b.end());
    return true;
  }

  // The other two of candidates(), appended to `out`, which holds the first (first_candidate(),
  // limit X = tie_limit): that chain balanced within X, and the earliest-cut chain.
  static bool more_candidates(const PartitionProblem& p, const std::vector<int>& stage_device,
                              PartitionWorkspace& ws, std::vector<int>& out, bool ref,
                              double tie_limit, double tau, bool checked = false) {
    if (!checked) {
      validate_shape(p);
      check_devices(p, stage_device);
    }
    const std::size_t width = static_cast<std::size_t>(p.stages) + 1;
    if (out.size() != width) {
      invalid("more candidates: " + std::to_string(out.size()) + " cuts given, expected " +
              std::to_string(width) + " (the first chain)");
    }
    prepare(p, ws, !unlimited(p));  // a no-op when ws holds this problem's items already
    std::vector<int>& b = ws.m_chain;
    b.assign(out.begin(), out.end());
    // The mirrored problem has the same optimum up to rounding: the latest-cut chain's
    // bottleneck is a first limit that saves its passes below (any first limit gives the same
    // chain, fast()).
    const double first_limit = chain_bottleneck(p, ws, b);
    balance(p, ws, stage_device, tie_limit, tau, b);
    out.insert(out.end(), b.begin(), b.end());
    // The balanced earliest-cut chain rarely won and cost a simulation: not a candidate.
    start_chain(p, ws, ref, first_limit, tau, true);
    if (!ws.m_result.feasible) {
      out.clear();
      return false;
    }
    const std::vector<int>& e = ws.m_result.bounds;
    out.insert(out.end(), e.begin(), e.end());
    return true;
  }

  static double stage_memory(const PartitionProblem& p, int stage, int i, int j) {
    validate_partition_problem(p);
    check_interval(p, stage, i, j);
    PartitionWorkspace ws;
    prepare(p, ws);
    return memory(p, ws, stage, i, j);
  }

  static double stage_time(const PartitionProblem& p, int stage, int i, int j) {
    validate_partition_problem(p);
    check_interval(p, stage, i, j);
    PartitionWorkspace ws;
    prepare(p, ws);
    return time_of(ws.m_prefix_time.data(), i, j, p.comm_s[stage]);
  }

  static Partition evaluate(const PartitionProblem& p, const std::vector<int>& bounds) {
    PartitionWorkspace ws;
    return evaluate(p, bounds, ws);
  }

  // prepare() checks the per-item values (as validate_partition_problem() would).
  static const Partition& evaluate(const PartitionProblem& p, const std::vector<int>& bounds,
                                   PartitionWorkspace& ws) {
    validate_shape(p);
    const bool unbounded = unlimited(p);
    prepare(p, ws, !unbounded);  // first: a malformed problem throws whatever the bounds
    Partition& result = ws.m_result;
    reset(result);
    result.bounds = bounds;
    const auto n = static_cast<int>(p.time_s.size());
    const int stages = p.stages;
    if (bounds.size() != static_cast<std::size_t>(stages) + 1 || bounds.front() != 0 ||
        bounds.back() != n) {
      return result;
    }
    for (int stage = 0; stage < stages; ++stage) {
      if (bounds[stage] >= bounds[stage + 1]) return result;
    }
    double worst = 0.0;
    bool fits = true;
    for (int stage = 0; stage < stages; ++stage) {
      const int i = bounds[stage];
      const int j = bounds[stage + 1];
      worst = std::max(worst, time_of(ws.m_prefix_time.data(), i, j, p.comm_s[stage]));
      fits = fits && (unbounded || memory(p, ws, stage, i, j) <= p.capacity_bytes);
    }
    result.feasible = fits;
    result.bottleneck_s = worst;
    return result;
  }
};

}  // namespace detail

Partition partition_reference(const PartitionProblem& problem) {
  return detail::PartitionKernels::reference(problem);
}

const Partition& partition_fast(const PartitionProblem& problem, PartitionWorkspace& workspace) {
  return detail::PartitionKernels::fast(problem, workspace);
}

const Partition& partition_fast(const PartitionProblem& problem, PartitionWorkspace& workspace,
                                double first_limit) {
  return detail::PartitionKernels::fast(problem, workspace, first_limit);
}

Partition partition_fast(const PartitionProblem& problem) {
  PartitionWorkspace workspace;
  return detail::PartitionKernels::fast(problem, workspace);
}

const Partition& partition_bisect_reachability(const PartitionProblem& problem,
                                               PartitionWorkspace& workspace) {
  return detail::PartitionKernels::bisect(problem, workspace);
}

Partition partition_bisect_reachability(const PartitionProblem& problem) {
  PartitionWorkspace workspace;
  return detail::PartitionKernels::bisect(problem, workspace);
}

bool greedy_probe_feasible(const PartitionProblem& problem, double bottleneck_s) {
  return detail::PartitionKernels::greedy(problem, bottleneck_s);
}

double stage_memory(const PartitionProblem& problem, int stage, int first_item, int end_item) {
  return detail::PartitionKernels::stage_memory(problem, stage, first_item, end_item);
}

double stage_time(const PartitionProblem& problem, int stage, int first_item, int end_item) {
  return detail::PartitionKernels::stage_time(problem, stage, first_item, end_item);
}

Partition evaluate_partition(const PartitionProblem& problem, const std::vector<int>& bounds) {
  return detail::PartitionKernels::evaluate(problem, bounds);
}

const Partition& evaluate_partition(const PartitionProblem& problem, const std::vector<int>& bounds,
                                    PartitionWorkspace& workspace) {
  return detail::PartitionKernels::evaluate(problem, bounds, workspace);
}

PartialRecomputePartition partition_partial_recompute(const PartitionProblem& problem,
                                                      const PartialRecompute& rc) {
  validate_partition_problem(problem);
  const int L = static_cast<int>(problem.time_s.size());
  const int S = problem.stages;
  if (static_cast<int>(rc.recomputable.size()) != L || !(rc.save_bytes >= 0) ||
      !(rc.extra_time_s >= 0) || !(rc.transient_bytes >= 0) || rc.per_stage < -1)
    throw std::invalid_argument("partition_partial_recompute: malformed recompute description");
  PartialRecomputePartition out;
  out.partition.feasible = false;
  if (S > L) return out;
  std::vector<double> pt(L + 1, 0.0), ps(L + 1, 0.0), pa(L + 1, 0.0);
  std::vector<int> pr(L + 1, 0);
  for (int l = 0; l < L; ++l) {
    pt[l + 1] = pt[l] + problem.time_s[l];
    ps[l + 1] = ps[l] + problem.static_bytes[l];
    pa[l + 1] = pa[l] + problem.act_bytes[l];
    pr[l + 1] = pr[l] + (rc.recomputable[l] ? 1 : 0);
  }
  const double cap = problem.capacity_bytes;
  // Cost of stage s on [i, j) given the running max transient `tr`: time (or +inf when
  // nothing fits) and the recomputed count.
  auto cost = [&](int s, int i, int j, double tr, int* r_out) -> double {
    const int n = pr[j] - pr[i];
    const double k = problem.in_flight[s];
    const double stat = ps[j] - ps[i], act = pa[j] - pa[i];
    const double T = (pt[j] - pt[i]) + problem.comm_s[s];
    auto mem = [&](int r) {
      const double t_r = r > 0 ? std::max(tr, rc.transient_bytes) : tr;
      return (stat + k * std::max(0.0, act - r * rc.save_bytes)) + t_r + problem.extra_bytes[s];
    };
    int r = 0;
    if (rc.per_stage >= 0) {
      r = std::min(rc.per_stage, n);
      if (!(mem(r) <= cap)) return kInf;
    } else if (!(mem(0) <= cap)) {
      const double per = k * rc.save_bytes;
      if (n == 0 || !(per > 0)) return kInf;
      const double over = mem(0) - cap + (std::max(tr, rc.transient_bytes) - tr);
      r = std::max(1, std::min(n, static_cast<int>(std::ceil(over / per))));
      while (r > 1 && mem(r - 1) <= cap) --r;  // rounding: the smallest count that fits
      while (r < n && !(mem(r) <= cap)) ++r;
      if (!(mem(r) <= cap)) return kInf;
    }
    *r_out = r;
    return T + r * rc.extra_time_s;
  };
  // best[s][j]: smallest bottleneck of stages 0..s−1 covering items [0, j).
  const std::size_t W = static_cast<std::size_t>(L) + 1;
  std::vector<double> best((static_cast<std::size_t>(S) + 1) * W, kInf);
  std::vector<int> from((static_cast<std::size_t>(S) + 1) * W, -1), rec(best.size(), 0);
  best[0] = 0.0;
  for (int s = 0; s < S; ++s) {
    const std::size_t row = static_cast<std::size_t>(s) * W, next = row + W;
    for (int i = s; i < L; ++i) {
      const double prev = best[row + static_cast<std::size_t>(i)];
      if (prev == kInf) continue;
      double tr = 0;
      for (int j = i + 1; j <= L - (S - s - 1); ++j) {
        tr = std::max(tr, problem.transient_bytes[static_cast<std::size_t>(j - 1)]);
        int r = 0;
        const double c = cost(s, i, j, tr, &r);
        if (c == kInf) continue;
        const double v = std::max(prev, c);
        const std::size_t cell = next + static_cast<std::size_t>(j);
        if (v <= best[cell]) {  // a later start wins ties: the latest cuts
          best[cell] = v;
          from[cell] = i;
          rec[cell] = r;
        }
      }
    }
  }
  const std::size_t end = static_cast<std::size_t>(S) * W + static_cast<std::size_t>(L);
  if (best[end] == kInf) return out;
  out.partition.feasible = true;
  out.partition.bottleneck_s = best[end];
  out.partition.bounds.assign(static_cast<std::size_t>(S) + 1, 0);
  out.recomputed.assign(static_cast<std::size_t>(S), 0);
  int j = L;
  for (int s = S; s > 0; --s) {
    const std::size_t cell = static_cast<std::size_t>(s) * W + static_cast<std::size_t>(j);
    out.partition.bounds[static_cast<std::size_t>(s)] = j;
    out.recomputed[static_cast<std::size_t>(s - 1)] = rec[cell];
    j = from[cell];
  }
  out.partition.bounds[0] = 0;
  return out;
}

const Partition& partition_robust(const PartitionProblem& problem, PartitionWorkspace& workspace,
                                  bool reference, double first_limit, double tau) {
  return detail::PartitionKernels::robust(problem, workspace, reference, first_limit, tau);
}

Partition partition_robust(const PartitionProblem& problem, bool reference, double tau) {
  PartitionWorkspace workspace;
  return detail::PartitionKernels::robust(problem, workspace, reference, 0.0, tau);
}

const Partition& partition_interleaved(const PartitionProblem& problem,
                                       const std::vector<int>& stage_device,
                                       PartitionWorkspace& workspace, bool reference,
                                       double first_limit, double tau, bool earliest,
                                       bool balanced) {
  return detail::PartitionKernels::interleaved(problem, stage_device, workspace, reference,
                                               first_limit, tau, earliest, balanced);
}

Partition partition_interleaved(const PartitionProblem& problem,
                                const std::vector<int>& stage_device, bool reference, double tau,
                                bool earliest, bool balanced) {
  PartitionWorkspace workspace;
  return detail::PartitionKernels::interleaved(problem, stage_device, workspace, reference, 0.0,
                                               tau, earliest, balanced);
}

bool interleaved_candidates(const PartitionProblem& problem, const std::vector<int>& stage_device,
                            PartitionWorkspace& workspace, std::vector<int>& chains, bool reference,
                            double first_limit, double tau) {
  return detail::PartitionKernels::candidates(problem, stage_device, workspace, chains, reference,
                                              first_limit, tau);
}

bool interleaved_first_candidate(const PartitionProblem& problem,
                                 const std::vector<int>& stage_device,
                                 PartitionWorkspace& workspace, std::vector<int>& chains,
                                 double* tie_limit, bool reference, double first_limit,
                                 double tau) {
  return detail::PartitionKernels::first_candidate(problem, stage_device, workspace, chains,
                                                   reference, first_limit, tau, tie_limit);
}

bool interleaved_more_candidates(const PartitionProblem& problem,
                                 const std::vector<int>& stage_device,
                                 PartitionWorkspace& workspace, std::vector<int>& chains,
                                 double tie_limit, bool reference, double tau) {
  return detail::PartitionKernels::more_candidates(problem, stage_device, workspace, chains,
                                                   reference, tie_limit, tau);
}

int megatron_layouts(int layers, int stages, std::vector<int>& out) {
  if (layers < 1 || stages < 1) return 0;
  const int S = stages;
  const int n_items = layers + 2;
  int n = 0;
  const std::size_t start = out.size();
  // One layout: bounds[st] = st·per + shift for 0 < st < S (bounds[0] = 0, bounds[S] = n_items).
  auto add = [&](int per, int shift) {
    const std::size_t at = out.size();
    out.push_back(0);
    for (int st = 1; st < S; ++st) out.push_back(st * per + shift);
    out.push_back(n_items);
    for (int st = 0; st < S; ++st) {
      if (out[at + st + 1] <= out[at + st]) {  // an empty stage: not a layout
        out.resize(at);
        return;
      }
    }
    // Skip a duplicate of a layout appended before (stages ≤ 2 can make two coincide).
    for (std::size_t k = start; k < at; k += static_cast<std::size_t>(S) + 1) {
      if (std::equal(out.begin() + at, out.end(), out.begin() + k)) {
        out.resize(at);
        return;
      }
    }
    ++n;
  };
  // Even: stage st starts at layer st·per + 1 (item index = layer index).
  if (layers % S == 0) add(layers / S, 1);
  // The embedding counted as a layer of the first stage: stage st starts at item st·per.
  if ((layers + 1) % S == 0) add((layers + 1) / S, 0);
  // The loss counted as a layer of the last stage: the first stage is E + per layers.
  if ((layers + 1) % S == 0) add((layers + 1) / S, 1);
  // Both: stage st starts at item st·per, the last stage ends with the output layer.
  if ((layers + 2) % S == 0) add((layers + 2) / S, 0);
  return n;
}

double max_device_load(const PartitionProblem& problem, const std::vector<int>& stage_device,
                       const std::vector<int>& bounds) {
  return detail::PartitionKernels::max_load(problem, stage_device, bounds);
}

}  // namespace ppsearch
