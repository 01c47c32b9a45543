#include "ppsearch/runtime/run.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace ppsearch {
namespace {

auto row_key(const ResultRow& r) {
  return std::make_tuple(r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, int(r.schedule),
                         int(r.recompute), int(r.sequence_parallel), int(r.zero_stage),
                         r.recompute_num_layers, r.ep, r.etp, int(r.placement));
}

bool finite_stage(const StageResult& s) {
  return std::isfinite(s.time_s) && std::isfinite(s.memory_gb);
}

std::string non_finite_message(const ResultRow& r) {
  return "internal error: non-finite result for candidate " + row_key_text(r) + "; please report";
}

// ---- One rank's evaluated rows ------------------------------------------------------------

// One evaluated candidate: its row and where its stages are kept (feasible rows only).
struct Slot {
  ResultRow row;
  std::int32_t stage_count;   // 0 unless feasible
  std::int32_t stage_thread;  // the thread whose pool holds them
  std::int32_t stage_chunk;
  std::int32_t stage_offset;
};

// The stages of one thread's feasible rows, in chunks of fixed capacity: growing never copies
// what is stored (a doubling vector would hold up to twice the data while it grows).
class StagePool {
 public:
  // Stores a row's stages contiguously; returns (chunk, offset).
  std::pair<std::int32_t, std::int32_t> add(const std::vector<StageResult>& st) {
    if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < st.size()) {
      chunks_.emplace_back();
      chunks_.back().reserve(std::max(kChunk, st.size()));
    }
    std::vector<StageResult>& c = chunks_.back();
    const auto offset = static_cast<std::int32_t>(c.size());
    c.insert(c.end(), st.begin(), st.end());
    return {static_cast<std::int32_t>(chunks_.size() - 1), offset};
  }
  const StageResult* at(std::int32_t chunk, std::int32_t offset) const {
    return chunks_[static_cast<std::size_t>(chunk)].data() + offset;
  }

 private:
  static constexpr std::size_t kChunk = 65536;
  std::vector<std::vector<StageResult>> chunks_;
};

struct LocalResults {
  std::vector<Slot> slots;       // this rank's rows, sorted by row_before after the evaluation
  std::vector<StagePool> pools;  // per thread
  std::size_t next = 0;          // first slot not yet sent to rank 0
};

// A rank's failure, reported to rank 0 (code: ExitCode value, 0 = none).
struct LocalStatus {
  int code = 0;
  std::string message;
};

