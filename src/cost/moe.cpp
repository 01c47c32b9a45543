// Mixture-of-experts and multi-head-latent-attention costs (docs/moe.md).
#include "ppsearch/cost/moe.hpp"

#include <algorithm>
#include <cmath>

#include "ppsearch/cost/glu_clamp.hpp"
#include "ppsearch/cost/host_overhead.hpp"
#include "ppsearch/cost/linear_bias.hpp"
#include "ppsearch/cost/moe_flex_backend.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/cost/precision.hpp"

namespace ppsearch {
namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;

double mlp_mats(const ModelSpec& m) { return m.mlp == MlpKind::kSwiGLU ? 3.0 : 2.0; }

// Forward FLOPs per token of the attention projections. MLA (DeepSeek-V2 §2.1, DeepSeek-V3
// config): q down (h → q_lora) and up (q_lora → a·(nope+rope)), or one q projection without
// q_lora; kv down (h → kv_lora + rope) and up (kv_lora → a·(nope+v)); output (a·v → h).
// Plain attention: q, k, v, o as items.cpp (docs/algorithms.md §3.1).
double proj_flops_per_token(const ModelSpec& m) {
  const double h = m.hidden_size, a = m.attention_heads;
  if (!is_mla(m)) {
    const double hq = a * m.head_dim, hkv = double(m.kv_heads) * m.head_dim;
    return 2 * h * (hq + 2 * hkv) + 2 * hq * h;
  }
  const double qk = m.mla_qk_nope_head_dim + m.mla_qk_rope_head_dim;
  const double q =
      m.mla_q_lora_rank > 0 ? h * m.mla_q_lora_rank + m.mla_q_lora_rank * a * qk : h * a * qk;
  const double kv = h * (m.mla_kv_lora_rank + m.mla_qk_rope_head_dim) +
                    m.mla_kv_lora_rank * a * (m.mla_qk_nope_head_dim + m.mla_v_head_dim);
  const double o = a * m.mla_v_head_dim * h;
  return 2 * (q + kv + o);
}

// Weights of the attention projections (same matrices as above), before TP.
double proj_params(const ModelSpec& m) { return proj_flops_per_token(m) / 2; }

// Forward FLOPs per token of one layer's MLP part: dense, or routed top-k + shared experts.
double dense_mlp_flops(const ModelSpec& m) {
  return 2.0 * m.hidden_size * m.ffn_hidden_size * mlp_mats(m);
}
double moe_mlp_flops(const ModelSpec& m) {
  return 2.0 * m.hidden_size * mlp_mats(m) *
         (m.moe_top_k * expert_ffn(m) + m.moe_shared_experts * shared_expert_ffn(m));
}

// Per-GPU GEMM times of the attention projections in the forward, dgrad and wgrad passes.
struct ProjTimes {
  double fwd = 0, dgrad = 0, wgrad = 0, params = 0;
};
// Megatron-Core's MLA (multi_latent_attention.py): the down projections are duplicated on
// every TP rank, the up projections column-parallel, the output row-parallel.
ProjTimes mla_proj_times(const ModelSpec& m, double tokens, double t, const GpuSpec& g,
                         GemmPrecision p) {
  const double h = m.hidden_size, a = m.attention_heads;
  const double qk = m.mla_qk_nope_head_dim + m.mla_qk_rope_head_dim;
  struct Mm {
    double k, n;
  };
  Mm mm[5];
  int n = 0;
  if (m.mla_q_lora_rank > 0) {
    mm[n++] = {h, double(m.mla_q_lora_rank)};
    mm[n++] = {double(m.mla_q_lora_rank), a * qk / t};
  } else {
    mm[n++] = {h, a * qk / t};
  }
  mm[n++] = {h, double(m.mla_kv_lora_rank + m.mla_qk_rope_head_dim)};
  mm[n++] = {double(m.mla_kv_lora_rank), a * (m.mla_qk_nope_head_dim + m.mla_v_head_dim) / t};
  mm[n++] = {a * m.mla_v_head_dim / t, h};
  ProjTimes r;
  for (int i = 0; i < n; ++i) {
    r.fwd += gemm_time(tokens, mm[i].n, mm[i].k, g, p);
    r.dgrad += gemm_time(tokens, mm[i].k, mm[i].n, g, p);
    r.wgrad += gemm_time(mm[i].k, mm[i].n, tokens, g, p);
    r.params += mm[i].k * mm[i].n;
  }
  r.params += m.mla_kv_lora_rank + std::max(0, m.mla_q_lora_rank);  // the latent norms
  return r;
}
// The plain-attention projections items.cpp costs for the same layer (fused QKV, output).
ProjTimes plain_proj_times(const ModelSpec& m, double tokens, double t, const GpuSpec& g,
                           GemmPrecision p) {
  const double h = m.hidden_size;
  const double hq = double(m.attention_heads) * m.head_dim;
  const double hkv = double(m.kv_heads) * m.head_dim;
  const double qkv_n = (hq + 2 * hkv) / t, o_k = hq / t;
  ProjTimes r;
  r.fwd = gemm_time(tokens, qkv_n, h, g, p) + gemm_time(tokens, h, o_k, g, p);
  r.dgrad = gemm_time(tokens, h, qkv_n, g, p) + gemm_time(tokens, o_k, h, g, p);
  r.wgrad = gemm_time(h, qkv_n, tokens, g, p) + gemm_time(o_k, h, tokens, g, p);
  r.params = (h * (hq + 2 * hkv) + hq * h) / t;
  return r;
}

// MLA on top of a layer costed with its plain-attention stand-in (head_dim = (qk + v) / 2,
// kv_heads = heads: same core-attention FLOPs, the same Q, K, V, O activations and CP traffic):
// swap the projection GEMMs and weights, add the latent activations (docs/moe.md "MLA").
void apply_mla(const Problem& pb, const Candidate& c, ItemCost* L) {
  const ModelSpec& m = pb.model;
  if (!is_mla(m)) return;
  const double t = c.tp, tokens = double(c.mbs) * m.seq_length / c.cp;
  const double a = m.attention_heads;
  // The projections run in the layers' linear precision (FP8 with training.precision = fp8,
  // docs/precision.md), like the plain stand-in items.cpp costed.
  const GemmPrecision lp = precision_plan(pb.training, pb.gpu).linear;
  const ProjTimes mla = mla_proj_times(m, tokens, t, pb.gpu, lp);
  const ProjTimes plain = plain_proj_times(m, tokens, t, pb.gpu, lp);
  const double dfwd = mla.fwd - plain.fwd, dbwd = mla.dgrad - plain.dgrad;
  const double dw = mla.wgrad - plain.wgrad;
  const bool full = c.recompute == Recompute::kFull;
  L->fwd_s += dfwd;
  L->bwd_s += dbwd + (full ? dfwd : 0.0);
  L->wgt_s += dw;
  L->compute_s += dfwd + dbwd + dw + (full ? dfwd : 0.0);
  L->params += mla.params - plain.params;
  // Latent activations kept for the up projections' backward: q and kv latents and their
  // normalised copies (bf16), unless the layer is recomputed in full.
  if (!full) {
    const double latent =
        kBf16 * tokens * 2.0 * (std::max(0, m.mla_q_lora_rank) + m.mla_kv_lora_rank) +
        kBf16 * tokens * m.mla_qk_rope_head_dim;
    L->act_bytes += latent * pb.gpu.activation_overhead;
  }
  // Selective recomputation of an MLA model also recomputes the up projections (Megatron-Core
  // --recompute-modules mla_up_proj, which the Megatron-Bridge DeepSeek-V3 recipes use,
  // scripts/performance/configs/deepseek/deepseek_workload_base_configs.py): Q, K and V are not
  // kept, the q and kv up GEMMs run again before the backward (docs/moe.md "Recomputation").
  // training.selective_recompute = mla-up-proj recomputes these alone (the recipes'
  // recompute_modules = ["mla_up_proj"], Megatron-Bridge deepseek_workload_base_configs.py).
  if (c.recompute == Recompute::kSelective &&
      (pb.training.selective_recompute == SelectiveRecompute::kCoreAttention ||
       pb.training.selective_recompute == SelectiveRecompute::kMlaUpProj)) {
    const double hq = a * m.head_dim, hkv = double(m.kv_heads) * m.head_dim;
    L->act_bytes = std::max(
        0.0, L->act_bytes - kBf16 * tokens * (hq + 2 * hkv) / t * pb.gpu.activation_overhead);
    const double qk = m.mla_qk_nope_head_dim + m.mla_qk_rope_head_dim;
    const double redo =
        (m.mla_q_lora_rank > 0 ? gemm_time(tokens, a * qk / t, m.mla_q_lora_rank, pb.gpu, lp)
                               : 0.0) +
        gemm_time(tokens, a * (m.mla_qk_nope_head_dim + m.mla_v_head_dim) / t, m.mla_kv_lora_rank,
                  pb.gpu, lp);
    L->bwd_s += redo;
    L->compute_s += redo;
  }
}

// A grouped GEMM of `count` experts, each [rows × k]·[k × n]: every expert's tile and wave
// quantisation as a dense GEMM of its shape (gemm_time), the kernel overhead once, the
// throughput scaled by training.moe_grouped_gemm_efficiency.
double grouped_gemm_time(double count, double rows, double n, double k, const Problem& pb) {
  if (count <= 0 || rows <= 0 || n <= 0 || k <= 0) return 0.0;
  // The fused grouped MLP's single-launch kernels (moe_recipe.cpp).
  if (fused_grouped_mlp_active(pb.training, pb.gpu))
    return fused_grouped_gemm_time(count, rows, n, k, pb);
  const double ovh = pb.gpu.gemm_overhead_s;
  // Experts run in the layers' linear precision (TE grouped GEMM in FP8; docs/precision.md).
  const GemmPrecision linear = precision_plan(pb.training, pb.gpu).linear;
  const double one = gemm_time(rows, n, k, pb.gpu, linear) - ovh;
  return count * one / grouped_gemm_efficiency(pb.training, linear) + ovh;
}

void set_static(ItemCost& it, const StaticSplit& dense, const StaticSplit& expert) {
  it.weight_bytes = it.params * dense.weight + it.expert_params * expert.weight;
  it.grad_bytes = it.params * dense.grad + it.expert_params * expert.grad;
  it.optim_bytes = it.params * dense.optim + it.expert_params * expert.optim;
  it.static_bytes = it.weight_bytes + it.grad_bytes + it.optim_bytes;
}

// FP8 copies of linear weights next to the bf16 ones (or replacing them with FP8 primary
// weights), as items.cpp adds for a dense layer; under ZeRO-3 only the gathered layer holds
// them (docs/precision.md "Memory"). set_static() rebuilds the static bytes from the parameter
// counts, so the copies are added again after it.
void add_fp8_weight_copies(ItemCost& it, double linear_params, const Problem& pb, int zero) {
  const PrecisionPlan prec = precision_plan(pb.training, pb.gpu);
  if (!prec.fp8 || zero >= 3) return;
  const double bytes = prec.weight_copy_bytes * linear_params;
  it.weight_bytes += bytes;
  it.static_bytes += bytes;
}

}  // namespace

