// Small text helpers shared by the configuration and command-line edges.
#pragma once

#include <cstddef>
#include <string>

namespace ppsearch {

// Levenshtein distance (insertions, deletions, substitutions all cost 1); used for
// the "did you mean" hints on unknown keys, options and preset names.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace ppsearch
