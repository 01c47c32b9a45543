// Multi-token prediction (docs/moe.md "MTP").
#include "ppsearch/cost/mtp.hpp"

#include <algorithm>

#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/precision.hpp"

namespace ppsearch {
namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;

// Adds the per-micro-batch times of `x` to `acc` (memory is summed by the callers).
void add_times(ItemCost& acc, const ItemCost& x, double n) {
  acc.fwd_s += n * x.fwd_s;
  acc.bwd_s += n * x.bwd_s;
  acc.wgt_s += n * x.wgt_s;
  acc.compute_s += n * x.compute_s;
  acc.tp_comm_s += n * x.tp_comm_s;
  acc.cp_comm_s += n * x.cp_comm_s;
  acc.tp_total_s += n * x.tp_total_s;
  acc.cp_total_s += n * x.cp_total_s;
  acc.ep_comm_s += n * x.ep_comm_s;
  acc.ep_total_s += n * x.ep_total_s;
}

// The FLOPs function the evaluator uses for the main model.
double flops_of(const ModelSpec& m, int gb, AttentionFlops conv, bool moe_path) {
  return moe_path ? moe_model_flops_per_step(m, gb, conv) : model_flops_per_step(m, gb, conv);
}

// A model of one layer of the kind of `m`'s last layer (MoE if the last layer is a MoE layer)
// and the same model with no layer: the difference of their FLOPs is one such layer's.
void one_layer_models(const ModelSpec& m, ModelSpec* one, ModelSpec* none) {
  const bool last_is_moe = is_moe(m) && m.layers > dense_layer_count(m);
  *one = m;
  one->mtp_layers = 0;
  one->layers = 1;
  one->moe_first_dense_layers = last_is_moe ? 0 : 1;
  *none = *one;
  none->layers = 0;
}

}  // namespace