bool is_moe(const ModelSpec& m) { return m.moe_experts > 0; }
bool is_mla(const ModelSpec& m) { return m.mla_kv_lora_rank > 0; }
int dense_layer_count(const ModelSpec& m) {
  return is_moe(m) ? std::min(m.moe_first_dense_layers, m.layers) : m.layers;
}
double expert_ffn(const ModelSpec& m) {
  return m.moe_ffn_hidden_size > 0 ? m.moe_ffn_hidden_size : m.ffn_hidden_size;
}
double shared_expert_ffn(const ModelSpec& m) {
  return m.moe_shared_ffn_hidden_size > 0 ? m.moe_shared_ffn_hidden_size : expert_ffn(m);
}
int expert_dp(const Candidate& c) {
  const long long ranks = 1LL * c.tp * c.cp * c.dp;
  const long long e = 1LL * std::max(1, c.ep) * std::max(1, c.etp);
  return static_cast<int>(std::max(1LL, ranks / e));
}

ParamCounts param_counts(const ModelSpec& m) {
  const double h = m.hidden_size;
  const double attn = proj_params(m) + 2 * h;  // + the two norms
  const int dense = dense_layer_count(m), moe = m.layers - dense;
  const double dense_mlp = h * m.ffn_hidden_size * mlp_mats(m);
  const double one_expert = h * expert_ffn(m) * mlp_mats(m);
  const double shared = m.moe_shared_experts * h * shared_expert_ffn(m) * mlp_mats(m);
  const double router = h * m.moe_experts;
  const double embed = double(m.vocab_size) * h * (m.tied_embeddings ? 1 : 2) + h;
  ParamCounts p;
  p.total = m.layers * attn + dense * dense_mlp +
            moe * (m.moe_experts * one_expert + shared + router) + embed;
  p.active =
      m.layers * attn + dense * dense_mlp + moe * (m.moe_top_k * one_expert + shared) + embed;
  return p;
}

