// Megatron-LM pipeline layout text of stage bounds (tests): items 0 (embedding), 1..L (layers),
// L+1 (head), as search.pp_layout reads it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ppsearch::test {

inline std::string layout_of(const std::vector<int>& b, int layers) {
  std::string s;
  for (std::size_t k = 0; k + 1 < b.size(); ++k) {
    if (k) s += "|";
    int n = 0;
    for (int i = b[k]; i < b[k + 1]; ++i) {
      if (i == 0) {
        s += "E";
      } else if (i == layers + 1) {
        if (n) s += (n == 1 ? "t" : "t*" + std::to_string(n));
        n = -1;
        s += "L";
      } else {
        ++n;
      }
    }
    if (n > 0) s += (n == 1 ? "t" : "t*" + std::to_string(n));
  }
  return s;
}

}  // namespace ppsearch::test
