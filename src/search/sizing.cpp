#include "ppsearch/search/sizing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ppsearch {

TrainingCost training_cost(double tokens, double tokens_per_s, int gpus,
                           double price_per_gpu_hour) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TrainingCost c{nan, nan, nan};
  if (!(tokens > 0) || !(tokens_per_s > 0) || !std::isfinite(tokens_per_s) || gpus <= 0) return c;
  c.time_to_train_s = tokens / tokens_per_s;
  c.gpu_hours = static_cast<double>(gpus) * c.time_to_train_s / 3600.0;
  if (price_per_gpu_hour > 0) c.cost = c.gpu_hours * price_per_gpu_hour;
  return c;
}

namespace {

bool close(double a, double b, double rel_tol) {
  if (a == b) return true;
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return std::fabs(a - b) <= rel_tol * scale;
}

}  // namespace

std::vector<std::size_t> fold_near_duplicates(const std::vector<FoldKey>& rows, double rel_tol) {
  std::vector<std::size_t> group(rows.size());
  std::vector<std::size_t> leaders;  // first row of each feasible group, in order
  for (std::size_t i = 0; i < rows.size(); ++i) {
    group[i] = i;
    const FoldKey& r = rows[i];
    if (!r.feasible) continue;
    for (std::size_t g : leaders) {
      const FoldKey& l = rows[g];
      if (l.gpus == r.gpus && close(l.time_s, r.time_s, rel_tol) &&
          close(l.memory_gb, r.memory_gb, rel_tol)) {
        group[i] = g;
        break;
      }
    }
    if (group[i] == i) leaders.push_back(i);
  }
  return group;
}

}  // namespace ppsearch