double moe_model_flops_per_step(const ModelSpec& m, int global_batch, AttentionFlops conv) {
  // docs/algorithms.md §3.1 with the MLP term per layer kind; activated experts only, as
  // Megatron-Bridge (src/megatron/bridge/training/utils/flop_utils.py: routed top-k and shared
  // experts, dense first layers) and Megatron-LM (training.py num_floating_point_operations).
  const double s = m.seq_length;
  const double s_eff = conv == AttentionFlops::kCausal ? s / 2 : s;
  const double hq = double(m.attention_heads) * m.head_dim;  // MLA: head_dim = (qk + v) / 2
  const double core = 4 * s_eff * hq;
  const int dense = dense_layer_count(m);
  const double per_token = m.layers * (proj_flops_per_token(m) + core) +
                           dense * dense_mlp_flops(m) + (m.layers - dense) * moe_mlp_flops(m) +
                           2.0 * m.hidden_size * m.vocab_size;
  return 3.0 * global_batch * s * per_token;
}

double moe_full_recompute_flops_per_step(const ModelSpec& m, int global_batch) {
  const double s = m.seq_length;
  const double hq = double(m.attention_heads) * m.head_dim;
  const int dense = dense_layer_count(m);
  const double per_token = m.layers * (proj_flops_per_token(m) + 4 * s * hq) +
                           dense * dense_mlp_flops(m) + (m.layers - dense) * moe_mlp_flops(m);
  return double(global_batch) * s * per_token;
}

