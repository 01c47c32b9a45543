// Multi-token prediction (docs/moe.md "MTP"; DeepSeek-V3 technical report, arXiv 2412.19437,
// §2.2; Megatron-Core megatron/core/transformer/multi_token_prediction.py). Each of the
// model.mtp_layers modules normalises the main model's hidden state and the embedding of the next
// token (two RMSNorms), concatenates them and projects 2h → h (eh_proj), runs one transformer
// block of the kind of the model's last layer, a final norm, and the shared output layer with its
// own cross-entropy loss. Megatron-Core places the modules on the last pipeline stage, with the
// output layer and the loss (mtp_on_this_rank), so their costs join the chain's last item. Pure
// core.
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// One module's costs per micro-batch on one GPU besides its transformer block: the embedding
// lookup of the shifted tokens, the two norms, the concatenation and eh_proj with their TP
// collectives, and the second output layer (with the module's final norm) and cross entropy.
// Parameters: eh_proj (2h·h/t), the three norms (3h), and the embedding table (V·h/t) when the
// last stage holds no copy of it otherwise (PP > 1, untied); the output layer is shared.
// `cc` is chain_costs() of the candidate (its embedding and head items, without MTP).
ItemCost mtp_module_extra(const Problem&, const Candidate&, const Links&, const ChainCosts& cc);

// Adds model.mtp_layers modules (each `block`, the costs of one transformer layer of the kind of
// the model's last layer, plus mtp_module_extra()) to cc->head, and the embedding group's NCCL
// buffers to cc->extra_bytes when PP > 1 and the embeddings are untied. No-op for 0 modules.
void add_mtp(const Problem&, const Candidate&, const Links&, const ItemCost& block, ChainCosts* cc);

// Model FLOPs of the MTP modules in one optimizer step, as Megatron-LM's
// num_floating_point_operations counts them (megatron/training/training.py): per module one more
// layer of the kind of the last layer, 3·2·(3h + 2h²) per token for the norms and eh_proj, and
// 3·2·h·V per token for the second logits. `moe_path` selects the FLOPs function the evaluator
// uses for the main model (moe_model_flops_per_step or model_flops_per_step). 0 for 0 modules.
double mtp_model_flops_per_step(const ModelSpec&, int global_batch, AttentionFlops, bool moe_path);
// Recomputation FLOPs of the MTP blocks (for HFU), as the evaluator counts them for the main
// layers.
double mtp_recompute_flops_per_step(const ModelSpec&, int global_batch, Recompute,
                                    SelectiveRecompute, bool moe_path);

}  // namespace ppsearch
