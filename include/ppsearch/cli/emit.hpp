// Launch configurations for one result row: the arguments or overrides that start the job the
// row describes in Megatron-LM, NeMo (Megatron-Bridge) or torchtitan (docs/launch.md). Std-only.
// The flag and key names are pinned to the framework versions listed in docs/launch.md; the
// tests check every emitted name against tests/emit/*.txt, read from those versions' parsers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Megatron-LM --pipeline-model-parallel-layout for a partition given as
// (first_layer, last_layer) per virtual stage in virtual-stage order; items are
// 0 = embedding, 1..L = layers, L+1 = head + loss. E.g. "Et*10|t*10|t*9L"; with
// mtp_layers = n the last stage also carries the n MTP layers before the loss ("t*9mL").
std::string megatron_layout(const std::vector<std::pair<int, int>>& stages, int layers,
                            int mtp_layers = 0);

// "--decoder-first-pipeline-num-layers A --decoder-last-pipeline-num-layers B" when the
// middle stages are equal and VPP = 1 (the flags Megatron offers for that case); else "".
std::string megatron_first_last_flags(const std::vector<std::pair<int, int>>& stages, int layers,
                                      int vpp);

enum class LaunchFormat { kMegatron, kNemo, kTorchtitan };
const char* to_string(LaunchFormat);
bool parse_launch_format(const std::string& text, LaunchFormat* out);  // megatron|nemo|torchtitan
inline constexpr const char* kLaunchFormatNames = "megatron, nemo, torchtitan";

struct LaunchConfig {
  // false: the framework cannot run this row as ppsearch modelled it (e.g. ZeRO-3 in Megatron-LM,
  // a schedule it does not have); `text` then holds comment lines only, saying why and what
  // can run it instead, and no flag at all.
  bool runnable = true;
  // true: it runs, but some part differs from what ppsearch modelled; the "# approximated:"
  // comment lines in `text` say what.
  bool approximated = false;
  // Comment lines start with "#". Megatron-LM and torchtitan: one flag (with its value) a line,
  // lines joined by " \" for a shell; NeMo: one "key=value" override a line.
  std::string text;
  std::vector<std::string> names;  // every flag / key name used, in order (for the tests)
};

// `stages`: (first_layer, last_layer) per virtual stage in virtual-stage order (the /stages
// rows of this candidate; items 0 = embedding, 1..L = layers, L+1 = head + loss). Empty when
// unknown: a pipeline partition is then taken as Megatron's default even split and says so.
// `recomputed_layers`: per stage, layers recomputed in full (/stages recomputed_layers); only
// read for a row with recompute_num_layers = -1 (a count chosen per stage).
LaunchConfig emit_launch_config(LaunchFormat format, const Problem& problem, const ResultRow& row,
                                const std::vector<std::pair<int, int>>& stages,
                                const std::vector<std::int64_t>& recomputed_layers = {});

}  // namespace ppsearch
