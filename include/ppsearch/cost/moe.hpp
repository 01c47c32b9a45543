// Mixture-of-experts and multi-head-latent-attention costs (docs/moe.md). A MoE model's chain
// has two kinds of layer: the first model.moe_first_dense_layers with a dense MLP, the rest with
// a router, routed experts (expert parallel over EP·ETP ranks folded onto the TP·CP·DP ranks, as
// Megatron-Core's "MoE parallel folding") and shared experts. Pure core.
#pragma once

#include <string>
#include <vector>

#include "ppsearch/cost/attention_window.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

bool is_moe(const ModelSpec&);  // model.moe_experts > 0
bool is_mla(const ModelSpec&);  // model.mla_kv_lora_rank > 0
// Layers with a dense MLP: all for a dense model, moe_first_dense_layers for a MoE model.
int dense_layer_count(const ModelSpec&);
// The resolved widths (0 in a file = the documented fallback).
double expert_ffn(const ModelSpec&);
double shared_expert_ffn(const ModelSpec&);

// Parameters of the whole model (embedding and output layer included, untied unless
// model.tied_embeddings): all of them, and those one token goes through (top-k + shared
// experts, no router), as the frameworks print them.
struct ParamCounts {
  double total = 0, active = 0;
};
ParamCounts param_counts(const ModelSpec&);

// Model FLOPs of one optimizer step for MoE and MLA models (docs/moe.md "FLOPs"): 3 × the
// forward FLOPs of the activated parameters (top-k routed + shared experts; the router is not
// counted, as Megatron-Bridge's flop_utils.py does not), MLA's projections exact. Equals
// model_flops_per_step() for a dense plain-attention model.
double moe_model_flops_per_step(const ModelSpec&, int global_batch, AttentionFlops);
// One more forward of every layer (recompute = full), for HFU.
double moe_full_recompute_flops_per_step(const ModelSpec&, int global_batch);

// The same problem with ffn_hidden_size = 0: chain_costs() of it gives a layer without MLP
// (attention, norms, its TP/CP communication), the base of a MoE layer.
Problem attention_only_problem(const Problem&);

// Time of one all-to-all in which every rank of an EP group sends `bytes_per_rank` spread
// evenly over the group (1/ep to each member, its own share staying local). Members `stride`
// ranks apart; those in one NVLink domain exchange over NVLink, the others over each GPU's own
// NIC, both at once: latency + max(intra bytes / NVLink, inter bytes / NIC) (docs/moe.md).
double ep_all_to_all_time(double bytes_per_rank, int ep, int stride, int nvlink_domain_size,
                          const Links&);

struct MoeItems {
  ItemCost dense_layer;          // a layer with a dense MLP (MLA-corrected)
  ItemCost moe_layer;            // attention + router + routed and shared experts (MLA-corrected)
  double a2a_s = 0;              // one dispatch (= one combine) all-to-all of one micro-batch
  double expert_gemm_fwd_s = 0;  // the routed experts' forward GEMMs of one micro-batch
};
// dense_layer: chain_costs(problem).layer; attention_layer:
// chain_costs(attention_only_problem).layer.
MoeItems moe_items(const Problem&, const Candidate&, const Links&, const ItemCost& dense_layer,
                   const ItemCost& attention_layer);

// Expert data-parallel degree: TP·CP·DP / (EP·ETP) (Megatron-Core parallel_state.py).
int expert_dp(const Candidate&);

}  // namespace ppsearch
