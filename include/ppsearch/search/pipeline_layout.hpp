#pragma once
/// \file
/// \brief A pipeline layout in Megatron-LM's notation, as stage bounds of ppsearch's layer chain
///        (search.pp_layout, docs/memory.md "A fixed pipeline layout").
#include <string>
#include <vector>

namespace ppsearch {

/// Parses `text`, Megatron-LM's --pipeline-model-parallel-layout notation ("Et*4|(t*4|)*14tmL":
/// one '|'-separated segment per virtual stage in virtual-stage order; E = embedding, t = one
/// decoder layer, m = one MTP module, L = output layer and loss; "x*n" and "(…)*n" repeat;
/// commas are cosmetic), into the bounds of ppsearch's chain: items 0 = embedding, 1..layers =
/// the layers, layers+1 = output layer + loss (which also carries the MTP modules), stage σ =
/// items [bounds[σ], bounds[σ+1]). Returns false with a message in *error when the text is not
/// such a layout for `layers` decoder layers and `mtp_layers` MTP modules, or when a segment
/// holds no item of the chain (ppsearch's stages are non-empty) or the MTP modules are not in
/// the segment with the loss (ppsearch costs them with the output layer).
bool parse_pipeline_layout(const std::string& text, int layers, int mtp_layers,
                           std::vector<int>* bounds, std::string* error);

/// Number of '|'-separated segments (virtual stages) of a layout, after expansion; 0 when the
/// text does not expand.
int pipeline_layout_stages(const std::string& text);

}  // namespace ppsearch
