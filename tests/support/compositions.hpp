// Brute force over chain partitions, shared by the partitioner and evaluator tests.
#pragma once

#include <functional>
#include <vector>

namespace ppsearch::test {

// Visits every composition of n items into `stages` non-empty stages, as stage bounds
// (stages + 1 cuts from 0 to n), in lexicographic order of the cuts.
inline void for_each_partition(int n, int stages,
                               const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> b(stages + 1, 0);
  b[stages] = n;
  std::function<void(int)> rec = [&](int s) {
    if (s == stages) {
      f(b);
      return;
    }
    for (int cut = b[s - 1] + 1; cut <= n - (stages - s); ++cut) {
      b[s] = cut;
      rec(s + 1);
    }
  };
  if (stages == 1) {
    f(b);
  } else {
    rec(1);
  }
}

}  // namespace ppsearch::test
