// Cluster sizing and the readable top of the ranking: time to train a token budget, GPU-hours
// and cost per row (docs/results.md "Time to train and cost"), and the folding of rows that
// are the same strategy to the reader (equal time and memory within a tolerance) into one line
// of the printed table. Pure core: std only.
#pragma once

#include <cstddef>
#include <vector>

namespace ppsearch {

// Time to train, GPU-hours and cost of one configuration; NaN where an input is not given.
struct TrainingCost {
  double time_to_train_s;  // tokens / tokens_per_s
  double gpu_hours;        // gpus · time_to_train_s / 3600
  double cost;             // gpu_hours · price_per_gpu_hour
};

// tokens ≤ 0 (not given), tokens_per_s not > 0 or not finite: every figure NaN. price ≤ 0 (not
// given): cost NaN. The arithmetic is the definition of the figures, no model behind it.
TrainingCost training_cost(double tokens, double tokens_per_s, int gpus, double price_per_gpu_hour);

// What the folding looks at in a row.
struct FoldKey {
  int gpus = 0;
  bool feasible = false;
  double time_s = 0;     // iteration_time_s
  double memory_gb = 0;  // peak_memory_gb
};

// Default tolerance of fold_near_duplicates: 0.1 % (relative).
inline constexpr double kFoldTolerance = 1e-3;

// Groups rows (in ranked order) that a reader cannot tell apart: feasible, the same GPU count,
// and iteration time and peak memory each within `rel_tol` (relative to the larger) of the
// group's first row. Returns, for every row, the index of its group's first row (the row itself
// when it starts a group). Infeasible rows always start their own group.
std::vector<std::size_t> fold_near_duplicates(const std::vector<FoldKey>& rows,
                                              double rel_tol = kFoldTolerance);

}  // namespace ppsearch
