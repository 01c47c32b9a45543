// Spellings of the spec enums as they appear on the command line, in config
// files and in the HDF5 enum types (docs/interface.md §1–3). One table per enum:
// to_string, the parsers and the key registry's allowed sets (spec/keys.cpp)
// all read these tables, so a name is defined exactly once.
#include "ppsearch/spec/specs.hpp"

#include <array>
#include <cstddef>
#include <string>

namespace ppsearch {
namespace {

constexpr std::array<const char*, kNumSchedules> kScheduleNames = {
    "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe",
    // ZB-H2 schedule (docs/algorithms.md §2)
    "zb-h2"};
constexpr std::array<const char*, kNumRecompute> kRecomputeNames = {"none", "selective", "full"};
constexpr std::array<const char*, 2> kMlpNames = {"swiglu", "gelu"};
constexpr std::array<const char*, 2> kAttentionFlopsNames = {"full", "causal"};

template <typename Enum, std::size_t N>
bool parse_from(const std::array<const char*, N>& names, const std::string& text, Enum* out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

template <std::size_t N>
const char* name_at(const std::array<const char*, N>& names, std::size_t i) {
  return i < N ? names[i] : "?";
}

}  // namespace

const char* to_string(Recompute r) { return name_at(kRecomputeNames, static_cast<std::size_t>(r)); }
const char* to_string(Schedule s) { return name_at(kScheduleNames, static_cast<std::size_t>(s)); }
const char* to_string(MlpKind m) { return name_at(kMlpNames, static_cast<std::size_t>(m)); }
const char* to_string(AttentionFlops a) {
  return name_at(kAttentionFlopsNames, static_cast<std::size_t>(a));
}

bool parse_recompute(const std::string& text, Recompute* out) {
  return parse_from(kRecomputeNames, text, out);
}

bool parse_schedule_name(const std::string& text, Schedule* out) {
  return parse_from(kScheduleNames, text, out);
}

}  // namespace ppsearch
