// Small text helpers shared by the configuration and command-line edges.
#pragma once

#include <cstddef>
#include <string>

namespace ppsearch {

// Levenshtein distance (insertions, deletions, substitutions all cost 1); used for
// the "did you mean" hints on unknown keys, options and preset names.
std::size_t edit_distance(const std::string& a, const std::string& b);

// True if `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF). Text values end up in messages and in the HDF5 file's attributes.
bool is_valid_utf8(const std::string& s);

// `s` itself when it has at most `max_bytes` bytes; otherwise its first bytes (cut at a
// character boundary) followed by "… (N bytes)", so that an echoed key or value keeps an
// error message short whatever the input.
std::string clip_for_message(const std::string& s, std::size_t max_bytes = 120);

// How much of an echoed value a message keeps: enough for every legitimate value (a list of
// missing CSV columns, a long search list), short enough that a 1 MB value gives a short line.
constexpr std::size_t kMessageValueBytes = 1000;

}  // namespace ppsearch