Problem attention_only_problem(const Problem& pb) {
  Problem p = pb;
  p.model.ffn_hidden_size = 0;
  return p;
}

double ep_all_to_all_time(double bytes_per_rank, int ep, int stride, int ndom, const Links& l) {
  if (ep <= 1 || bytes_per_rank <= 0) return 0.0;
  const GroupShape g = group_shape(ep, stride, ndom);
  // Every member sends 1/ep of its bytes to each member. Peers in its NVLink domain
  // (per_domain − 1 of them) receive over NVLink; the others over the sender's own NIC: an
  // all-to-all cannot aggregate NICs (nccl-tests #267, as comm.cpp's kAllToAll). The two run at
  // once; all sends are posted together (NCCL grouped send/recv; DeepSeek-V3 §3.2.2, DeepEP),
  // so one latency per link kind.
  // Between leaves the spine's taper and ECMP collisions apply (docs/topology.md).
  const double net_bw = l.network_bytes_per_s * all_to_all_leaf_share(ep, stride, l);
  const double intra = bytes_per_rank * double(g.per_domain - 1) / ep;
  const double inter = bytes_per_rank * double(ep - g.per_domain) / ep;
  double t = l.nvlink_latency_s + intra / l.nvlink_bytes_per_s;
  if (inter > 0) t = std::max(t, l.network_latency_s + inter / net_bw);
  return t;
}

