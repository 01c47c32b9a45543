// The slot a small least-recently-used memo writes its next entry into: a new entry while the
// memo holds fewer than `capacity`, otherwise the entry with the oldest `last_use` (shared by the
// schedule-simulation memo and the time-optimal partition memo, docs/performance.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ppsearch {

template <class Entry>
Entry* lru_slot(std::vector<Entry>& entries, std::size_t capacity) {
  if (entries.size() < capacity) return &entries.emplace_back();
  return &*std::min_element(entries.begin(), entries.end(),
                            [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
}

}  // namespace ppsearch
