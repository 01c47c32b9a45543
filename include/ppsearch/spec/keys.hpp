/// \file
/// The configuration-key registry: ONE table that describes every INI key
/// (`section.key`), its type, unit, allowed values, default and help line
/// (docs/interface.md §2). Parsing, range checks, unit conversion to SI, the
/// canonical INI text (to_ini), "did you mean" hints and the key reference all
/// come from that table. Pure core: std only, no Boost, no file I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {

/// \name Upper bounds of the integer keys
/// Physically meaningful limits with headroom over every shipped preset and every
/// validation run (docs/configuration.md "Ranges"). They also keep every product the
/// search forms (tp·pp·cp·dp, dp·mbs, layers + 2, …) far inside 64-bit integers.
///@{
inline constexpr int kMaxGpus = 131072;        ///< 2^17 GPUs: above the largest clusters built
inline constexpr int kMaxLayers = 4096;        ///< transformer layers (largest models: ~100–200)
inline constexpr int kMaxHiddenSize = 262144;  ///< model width h (largest dense models: 16–20 Ki)
inline constexpr int kMaxFfnHiddenSize = 1048576;  ///< MLP width F (largest: ~74 Ki)
inline constexpr int kMaxHeads = 16384;            ///< attention heads, KV heads, head width
inline constexpr int kMaxVocabSize = 16777216;     ///< 16 Mi tokens (largest vocabularies: ~256 Ki)
inline constexpr int kMaxSeqLength = 16777216;     ///< 16 Mi tokens per sequence
inline constexpr int kMaxGlobalBatch = 16777216;   ///< 16 Mi sequences per step (also micro-batch)
inline constexpr int kMaxVpp = 64;                 ///< model chunks per pipeline rank
inline constexpr int kMaxGpusPerNode = 1024;       ///< GPUs per node
inline constexpr int kMaxSmCount = 4096;           ///< streaming multiprocessors (H100: 132)
inline constexpr int kMaxGemmTile = 4096;          ///< GEMM output-tile side (typical: 64–256)
inline constexpr int kMaxListItems = 256;          ///< values in one search list (tp, mbs, …)
inline constexpr int kMaxGpuCounts = 10000;        ///< GPU counts in search.gpus / one --gpus
inline constexpr int kMaxCandidatesLimit = 1000000000;  ///< largest search.max_candidates
inline constexpr int kMaxMoeExperts = 65536;  ///< routed experts (largest models: 256-384)
///@}

/// \brief Value type of a configuration key, as written in a file.
enum class KeyType : std::uint8_t {
  kInt,       ///< integer
  kFloat,     ///< decimal number (converted to SI with the key's unit)
  kBool,      ///< true/false (also on/off, yes/no, 1/0 on input)
  kString,    ///< free text without '#' (or one of a fixed set)
  kEnum,      ///< one name from a fixed set
  kIntList,   ///< comma list of integers (search knobs also accept `auto`)
  kEnumList,  ///< comma list of names from a fixed set, or `auto`
};

/// \brief Public description of one key (for help texts and documentation).
struct KeyInfo {
  std::string name;  ///< "gpu.memory_gb"
  KeyType type = KeyType::kInt;
  std::string unit;           ///< unit as written in files ("GB", "µs", …); empty if none
  std::string allowed;        ///< what is allowed, in words ("a number > 0")
  std::string default_value;  ///< built-in default as written in a file, or a note in parentheses
  std::string help;           ///< one-line meaning
  std::vector<std::string> choices;  ///< the allowed names (kEnum, kEnumList, a fixed-set kString)
};

/// \brief Parses a token count as training.tokens takes it: a number ("2.5e12",
///        "15000000000000") or one with a suffix K/k (10^3), M (10^6), B or G (10^9), T (10^12)
///        ("300B", "15T", "1.5T"). False for anything else (no range check).
bool parse_token_count(const std::string& text, double* out);

/// \brief Every key, in registry order (sections model, training, gpu, cluster, search).
std::vector<KeyInfo> key_infos();

/// \brief Names of every key ("model.layers", …), in registry order.
std::vector<std::string> known_keys();

/// \brief True if `key` is a registered key.
bool is_known_key(const std::string& key);

/// \brief Parses `value` (as written in a file or after `--set key=`), checks it
///        against the key's allowed range or set and stores it, converted to SI,
///        in `problem`.
/// \param problem receives the value; left untouched when an issue is returned
/// \param key     "section.key"
/// \param value   the text; surrounding whitespace is ignored
/// \param source  where the value comes from ("file.ini:12", "--tp", …); copied into the issue
/// \return an issue naming source, key, value and what is allowed, or nothing on success
std::optional<ConfigIssue> apply_key(Problem& problem, const std::string& key,
                                     const std::string& value, const std::string& source);

/// \brief The current value of `key` in `problem`, in file units, exactly as to_ini writes it.
/// \throws std::out_of_range for an unknown key (a programming error)
std::string key_value(const Problem& problem, const std::string& key);

/// \brief Re-validates every key's current value against its range or set (a
///        Problem built in code bypasses apply_key). Issues have an empty source.
std::vector<ConfigIssue> check_key_values(const Problem& problem);

/// \brief The closest registered key by edit distance (a key of the same name
///        in another section counts as close), or "" when nothing is close.
std::string closest_key(const std::string& key);

/// \brief Canonical, complete INI text of `problem`: every key, in registry
///        order, in the units of the key names. Loading it back gives the same
///        Problem (problem_from_ini_text(to_ini(p)) == p for every p that apply_key can produce).
std::string to_ini(const Problem& problem);

/// \brief Plain-text reference of every key: section, name, unit, allowed
///        values, default and meaning (used by `ppsearch --help-config` and docs/configuration.md).
std::string help_text();

/// \brief Same reference as Markdown tables, one per section.
std::string help_markdown();

}  // namespace ppsearch
