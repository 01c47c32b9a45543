/// \file
/// Loading a Problem from presets, INI files and overrides (docs/interface.md §2).
/// Order, later wins: built-in defaults → GPU preset named by cluster.gpu →
/// cluster file (it may carry [gpu] keys) → model file (it may carry [training]
/// keys) → --config files in order → --set overrides in order → command-line
/// options. Std-only interface; Boost.Program_options is used in the .cpp only.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {

inline constexpr const char* kDefaultModel = "llama3-70b";
inline constexpr const char* kDefaultCluster = "h200-16gpu-ib";  // the seed's 16-GPU H200 nodes

/// \brief One key set from outside any file: {"search.tp", "8", "--tp"}.
struct KeyOverride {
  std::string key;     ///< "section.key"
  std::string value;   ///< as written
  std::string source;  ///< the option that set it, e.g. "--tp"
};

/// \brief What to load. Names without '/' and without ".ini" are presets
///        (configs/<kind>/NAME.ini compiled in); anything else is a file path.
struct LoadRequest {
  std::string model = kDefaultModel;      ///< model preset or INI path
  std::string cluster = kDefaultCluster;  ///< cluster preset or INI path
  std::vector<std::string> config_files;  ///< further INI paths (or "searches" presets), in order
  std::vector<std::string> sets;          ///< "section.key=value", in order (source "--set")
  std::vector<KeyOverride> options;       ///< command-line options, in order, applied last
};

/// \brief A Problem with every key applied but not yet cross-checked, plus
///        where each key got its value ("file.ini:12", "preset models/llama3-70b:7", "--tp").
struct LoadedConfig {
  Problem problem;
  std::map<std::string, std::string> sources;  ///< key → source of the value in effect
  std::vector<ConfigIssue> issues;             ///< from collect_configuration only
};

/// \brief Applies defaults, presets, files and overrides in order, skipping what
///        cannot apply, and collects every issue in `issues`: unknown key
///        ("FILE:LINE: section.key = value: unknown key (did you mean …?)"), bad value
///        ("FILE:LINE: model.hidden_size = abc: an integer ≥ 1"), malformed line,
///        unreadable file, unknown preset. Never throws ConfigError.
LoadedConfig collect_configuration(const LoadRequest& request);

/// \brief collect_configuration, throwing when it found any issue.
/// \throws ConfigError listing all issues
LoadedConfig apply_configuration(const LoadRequest& request);

/// \brief Runs check() on the loaded problem, names each issue's source from
///        `loaded.sources` ("(default)" for untouched keys), then resolves the
///        derived defaults (kv_heads, head_dim, nvlink_domain_size).
/// \throws ConfigError listing all issues
Problem finish_configuration(LoadedConfig loaded);

/// \brief apply_configuration followed by finish_configuration.
/// \throws ConfigError listing all issues
Problem load_problem(const LoadRequest& request);

/// \brief The full INI text of `problem` (to_ini): what the HDF5 file stores and
///        what rank 0 broadcasts.
std::string resolved_ini(const Problem& problem);

/// \brief Rebuilds a Problem from INI text alone (no presets), e.g. on non-root
///        MPI ranks from rank 0's resolved_ini(): built-in defaults, then the text,
///        then the same checks and resolution as load_problem.
/// \param source label for messages ("FILE" of "FILE:LINE")
/// \throws ConfigError listing all issues
Problem problem_from_ini_text(const std::string& text, const std::string& source);

/// \brief Largest INI file (model, cluster, --config) that is read: 1 MiB. The largest
///        preset is about 2 KiB; a file above this is a mistake, not a configuration.
inline constexpr std::size_t kMaxIniBytes = std::size_t{1} << 20;

/// \brief Largest runs CSV that ppsearch-validate reads: 512 MiB, about two million rows
///        of the public schema (the public file has 31 rows); a larger file is refused
///        before it is read into memory.
inline constexpr std::size_t kMaxCsvBytes = std::size_t{512} << 20;

/// \brief Reads a whole regular file of at most `max_bytes` without blocking on a FIFO
///        or device: opens it non-blocking, checks the open file's type and size, then reads.
/// \param why on failure, the reason in words ("no such file", "not a regular file",
///            "larger than 1 MiB",
///            "cannot be read: Input/output error", ...)
/// \return false (text empty) when the file is missing, not regular, too large or unreadable
bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string* text,
                       std::string* why);

/// \brief True when `name` names a preset rather than a file: it has no '/'
///        and does not end in ".ini".
bool is_preset_name(const std::string& name);

/// \brief A short label for a preset name or path: the name itself, or the
///        file name without ".ini" ("configs/x/my-model.ini" → "my-model").
std::string config_label(const std::string& name_or_path);

}  // namespace ppsearch