ItemCost mtp_module_extra(const Problem& pb, const Candidate& c, const Links& links,
                          const ChainCosts& cc) {
  const ModelSpec& model = pb.model;
  const GpuSpec& gpu = pb.gpu;
  const double h = model.hidden_size, V = model.vocab_size;
  const double t = c.tp, tsp = c.sp ? t : 1.0;
  const double m = double(c.mbs) * model.seq_length / c.cp;  // tokens per GPU per micro-batch
  const double mem_bw = gpu.hbm_bytes_per_s * gpu.memory_efficiency;
  const double act_ovh = gpu.activation_overhead;
  const PrecisionPlan prec = precision_plan(pb.training, gpu);
  const ItemCost& E = cc.embed;
  const ItemCost& H = cc.head;

  ItemCost x;
  // The embedding lookup of the tokens shifted by one (MultiTokenPredictionLayer._get_embeddings
  // rolls input_ids and calls the model's embedding): the embedding item's costs, its
  // vocab-parallel TP collective included.
  add_times(x, E, 1.0);
  // The second output layer, its cross entropy and the module's final norm: the head item's
  // costs (final norm, output GEMMs, loss, their TP collectives; items.cpp).
  add_times(x, H, 1.0);

  // enorm and hnorm (RMSNorm over h, SP-sharded): the per-norm bytes items.cpp charges the head's
  // final norm, backward twice; the concatenation reads and writes 2h per token (the backward's
  // split as much again).
  const double norm_fwd = norm_bytes_scale(pb.training) * 2.0 * kBf16 * m * 4.0 * h / tsp / mem_bw;
  const double cat = kBf16 * m * 4.0 * h / tsp / mem_bw;
  // eh_proj (ColumnParallelLinear 2h → h, gather_output = False; multi_token_prediction.py):
  // [m × 2h]·[2h × h/t], in the layers' linear precision (a TE linear).
  const double g_fwd = gemm_time(m, h / t, 2.0 * h, gpu, prec.linear);
  const double g_dgrad = gemm_time(m, 2.0 * h, h / t, gpu, prec.linear);
  const double g_wgrad = gemm_time(2.0 * h, h / t, m, gpu, prec.linear);
  // TP collectives of eh_proj (multi_token_prediction.py _concat_embeddings): with SP the
  // column-parallel input (2h) is all-gathered, the output (h/t) all-gathered back to h
  // (gather_from_tensor_model_parallel_region) and split to the sequence shards
  // (scatter_to_sequence_parallel_region); backward: the input gradient's reduce-scatter
  // (overlapping wgrad, as items.cpp) and the split's all-gather. Without SP: the output
  // all-gather forward, the input gradient's all-reduce backward.
  double tp_fwd = 0, tp_bwd = 0, tp_all = 0;
  if (c.tp > 1) {
    const GroupShape g = group_shape(c.tp, 1, pb.cluster.nvlink_domain_size);
    const double S = kBf16 * m * h;
    const double ag_out = collective_time(Collective::kAllGather, S, g, links);
    if (c.sp) {
      const double ag_in = collective_time(Collective::kAllGather, 2.0 * S, g, links);
      const double rs_in = collective_time(Collective::kReduceScatter, 2.0 * S, g, links);
      tp_fwd = ag_in + ag_out;
      tp_bwd = std::max(0.0, rs_in - g_wgrad) + ag_out;
      tp_all = ag_in + ag_out + rs_in + ag_out;
    } else {
      const double ar_in = collective_time(Collective::kAllReduce, 2.0 * S, g, links);
      tp_fwd = ag_out;
      tp_bwd = std::max(0.0, ar_in - g_wgrad);
      tp_all = ag_out + ar_in;
    }
    tp_fwd *= 1.0 - pb.cluster.tp_comm_overlap;
    tp_bwd *= 1.0 - pb.cluster.tp_comm_overlap;
  }
  const double own_fwd = norm_fwd + cat + g_fwd;
  const double own_bwd = 2.0 * norm_fwd + cat + g_dgrad;
  x.fwd_s += own_fwd + tp_fwd;
  x.bwd_s += own_bwd + tp_bwd;
  x.wgt_s += g_wgrad;
  x.compute_s += own_fwd + own_bwd + g_wgrad;
  x.tp_comm_s += tp_fwd + tp_bwd;
  x.tp_total_s += tp_all;

  // Parameters: eh_proj, enorm, hnorm and the final norm; the embedding table when the last stage
  // has no copy of it otherwise: Megatron-Core builds the embedding on the MTP stage
  // (gpt_model.py: `if self.pre_process or self.mtp_process: self.embedding = ...`) and keeps it
  // in step with the first stage's like tied embeddings (finalize_model_grads.py); with PP = 1 it
  // is the first item's table, with tied embeddings the head's copy.
  const bool own_table = c.pp > 1 && !model.tied_embeddings;
  const double linear = 2.0 * h * h / t;
  x.params = linear + 3.0 * h + (own_table ? V * h / t : 0.0);
  const double dr = double(c.dp) * c.cp;
  const StaticSplit bpp = static_bytes_per_param(
      c.zero, dr, pb.training.grad_reduce_in_fp32, pb.training.optimizer_state_dtype == "bf16",
      pb.training.fsdp_fp32_params, pb.training.optimizer_state_dtype == "bf16-moments");
  x.weight_bytes = x.params * bpp.weight;
  x.grad_bytes = x.params * bpp.grad;
  x.optim_bytes = x.params * bpp.optim;
  x.step_bytes = x.params * bpp.step;
  // FP8 copies of eh_proj's weight (docs/precision.md "Memory"; none under ZeRO-3, as items.cpp).
  if (prec.fp8 && !(c.zero >= 3 && dr > 1)) x.weight_bytes += prec.weight_copy_bytes * linear;
  x.static_bytes = x.weight_bytes + x.grad_bytes + x.optim_bytes;

  // Activations kept per in-flight micro-batch: the shifted token ids and what the head item
  // keeps (final-norm and output-layer inputs), the enorm and hnorm inputs (h each) and eh_proj's
  // input (2h, kept SP-sharded and gathered again for wgrad), all SP-sharded.
  x.act_bytes = E.act_bytes + H.act_bytes + kBf16 * m * 4.0 * h / tsp * act_ovh;
  // Zero-bubble W state: the embedding's and output layer's, and eh_proj's X (2h) and dY (h/t).
  x.wkeep_bytes = E.wkeep_bytes + H.wkeep_bytes + kBf16 * m * (2.0 * h / tsp + h / t) * act_ovh;
  // Its logits (docs/memory.md "Logits"): the module's loss is computed before the main one
  // (gpt_model.py _postprocess, process_mtp_loss) and its cross entropy keeps what its backward
  // needs while the main head's logits are live: the fp32 softmax copy of Megatron's
  // vocab-parallel cross entropy (4 B per logit), or the bf16 logits a fused one keeps (2 B).
  const double saved_per_logit = pb.training.cross_entropy_fusion ? kBf16 : kFp32;
  x.transient_bytes = saved_per_logit * m * (V / t) * act_ovh;
  return x;
}