// Evaluates this rank's share of the candidates into `local` (unsorted). Work units: runs of
// consecutive candidates that share a pipeline shape (schedule, PP, VPP, micro-batch count; the
// enumeration groups them), at most `chunk` long. One thread evaluates a whole unit, so its
// compiled schedule and memoised partition are built once, not once per thread. Units are dealt
// to ranks by estimated cost (below), which balances ranks without any message during the
// search; inside a rank, threads take units dynamically. The first exception in any thread
// stops every thread of the rank at its next candidate (the throwing thread's workspace may be
// inconsistent, and nothing evaluated after a failure is used) and is returned in `status`.
// Returns the busy time of the loop.
double evaluate_share(const Problem& problem, const std::vector<Candidate>& candidates, int rank,
                      int ranks, const RunConfig& config, LocalResults& local,
                      LocalStatus& status) {
  using Clock = std::chrono::steady_clock;
  const std::int64_t n = static_cast<std::int64_t>(candidates.size());
  const int threads = std::max(1, config.threads);
  const std::int64_t chunk = std::max(1, config.chunk);

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
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  std::vector<char> is_mine(static_cast<std::size_t>(n_units), 0);
  for (std::int64_t k : by_cost) {
    const auto r = std::min_element(load.begin(), load.end()) - load.begin();
    load[r] += unit_cost(k);
    if (r == rank) is_mine[k] = 1;
  }
  std::vector<std::int64_t>().swap(by_cost);
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
  local.slots.assign(static_cast<std::size_t>(n_mine), Slot{});
  local.pools.assign(static_cast<std::size_t>(threads), StagePool{});

  std::vector<Evaluator> evaluators;
  evaluators.reserve(threads);
  for (int t = 0; t < threads; ++t) evaluators.emplace_back(problem, config.eval);

  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::int64_t> error_at(threads, -1);  // candidate index of each thread's error
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> done{0};
  const bool report = config.progress && rank == 0;
  const auto b0 = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    Evaluation e;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < n_my_units; ++u) {
      if (stop.load(std::memory_order_relaxed)) continue;
      const std::int64_t first = unit_first[u];
      const std::int64_t count = unit_begin[my_units[u] + 1] - unit_begin[my_units[u]];
      std::int64_t i = first;
      try {
        for (; i < first + count; ++i) {
          if (stop.load(std::memory_order_relaxed)) break;
          const Candidate& c = candidates[mine[i]];
          evaluators[t].evaluate(c, &e);
          Slot& s = local.slots[i];
          s.row = to_row(c, e);
          if (e.feasible && !e.stages.empty()) {
            const auto [ch, off] = local.pools[t].add(e.stages);
            s.stage_count = static_cast<std::int32_t>(e.stages.size());
            s.stage_thread = t;
            s.stage_chunk = ch;
            s.stage_offset = off;
          }
        }
      } catch (...) {
        if (!errors[t]) {
          errors[t] = std::current_exception();
          error_at[t] = mine[i];
        }
        stop.store(true, std::memory_order_relaxed);
      }
      const std::int64_t d = done.fetch_add(count, std::memory_order_relaxed) + count;
      if (report && t == 0) config.progress(d, n);
    }
  }
  const double busy = std::chrono::duration<double>(Clock::now() - b0).count();
  // The failure of the lowest candidate index is reported (any one would be true).
  int worst = -1;
  for (int t = 0; t < threads; ++t)
    if (errors[t] && (worst < 0 || error_at[t] < error_at[worst])) worst = t;
  if (worst >= 0) {
    const std::string where = ranks > 1 ? " on rank " + std::to_string(rank) : "";
    try {
      std::rethrow_exception(errors[worst]);
    } catch (const std::bad_alloc&) {
      status.code = static_cast<int>(ExitCode::kUsage);
      status.message = out_of_memory_message("evaluating" + where, n);
    } catch (const std::exception& ex) {
      status.code = static_cast<int>(ExitCode::kInternal);
      status.message = "internal error: evaluating candidate " +
                       row_key_text(to_row(candidates[error_at[worst]], Evaluation{})) + where +
                       ": " + ex.what();
    } catch (...) {
      status.code = static_cast<int>(ExitCode::kInternal);
      status.message = "internal error: evaluating candidate " +
                       row_key_text(to_row(candidates[error_at[worst]], Evaluation{})) + where +
                       ": unknown exception";
    }
    return busy;
  }
  if (report) config.progress(n_mine, n);
  return busy;
}

// Checks every feasible row and its stages for finite figures (the sort below needs a finite
// mfu), then sorts the rows into the total order.
void check_and_sort(LocalResults& local, LocalStatus& status) {
  for (const Slot& s : local.slots) {
    bool ok = row_is_finite(s.row);
    if (ok && s.stage_count > 0) {
      const StageResult* st = local.pools[s.stage_thread].at(s.stage_chunk, s.stage_offset);
      ok = std::all_of(st, st + s.stage_count, finite_stage);
    }
    if (!ok) {
      status.code = static_cast<int>(ExitCode::kInternal);
      status.message = non_finite_message(s.row);
      return;
    }
  }
  std::sort(local.slots.begin(), local.slots.end(),
            [](const Slot& a, const Slot& b) { return row_before(a.row, b.row); });
}

