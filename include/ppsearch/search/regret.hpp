// Cross-topology regret (docs/uncertainty.md "Cross-topology regret"): the best configuration
// found on each cluster, run on every other cluster, against that cluster's own best.
// Pure core: std only.
#pragma once

#include <vector>

namespace ppsearch {

// times[i][j]: step time of cluster i's best configuration run on cluster j (NaN when it does
// not run there); times[j][j] is cluster j's own best. A square matrix.
struct RegretMatrix {
  std::vector<std::vector<double>> regret_pct;  // 100·(times[i][j] − times[j][j]) / times[j][j]
  std::vector<double> worst_pct;  // per tuned-on row: its largest regret (inf if any NaN)
  int robust = -1;  // the row with the smallest worst regret (first among equals); -1 if none
                    // runs everywhere
};

// Throws std::invalid_argument for a matrix that is not square or whose diagonal is not a
// finite positive time.
RegretMatrix regret_matrix(const std::vector<std::vector<double>>& times);

}  // namespace ppsearch
