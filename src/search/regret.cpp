// Cross-topology regret (docs/uncertainty.md "Cross-topology regret").
#include "ppsearch/search/regret.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ppsearch {

RegretMatrix regret_matrix(const std::vector<std::vector<double>>& times) {
  const std::size_t n = times.size();
  for (std::size_t j = 0; j < n; ++j) {
    if (times[j].size() != n) throw std::invalid_argument("regret_matrix: not a square matrix");
    if (!(std::isfinite(times[j][j]) && times[j][j] > 0))
      throw std::invalid_argument("regret_matrix: a cluster's own best is not a positive time");
  }
  const double inf = std::numeric_limits<double>::infinity();
  RegretMatrix m;
  m.regret_pct.assign(n, std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
  m.worst_pct.assign(n, -inf);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double t = times[i][j];
      if (std::isnan(t)) {
        m.worst_pct[i] = inf;
        continue;
      }
      // The diagonal is exactly 0: the same configuration evaluated on the same cluster.
      const double r = i == j ? 0.0 : 100.0 * (t - times[j][j]) / times[j][j];
      m.regret_pct[i][j] = r;
      m.worst_pct[i] = std::max(m.worst_pct[i], r);
    }
    if (std::isfinite(m.worst_pct[i]) &&
        (m.robust < 0 || m.worst_pct[i] < m.worst_pct[static_cast<std::size_t>(m.robust)]))
      m.robust = static_cast<int>(i);
  }
  return m;
}

}  // namespace ppsearch