// The next rows of `local` in order: at most `max_rows`, and no more once `max_bytes` is reached
// (at least one row).
void take_block(LocalResults& local, std::int64_t max_rows, std::size_t max_bytes, RowBlock& b) {
  b.rows.clear();
  b.stage_count.clear();
  b.stages.clear();
  std::size_t bytes = 0;
  while (local.next < local.slots.size() && static_cast<std::int64_t>(b.rows.size()) < max_rows &&
         (b.rows.empty() || bytes < max_bytes)) {
    const Slot& s = local.slots[local.next++];
    b.rows.push_back(s.row);
    b.stage_count.push_back(s.stage_count);
    if (s.stage_count > 0) {
      const StageResult* st = local.pools[s.stage_thread].at(s.stage_chunk, s.stage_offset);
      b.stages.insert(b.stages.end(), st, st + s.stage_count);
    }
    bytes += sizeof(ResultRow) + sizeof(std::int32_t) +
             static_cast<std::size_t>(s.stage_count) * sizeof(StageResult);
  }
}

// ---- Blocks on the wire -----------------------------------------------------------------------
// header {status, rows, stages} (int64), rows, stage counts (int32), stages. status 0 = a block,
// else the sender ran out of memory building it (ExitCode::kUsage) and nothing follows.

struct BlockHeader {
  std::int64_t status;
  std::int64_t rows;
  std::int64_t stages;
};

template <class T>
void put(std::byte*& p, const T* data, std::size_t n) {
  if (n) std::memcpy(p, data, n * sizeof(T));
  p += n * sizeof(T);
}

std::vector<std::byte> encode_block(const RowBlock& b) {
  const BlockHeader h{0, static_cast<std::int64_t>(b.rows.size()),
                      static_cast<std::int64_t>(b.stages.size())};
  std::vector<std::byte> out(sizeof h + b.rows.size() * sizeof(ResultRow) +
                             b.stage_count.size() * sizeof(std::int32_t) +
                             b.stages.size() * sizeof(StageResult));
  std::byte* p = out.data();
  put(p, &h, 1);
  put(p, b.rows.data(), b.rows.size());
  put(p, b.stage_count.data(), b.stage_count.size());
  put(p, b.stages.data(), b.stages.size());
  return out;
}

std::vector<std::byte> encode_failure(int code) {
  const BlockHeader h{code, 0, 0};
  std::vector<std::byte> out(sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

// Returns the sender's status (0 = `b` holds its block).
std::int64_t decode_block(const std::vector<std::byte>& bytes, int from, RowBlock& b) {
  BlockHeader h{};
  auto bad = [&]() {
    return std::logic_error("run_search: malformed block of " + std::to_string(bytes.size()) +
                            " bytes from rank " + std::to_string(from));
  };
  if (bytes.size() < sizeof h) throw bad();
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.status != 0) return h.status;
  if (h.rows < 0 || h.stages < 0 ||
      bytes.size() !=
          sizeof h + static_cast<std::size_t>(h.rows) * (sizeof(ResultRow) + sizeof(std::int32_t)) +
              static_cast<std::size_t>(h.stages) * sizeof(StageResult))
    throw bad();
  b.rows.resize(static_cast<std::size_t>(h.rows));
  b.stage_count.resize(static_cast<std::size_t>(h.rows));
  b.stages.resize(static_cast<std::size_t>(h.stages));
  const std::byte* p = bytes.data() + sizeof h;
  auto get = [&](auto* data, std::size_t n) {
    if (n) std::memcpy(data, p, n * sizeof(*data));
    p += n * sizeof(*data);
  };
  get(b.rows.data(), b.rows.size());
  get(b.stage_count.data(), b.stage_count.size());
  get(b.stages.data(), b.stages.size());
  return 0;
}

// What every rank reports to rank 0 after its evaluation: busy time, status, message.
std::vector<std::byte> encode_report(double busy, const LocalStatus& s) {
  const std::int64_t code = s.code;
  std::vector<std::byte> out(sizeof busy + sizeof code + s.message.size());
  std::byte* p = out.data();
  put(p, &busy, 1);
  put(p, &code, 1);
  put(p, s.message.data(), s.message.size());
  return out;
}

// Commands rank 0 broadcasts during the merge: byte 0 the kind, then one byte per rank
// (1 = send your next block).
constexpr std::uint8_t kFetch = 1;
constexpr std::uint8_t kDone = 2;

}  // namespace

std::string out_of_memory_message(const std::string& what, std::int64_t candidates) {
  return "out of memory while " + what + " (" + std::to_string(candidates) +
         " candidates): narrow the sweep (fewer values of --gpus, --tp, --pp, --cp, --vpp, "
         "--mbs, --schedule, --recompute, --sp or --zero) or give each rank more memory";
}

