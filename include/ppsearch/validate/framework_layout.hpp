/// \file
/// \brief The layer split a Megatron-family run executes when its recipe states no pipeline
///        layout (`ppsearch-validate --megatron-layout`, docs/step-time.md "Megatron-Bridge
///        Llama 3 70B FP8 on H100"). Pure core: std only.
#pragma once

#include <string>

#include "ppsearch/spec/specs.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {

/// \brief Megatron-Core's default split of `layers` decoder layers over pp·vpp virtual stages,
///        in Megatron-LM's layout notation: layers/(pp·vpp) layers per virtual stage, the
///        embedding with the first, the output layer and loss with the last. Megatron-Core
///        builds exactly this split when neither a layout nor uneven first/last stages nor the
///        account-for-embedding/loss options are set (NVIDIA/Megatron-LM d98e8a64,
///        megatron/core/transformer/transformer_block.py get_num_layers_to_build: num_layers /
///        pp, asserted to divide, then / vpp per model chunk). "" when pp·vpp does not divide
///        `layers`, pp < 2 or vpp < 1 (the partitioner decides then).
std::string megatron_default_layout(int layers, int pp, int vpp);

/// \brief Whether a row runs Megatron's default split: a Megatron-family stack (a name that
///        starts with "megatron" or "nemo"), pp > 1, a stated vpp, no stated pp_layout, no MTP
///        modules, and a split that megatron_default_layout() can write.
bool row_runs_megatron_default_layout(const RunRecord& run);

/// \brief For such a row, fixes `problem`'s search.pp_layout (and search.vpp) to the default
///        split, the way a stated pp_layout cell is applied. Returns false and leaves `problem`
///        unchanged otherwise, or when check() refuses the layout for the row's configuration.
bool apply_megatron_default_layout(const RunRecord& run, Problem* problem);

}  // namespace ppsearch
