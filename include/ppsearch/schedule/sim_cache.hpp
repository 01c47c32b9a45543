#pragma once
/// \file
/// A small memo of simulate_fast() results keyed by the whole ScheduleInput (docs/performance.md
/// "Simulation memo"). In a sweep, candidates that differ only in knobs the schedule does not
/// see (ZeRO-0 vs ZeRO-1, sequence parallelism at TP 1, a memory-only difference, ...) give the
/// simulator the same input, usually a few candidates apart; the memo answers those without
/// simulating again. Part of the pure core; not thread-safe (one per thread, like SimWorkspace).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"

namespace ppsearch {

/// \brief True when every field of `a` and `b` is bit for bit the same (doubles compared by
/// their bit patterns, so 0.0 and −0.0 count as different inputs; a NaN matches itself).
bool same_schedule_input(const ScheduleInput& a, const ScheduleInput& b);

/// \brief A 64-bit fingerprint of `in` (its scalars, the stage times and the sizes of the other
/// vectors); equal inputs (same_schedule_input) have equal fingerprints.
std::uint64_t schedule_input_hash(const ScheduleInput& in);

/// \brief Least-recently-used memo of simulate_fast() results. simulate_fast() is a pure function
/// of its input (the SimWorkspace only holds scratch and compiled programs), so a hit returns
/// exactly what a fresh simulation would. Entries are compared by fingerprint first and then
/// field by field (same_schedule_input), so a fingerprint collision never returns a wrong result.
class SimulationCache {
 public:
  static constexpr std::size_t kDefaultCapacity = 32;

  /// capacity 0 disables the memo (every call simulates).
  explicit SimulationCache(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  /// \brief Writes simulate_fast(in) into *out: a copy of the memo's entry when an identical
  /// input is held, otherwise a simulation with `ws`, which the memo then keeps (evicting the
  /// least recently used entry when full). Returns true on a hit.
  bool simulate_fast(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out);

  /// \brief Writes simulate_memory(in) into *out, or more: an entry for an identical input
  /// answers it whether it holds a full result or memory figures only (then the times are those
  /// of simulate_fast(), not NaN). A miss runs simulate_memory() and keeps its figures, which a
  /// later simulate_fast() of the same input completes in place. Returns true on a hit.
  bool simulate_memory(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out);

  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    bool valid = false;
    std::uint64_t hash = 0;
    std::uint64_t last_use = 0;
    bool timed = false;  ///< a simulate_fast() result; false: simulate_memory()'s figures only
    ScheduleInput input;
    ScheduleResult result;
  };
  Entry* find(const ScheduleInput& in, std::uint64_t hash);
  void keep(Entry* slot, const ScheduleInput& in, std::uint64_t hash, const ScheduleResult& result,
            bool timed);
  std::vector<Entry> entries_;
  std::size_t capacity_;
  std::uint64_t tick_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

}  // namespace ppsearch