Candidate candidate_of(const ResultRow& r) {
  Candidate c;
  c.gpus = r.gpus;
  c.tp = r.tp;
  c.pp = r.pp;
  c.cp = r.cp;
  c.dp = r.dp;
  c.vpp = r.vpp;
  c.mbs = r.mbs;
  c.num_microbatches = r.num_microbatches;
  c.global_batch_size = r.global_batch_size;
  c.schedule = static_cast<Schedule>(r.schedule);
  c.recompute = static_cast<Recompute>(r.recompute);
  c.sp = r.sequence_parallel;
  c.zero = static_cast<std::uint8_t>(r.zero_stage);
  c.recompute_num_layers = r.recompute_num_layers;
  c.ep = std::max(1, r.ep);  // a file without the column reads 0: dense
  c.etp = std::max(1, r.etp);
  c.placement = static_cast<Placement>(r.placement);
  return c;
}

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
  r.recompute_num_layers = c.recompute_num_layers;
  r.time_to_train_s = std::numeric_limits<double>::quiet_NaN();  // set by add_training_cost
  r.gpu_hours = std::numeric_limits<double>::quiet_NaN();
  r.cost = std::numeric_limits<double>::quiet_NaN();
  r.ep = c.ep;  // mixture of experts (docs/moe.md)
  r.etp = c.etp;
  // Uncertainty bounds: filled for the top rows only (reevaluate.hpp); NaN elsewhere.
  r.iteration_time_lo_s = std::numeric_limits<double>::quiet_NaN();
  r.iteration_time_hi_s = std::numeric_limits<double>::quiet_NaN();
  r.placement = static_cast<std::uint8_t>(c.placement);
  return r;
}

bool row_before(const ResultRow& a, const ResultRow& b) {
  if (a.feasible != b.feasible) return a.feasible > b.feasible;
  if (a.feasible && a.mfu != b.mfu) return a.mfu > b.mfu;
  return row_key(a) < row_key(b);
}

void add_training_cost(std::vector<ResultRow>& rows, const Problem& problem) {
  for (ResultRow& r : rows) {
    const TrainingCost c = training_cost(problem.training.tokens, r.feasible ? r.tokens_per_s : 0.0,
                                         r.gpus, problem.cluster.price_per_gpu_hour);
    r.time_to_train_s = c.time_to_train_s;
    r.gpu_hours = c.gpu_hours;
    r.cost = c.cost;
  }
}

std::int64_t rows_kept_for_top(int top) {
  const std::int64_t k = std::max(1, top);
  return std::max<std::int64_t>(k, std::min<std::int64_t>(50 * k, 100000));
}

bool row_is_finite(const ResultRow& r) {
  if (!r.feasible) return true;
  for (double d : {r.iteration_time_s, r.mfu, r.hfu, r.tflops_per_gpu, r.tokens_per_s,
                   r.bubble_fraction, r.peak_memory_gb, r.compute_s, r.tp_comm_s, r.cp_comm_s,
                   r.pp_comm_s, r.dp_comm_s, r.pipeline_s, r.optimizer_s, r.needed_memory_gb})
    if (!std::isfinite(d)) return false;
  return true;
}

std::string row_key_text(const ResultRow& r) {
  // Names for valid enum values, the number otherwise (the text also describes broken rows).
  const std::string sched = r.schedule < kNumSchedules
                                ? to_string(static_cast<Schedule>(r.schedule))
                                : std::to_string(r.schedule);
  const std::string rec = r.recompute < kNumRecompute
                              ? to_string(static_cast<Recompute>(r.recompute))
                              : std::to_string(r.recompute);
  return "gpus=" + std::to_string(r.gpus) + " tp=" + std::to_string(r.tp) +
         " pp=" + std::to_string(r.pp) + " cp=" + std::to_string(r.cp) +
         " dp=" + std::to_string(r.dp) + " vpp=" + std::to_string(r.vpp) +
         " mbs=" + std::to_string(r.mbs) + " schedule=" + sched + " recompute=" + rec +
         " sp=" + (r.sequence_parallel ? "on" : "off") + " zero=" + std::to_string(r.zero_stage) +
         (r.ep > 1 || r.etp > 1 ? " ep=" + std::to_string(r.ep) + " etp=" + std::to_string(r.etp)
                                : std::string()) +
         (r.placement != 0
              ? std::string(" placement=") + (r.placement < kNumPlacements
                                                  ? to_string(static_cast<Placement>(r.placement))
                                                  : std::to_string(r.placement).c_str())
              : std::string());
}

