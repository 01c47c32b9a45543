/// \file
/// Validation of a whole Problem: every per-key range (re-checked, since a
/// Problem built in code bypasses the parser) and every cross-field rule,
/// collected at once so that a user fixes everything in one pass
/// (docs/architecture.md §3.5). Pure core: std only.
///
/// Combinations that are merely infeasible for some candidates (TP not dividing
/// the heads, a stage that does not fit in memory) are NOT issues here; the
/// search filters or reports them. Only settings that no candidate can satisfy are.
#pragma once

#include <vector>

#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {

/// \brief Every problem with `problem`, in a fixed order (per-key ranges in
///        registry order, then cross-field rules). Each issue names the key,
///        its current value in file units and what is allowed; `source` is left
///        empty for the loader to fill with where that key was set.
std::vector<ConfigIssue> check(const Problem& problem);

/// \brief Replaces the "0 = derived" placeholders by their values:
///        kv_heads = attention_heads, head_dim = hidden_size / attention_heads
///        (when it divides), nvlink_domain_size = gpus_per_node. Idempotent.
void resolve_defaults(Problem& problem);

}  // namespace ppsearch
