/// \file
/// Presets compiled into the binary: every file configs/<kind>/<stem>.ini for the kinds in
/// kPresetKinds becomes one Preset. The implementation is generated at build time
/// (cmake/PpsearchPresets.cmake, cmake/GeneratePresets.cmake, cmake/presets.cpp.in).
/// Std only; no file I/O at run time.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ppsearch {

/// \brief The preset kinds, i.e. the sub-folders of configs/ that are embedded.
inline constexpr std::array<std::string_view, 4> kPresetKinds = {"models", "gpus", "clusters",
                                                                 "searches"};

/// \brief One embedded preset file.
struct Preset {
  std::string_view name;  ///< "<kind>/<stem>", e.g. "models/llama3-70b"
  std::string_view text;  ///< the file's bytes, unchanged
};

/// \brief The preset `name` (a file stem, e.g. "llama3-70b") of `kind` (e.g. "models"),
///        or nullptr when there is none.
const Preset* find_preset(std::string_view kind, std::string_view name);

/// \brief The stems of every preset of `kind`, sorted; empty for an unknown kind.
std::vector<std::string> preset_names(std::string_view kind);

}  // namespace ppsearch
