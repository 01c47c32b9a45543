// Memo of time-optimal partitions without a memory limit (docs/performance.md "Relaxed partition
// memo").
#include "ppsearch/partition/relaxed_memo.hpp"

#include <algorithm>
#include <cstring>

#include "ppsearch/util/lru.hpp"

namespace ppsearch {
namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

const std::vector<int>* RelaxedPartitionMemo::find(const PartitionProblem& p, int layout,
                                                   double* aux) {
  Entry* e = lookup(p, layout);
  if (e == nullptr) return nullptr;
  ++hits_;
  if (aux != nullptr) *aux = e->aux;
  return &e->bounds;
}

bool RelaxedPartitionMemo::update(const PartitionProblem& p, const std::vector<int>& bounds,
                                  int layout) {
  Entry* e = lookup(p, layout);
  if (e == nullptr) return false;
  e->bounds = bounds;
  return true;
}

RelaxedPartitionMemo::Entry* RelaxedPartitionMemo::lookup(const PartitionProblem& p, int layout) {
  ++tick_;
  const std::size_t n = p.time_s.size();
  const std::size_t mid = n / 2;
  for (Entry& e : entries_) {
    // The middle item's time first, inline: it tells most entries apart without a call.
    if (e.stages == p.stages && e.layout == layout && e.time.size() == n && n > 0 &&
        std::memcmp(&e.time[mid], &p.time_s[mid], sizeof(double)) == 0 &&
        same_bits(e.time, p.time_s) && same_bits(e.comm, p.comm_s)) {
      e.last_use = tick_;
      return &e;
    }
  }
  return nullptr;
}

void RelaxedPartitionMemo::insert(const PartitionProblem& p, const std::vector<int>& bounds,
                                  int layout, double aux) {
  if (capacity_ == 0) return;
  Entry* slot = lru_slot(entries_, capacity_);
  slot->stages = 0;  // matches again only once the copies below are complete
  slot->time = p.time_s;
  slot->comm = p.comm_s;
  slot->bounds = bounds;
  slot->layout = layout;
  slot->aux = aux;
  slot->last_use = tick_;
  slot->stages = p.stages;
}

}  // namespace ppsearch
