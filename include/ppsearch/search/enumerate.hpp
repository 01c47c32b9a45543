// Enumeration of candidate configurations on rank 0, filtered by small named
// rules; the number of candidates each rule removes is reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct RuleCount {
  std::string name;     // e.g. "tp_divides_heads"
  std::string meaning;  // one line for the summary
  std::int64_t removed = 0;
};

struct Enumeration {
  std::vector<Candidate> candidates;  // in a fixed, deterministic order
  std::vector<RuleCount> rules;       // in rule order
  std::int64_t considered = 0;        // combinations before the rules
};

// The values a knob takes when it is `auto` (documented in the README).
std::vector<int> auto_tp_values(const Problem&, int gpus);
std::vector<int> auto_cp_values(const Problem&, int gpus);
std::vector<int> auto_mbs_values(const Problem&);
std::vector<int> auto_vpp_values();  // model chunks per pipeline rank for interleaving

Enumeration enumerate_candidates(const Problem&);

// The size of a sweep before it is built: candidates and their virtual stages (the
// /stages rows of the results, Σ pp·vpp over the candidates).
struct SweepSize {
  std::int64_t candidates = 0;
  std::int64_t stages = 0;
};
SweepSize sweep_size(const Problem&);

// The number of candidates enumerate_candidates would return (its candidates.size()),
// without building them: fast even for --gpus 1:131072 (only the outer choices that
// pass every rule are visited), overflow-free (64-bit counts of values bounded at
// parse time). Used for the sweep budget search.max_candidates.
std::int64_t count_candidates(const Problem&);

}  // namespace ppsearch
