#include "ppsearch/cost/items.hpp"

#include <algorithm>
#include <cmath>

namespace ppsearch {
namespace {

constexpr double kBf16 = 2.0;  // bytes per 16-bit element
constexpr double kFp32 = 4.0;

struct Dims {
  double h, hq, hkv, F, V, a, s;
  bool glu;
};

Dims dims_of(const ModelSpec& m) {
  Dims d;
  d.h = m.hidden_size;
  d.hq = double(m.attention_heads) * m.head_dim;
  d.hkv = double(m.kv_heads) * m.head_dim;
  d.F = m.ffn_hidden_size;
  d.V = m.vocab_size;
  d.a = m.attention_heads;
  d.s = m.seq_length;
  d.glu = m.mlp == MlpKind::kSwiGLU;
  return d;
}

// Forward FLOPs per token of one layer's parts (algorithms.md §3.1).
double proj_flops(const Dims& d) { return 2 * d.h * (d.hq + 2 * d.hkv) + 2 * d.hq * d.h; }
double mlp_flops(const Dims& d) { return 2 * d.h * d.F * (d.glu ? 3 : 2); }
double core_flops(const Dims& d, double s_eff) { return 4 * s_eff * d.hq; }

// Static bytes per parameter, bf16 params with fp32 main grads and Adam state
// (algorithms.md §4.1; Megatron theoretical_memory_usage.py / dist_optimizer.md;
// ZeRO §5 for stages 2 and 3 with fp32 gradients). `dr` = ranks sharing the
// optimizer state (DP × CP in Megatron).
double bytes_per_param(int zero, double dr) {
  switch (zero) {
    case 0:
      return 18.0;  // 2 param + 4 grad + 12 (fp32 main, m, v)
    case 1:
      return 6.0 + 12.0 / dr;  // distributed optimizer: fp32 grads not sharded
    case 2:
      return 2.0 + 16.0 / dr;  // gradients sharded too
    default:
      return 18.0 / dr;  // everything sharded
  }
}

}  // namespace

double model_flops_per_step(const ModelSpec& m, int global_batch, AttentionFlops conv) {
  const Dims d = dims_of(m);
  // algorithms.md §3.1: F_model = 3·B·s·[L·(F_proj + F_core + F_mlp) + F_head];
  // s_eff = s (full matrix, PaLM / Korthikanti) or s/2 (causal, Megatron since 2025-03).
  const double s_eff = conv == AttentionFlops::kCausal ? d.s / 2 : d.s;
  const double per_token =
      m.layers * (proj_flops(d) + core_flops(d, s_eff) + mlp_flops(d)) + 2 * d.h * d.V;
  return 3.0 * global_batch * d.s * per_token;
}

double recompute_flops_per_step(const ModelSpec& m, int global_batch, Recompute r) {
  const Dims d = dims_of(m);
  // algorithms.md §3.1 (Korthikanti §6): full = one more forward of every layer;
  // selective = the core attention forward again. Counted with the full-matrix s.
  switch (r) {
    case Recompute::kNone:
      return 0.0;
    case Recompute::kSelective:
      return double(global_batch) * d.s * m.layers * core_flops(d, d.s);
    case Recompute::kFull:
      return double(global_batch) * d.s * m.layers *
             (proj_flops(d) + core_flops(d, d.s) + mlp_flops(d));
  }
  return 0.0;
}

double gemm_time(double m, double n, double k, const GpuSpec& g) {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  // Wave quantisation (NVIDIA Matrix Multiplication Background, DU-09799-001 ch. 3):
  // output tiles are processed in waves of sm_count; a partial last wave idles SMs.
  const double tiles = std::ceil(m / g.gemm_tile_m) * std::ceil(n / g.gemm_tile_n);
  const double waves = std::ceil(tiles / g.sm_count);
  const double q_wave = tiles / (waves * g.sm_count);
  const double flops = 2.0 * m * n * k;
  return flops / (g.peak_flop_per_s * g.gemm_efficiency * q_wave) + g.gemm_overhead_s;
}

ChainCosts chain_costs(const Problem& pb, const Candidate& c, const Links& links) {
  const ModelSpec& model = pb.model;
  const GpuSpec& gpu = pb.gpu;
  const ClusterSpec& cl = pb.cluster;
  const Dims d = dims_of(model);
  const double t = c.tp, cp = c.cp;
  const double tsp = c.sp ? t : 1.0;          // sequence-parallel regions are sharded by t
  const double m = double(c.mbs) * d.s / cp;  // tokens per GPU per micro-batch (CP splits s)
  const double mem_bw = gpu.hbm_bytes_per_s * gpu.memory_efficiency;
  const double act_ovh = gpu.activation_overhead;
  const int ndom = cl.nvlink_domain_size;

  const GroupShape tp_group = group_shape(c.tp, 1, ndom);
  const GroupShape cp_group = group_shape(c.cp, c.tp, ndom);
  const double dr = double(c.dp) * c.cp;
  const double bpp = bytes_per_param(c.zero, dr);

  ChainCosts out;
  out.bytes_per_param = bpp;
  out.capacity_bytes = gpu.memory_bytes;
  // NCCL communicators a rank belongs to (algorithms.md §4.5: ~0.7 GB each).
  int comms = 0;
  comms += c.tp > 1;
  comms += c.cp > 1;
  comms += dr > 1;
  comms += c.pp > 1 ? 1 : 0;
  comms += (model.tied_embeddings && c.pp > 1) ? 1 : 0;
  out.extra_bytes = gpu.memory_reserved_bytes + comms * gpu.comm_buffer_bytes;
  // PP p2p per hop: 2·b·s·h bytes, /t with SP or the scatter/gather optimisation (§5.4).
  out.boundary_bytes = kBf16 * m * d.h / t;

  // ---- Transformer layer -------------------------------------------------------
  ItemCost& L = out.layer;
  {
    // GEMMs per TP rank (algorithms.md §3.3): [m×k]·[k×n].
    const double qkv_n = (d.hq + 2 * d.hkv) / t, o_k = d.hq / t;
    const double fc1_n = d.F * (d.glu ? 2 : 1) / t, fc2_k = d.F / t;
    const double g_fwd = gemm_time(m, qkv_n, d.h, gpu) + gemm_time(m, d.h, o_k, gpu) +
                         gemm_time(m, fc1_n, d.h, gpu) + gemm_time(m, d.h, fc2_k, gpu);
    // dgrad [m×n]·[n×k] → output m×k; wgrad [k×m]·[m×n] → output k×n.
    const double g_dgrad = gemm_time(m, d.h, qkv_n, gpu) + gemm_time(m, o_k, d.h, gpu) +
                           gemm_time(m, d.h, fc1_n, gpu) + gemm_time(m, fc2_k, d.h, gpu);
    const double g_wgrad = gemm_time(d.h, qkv_n, m, gpu) + gemm_time(o_k, d.h, m, gpu) +
                           gemm_time(d.h, fc1_n, m, gpu) + gemm_time(fc2_k, d.h, m, gpu);
    // FlashAttention: the causal kernel skips masked blocks, so it executes half of
    // 4·b·s_q·s·h_q/t; backward ≈ 2.5× forward incl. FA's own recompute (§3.3).
    const double att_fwd_flops = 0.5 * 4.0 * m * d.s * d.hq / t;
    const double att_fwd = att_fwd_flops / (gpu.peak_flop_per_s * gpu.attention_efficiency);
    const double att_bwd = 2.5 * att_fwd;
    // Memory-bound element-wise ops (§3.3): 2 norms (r+w), 2 residual adds (2r+w) in
    // the h-wide (SP-sharded) region, RoPE on q,k, and the activation (SwiGLU reads
    // 2F writes F; GeLU reads F writes F). Backward moves about twice the bytes.
    const double ew_fwd_bytes =
        kBf16 * m * (10.0 * d.h / tsp + 2.0 * (d.hq + d.hkv) / t + (d.glu ? 3.0 : 2.0) * d.F / t);
    const double ew_fwd = ew_fwd_bytes / mem_bw;
    const double ew_bwd = 2.0 * ew_fwd;

    // TP collectives per layer (§5.4; Shoeybi et al. §3, Korthikanti §4.2.2).
    double tp_fwd = 0, tp_bwd = 0, tp_all = 0, tp_all_fwd = 0;  // *_all: hidden + exposed
    if (c.tp > 1) {
      const double S = kBf16 * m * d.h;  // full activation per micro-batch
      if (c.sp) {
        const double ag = collective_time(Collective::kAllGather, S, tp_group, links);
        const double rs = collective_time(Collective::kReduceScatter, S, tp_group, links);
        tp_fwd = 2 * ag + 2 * rs;  // AG before QKV and FC1, RS after proj and FC2
        // Backward: AG of the output gradient before proj/FC2 is exposed; the RS of
        // the column-parallel input gradients overlaps the wgrad GEMMs, and the
        // re-gather of the SP input for wgrad overlaps the dgrad GEMMs (Megatron).
        tp_bwd = 2 * ag + std::max(0.0, 2 * rs - g_wgrad) + std::max(0.0, 2 * ag - g_dgrad);
        tp_all = tp_fwd + 4 * ag + 2 * rs;
      } else {
        const double ar = collective_time(Collective::kAllReduce, S, tp_group, links);
        tp_fwd = 2 * ar;  // after proj and after FC2
        // Backward all-reduce of the column-parallel input gradients overlaps wgrad
        // (Megatron's async tensor-parallel all-reduce).
        tp_bwd = std::max(0.0, 2 * ar - g_wgrad);
        tp_all = 4 * ar;
      }
      tp_all_fwd = tp_fwd;
      tp_fwd *= 1.0 - cl.tp_comm_overlap;
      tp_bwd *= 1.0 - cl.tp_comm_overlap;
    }
    // CP ring attention (Megatron/TE p2p): (cp−1) steps passing K and V chunks,
    // overlapped with the attention kernels; backward passes KV and dKV.
    double cp_fwd = 0, cp_bwd = 0, cp_all = 0;  // cp_all: hidden + exposed, fwd + bwd
    if (c.cp > 1) {
      const double kv = 2.0 * kBf16 * m * d.hkv / t;
      const bool same = cp_group.domains <= 1;
      const double step = p2p_time(kv, same, links);
      cp_fwd = std::max(0.0, (cp - 1) * step - att_fwd);
      cp_bwd = std::max(0.0, 2.0 * (cp - 1) * step - att_bwd);
      cp_all = 3.0 * (cp - 1) * step;
    }
    const double fwd_compute = g_fwd + att_fwd + ew_fwd;
    double bwd_compute = g_dgrad + att_bwd + ew_bwd;
    double bwd_comm = tp_bwd + cp_bwd;
    // Recomputation (§3.2): full replays the forward (with its collectives) before
    // the backward; selective recomputes the core attention forward.
    if (c.recompute == Recompute::kFull) {
      bwd_compute += fwd_compute;
      bwd_comm += tp_fwd + cp_fwd;
    } else if (c.recompute == Recompute::kSelective) {
      bwd_compute += att_fwd;
    }
    L.fwd_s = fwd_compute + tp_fwd + cp_fwd;
    L.bwd_s = bwd_compute + bwd_comm;
    L.wgt_s = g_wgrad;
    L.compute_s = fwd_compute + bwd_compute + g_wgrad;
    L.tp_comm_s = tp_fwd + tp_bwd + (c.recompute == Recompute::kFull ? tp_fwd : 0.0);
    L.cp_comm_s = cp_fwd + cp_bwd + (c.recompute == Recompute::kFull ? cp_fwd : 0.0);
    // Full recomputation replays the forward's collectives once more.
    L.tp_total_s = tp_all + (c.recompute == Recompute::kFull ? tp_all_fwd : 0.0);
    L.cp_total_s = cp_all + (c.recompute == Recompute::kFull ? cp_all / 3.0 : 0.0);

    // Parameters: TP-sharded matrices + replicated norms (§4.1).
    L.params = (d.h * (d.hq + 2 * d.hkv) + d.hq * d.h + d.h * d.F * (d.glu ? 3 : 2)) / t + 2 * d.h;
    L.static_bytes = L.params * bpp;
    // Activations (§4.2, Llama-style generalisation of Korthikanti Table 2): norm
    // inputs and QKV/FC1 inputs (8h, SP-sharded), Q, K, V, O (4h_q + 4h_kv), FC1
    // output and activation output (6F SwiGLU, 4F GeLU), FA's fp32 log-sum-exp.
    const double a_core = kBf16 * m * (4.0 * d.h / tsp);  // the 8h term
    const double a_tp = m * (4.0 * d.hq + 4.0 * d.hkv + (d.glu ? 6.0 : 4.0) * d.F) / t;
    const double a_lse = kFp32 * m * d.a / t;
    const double a_none = a_core + a_tp + a_lse;
    double act = a_none, transient = 0;
    if (c.recompute == Recompute::kSelective) {
      act = a_none - a_lse;  // core attention recomputed: its softmax statistics are not kept
    } else if (c.recompute == Recompute::kFull) {
      act = kBf16 * m * d.h / tsp;  // layer input only (Korthikanti Table 2)
      transient = a_none;           // one layer's activations live during its backward (§4.3)
    }
    // ZeRO-3 gathers a layer's full bf16 weights (and prefetches the next).
    if (c.zero == 3) transient += 2.0 * kBf16 * L.params * (dr > 1 ? 1.0 : 0.0);
    L.act_bytes = act * act_ovh;
    L.transient_bytes = transient * act_ovh;
    // Zero-bubble W keeps the inputs of the weight-gradient GEMMs (§2.1 ZB memory).
    L.wkeep_bytes = kBf16 * m * (2.0 * d.h / tsp + d.hq / t + d.F / t) * act_ovh;
  }

  // ---- Embedding (item 0) -------------------------------------------------------
  ItemCost& E = out.embed;
  {
    // A gather: memory-bound write of b·s·h (§1.2); vocab-parallel needs an
    // all-reduce (reduce-scatter with SP) forward; backward is a scatter-add.
    const double write = kBf16 * m * d.h / tsp;
    double tp_fwd = 0, tp_bwd = 0;
    if (c.tp > 1) {
      const double S = kBf16 * m * d.h;
      if (c.sp) {
        tp_fwd = collective_time(Collective::kReduceScatter, S, tp_group, links);
        tp_bwd = collective_time(Collective::kAllGather, S, tp_group, links);
      } else {
        tp_fwd = collective_time(Collective::kAllReduce, S, tp_group, links);
      }
      E.tp_total_s = tp_fwd + tp_bwd;
      tp_fwd *= 1.0 - cl.tp_comm_overlap;
      tp_bwd *= 1.0 - cl.tp_comm_overlap;
    }
    const double fwd_c = 2.0 * write / mem_bw;
    const double wgt_c = 3.0 * kBf16 * m * d.h / mem_bw;  // read grad, read-modify-write rows
    E.fwd_s = fwd_c + tp_fwd;
    E.bwd_s = tp_bwd;
    E.wgt_s = wgt_c;
    E.compute_s = fwd_c + wgt_c;
    E.tp_comm_s = tp_fwd + tp_bwd;
    E.params = d.V * d.h / t;
    E.static_bytes = E.params * bpp;
    E.act_bytes = 8.0 * m * act_ovh;  // int64 token ids (Megatron estimator, §4.4)
  }

  // ---- Final norm + output layer + loss (item L+1) ---------------------------------
  ItemCost& H = out.head;
  {
    const double vn = d.V / t;
    const double norm_fwd = kBf16 * m * 4.0 * d.h / tsp / mem_bw;
    const double g_fwd = gemm_time(m, vn, d.h, gpu);
    const double g_dgrad = gemm_time(m, d.h, vn, gpu);
    const double g_wgrad = gemm_time(d.h, vn, m, gpu);
    // Vocab-parallel cross entropy (§1.2, §4.4): memory-bound passes over the
    // logits: bf16 read + fp32 softmax write/read forward, fp32 read + bf16 grad write
    // backward (≈ 10 and 6 bytes per logit).
    const double logits = m * vn;
    const double ce_fwd = 10.0 * logits / mem_bw;
    const double ce_bwd = 6.0 * logits / mem_bw;
    double tp_fwd = 0, tp_bwd = 0;
    if (c.tp > 1) {
      const double S = kBf16 * m * d.h;
      // Two all-reduces of 4·b·s bytes (max and sum) plus the target logit.
      const double small =
          3.0 * collective_time(Collective::kAllReduce, kFp32 * m, tp_group, links);
      if (c.sp) {
        tp_fwd = collective_time(Collective::kAllGather, S, tp_group, links) + small;
        tp_bwd = std::max(
            0.0, collective_time(Collective::kReduceScatter, S, tp_group, links) - g_wgrad);
      } else {
        tp_fwd = small;
        tp_bwd =
            std::max(0.0, collective_time(Collective::kAllReduce, S, tp_group, links) - g_wgrad);
      }
      H.tp_total_s =
          tp_fwd + collective_time(c.sp ? Collective::kReduceScatter : Collective::kAllReduce, S,
                                   tp_group, links);
      tp_fwd *= 1.0 - cl.tp_comm_overlap;
      tp_bwd *= 1.0 - cl.tp_comm_overlap;
    }
    H.fwd_s = norm_fwd + g_fwd + ce_fwd + tp_fwd;
    H.bwd_s = 2.0 * norm_fwd + g_dgrad + ce_bwd + tp_bwd;
    H.wgt_s = g_wgrad;
    H.compute_s = 3.0 * norm_fwd + g_fwd + ce_fwd + g_dgrad + ce_bwd + g_wgrad;
    H.tp_comm_s = tp_fwd + tp_bwd;
    // Untied: its own V·h/t; tied: Megatron keeps a copy on the last stage when PP > 1,
    // and the same tensor as the embedding when PP = 1.
    const bool shares_embedding = model.tied_embeddings && c.pp == 1;
    H.params = (shares_embedding ? 0.0 : d.V * d.h / t) + d.h;
    H.static_bytes = H.params * bpp;
    // Stored: final-norm input and the output-layer input (SP-sharded).
    H.act_bytes = kBf16 * m * 2.0 * d.h / tsp * act_ovh;
    // Logits transient: bf16 logits + fp32 softmax + fp32 gradient (§4.4: 10·s·b·V/t).
    H.transient_bytes = 10.0 * logits * act_ovh;
    H.wkeep_bytes = kBf16 * m * d.h / tsp * act_ovh;
  }
  return out;
}

}  // namespace ppsearch
