#include "ppsearch/runtime/run.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

namespace ppsearch {
namespace {

// What a rank sends back per evaluated candidate.
struct Packed {
  ResultRow row;
  std::int32_t stage_count;
  std::int32_t pad;
};

auto row_key(const ResultRow& r) {
  return std::make_tuple(r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, int(r.schedule),
                         int(r.recompute), int(r.sequence_parallel), int(r.zero_stage));
}

template <class T>
void append_bytes(std::vector<std::byte>& out, const T* data, std::size_t n) {
  const std::size_t old = out.size();
  out.resize(old + n * sizeof(T));
  if (n) std::memcpy(out.data() + old, data, n * sizeof(T));
}

}  // namespace

ResultRow to_row(const Candidate& c, const Evaluation& e) {
  ResultRow r;
  std::memset(&r, 0, sizeof r);  // padding bytes are zero: rows compare and hash as data
  r.gpus = c.gpus;
  r.tp = c.tp;
  r.pp = c.pp;
  r.cp = c.cp;
  r.dp = c.dp;
  r.vpp = c.vpp;
  r.mbs = c.mbs;
  r.num_microbatches = c.num_microbatches;
  r.global_batch_size = c.global_batch_size;
  r.schedule = static_cast<std::uint8_t>(c.schedule);
  r.recompute = static_cast<std::uint8_t>(c.recompute);
  r.sequence_parallel = c.sp;
  r.zero_stage = static_cast<std::int8_t>(c.zero);
  r.feasible = e.feasible ? 1 : 0;
  r.infeasible_reason = static_cast<std::uint8_t>(e.reason);
  r.iteration_time_s = e.iteration_time_s;
  r.mfu = e.mfu;
  r.hfu = e.hfu;
  r.tflops_per_gpu = e.tflops_per_gpu;
  r.tokens_per_s = e.tokens_per_s;
  r.bubble_fraction = e.bubble_fraction;
  r.peak_memory_gb = e.peak_memory_gb;
  r.compute_s = e.compute_s;
  r.tp_comm_s = e.tp_comm_s;
  r.cp_comm_s = e.cp_comm_s;
  r.pp_comm_s = e.pp_comm_s;
  r.dp_comm_s = e.dp_comm_s;
  r.pipeline_s = e.pipeline_s;
  r.optimizer_s = e.optimizer_s;
  r.needed_memory_gb = e.needed_bytes / 1e9;
  r.worst_rank = e.worst_rank;
  return r;
}

bool row_before(const ResultRow& a, const ResultRow& b) {
  if (a.feasible != b.feasible) return a.feasible > b.feasible;
  if (a.feasible && a.mfu != b.mfu) return a.mfu > b.mfu;
  return row_key(a) < row_key(b);
}

SearchOutput run_search(const Problem& problem, const std::vector<Candidate>& candidates,
                        Communicator& comm, const RunConfig& config) {
  using Clock = std::chrono::steady_clock;
  const std::int64_t n = static_cast<std::int64_t>(candidates.size());
  const int threads = std::max(1, config.threads);
  const std::int64_t chunk = std::max(1, config.chunk);

  // Work units: runs of consecutive candidates that share a pipeline shape (schedule,
  // PP, VPP, micro-batch count; the enumeration groups them), at most `chunk` long.
  // One thread evaluates a whole unit, so its compiled schedule and memoised partition
  // are built once, not once per thread. Units are dealt to ranks by estimated cost
  // (below), which balances ranks without any message during the search; inside a
  // rank, threads take units dynamically.
  auto shape = [&](std::int64_t i) {
    const Candidate& c = candidates[i];
    return std::make_tuple(static_cast<int>(c.schedule), c.pp, c.vpp, c.num_microbatches);
  };
  std::vector<std::int64_t> unit_begin;  // candidate index where each unit starts
  for (std::int64_t i = 0; i < n; ++i)
    if (i == 0 || shape(i) != shape(i - 1) || i - unit_begin.back() >= chunk)
      unit_begin.push_back(i);
  const std::int64_t n_units = static_cast<std::int64_t>(unit_begin.size());
  unit_begin.push_back(n);
  // Units are dealt by estimated cost, heaviest first, each to the rank with the least
  // work so far (ties to the lowest rank): an evaluation costs about a constant plus
  // the number of virtual stages (partition O(L·S), simulation O(S) per step).
  std::vector<std::int64_t> by_cost(static_cast<std::size_t>(n_units));
  std::iota(by_cost.begin(), by_cost.end(), 0);
  auto unit_cost = [&](std::int64_t k) {
    const Candidate& c = candidates[unit_begin[k]];
    return double(unit_begin[k + 1] - unit_begin[k]) * (8.0 + double(c.pp) * c.vpp);
  };
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](std::int64_t a, std::int64_t b) { return unit_cost(a) > unit_cost(b); });
  std::vector<double> load(static_cast<std::size_t>(comm.size()), 0.0);
  std::vector<char> is_mine(static_cast<std::size_t>(n_units), 0);
  for (std::int64_t k : by_cost) {
    const auto r = std::min_element(load.begin(), load.end()) - load.begin();
    load[r] += unit_cost(k);
    if (r == comm.rank()) is_mine[k] = 1;
  }
  std::vector<std::int64_t> my_units, mine;  // this rank's units; its candidates in order
  std::vector<std::int64_t> unit_first;      // position in `mine` where each of my units starts
  for (std::int64_t k = 0; k < n_units; ++k) {
    if (!is_mine[k]) continue;
    my_units.push_back(k);
    unit_first.push_back(static_cast<std::int64_t>(mine.size()));
    for (std::int64_t i = unit_begin[k]; i < unit_begin[k + 1]; ++i) mine.push_back(i);
  }
  const std::int64_t n_my_units = static_cast<std::int64_t>(my_units.size());
  const std::int64_t n_mine = static_cast<std::int64_t>(mine.size());
  std::vector<Packed> packed(static_cast<std::size_t>(n_mine));
  std::vector<std::vector<StageResult>> stages_of(static_cast<std::size_t>(n_mine));

  std::vector<Evaluator> evaluators;
  evaluators.reserve(threads);
  for (int t = 0; t < threads; ++t) evaluators.emplace_back(problem, config.eval);

  std::vector<std::exception_ptr> errors(threads);
  std::atomic<std::int64_t> done{0};
  const bool report = config.progress && comm.rank() == 0;
  const auto b0 = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    Evaluation e;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < n_my_units; ++u) {
      const std::int64_t first = unit_first[u];
      const std::int64_t count = unit_begin[my_units[u] + 1] - unit_begin[my_units[u]];
      for (std::int64_t i = first; i < first + count; ++i) {
        try {
          evaluators[t].evaluate(candidates[mine[i]], &e);
          Packed p;
          std::memset(&p, 0, sizeof p);
          p.row = to_row(candidates[mine[i]], e);
          p.stage_count = static_cast<std::int32_t>(e.stages.size());
          packed[i] = p;
          if (!e.stages.empty()) stages_of[i] = e.stages;
        } catch (...) {
          errors[t] = std::current_exception();
        }
      }
      const std::int64_t d = done.fetch_add(count, std::memory_order_relaxed) + count;
      if (report && t == 0) config.progress(d, n);
    }
  }
  const double busy = std::chrono::duration<double>(Clock::now() - b0).count();
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
  if (report) config.progress(n_mine, n);
  std::vector<StageResult> pool;
  for (auto& st : stages_of) {
    pool.insert(pool.end(), st.begin(), st.end());
    std::vector<StageResult>().swap(st);
  }
  std::vector<std::vector<StageResult>>().swap(stages_of);

  // ---- Gather to rank 0 -------------------------------------------------------------
  std::vector<std::byte> blob;
  const std::int64_t n_rows = static_cast<std::int64_t>(packed.size());
  const std::int64_t n_st = static_cast<std::int64_t>(pool.size());
  append_bytes(blob, &busy, 1);
  append_bytes(blob, &n_rows, 1);
  append_bytes(blob, packed.data(), packed.size());
  append_bytes(blob, &n_st, 1);
  append_bytes(blob, pool.data(), pool.size());
  std::vector<Packed>().swap(packed);
  std::vector<StageResult>().swap(pool);
  std::vector<std::vector<std::byte>> blobs = comm.gather(blob, 0);
  std::vector<std::byte>().swap(blob);

  SearchOutput out;
  if (comm.rank() != 0) return out;

  // Unpack every rank's rows with their stages.
  std::vector<ResultRow> rows;
  std::vector<std::int64_t> st_begin;  // first stage of each row in `stages_all`
  std::vector<std::int32_t> st_count;
  std::vector<StageResult> stages_all;
  rows.reserve(static_cast<std::size_t>(n));
  for (auto& b : blobs) {
    const std::byte* p = b.data();
    double rb = 0;
    std::int64_t nr = 0, ns = 0;
    std::memcpy(&rb, p, sizeof rb);
    p += sizeof rb;
    std::memcpy(&nr, p, sizeof nr);
    p += sizeof nr;
    out.rank_busy_s.push_back(rb);
    std::int64_t next = static_cast<std::int64_t>(stages_all.size());
    for (std::int64_t i = 0; i < nr; ++i) {
      Packed pk;
      std::memcpy(&pk, p, sizeof pk);
      p += sizeof pk;
      rows.push_back(pk.row);
      st_begin.push_back(next);
      st_count.push_back(pk.stage_count);
      next += pk.stage_count;
    }
    std::memcpy(&ns, p, sizeof ns);
    p += sizeof ns;
    const std::size_t old = stages_all.size();
    stages_all.resize(old + static_cast<std::size_t>(ns));
    if (ns)
      std::memcpy(stages_all.data() + old, p, static_cast<std::size_t>(ns) * sizeof(StageResult));
    std::vector<std::byte>().swap(b);
  }
  if (static_cast<std::int64_t>(rows.size()) != n)
    throw std::logic_error("run_search: gathered " + std::to_string(rows.size()) + " rows of " +
                           std::to_string(n));

  // Total order, independent of ranks and threads.
  std::vector<std::int64_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return row_before(rows[a], rows[b]); });

  out.rows.reserve(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::int64_t src = order[i];
    const ResultRow& r = rows[src];
    out.rows.push_back(r);
    if (r.feasible) {
      ++out.feasible;
      for (std::int32_t k = 0; k < st_count[src]; ++k) {
        const StageResult& s = stages_all[st_begin[src] + k];
        StageRow sr;
        std::memset(&sr, 0, sizeof sr);
        sr.candidate = static_cast<std::int64_t>(i);
        sr.stage = s.stage;
        sr.pipeline_rank = s.pipeline_rank;
        sr.first_layer = s.first_layer;
        sr.last_layer = s.last_layer;
        sr.time_s = s.time_s;
        sr.memory_gb = s.memory_gb;
        out.stages.push_back(sr);
      }
    } else {
      ++out.by_reason[std::min<int>(r.infeasible_reason, kNumInfeasible - 1)];
    }
  }
  out.evaluated = static_cast<std::int64_t>(out.rows.size());
  // /best: the first (best) row of each GPU count, by GPU count.
  std::vector<int> seen;
  for (const ResultRow& r : out.rows) {
    if (std::find(seen.begin(), seen.end(), r.gpus) != seen.end()) continue;
    seen.push_back(r.gpus);
    out.best.push_back(r);
  }
  std::sort(out.best.begin(), out.best.end(),
            [](const ResultRow& a, const ResultRow& b) { return a.gpus < b.gpus; });
  const double mean = out.rank_busy_s.empty()
                          ? 0.0
                          : std::accumulate(out.rank_busy_s.begin(), out.rank_busy_s.end(), 0.0) /
                                out.rank_busy_s.size();
  const double mx = out.rank_busy_s.empty()
                        ? 0.0
                        : *std::max_element(out.rank_busy_s.begin(), out.rank_busy_s.end());
  out.imbalance = mean > 0 ? mx / mean : 1.0;
  return out;
}

}  // namespace ppsearch
