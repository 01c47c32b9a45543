// Rank placement: the order in which the parallel dimensions are laid out over the global
// ranks (docs/topology.md "Rank placement"). Kept apart from the cost model so that
// candidate.hpp can hold it without depending on the fabric.
#pragma once

#include <cstdint>

namespace ppsearch {

// Innermost first. kTpCpDpPp is Megatron-Core's default order "tp-cp-ep-dp-pp"
// (megatron/core/parallel_state.py); kTpCpPpDp is its --use-tp-pp-dp-mapping order, which
// keeps the pipeline stages of one replica close together and spreads data parallelism out.
// Values are stable (written to the result files as an enum).
enum class Placement : std::uint8_t { kTpCpDpPp = 0, kTpCpPpDp = 1 };
inline constexpr int kNumPlacements = 2;

const char* to_string(Placement);

}  // namespace ppsearch