void add_mtp(const Problem& pb, const Candidate& c, const Links& links, const ItemCost& block,
             ChainCosts* cc) {
  const int n = pb.model.mtp_layers;
  if (n <= 0) return;
  const ItemCost x = mtp_module_extra(pb, c, links, *cc);
  ItemCost& H = cc->head;
  const double head_transient = H.transient_bytes;
  for (const ItemCost* it : {&block, &x}) {
    add_times(H, *it, n);
    H.params += n * it->params;
    H.expert_params += n * it->expert_params;
    H.weight_bytes += n * it->weight_bytes;
    H.grad_bytes += n * it->grad_bytes;
    H.optim_bytes += n * it->optim_bytes;
    H.step_bytes += n * it->step_bytes;
    H.static_bytes += n * it->static_bytes;
    H.act_bytes += n * it->act_bytes;
    H.wkeep_bytes += n * it->wkeep_bytes;
  }
  // Peak transient: the main head's logits with every module's saved cross-entropy state beside
  // them, or one block's own transient (its backward, after the losses' backward has freed them).
  H.transient_bytes = std::max(head_transient + n * x.transient_bytes, block.transient_bytes);
  // The embedding group's NCCL communicator (items.cpp workspace_bytes counts it for tied
  // embeddings already).
  if (c.pp > 1 && !pb.model.tied_embeddings) cc->extra_bytes += pb.gpu.comm_buffer_bytes;
}

double mtp_model_flops_per_step(const ModelSpec& m, int global_batch, AttentionFlops conv,
                                bool moe_path) {
  if (m.mtp_layers <= 0) return 0.0;
  ModelSpec one, none;
  one_layer_models(m, &one, &none);
  // Megatron-LM training.py num_floating_point_operations (NVIDIA/Megatron-LM@d98e8a6): the MTP
  // layers join the layer count (num_moe_layers += last_layer_is_moe · mtp_num_layers, the
  // dense ones likewise), plus 3·2·mtp·(3h + 2h²) for "MTP eh norm + final norm" and eh_proj,
  // plus 3·2·h·V·(mtp + 1) for the logits (the main one is in flops_of already).
  const double block =
      flops_of(one, global_batch, conv, moe_path) - flops_of(none, global_batch, conv, moe_path);
  const double h = m.hidden_size;
  const double tokens = double(global_batch) * m.seq_length;
  const double extra = 3.0 * 2.0 * tokens * ((3.0 * h + 2.0 * h * h) + h * double(m.vocab_size));
  return m.mtp_layers * (block + extra);
}

double mtp_recompute_flops_per_step(const ModelSpec& m, int global_batch, Recompute r,
                                    SelectiveRecompute how, bool moe_path) {
  if (m.mtp_layers <= 0) return 0.0;
  ModelSpec one, none;
  one_layer_models(m, &one, &none);
  const double per = moe_path && r == Recompute::kFull
                         ? moe_full_recompute_flops_per_step(one, global_batch)
                         : recompute_flops_per_step(one, global_batch, r, how);
  return m.mtp_layers * per;
}

}  // namespace ppsearch
