// Names of the MoE token dispatchers and the CUDA-graph scopes (training.moe_dispatcher,
// training.cuda_graph_scope; docs/moe.md "Host time of a MoE layer"). Pure core.
#pragma once

#include <string>
#include <vector>

namespace ppsearch {

// Megatron-Core moe_token_dispatcher_type (megatron/core/transformer/moe/token_dispatcher.py):
// MoEAlltoAllTokenDispatcher, MoEAllGatherTokenDispatcher, MoEFlexTokenDispatcher (DeepEP or
// HybridEP). Stored in TrainingSpec::moe_dispatcher as these values.
enum class MoeDispatcher : int { kAllToAll = 0, kAllGather = 1, kFlex = 2 };
const std::vector<std::string>& moe_dispatcher_names();  // index = value

// Megatron-Core CUDA-graph scopes (cuda_graph_scope / --cuda-graph-modules), as bits.
enum CudaGraphScopeBit : unsigned {
  kGraphAttn = 1u << 0,
  kGraphMlp = 1u << 1,
  kGraphMoe = 1u << 2,
  kGraphMoeRouter = 1u << 3,
  kGraphMoePreprocess = 1u << 4,
  kGraphFullIteration = 1u << 5,
};
// The scope names in bit order: attn, mlp, moe, moe_router, moe_preprocess, full_iteration.
const std::vector<std::string>& cuda_graph_scope_names();
// "none" (= 0) or scope names joined by '+', each at most once, in any order. False on anything
// else (an unknown or repeated name, an empty item, "none" joined with a name).
bool parse_cuda_graph_scope(const std::string& text, unsigned* mask);
// The canonical text: "none", or the names of the set bits in bit order joined by '+'.
std::string cuda_graph_scope_text(unsigned mask);
// What parse_cuda_graph_scope accepts, for error messages.
std::string cuda_graph_scope_allowed();

}  // namespace ppsearch
