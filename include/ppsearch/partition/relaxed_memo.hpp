#pragma once
/// \file
/// Memo of time-optimal partitions without a memory limit (docs/performance.md "Relaxed partition
/// memo"). With capacity_bytes = +infinity every interval fits, so the partition depends only on
/// the stage count, the item times and the per-stage comm_s; the memo is keyed by exactly these
/// (bit for bit) and keeps the last few. Part of the pure core; one per thread.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsearch/partition/partition.hpp"

namespace ppsearch {

class RelaxedPartitionMemo {
 public:
  static constexpr std::size_t kDefaultCapacity = 16;

  explicit RelaxedPartitionMemo(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  /// \brief The bounds stored for a problem with the same stages, time_s and comm_s (bit for bit)
  /// and the same `layout` (the caller's code for how stages map to devices: the interleaved
  /// choice depends on it, docs/performance.md "Noise-robust partition choice"), or nullptr. The
  /// pointer stays valid until the next insert().
  /// `aux`, if given, receives the value stored with the bounds.
  const std::vector<int>* find(const PartitionProblem& problem, int layout = 0,
                               double* aux = nullptr);

  /// \brief Stores the time-optimal bounds of `problem` (capacity +infinity) under `layout`,
  /// replacing the least recently used entry when full.
  /// `aux`: one value kept with the bounds and returned by find() (the evaluator: the limit X of
  /// interleaved_first_candidate(), docs/performance.md "Candidates on demand").
  void insert(const PartitionProblem& problem, const std::vector<int>& bounds, int layout = 0,
              double aux = 0.0);

  /// \brief Replaces the bounds stored for `problem` under `layout` (keeping its aux value), e.g.
  /// the evaluator's first interleaved chain by all three; false (and nothing stored) if there
  /// is no such entry.
  bool update(const PartitionProblem& problem, const std::vector<int>& bounds, int layout = 0);

  std::size_t size() const { return entries_.size(); }
  std::uint64_t hits() const { return hits_; }

 private:
  struct Entry {
    int stages = 0;  // 0: never matches (S >= 1)
    int layout = 0;
    std::vector<double> time, comm;
    std::vector<int> bounds;
    double aux = 0.0;
    std::uint64_t last_use = 0;
  };
  Entry* lookup(const PartitionProblem& problem, int layout);
  std::vector<Entry> entries_;
  std::size_t capacity_;
  std::uint64_t tick_ = 0;
  std::uint64_t hits_ = 0;
};

}  // namespace ppsearch