SearchOutput merge_ranked(int sources, const BlockFetch& fetch, const RowSink& sink,
                          std::int64_t keep_top, std::int64_t sink_rows) {
  if (sink_rows <= 0) sink_rows = kDefaultSinkRows;
  SearchOutput out;
  const auto ns = static_cast<std::size_t>(std::max(0, sources));
  std::vector<RowBlock> buf(ns);
  std::vector<std::size_t> pos(ns, 0), spos(ns, 0);
  std::vector<ResultRow> last(ns);  // each source's last row so far, to check its order
  std::vector<char> has_last(ns, 0);

  // A fresh block of source s: counts consistent, figures finite, rows in order.
  auto accept = [&](int s) {
    const auto su = static_cast<std::size_t>(s);
    const RowBlock& b = buf[su];
    if (b.stage_count.size() != b.rows.size())
      throw std::logic_error("merge: block of source " + std::to_string(s) +
                             " has a stage count per row missing");
    std::size_t st = 0;
    for (std::size_t i = 0; i < b.rows.size(); ++i) {
      const ResultRow& r = b.rows[i];
      if (b.stage_count[i] < 0 || b.stages.size() - st < std::size_t(b.stage_count[i]))
        throw std::logic_error("merge: block of source " + std::to_string(s) +
                               " has fewer stages than its counts");
      const StageResult* first = b.stages.data() + st;
      st += static_cast<std::size_t>(b.stage_count[i]);
      if (!row_is_finite(r) ||
          (r.feasible && !std::all_of(first, first + b.stage_count[i], finite_stage)))
        throw SearchFailed(static_cast<int>(ExitCode::kInternal), non_finite_message(r));
      const ResultRow* prev = i > 0 ? &b.rows[i - 1] : (has_last[su] ? &last[su] : nullptr);
      if (prev && !row_before(*prev, r))
        throw std::logic_error("merge: source " + std::to_string(s) + " is not in order at " +
                               row_key_text(r));
    }
    if (st != b.stages.size())
      throw std::logic_error("merge: block of source " + std::to_string(s) +
                             " has more stages than its counts");
    if (!b.rows.empty()) {
      last[su] = b.rows.back();
      has_last[su] = 1;
    }
    pos[su] = 0;
    spos[su] = 0;
  };

  // Min-heap of the sources with rows left, on their head rows.
  auto head = [&](int s) -> const ResultRow& {
    return buf[static_cast<std::size_t>(s)].rows[pos[static_cast<std::size_t>(s)]];
  };
  auto later = [&](int a, int b) { return row_before(head(b), head(a)); };
  std::vector<int> heap;
  if (sources > 0) {
    std::vector<int> all(ns);
    std::iota(all.begin(), all.end(), 0);
    fetch(all, buf);
    for (int s = 0; s < sources; ++s) {
      accept(s);
      if (!buf[static_cast<std::size_t>(s)].rows.empty()) heap.push_back(s);
    }
    std::make_heap(heap.begin(), heap.end(), later);
  }

  std::vector<ResultRow> rows_out;
  std::vector<StageRow> stages_out;
  std::map<std::int32_t, ResultRow> best;  // first row of each GPU count
  auto flush = [&]() {
    if (rows_out.empty()) return;
    if (sink) sink(rows_out, stages_out);
    rows_out.clear();
    stages_out.clear();
  };
  std::int64_t g = 0;  // index of the next row in the total order
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const int s = heap.back();
    heap.pop_back();
    const auto su = static_cast<std::size_t>(s);
    const RowBlock& b = buf[su];
    const ResultRow& r = b.rows[pos[su]];
    const std::int32_t count = b.stage_count[pos[su]];
    if (r.feasible) {
      ++out.feasible;
      for (std::int32_t k = 0; k < count; ++k) {
        const StageResult& st = b.stages[spos[su] + static_cast<std::size_t>(k)];
        StageRow sr;
        std::memset(&sr, 0, sizeof sr);
        sr.candidate = g;
        sr.stage = st.stage;
        sr.pipeline_rank = st.pipeline_rank;
        sr.first_layer = st.first_layer;
        sr.last_layer = st.last_layer;
        sr.time_s = st.time_s;
        sr.memory_gb = st.memory_gb;
        sr.weights_gb = st.weights_gb;
        sr.gradients_gb = st.gradients_gb;
        sr.optimizer_gb = st.optimizer_gb;
        sr.activations_gb = st.activations_gb;
        sr.wstate_gb = st.wstate_gb;
        sr.transient_gb = st.transient_gb;
        sr.workspace_gb = st.workspace_gb;
        sr.recomputed_layers = st.recomputed_layers;
        stages_out.push_back(sr);
        if (g == 0) out.first_stages.push_back(sr);
      }
    } else {
      ++out.by_reason[std::min<int>(r.infeasible_reason, kNumInfeasible - 1)];
      if (r.infeasible_reason == static_cast<std::uint8_t>(Infeasible::kMemory) &&
          (!out.has_closest_miss || r.needed_memory_gb < out.closest_miss.needed_memory_gb)) {
        out.has_closest_miss = true;
        out.closest_miss = r;
      }
    }
    if (g < keep_top) out.top.push_back(r);
    best.emplace(r.gpus, r);
    rows_out.push_back(r);
    ++g;
    spos[su] += static_cast<std::size_t>(count);
    if (++pos[su] == b.rows.size()) {  // `b` and `r` are not used after this refill
      fetch({s}, buf);
      accept(s);
    }
    if (pos[su] < buf[su].rows.size()) {
      heap.push_back(s);
      std::push_heap(heap.begin(), heap.end(), later);
    }
    if (static_cast<std::int64_t>(rows_out.size()) >= sink_rows) flush();
  }
  flush();
  out.evaluated = g;
  for (const auto& kv : best) out.best.push_back(kv.second);
  return out;
}

