// Memo of simulate_fast() results keyed by the whole ScheduleInput (docs/performance.md
// "Simulation memo").
#include "ppsearch/schedule/sim_cache.hpp"

#include <algorithm>
#include <cstring>

#include "ppsearch/util/lru.hpp"

namespace ppsearch {
namespace {

// Every field of ScheduleInput enters the key (same_schedule_input, schedule_input_hash). A new
// field must be added to both; this assertion fails when the struct changes so that it is not
// forgotten (the memo would otherwise return the result of a different schedule).
struct ScheduleInputFields {
  ScheduleKind kind;
  int devices, chunks, microbatches;
  std::vector<double> fwd_s, bwd_s, wgt_s, act_bytes, wkeep_bytes, p2p_s;
  P2PMode mode;
};
static_assert(sizeof(ScheduleInput) == sizeof(ScheduleInputFields),
              "ScheduleInput changed: add the new field to same_schedule_input() and "
              "schedule_input_hash() in sim_cache.cpp, then update ScheduleInputFields");

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Rotate-xor fold of the bit patterns: two cheap instructions per value. It only has to tell
// most different inputs apart; a match is always confirmed field by field.
std::uint64_t fold(std::uint64_t h, const std::vector<double>& v) {
  h = (h << 7 | h >> 57) ^ v.size();
  for (const double x : v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    h = (h << 5 | h >> 59) ^ bits;
  }
  return h;
}

}  // namespace

bool same_schedule_input(const ScheduleInput& a, const ScheduleInput& b) {
  return a.kind == b.kind && a.devices == b.devices && a.chunks == b.chunks &&
         a.microbatches == b.microbatches && a.mode == b.mode && same_bits(a.fwd_s, b.fwd_s) &&
         same_bits(a.bwd_s, b.bwd_s) && same_bits(a.wgt_s, b.wgt_s) &&
         same_bits(a.act_bytes, b.act_bytes) && same_bits(a.wkeep_bytes, b.wkeep_bytes) &&
         same_bits(a.p2p_s, b.p2p_s);
}

std::uint64_t schedule_input_hash(const ScheduleInput& in) {
  std::uint64_t h = static_cast<std::uint64_t>(static_cast<int>(in.kind));
  h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(static_cast<unsigned>(in.devices));
  h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(static_cast<unsigned>(in.chunks));
  h = h * 0x9E3779B97F4A7C15ULL +
      static_cast<std::uint64_t>(static_cast<unsigned>(in.microbatches));
  h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(static_cast<int>(in.mode));
  // The stage times tell almost all inputs of a sweep apart; the other vectors enter by size
  // only (cheaper), and same_schedule_input() compares them in full.
  h = fold(h, in.fwd_s);
  h = fold(h, in.bwd_s);
  for (const auto* v : {&in.wgt_s, &in.act_bytes, &in.wkeep_bytes, &in.p2p_s})
    h = h * 0x9E3779B97F4A7C15ULL + v->size();
  return h * 0xFF51AFD7ED558CCDULL;
}

SimulationCache::Entry* SimulationCache::find(const ScheduleInput& in, std::uint64_t hash) {
  ++tick_;
  for (Entry& e : entries_) {
    if (e.valid && e.hash == hash && same_schedule_input(e.input, in)) {
      e.last_use = tick_;
      return &e;
    }
  }
  return nullptr;
}

// `slot` is an entry of input `in` (completed in place) or nullptr (a new one in the least
// recently used place).
void SimulationCache::keep(Entry* slot, const ScheduleInput& in, std::uint64_t hash,
                           const ScheduleResult& result, bool timed) {
  const bool same_input = slot != nullptr;
  if (!same_input) slot = lru_slot(entries_, capacity_);
  // Valid only once the copies are complete: a copy that throws (std::bad_alloc) leaves an
  // entry that never matches.
  slot->valid = false;
  if (!same_input) slot->input = in;
  slot->result = result;
  slot->timed = timed;
  slot->hash = hash;
  slot->last_use = tick_;
  slot->valid = true;
}

bool SimulationCache::simulate_fast(const ScheduleInput& in, SimWorkspace& ws,
                                    ScheduleResult* out) {
  if (capacity_ == 0) {
    ppsearch::simulate_fast(in, ws, out);
    ++misses_;
    return false;
  }
  const std::uint64_t hash = schedule_input_hash(in);
  Entry* e = find(in, hash);
  if (e != nullptr && e->timed) {
    *out = e->result;
    ++hits_;
    return true;
  }
  ++misses_;
  ppsearch::simulate_fast(in, ws, out);
  keep(e, in, hash, *out, true);
  return false;
}

bool SimulationCache::simulate_memory(const ScheduleInput& in, SimWorkspace& ws,
                                      ScheduleResult* out) {
  if (capacity_ == 0) {
    ppsearch::simulate_memory(in, ws, out);
    ++misses_;
    return false;
  }
  const std::uint64_t hash = schedule_input_hash(in);
  if (const Entry* e = find(in, hash)) {
    *out = e->result;
    ++hits_;
    return true;
  }
  ++misses_;
  ppsearch::simulate_memory(in, ws, out);
  keep(nullptr, in, hash, *out, false);
  return false;
}

}  // namespace ppsearch