MoeItems moe_items(const Problem& pb, const Candidate& c, const Links& links,
                   const ItemCost& dense_layer, const ItemCost& attention_layer) {
  const ModelSpec& m = pb.model;
  const GpuSpec& gpu = pb.gpu;
  const TrainingSpec& tr = pb.training;
  const double dr = double(c.dp) * c.cp;
  const bool fp32_grads = tr.grad_reduce_in_fp32;
  const double edp = expert_dp(c);
  const bool bf16_state = tr.optimizer_state_dtype == "bf16";  // docs/memory.md
  const bool bf16_moments = tr.optimizer_state_dtype == "bf16-moments";
  const StaticSplit dense_bpp =
      static_bytes_per_param(c.zero, dr, fp32_grads, bf16_state, tr.fsdp_fp32_params, bf16_moments);
  const StaticSplit expert_bpp = static_bytes_per_param(c.zero, edp, fp32_grads, bf16_state,
                                                        tr.fsdp_fp32_params, bf16_moments);
  MoeItems out;
  out.dense_layer = dense_layer;
  if (is_mla(m)) {
    apply_mla(pb, c, &out.dense_layer);
    set_static(out.dense_layer, dense_bpp, expert_bpp);
    // Every weight but the two norms is a linear weight (MLA's latent norms are counted with
    // them: kv_lora + q_lora values, negligible).
    add_fp8_weight_copies(out.dense_layer, out.dense_layer.params - 2.0 * m.hidden_size, pb,
                          c.zero);
  }
  // Sliding-window layers (attention_window.cpp): the average layer's core attention.
  apply_attention_window(pb, c, &out.dense_layer);
  if (!is_moe(m)) {
    out.moe_layer = out.dense_layer;
    return out;
  }
  const double h = m.hidden_size, t = c.tp, tsp = c.sp ? t : 1.0;
  const double E = m.moe_experts, k = m.moe_top_k;
  const double Fe = expert_ffn(m), Fs = shared_expert_ffn(m), ns = m.moe_shared_experts;
  const bool glu = m.mlp == MlpKind::kSwiGLU;
  const int ep = std::max(1, c.ep), etp = std::max(1, c.etp);
  const double tokens = double(c.mbs) * m.seq_length / c.cp;  // per TP rank, as items.cpp's m
  const double m_tok = tokens / tsp;  // tokens this GPU routes (SP-sharded with TP)
  const double mem_bw = gpu.hbm_bytes_per_s * gpu.memory_efficiency;
  const double act_ovh = gpu.activation_overhead;
  const int ndom = pb.cluster.nvlink_domain_size;
  const bool full = c.recompute == Recompute::kFull;

  ItemCost L = attention_layer;  // attention, norms, residuals; no MLP
  apply_mla(pb, c, &L);
  apply_attention_window(pb, c, &L);

  // Without shared experts the layer has no TP-sharded MLP, so the attention-only layer's
  // MLP-side TP collectives (all-gather before FC1, reduce-scatter after FC2 with SP) do not
  // run: with ETP = 1 each TP rank dispatches its own sequence shard (Megatron-Core's
  // MoEAlltoAllTokenDispatcher on the folded groups). The layer's two collective pairs are the
  // same size, so half of its TP time goes (the backward's overlap makes this approximate).
  if (c.tp > 1 && ns == 0) {
    const GroupShape tp_group = group_shape(c.tp, 1, ndom);
    const double S = kBf16 * tokens * h;
    // The all-gather in FP8 and the forward reduce-scatter in its bytes as items.cpp charges
    // them (PrecisionPlan::gather_bytes_per_element, fwd_reduce_scatter_bytes_per_element).
    const PrecisionPlan prec = precision_plan(pb.training, pb.gpu);
    const double S_ag = prec.gather_bytes_per_element * tokens * h;
    const double S_rs = prec.fwd_reduce_scatter_bytes_per_element * tokens * h;
    const double half_fwd =
        c.sp ? (collective_time(Collective::kAllGather, S_ag, tp_group, links) +
                collective_time(Collective::kReduceScatter, S_rs, tp_group, links)) *
                   (1.0 - pb.cluster.tp_comm_overlap)
             : collective_time(Collective::kAllReduce, S, tp_group, links) *
                   (1.0 - pb.cluster.tp_comm_overlap);
    const double fwd_all = 2 * half_fwd * (full ? 2 : 1);
    const double bwd_tp = std::max(0.0, L.tp_comm_s - fwd_all);
    const double cut_fwd = half_fwd, cut_bwd = 0.5 * bwd_tp + (full ? half_fwd : 0.0);
    L.fwd_s -= cut_fwd;
    L.bwd_s -= cut_bwd;
    L.tp_comm_s -= cut_fwd + cut_bwd;
    L.tp_total_s *= 0.5;
  }

  // ---- Router (gate): [m_tok × h]·[h × E], fp32 softmax / top-k over E ------------------
  const double router_fwd = gemm_time(m_tok, E, h, gpu) + kFp32 * 3.0 * m_tok * E / mem_bw;
  const double router_dgrad = gemm_time(m_tok, h, E, gpu) + kFp32 * 3.0 * m_tok * E / mem_bw;
  const double router_wgrad = gemm_time(h, E, m_tok, gpu);

  // ---- Routed experts ---------------------------------------------------------------------
  // The EP·ETP ranks of a block hold E/ep experts per EP rank, each split over its etp ranks;
  // every rank routes m_tok tokens to k experts, so an expert-group's etp ranks each process the
  // etp·m_tok·k assignments of the group at width F_e/etp (balanced), λ times that on the
  // busiest rank (training.moe_load_imbalance).
  const double lambda = tr.moe_load_imbalance;
  const double rows = lambda * etp * m_tok * k;  // assignments on the busiest GPU
  const double local = E / ep;                   // experts on this GPU
  const double per_expert = rows / local;
  const double fe = Fe / etp, fc1_n = fe * (glu ? 2 : 1);
  const double g_fwd = grouped_gemm_time(local, per_expert, fc1_n, h, pb) +
                       grouped_gemm_time(local, per_expert, h, fe, pb);
  const double g_dgrad = grouped_gemm_time(local, per_expert, h, fc1_n, pb) +
                         grouped_gemm_time(local, per_expert, fe, h, pb);
  const double g_wgrad = grouped_gemm_time(local, h, fc1_n, per_expert, pb) +
                         grouped_gemm_time(local, fe, h, per_expert, pb);
  out.expert_gemm_fwd_s = g_fwd;
  // Memory-bound work: permute (read tokens, write k copies), unpermute with the routing
  // weights (read k copies, write tokens), the activation (SwiGLU reads 2F_e writes F_e).
  const double act_fwd = kBf16 * rows * fe * (glu ? 3.0 : 2.0) / mem_bw;
  const double ew_fwd = kBf16 * 4.0 * rows * h / mem_bw + act_fwd;
  // Selective recomputation of a MoE layer also recomputes the experts' activation function
  // (Megatron-Core --recompute-modules moe_act, used by the Megatron-Bridge MoE recipes): its
  // output is not kept and the activation runs again before the backward.
  const bool moe_act = c.recompute == Recompute::kSelective &&
                       tr.selective_recompute == SelectiveRecompute::kCoreAttention;
  // FP8 quantisation passes of the expert GEMMs (TE GroupedLinear, as the dense Linear of
  // items.cpp; docs/precision.md "What FP8 adds"): forward, the permuted FC1 input (h) and the
  // FC2 input (F_e/etp) of every routed copy; backward, the output gradients of FC2 (h) and FC1
  // (fc1_n), whose row-wise and transposed / column-wise (MXFP8) copies the same cast kernel
  // writes; the local experts' weights once per step, spread over the step's micro-batches.
  const PrecisionPlan prec = precision_plan(tr, gpu);
  const double n_micro = std::max(1.0, double(tr.global_batch_size) / (double(c.dp) * c.mbs));
  double cast_fwd = 0, cast_bwd = 0;
  if (prec.fp8) {
    const double w_elems = local * h * (fc1_n + fe);
    cast_fwd = (rows * (h + fe) + w_elems / n_micro) * prec.cast_bytes_per_element / mem_bw;
    cast_bwd = rows * (h + fc1_n) * prec.cast_bytes_per_element / mem_bw;
  }
  const double ew_bwd = 2.0 * ew_fwd + (moe_act ? act_fwd : 0.0);

  // ---- Shared experts: a dense TP-sharded MLP of ns·F_s on the layer's tokens ---------------
  const double fsh = ns * Fs / t, fsh1 = fsh * (glu ? 2 : 1);
  const GemmPrecision sp = precision_plan(tr, gpu).linear;  // docs/precision.md
  const double s_fwd = ns > 0 ? gemm_time(tokens, fsh1, h, gpu, sp) +
                                    gemm_time(tokens, h, fsh, gpu, sp) +
                                    kBf16 * tokens * fsh * (glu ? 3.0 : 2.0) / mem_bw
                              : 0.0;
  const double s_dgrad = ns > 0 ? gemm_time(tokens, h, fsh1, gpu, sp) +
                                      gemm_time(tokens, fsh, h, gpu, sp) +
                                      2.0 * kBf16 * tokens * fsh * (glu ? 3.0 : 2.0) / mem_bw
                                : 0.0;
  const double s_wgrad =
      ns > 0 ? gemm_time(h, fsh1, tokens, gpu, sp) + gemm_time(fsh, h, tokens, gpu, sp) : 0.0;

  // ---- Dispatch and combine (all-to-all over EP), ETP gather / scatter -------------------------
  // Each GPU sends its m_tok·k token copies (bf16, h wide); the busiest receives λ× the mean.
  // Expert rank order tp-ep-dp-pp (Megatron-Core parallel_state.py): ETP innermost, EP stride etp.
  const double a2a = lambda * ep_all_to_all_time(kBf16 * m_tok * k * h, ep, etp, ndom, links);
  double etp_comm = 0;
  if (etp > 1) {
    const GroupShape etp_group = group_shape(etp, 1, ndom);
    const double S = kBf16 * rows * h;
    etp_comm = collective_time(Collective::kAllGather, S, etp_group, links) +
               collective_time(Collective::kReduceScatter, S, etp_group, links);
  }
  out.a2a_s = a2a;
  const double ep_fwd_all = 2 * a2a + etp_comm, ep_bwd_all = 2 * a2a + etp_comm;

  // The shared experts' FP8 casts: FC2's input and FC1's output gradient, their weights once
  // per step. The h-wide ones (FC1's input, FC2's output gradient) the attention-only layer of
  // items.cpp already casts: with ffn_hidden_size = 0 it keeps the MLP's h-wide terms.
  if (prec.fp8 && ns > 0) {
    const double w_elems = h * (fsh1 + fsh);
    cast_fwd += (tokens * fsh + w_elems / n_micro) * prec.cast_bytes_per_element / mem_bw;
    cast_bwd += tokens * fsh1 * prec.cast_bytes_per_element / mem_bw;
  }
  // The fused grouped MLP's epilogues (moe_recipe.cpp): no separate activation or FC2-input
  // cast pass, no separate activation backward.
  const FusedMlpSaving fused =
      fused_grouped_mlp_active(tr, gpu)
          ? fused_grouped_mlp_saving(rows, fe, glu, prec.cast_bytes_per_element, mem_bw)
          : FusedMlpSaving{};
  const double fwd_c = router_fwd + g_fwd + ew_fwd + cast_fwd + s_fwd - fused.fwd_s;
  const double bwd_c = router_dgrad + g_dgrad + ew_bwd + cast_bwd + s_dgrad - fused.bwd_s;
  const double wgt_c = router_wgrad + g_wgrad + s_wgrad;
  // training.moe_a2a_overlap (ω) hides a share of the all-to-all behind another micro-batch's
  // computation: Megatron-Core's EP overlap merges the forward of one micro-batch with the
  // backward of the previous, layer by layer (--overlap-moe-expert-parallel-comm, MoE README
  // "EP A2A Overlap"; DualPipe, DeepSeek-V3 §3.2.1). moe_recipe.cpp times its combined step
  // (each all-to-all beside the other micro-batch's attention or expert part) and the share of
  // passes that run combined (not the pipeline's warm-up and cool-down).
  const CombinedLayerWork work{(ep_fwd_all + ep_bwd_all) / 4.0,
                               L.fwd_s,
                               L.bwd_s,
                               L.wgt_s,
                               fwd_c,
                               bwd_c,
                               wgt_c,
                               gpu.sm_count > 0 ? kA2aCommSms / gpu.sm_count : 0.0};
  const double hidden_share =
      moe_a2a_hidden_share(tr.moe_a2a_overlap, work, a2a_overlap_steady_share(c.pp, n_micro));
  const double ep_fwd = ep_fwd_all * (1.0 - hidden_share);
  const double ep_bwd = ep_bwd_all * (1.0 - hidden_share);
  L.fwd_s += fwd_c + ep_fwd;
  L.bwd_s += bwd_c + ep_bwd + (full ? fwd_c + ep_fwd : 0.0);
  L.wgt_s += wgt_c;
  L.compute_s += fwd_c + bwd_c + wgt_c + (full ? fwd_c : 0.0);
  L.ep_comm_s = ep_fwd + ep_bwd + (full ? ep_fwd : 0.0);
  L.ep_total_s = ep_fwd_all + ep_bwd_all + (full ? ep_fwd_all : 0.0);
  // The routed experts' FC2 bias applied outside the grouped GEMM in fp32 (linear_bias.cpp,
  // docs/moe.md "Linear biases"): forward, backward, and the forward replay of full recompute.
  {
    const ExpertBiasCost eb = expert_bias_cost(pb, rows);
    const double redo = full ? eb.fwd_s : 0.0;
    L.fwd_s += eb.fwd_s;
    L.bwd_s += eb.bwd_s + redo;
    L.compute_s += eb.fwd_s + eb.bwd_s + redo;
    L.transient_bytes += eb.transient_bytes * act_ovh;
  }
  // The eager clamp of a clamped gated activation (glu_clamp.cpp, docs/moe.md "Clamped GLU
  // activation"; GPT-OSS): forward, backward, the forward again under moe_act or full
  // recomputation, and the FC1 output kept twice.
  {
    const GluClampCost gc = glu_clamp_cost(pb, rows, fc1_n, moe_act);
    const double redo = (full ? gc.fwd_s : 0.0) + gc.recompute_fwd_s;
    L.fwd_s += gc.fwd_s;
    L.bwd_s += gc.bwd_s + redo;
    L.compute_s += gc.fwd_s + gc.bwd_s + redo;
    if (full) {
      L.transient_bytes += gc.saved_bytes * act_ovh;
    } else {
      L.act_bytes += gc.saved_bytes * act_ovh;
    }
  }
  // Host time per micro-batch (host_overhead.cpp, docs/moe.md "Host time of a MoE layer"): the
  // dispatcher's host synchronisation lets the host run at most one layer ahead, so each pass
  // of the layer takes max(GPU time, host time), or GPU + host time under the all-to-all
  // dispatcher (moe_pass_time, "Serial host time under the all-to-all dispatcher"); the excess
  // is idle GPU, not compute.
  {
    const HostOps host = moe_layer_host_time(pb, c);
    const double gpu_bwd = L.bwd_s + L.wgt_s;
    const auto disp = static_cast<MoeDispatcher>(tr.moe_dispatcher);
    // The flex dispatcher on DeepEP waits like the all-to-all one (moe_flex_backend.cpp).
    const auto backend = static_cast<MoeFlexBackend>(tr.moe_flex_backend);
    L.fwd_s = moe_pass_time_with_backend(disp, backend, L.fwd_s, host.fwd);
    L.bwd_s += moe_pass_time_with_backend(disp, backend, gpu_bwd, host.bwd) - gpu_bwd;
  }

  // ---- Parameters and static memory -----------------------------------------------------------
  // Router (replicated on the TP ranks) and shared experts (TP-sharded) are reduced over DP·CP;
  // the routed experts, E/ep per GPU at width F_e/etp, over the expert-DP group, whose
  // distributed optimizer shards their state (Megatron-Core: expert_data_parallel_group).
  const double attn_linear = L.params - 2.0 * h;  // attention projections (norms excluded)
  L.params += h * E + ns * h * Fs * (glu ? 3 : 2) / t;
  L.expert_params = local * h * fe * (glu ? 3 : 2);
  set_static(L, dense_bpp, expert_bpp);
  // FP8 copies of the attention, shared-expert and expert weights (the router stays bf16).
  add_fp8_weight_copies(L, attn_linear + ns * h * Fs * (glu ? 3 : 2) / t + L.expert_params, pb,
                        c.zero);

  // ---- Activations -------------------------------------------------------------------------
  // Per routed assignment: FC1 input (h), FC1 output (2F_e/etp gated), activation output
  // (F_e/etp) and its routing probability (fp32); router logits and probabilities in fp32; the
  // shared experts as a dense MLP (6F or 4F per token, TP-sharded). The expert output is not
  // kept: since Megatron-Core 0.13 the probabilities multiply the activation inside the experts
  // (experts.py TEGroupedMLP: weighted_bias_swiglu_impl, whose WeightedSwiGLUFunction saves the
  // FC1 output and the probs; fused_bias_swiglu.py) and the dispatchers' unpermute gets no
  // probs, so it saves only indices (token_dispatcher.py, moe_utils.py unpermute; "Memory
  // efficient token permutation", NVIDIA/Megatron-LM 2659630, core_v0.13.0 to core_v0.15.0).
  // In FP8 the expert GEMMs save their inputs (FC1's h, FC2's F_e/etp) as FP8 for wgrad
  // (TE GroupedLinear; docs/precision.md "Memory"); with moe_act FC2's input is recomputed.
  // The shared experts' FC2 input likewise (their FC1 input is the attention-only layer's).
  const double fp8_saved = (kBf16 - prec.saved_input_bytes) *
                           (rows * (h + (moe_act ? 0.0 : fe)) + tokens * (moe_act ? 0.0 : fsh));
  const double a_expert =
      kBf16 * rows * (h + (glu ? 3.0 : 2.0) * fe - (moe_act ? fe : 0.0)) + kFp32 * rows;
  const double a_router = 2.0 * kFp32 * m_tok * E;
  const double a_shared = kBf16 * tokens * (glu ? 3.0 : 2.0) * fsh;
  const double a_moe = a_expert + a_router + a_shared - (prec.fp8 ? fp8_saved : 0.0);
  if (full) {
    L.transient_bytes += a_moe * act_ovh;  // alive while the layer's backward runs
  } else {
    L.act_bytes += a_moe * act_ovh;
  }
  // ZeRO-3 over expert-DP: the gathered expert weights (and the next layer's, prefetched) and
  // their unsharded gradients while the layer's backward runs (as items.cpp for dense weights).
  if (c.zero >= 3 && edp > 1)
    L.transient_bytes += L.expert_params * (2.0 * kBf16 + (fp32_grads ? kFp32 : kBf16));
  // Zero-bubble W state of the expert and shared GEMMs: X and dY of FC1 and FC2.
  L.wkeep_bytes += kBf16 * (rows * (2.0 * h + fe + fc1_n) + tokens * (fsh + fsh1)) * act_ovh;

  out.moe_layer = L;
  return out;
}

}  // namespace ppsearch