SearchOutput run_search(const Problem& problem, const std::vector<Candidate>& candidates,
                        Communicator& comm, const RunConfig& config) {
  const int ranks = comm.size();
  const int rank = comm.rank();
  const bool root = rank == 0;
  const std::int64_t n = static_cast<std::int64_t>(candidates.size());
  const std::string on_rank = ranks > 1 ? " on rank " + std::to_string(rank) : "";

  // ---- Evaluate this rank's share and sort it ---------------------------------------------
  LocalResults local;
  LocalStatus status;
  double busy = 0;
  const char* phase = "dealing the candidates";
  try {
    busy = evaluate_share(problem, candidates, rank, ranks, config, local, status);
    if (status.code == 0) {
      phase = "ranking the results";
      check_and_sort(local, status);
    }
  } catch (const std::bad_alloc&) {
    status.code = static_cast<int>(ExitCode::kUsage);
    status.message = out_of_memory_message(phase + on_rank, n);
  } catch (const std::exception& e) {
    status.code = static_cast<int>(ExitCode::kInternal);
    status.message = std::string("internal error: ") + phase + on_rank + ": " + e.what();
  }
  if (status.code != 0) {
    local = LocalResults();  // frees the memory before the exchange below
  }

  // ---- Every rank reports to rank 0, which decides whether the merge runs -----------------
  SearchOutput out;
  int fail_code = 0;
  std::string fail_message;
  {
    const std::vector<std::vector<std::byte>> reports = comm.gather(encode_report(busy, status), 0);
    if (root) {
      for (int r = 0; r < ranks; ++r) {
        const std::vector<std::byte>& b = reports[static_cast<std::size_t>(r)];
        double rb = 0;
        std::int64_t code = 0;
        if (b.size() < sizeof rb + sizeof code)
          throw std::logic_error("run_search: malformed report from rank " + std::to_string(r));
        std::memcpy(&rb, b.data(), sizeof rb);
        std::memcpy(&code, b.data() + sizeof rb, sizeof code);
        out.rank_busy_s.push_back(rb);
        // The most severe code wins (out of memory over a bug), then the lowest rank.
        if (code > fail_code) {
          fail_code = static_cast<int>(code);
          fail_message.assign(reinterpret_cast<const char*>(b.data()) + sizeof rb + sizeof code,
                              b.size() - sizeof rb - sizeof code);
        }
      }
    }
  }
  std::uint8_t go = fail_code == 0 ? 1 : 0;
  broadcast_pod(comm, go, 0);
  if (!go) {
    if (root) throw SearchFailed(fail_code, fail_message);
    return SearchOutput();
  }

  // ---- Merge: rank 0 pulls blocks from the ranks in order ---------------------------------
  const std::int64_t send_rows = config.send_rows > 0 ? config.send_rows : kDefaultSendRows;
  // Rank 0 holds one block per rank: about 64 MiB in all, at least 256 KiB per rank.
  const std::size_t send_bytes =
      std::max<std::size_t>(std::size_t{256} << 10, (std::size_t{64} << 20) / ranks);
  if (!root) {
    RowBlock block;
    for (;;) {
      std::vector<std::uint8_t> cmd;
      broadcast_pod(comm, cmd, 0);
      if (cmd.size() != static_cast<std::size_t>(ranks) + 1 || cmd[0] != kFetch) break;
      std::vector<std::byte> bytes;
      if (cmd[static_cast<std::size_t>(rank) + 1]) {
        try {
          take_block(local, send_rows, send_bytes, block);
          bytes = encode_block(block);
        } catch (const std::bad_alloc&) {
          bytes = encode_failure(static_cast<int>(ExitCode::kUsage));
        }
      }
      comm.gather(bytes, 0);
    }
    return SearchOutput();
  }

  bool in_collective = false;
  auto command = [&](std::vector<std::uint8_t> cmd) {
    in_collective = true;
    broadcast_pod(comm, cmd, 0);
    in_collective = false;
  };
  const BlockFetch fetch = [&](const std::vector<int>& which, std::vector<RowBlock>& blocks) {
    std::vector<std::uint8_t> cmd(static_cast<std::size_t>(ranks) + 1, 0);
    cmd[0] = kFetch;
    bool remote = false;  // another rank's block is needed (else rank 0 serves itself)
    for (int s : which) {
      cmd[static_cast<std::size_t>(s) + 1] = 1;
      remote = remote || s != 0;
    }
    if (remote) {
      in_collective = true;
      broadcast_pod(comm, cmd, 0);
      const std::vector<std::vector<std::byte>> got = comm.gather({}, 0);
      in_collective = false;
      for (int s : which) {
        if (s == 0) continue;
        const auto su = static_cast<std::size_t>(s);
        if (decode_block(got[su], s, blocks[su]) != 0)
          throw SearchFailed(
              static_cast<int>(ExitCode::kUsage),
              out_of_memory_message("sending results on rank " + std::to_string(s), n));
      }
    }
    if (cmd[1]) take_block(local, send_rows, send_bytes, blocks[0]);
  };
  std::vector<double> busy_s = std::move(out.rank_busy_s);
  try {
    out = merge_ranked(ranks, fetch, config.sink, config.keep_top,
                       config.sink_rows > 0 ? config.sink_rows : kDefaultSinkRows);
  } catch (...) {
    if (in_collective) throw;  // the ranks are out of step: only an abort ends them all
    if (ranks > 1) command({kDone});
    try {
      throw;
    } catch (const std::bad_alloc&) {
      throw SearchFailed(static_cast<int>(ExitCode::kUsage),
                         out_of_memory_message("merging and writing the results", n));
    }
  }
  if (ranks > 1) command({kDone});
  if (out.evaluated != n)
    throw std::logic_error("run_search: merged " + std::to_string(out.evaluated) + " rows of " +
                           std::to_string(n));
  out.rank_busy_s = std::move(busy_s);
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
