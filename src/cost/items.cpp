#include "ppsearch/cost/items.hpp"

#include <algorithm>
#include <cmath>

#include "ppsearch/cost/alibi.hpp"
#include "ppsearch/cost/attention_window.hpp"
#include "ppsearch/cost/context_parallel.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/cost/rope.hpp"

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

// Forward FLOPs per token of one layer's parts (docs/algorithms.md §3.1).
double proj_flops(const Dims& d) { return 2 * d.h * (d.hq + 2 * d.hkv) + 2 * d.hq * d.h; }
double mlp_flops(const Dims& d) { return 2 * d.h * d.F * (d.glu ? 3 : 2); }
double core_flops(const Dims& d, double s_eff) { return 4 * s_eff * d.hq; }

// The matmuls of a layer in the order a torchtitan-style block runs them (separate q, k, v
// projections; gate, up, down for SwiGLU): input width k, output width n (before TP).
struct Matmul {
  double k, n;
};
int layer_matmuls(const Dims& d, Matmul out[7]) {
  int i = 0;
  out[i++] = {d.h, d.hq};            // wq
  out[i++] = {d.h, d.hkv};           // wk
  out[i++] = {d.h, d.hkv};           // wv
  out[i++] = {d.hq, d.h};            // wo
  out[i++] = {d.h, d.F};             // w1 (gate) / fc1
  if (d.glu) out[i++] = {d.h, d.F};  // w3 (up)
  out[i++] = {d.F, d.h};             // w2 (down) / fc2
  return i;
}

}  // namespace

double model_flops_per_step(const ModelSpec& m, int global_batch, AttentionFlops conv) {
  const Dims d = dims_of(m);
  // docs/algorithms.md §3.1: F_model = 3·B·s·[L·(F_proj + F_core + F_mlp) + F_head];
  // s_eff = s (full matrix, PaLM / Korthikanti) or s/2 (causal, Megatron since 2025-03).
  const double s_eff = conv == AttentionFlops::kCausal ? d.s / 2 : d.s;
  const double per_token =
      m.layers * (proj_flops(d) + core_flops(d, s_eff) + mlp_flops(d)) + 2 * d.h * d.V;
  return 3.0 * global_batch * d.s * per_token;
}

double recompute_flops_per_step(const ModelSpec& m, int global_batch, Recompute r,
                                SelectiveRecompute how) {
  const Dims d = dims_of(m);
  // docs/algorithms.md §3.1 (Korthikanti §6): full = one more forward of every layer;
  // selective = the core attention forward again. Counted with the full-matrix s.
  // Per-op selective (torchtitan) recomputes every second matmul instead.
  switch (r) {
    case Recompute::kNone:
      return 0.0;
    case Recompute::kSelective:
      if (how == SelectiveRecompute::kPerOp) {
        Matmul mm[7];
        const int n = layer_matmuls(d, mm);
        double per_token = 0;
        for (int i = 1; i < n; i += 2) per_token += 2 * mm[i].k * mm[i].n;
        return double(global_batch) * d.s * m.layers * per_token;
      }
      if (how == SelectiveRecompute::kMlaUpProj) {
        // Megatron-Core recompute_modules = [mla_up_proj] (multi_latent_attention.py): the q and
        // kv up projections of an MLA layer run again (q's only with a q LoRA rank); nothing on
        // other models.
        if (m.mla_kv_lora_rank <= 0) return 0.0;
        const double a = m.attention_heads;
        const double qk = m.mla_qk_nope_head_dim + m.mla_qk_rope_head_dim;
        const double up =
            double(std::max(0, m.mla_q_lora_rank)) * a * qk +
            double(m.mla_kv_lora_rank) * a * (m.mla_qk_nope_head_dim + m.mla_v_head_dim);
        return double(global_batch) * d.s * m.layers * 2.0 * up;
      }
      return double(global_batch) * d.s * m.layers * core_flops(d, d.s);
    case Recompute::kFull:
      return double(global_batch) * d.s * m.layers *
             (proj_flops(d) + core_flops(d, d.s) + mlp_flops(d));
  }
  return 0.0;
}

// The FC2 GEMMs a pruned full-recompute replay skips (training.recompute_skip_fc2,
// docs/step-time.md "torch.compile (torchtitan)"): [tokens × F]·[F × h] per layer, 2·F·h FLOPs a
// token; chain_costs drops the same GEMM from the replay's time, so HFU must not count it either.
double skipped_fc2_flops_per_step(const ModelSpec& m, int global_batch) {
  const Dims d = dims_of(m);
  return double(global_batch) * d.s * m.layers * 2.0 * d.F * d.h;
}

// Static bytes per parameter (docs/memory.md "Static memory"; docs/algorithms.md §4.1). bf16
// weights; main gradients in fp32 (4 B) or bf16 (2 B); Adam keeps an fp32 main copy of the
// weights and fp32 m and v (12 B). With 16-bit main gradients the optimizer casts them to an
// fp32 copy for its step (4 B more): Megatron-LM docs/user-guide/features/dist_optimizer.md
// gives 18 / 6 + 12/d for bf16 params with fp32 grads and 20 / 4 + 16/d for 16-bit grads
// (non-distributed / distributed optimizer), which total() reproduces for ZeRO 0 / 1. That
// copy is made inside the optimizer step (distrib_optimizer.py _copy_model_grads_to_main_grads:
// `shard_main_param.grad = shard_model_grad.float()`, a copy only when the grad is 16-bit) and
// dropped by the next step's zero_grad(set_to_none) before the forward, so it is never live
// with the activations: `step` holds it apart from the resident bytes. The distributed
// optimizer shards over the data-parallel group including CP (Megatron builds the optimizer on
// the DP-with-CP group: dr = DP·CP). ZeRO-2 also shards the gradients and ZeRO-3 the weights
// (Rajbhandari et al., SC'20, §5).
//
// Optimizer state (docs/memory.md "Optimizer state"). With bf16_state the main weights and both
// moments are bf16 (2 + 2 + 2 = 6 B instead of 12 B): Apex DistributedFusedAdam keeps its state
// in `dtype` ("datatype for optimizer state", apex/contrib/optimizers/distributed_fused_adam.py),
// which NeMo 1.0 recipes set through optim.dtype (bf16 in dgxc-benchmarking v25.01
// nemotron4-340b-synth.yaml); the step runs in that dtype, so there is no fp32 gradient copy.
// With fsdp_fp32_params (PyTorch FSDP mixed precision, e.g. Composer's PURE and torchtitan's
// MixedPrecisionPolicy) the sharded flat parameters are the fp32 main weights: a ZeRO-3 rank
// keeps 4/d B of fp32 parameters and 8/d B of moments, no 16-bit shard (the bf16 copies exist
// only while gathered), and the sharded gradients are cast back to the parameter dtype after
// the reduce-scatter (4/d B, ZeRO-2 and -3), so the optimizer needs no copy of them.
//
// With bf16_moments (Megatron-Core's precision-aware optimizer, --use-precision-aware-optimizer
// with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 and fp32 main weights, as the
// Megatron-Bridge DeepSeek-V3 recipes set: recipes/deepseek/deepseek_v3.py) the main weights stay
// fp32 and the moments are bf16: 4 + 2 + 2 = 8 B (optimizer/__init__.py passes exp_avg_dtype and
// exp_avg_sq_dtype to Transformer Engine's FusedAdam, NVIDIA/Megatron-LM@d98e8a64). The fp32
// gradient copy is kept as above: with FP8 primary weights (MXFP8, current scaling) Megatron-Core
// manages the fp32 main weights itself and copies the gradient with .float()
// (distrib_optimizer.py _copy_model_grads_to_main_grads,
// use_precision_aware_optimizer_no_fp8_or_ds_fp8 false).
StaticSplit static_bytes_per_param(int zero, double dr, bool fp32_grads, bool bf16_state,
                                   bool fsdp_fp32_params, bool bf16_moments) {
  const double g = fp32_grads ? kFp32 : kBf16;
  const double copy = fp32_grads || bf16_state ? 0.0 : kFp32;
  const double state = bf16_state     ? 3.0 * kBf16
                       : bf16_moments ? kFp32 + 2.0 * kBf16
                                      : 3.0 * kFp32;  // main weights, m, v
  StaticSplit b;
  b.weight = zero >= 3 ? kBf16 / dr : kBf16;
  b.grad = zero >= 2 ? g / dr : g;
  b.optim = zero >= 1 ? state / dr : state;
  b.step = zero >= 1 ? copy / dr : copy;
  if (fsdp_fp32_params && zero >= 2) {
    b.grad = kFp32 / dr;
    b.step = 0.0;
    if (zero >= 3) {
      const double main = bf16_state ? kBf16 : kFp32;
      b.weight = main / dr;
      b.optim = (state - main) / dr;  // the two moments
    }
  }
  return b;
}

// Workspace (docs/memory.md "Workspace"): CUDA context and cuBLAS/cuDNN/TE workspaces
// (gpu.memory_reserved_gb) and the NCCL buffers of each communicator a rank belongs to
// (gpu.comm_buffer_gb each: 0.54-0.69 GB measured per communicator on A100, NVIDIA/nccl
// issue #964; docs/algorithms.md §4.5).
double workspace_bytes(const Problem& pb, const Candidate& c) {
  const double dr = double(c.dp) * c.cp;
  int comms = 0;
  comms += c.tp > 1;
  comms += c.cp > 1;
  comms += dr > 1;
  comms += c.pp > 1 ? 1 : 0;
  comms += (pb.model.tied_embeddings && c.pp > 1) ? 1 : 0;
  return pb.gpu.memory_reserved_bytes + comms * pb.gpu.comm_buffer_bytes;
}

Problem stack_costed(const Problem& p) {
  Problem e = p;
  e.gpu.attention_efficiency = std::min(1.0, p.gpu.attention_efficiency * attention_scale(p));
  // Eager (unfused) norm, SwiGLU and RoPE write and re-read their intermediates: about twice
  // the bytes of the fused kernels (kEagerMemoryEfficiency, cost/items.hpp).
  if (!p.training.fused_elementwise) {
    e.gpu.gemm_memory_efficiency = p.gpu.memory_efficiency;
    e.gpu.memory_efficiency *= kEagerMemoryEfficiency;
  }
  // A power limit below the fitted part's lowers the sustained SM clock: compute-bound GEMM
  // and attention kernels slow in proportion, memory-bound kernels and links do not (their
  // bandwidth is set by the HBM and link clocks; docs/step-time.md "Power-capped GPUs").
  e.gpu.gemm_efficiency *= p.gpu.clock_scale;
  e.gpu.gemm_efficiency_fp8 *= p.gpu.clock_scale;
  e.gpu.attention_efficiency *= p.gpu.clock_scale;
  return e;
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
  const double norm_scale = norm_bytes_scale(pb.training);  // training.fused_norm
  const double act_ovh = gpu.activation_overhead;
  const int ndom = cl.nvlink_domain_size;
  // Training precision (docs/precision.md): FP8 linear GEMMs, their casts, FP8 weight copies and
  // FP8-saved linear inputs.
  const PrecisionPlan prec = precision_plan(pb.training, gpu);
  const GemmPrecision lp = prec.linear;

  const GroupShape tp_group = group_shape(c.tp, 1, ndom);
  const GroupShape cp_group = group_shape(c.cp, c.tp, ndom);
  const double dr = double(c.dp) * c.cp;
  const bool fp32_grads = pb.training.grad_reduce_in_fp32;
  const StaticSplit bpp = static_bytes_per_param(
      c.zero, dr, fp32_grads, pb.training.optimizer_state_dtype == "bf16",
      pb.training.fsdp_fp32_params, pb.training.optimizer_state_dtype == "bf16-moments");
  const double grad_elem = fp32_grads ? kFp32 : kBf16;
  // ZeRO-3 gathers weights and holds unsharded gradients only when there is a group to shard over.
  const bool zero3 = c.zero >= 3 && dr > 1;
  auto set_static = [&](ItemCost& it) {
    it.weight_bytes = it.params * bpp.weight;
    it.grad_bytes = it.params * bpp.grad;
    it.optim_bytes = it.params * bpp.optim;
    it.step_bytes = it.params * bpp.step;
    it.static_bytes = it.weight_bytes + it.grad_bytes + it.optim_bytes;
  };

  ChainCosts out;
  out.bytes_per_param = bpp.resident();
  out.capacity_bytes = gpu.usable_memory_bytes() - gpu.memory_headroom_bytes;  // docs/memory.md
  out.extra_bytes = workspace_bytes(pb, c);
  // PP p2p per hop: 2·b·s·h bytes, /t with SP or the scatter/gather optimisation (§5.4).
  out.boundary_bytes = kBf16 * m * d.h / t;

  // ---- Transformer layer -------------------------------------------------------
  ItemCost& L = out.layer;
  {
    // GEMMs per TP rank (docs/algorithms.md §3.3): [m×k]·[k×n].
    const double qkv_n = (d.hq + 2 * d.hkv) / t, o_k = d.hq / t;
    const double fc1_n = d.F * (d.glu ? 2 : 1) / t, fc2_k = d.F / t;
    // The input projections (k = h): one fused GEMM each for QKV and FC1 (Megatron's
    // linear_qkv and linear_fc1), or with training.split_linears one GEMM per weight, as
    // torchtitan's Attention (wq, wk, wv) and FeedForward (w1, w3) run them
    // (torchtitan/models/llama3/model.py @820504e): each reads the input again, and at high TP
    // the K and V GEMMs (n = h_kv/t) fall below the tile and roofline knees (cost/gemm.cpp).
    // The fused sums keep their order: the search's discrete choices are sensitive to the last
    // bit of these times, and the default stack's answers must stay bit-identical.
    // dgrad [m×n]·[n×k] → output m×k; wgrad [k×m]·[m×n] → output k×n.
    double g_fwd, g_dgrad, g_wgrad;
    if (!pb.training.split_linears) {
      g_fwd = gemm_time(m, qkv_n, d.h, gpu, lp) + gemm_time(m, d.h, o_k, gpu, lp) +
              gemm_time(m, fc1_n, d.h, gpu, lp) + gemm_time(m, d.h, fc2_k, gpu, lp);
      g_dgrad = gemm_time(m, d.h, qkv_n, gpu, lp) + gemm_time(m, o_k, d.h, gpu, lp) +
                gemm_time(m, d.h, fc1_n, gpu, lp) + gemm_time(m, fc2_k, d.h, gpu, lp);
      g_wgrad = gemm_time(d.h, qkv_n, m, gpu, lp) + gemm_time(o_k, d.h, m, gpu, lp) +
                gemm_time(d.h, fc1_n, m, gpu, lp) + gemm_time(fc2_k, d.h, m, gpu, lp);
    } else {
      double in_n[5];
      int n_in = 0;
      in_n[n_in++] = d.hq / t;
      in_n[n_in++] = d.hkv / t;
      in_n[n_in++] = d.hkv / t;
      in_n[n_in++] = d.F / t;
      if (d.glu) in_n[n_in++] = d.F / t;
      g_fwd = gemm_time(m, d.h, o_k, gpu, lp) + gemm_time(m, d.h, fc2_k, gpu, lp);
      g_dgrad = gemm_time(m, o_k, d.h, gpu, lp) + gemm_time(m, fc2_k, d.h, gpu, lp);
      g_wgrad = gemm_time(o_k, d.h, m, gpu, lp) + gemm_time(fc2_k, d.h, m, gpu, lp);
      for (int i = 0; i < n_in; ++i) {
        g_fwd += gemm_time(m, in_n[i], d.h, gpu, lp);
        g_dgrad += gemm_time(m, d.h, in_n[i], gpu, lp);
        g_wgrad += gemm_time(d.h, in_n[i], m, gpu, lp);
      }
    }
    // FlashAttention: the causal kernel skips masked blocks, so it executes half of
    // 4·b·s_q·s·h_q/t; backward ≈ 2.5× forward incl. FA's own recompute (§3.3).
    const double att_fwd_flops = 0.5 * 4.0 * m * d.s * d.hq / t;
    // FP8 core attention (training.fp8_attention; docs/moe.md "26.06 recipe features").
    // The rate by length: n / (n + gpu.attention_tile_blocks) for calls over s / cp keys
    // (cost/attention_window.hpp attention_length_factor; 1 with the key at 0).
    const double att_eff =
        gpu.attention_efficiency * attention_length_factor(gpu, attention_call_keys(pb.model, c));
    const double att_fwd =
        att_fwd_flops / (gpu.peak_flop_per_s * att_eff) / fp8_attention_speedup(pb.training, gpu);
    const double att_bwd = 2.5 * att_fwd;
    // Memory-bound element-wise ops (§3.3): 2 norms (r+w: 4h), 2 residual adds (2r+w: 6h) in
    // the h-wide (SP-sharded) region, RoPE on q,k, and the activation (SwiGLU reads
    // 2F writes F; GeLU reads F writes F). Backward moves about twice the bytes. The norms'
    // bytes carry norm_scale (training.fused_norm).
    const double ew_fwd_bytes = kBf16 * m *
                                ((4.0 * norm_scale + 6.0) * d.h / tsp + 2.0 * (d.hq + d.hkv) / t +
                                 (d.glu ? 3.0 : 2.0) * d.F / t);
    // FP8 quantisation passes (docs/precision.md, src/cost/precision.cpp): forward, the inputs
    // of QKV and FC1 (before the SP gather) and of the out-projection and FC2; backward, the
    // output gradients of the four GEMMs; per micro-batch, the layer's weights once per step
    // spread over the step's micro-batches.
    double cast_fwd = 0, cast_bwd = 0;
    if (prec.fp8) {
      const double w_elems =
          d.h * (d.hq + 2 * d.hkv) / t + d.hq * d.h / t + d.h * fc1_n + fc2_k * d.h;
      const double n_micro = std::max(1.0, double(pb.training.global_batch_size) / (c.dp * c.mbs));
      const double x_elems = m * (2.0 * d.h / tsp + o_k + fc2_k);
      const double dy_elems = m * (qkv_n + 2.0 * d.h / tsp + fc1_n);
      cast_fwd = (x_elems + w_elems / n_micro) * prec.cast_bytes_per_element / mem_bw;
      cast_bwd = dy_elems * prec.cast_bytes_per_element / mem_bw;
      if (c.sp && c.tp > 1) {
        // Gathered in FP8 (src/cost/precision.cpp): the local shards of QKV's and FC1's inputs
        // and of the out-projection's and FC2's output gradients are cast without their
        // transposed copy under per-tensor scaling on Hopper, which then transposes the
        // gathered tensors (full m x h) in the backward for wgrad. The attention-only layer of
        // a MoE model without shared experts (F = 0, moe.cpp) gathers on its attention side
        // only: its routed experts cast their permuted tokens ungathered (moe.cpp).
        const double pairs = (d.F > 0 || model.moe_shared_experts > 0) ? 2.0 : 1.0;
        const double local = m * pairs * d.h / tsp;
        const double fewer = prec.cast_bytes_per_element - prec.gathered_cast_bytes_per_element;
        cast_fwd -= local * fewer / mem_bw;
        cast_bwd +=
            (2.0 * pairs * m * d.h * prec.gathered_transpose_bytes - local * fewer) / mem_bw;
      }
    }
    // YaRN RoPE without a fused kernel (rope.cpp, docs/moe.md "YaRN RoPE"): extra passes.
    const RopeExtra rope = unfused_rope_extra(pb, m, t);
    const double ew_fwd = ew_fwd_bytes / mem_bw + cast_fwd + rope.fwd_s;
    const double ew_bwd = 2.0 * (ew_fwd - cast_fwd - rope.fwd_s) + cast_bwd + rope.bwd_s;

    // TP collectives per layer (§5.4; Shoeybi et al. §3, Korthikanti §4.2.2).
    double tp_fwd = 0, tp_bwd = 0, tp_all = 0, tp_all_fwd = 0;  // *_all: hidden + exposed
    double tp_fc2_out = 0;  // the collective after FC2 (RS with SP, AR without), hidden + exposed
    double tp_sp_gathers = 0;  // the two SP all-gathers before QKV and FC1, hidden + exposed
    // training.tp_bwd_overlap = false (DTensor TP, torchtitan; docs/step-time.md "torch.compile
    // (torchtitan)"): autograd runs a linear's dgrad and wgrad in one MmBackward node and the
    // input-gradient collective after it, so nothing hides it; the gathered SP input is saved, not
    // re-gathered.
    const bool bwd_overlap = pb.training.tp_bwd_overlap;
    if (c.tp > 1) {
      const double S = kBf16 * m * d.h;  // full activation per micro-batch
      if (c.sp) {
        // The all-gathers move the FP8 data in FP8 (prec.gather_bytes_per_element, 2 in bf16);
        // the reduce-scatters of the GEMM outputs are bf16 except as below (precision.cpp).
        const double S_ag = prec.gather_bytes_per_element * m * d.h;
        const double ag = collective_time(Collective::kAllGather, S_ag, tp_group, links);
        const double ag_dy = collective_time(
            Collective::kAllGather, prec.grad_gather_bytes_per_element * m * d.h, tp_group, links);
        const double rs = collective_time(Collective::kReduceScatter, S, tp_group, links);
        // The forward's reduce-scatters after proj and FC2: bf16, or FP8 with
        // training.tp_fp8_reduce_scatter (PrecisionPlan::fwd_reduce_scatter_bytes_per_element).
        const double rs_fwd =
            prec.fwd_reduce_scatter_bytes_per_element == kBf16
                ? rs
                : collective_time(Collective::kReduceScatter,
                                  prec.fwd_reduce_scatter_bytes_per_element * m * d.h, tp_group,
                                  links);
        tp_fwd = 2 * ag + 2 * rs_fwd;  // AG before QKV and FC1, RS after proj and FC2
        tp_fc2_out = rs_fwd;
        // Backward: AG of the output gradient before proj/FC2 is exposed; the RS of
        // the column-parallel input gradients overlaps the wgrad GEMMs, and the
        // re-gather of the SP input for wgrad overlaps the dgrad GEMMs (Megatron).
        tp_bwd = 2 * ag_dy + std::max(0.0, 2 * rs - g_wgrad) + std::max(0.0, 2 * ag - g_dgrad);
        tp_all = tp_fwd + 2 * (ag_dy + ag) + 2 * rs;  // bit-identical to 4 ag in bf16
        if (!bwd_overlap) {
          tp_bwd = 2 * ag_dy + 2 * rs;
          tp_all = tp_fwd + 2 * ag_dy + 2 * rs;
        }
        tp_sp_gathers = 2 * ag;
      } else {
        const double ar = collective_time(Collective::kAllReduce, S, tp_group, links);
        tp_fwd = 2 * ar;  // after proj and after FC2
        tp_fc2_out = ar;
        // Backward all-reduce of the column-parallel input gradients overlaps wgrad
        // (Megatron's async tensor-parallel all-reduce).
        tp_bwd = bwd_overlap ? std::max(0.0, 2 * ar - g_wgrad) : 2 * ar;
        tp_all = 4 * ar;
      }
      tp_all_fwd = tp_fwd;
      tp_fwd *= 1.0 - cl.tp_comm_overlap;
      tp_bwd *= 1.0 - cl.tp_comm_overlap;
    }
    // CP ring attention (src/cost/context_parallel.cpp, docs/step-time.md "Long-sequence
    // context parallelism"): Megatron/TE p2p passes (cp−1) K/V chunks overlapped with the
    // attention kernels, the backward KV and dKV; PyTorch's context_parallel (torchtitan)
    // all-gathers or permutes K/V repeated to the query heads, merges every step's partial
    // output in fp32 and rotates fp32 dK/dV, the last permute exposed.
    double cp_fwd = 0, cp_bwd = 0, cp_all = 0;  // cp_all: hidden + exposed, fwd + bwd
    double cp_all_fwd = 0, cp_merge_fwd = 0, cp_merge_bwd = 0, cp_transient = 0;
    if (c.cp > 1) {
      const CpCommType cpt = pb.training.cp_comm_type;
      CpAttentionInput in;
      in.cp = c.cp;
      in.tokens = m;
      in.kv_width = (cpt == CpCommType::kP2p ? d.hkv : d.hq) / t;
      in.q_width = d.hq / t;
      in.att_fwd_s = att_fwd;
      in.att_bwd_s = att_bwd;
      in.same_domain = cp_group.domains <= 1;
      in.group = cp_group;
      in.mem_bytes_per_s = mem_bw;
      const CpAttentionCost cc = cp_attention_cost(cpt, in, links);
      cp_fwd = cc.fwd_exposed_s;
      cp_bwd = cc.bwd_exposed_s;
      cp_all = cc.fwd_total_s + cc.bwd_total_s;
      cp_all_fwd = cc.fwd_total_s;
      cp_merge_fwd = cc.merge_fwd_s;
      cp_merge_bwd = cc.merge_bwd_s;
      cp_transient = cc.transient_bytes;
    }
    // ALiBi added to scores in HBM (alibi.cpp; docs/step-time.md "ALiBi on materialised
    // attention scores"): a forward-only pass, replayed with the forward. Added last, so the sum
    // is bit-identical when it is zero.
    const double alibi_fwd = alibi_bias_fwd_s(pb, m, d.s, double(model.attention_heads) / t);
    // PyTorch's micro-pipelined async TP (training.tp_symm_mem with training.tp_comm_overlap;
    // torch/distributed/_symmetric_memory/__init__.py, docs/step-time.md "Async TP's own
    // passes"): with SP, each fused matmul-reduce-scatter writes its t partial outputs into one
    // m x h buffer (stacked_partials) and sums them in a separate reduction (read m·h, write
    // m·h/t, bf16), and each fused all-gather-matmul first copies the local shard into the
    // symmetric-memory buffer (read and write m·h/t, in the gathered dtype) before the first GEMM
    // may start. SM and HBM work on the compute stream, per collective: forward two of each, the
    // backward two of each (the output-gradient gathers and the input-gradient reduce-scatters).
    double symm_fwd = 0, symm_bwd = 0, symm_rs = 0, symm_ag = 0;
    if (c.tp > 1 && c.sp && pb.training.tp_comm_overlap && pb.training.tp_symm_mem) {
      symm_rs = kBf16 * m * d.h * (1.0 + 1.0 / t) / mem_bw;
      symm_ag = 2.0 * prec.gather_bytes_per_element * m * d.h / t / mem_bw;
      const double symm_ag_dy = 2.0 * prec.grad_gather_bytes_per_element * m * d.h / t / mem_bw;
      symm_fwd = 2.0 * symm_rs + 2.0 * symm_ag;
      symm_bwd = 2.0 * symm_rs + 2.0 * symm_ag_dy;
    }
    const double fwd_compute = g_fwd + att_fwd + cp_merge_fwd + ew_fwd + alibi_fwd + symm_fwd;
    const bool per_op = pb.training.selective_recompute == SelectiveRecompute::kPerOp;
    Matmul mm[7];
    const int n_mm = layer_matmuls(d, mm);
    double bwd_compute = g_dgrad + att_bwd + cp_merge_bwd + ew_bwd + symm_bwd;
    double bwd_comm = tp_bwd + cp_bwd;
    // Per-op selective recomputation (torchtitan's policy) saves matmul, attention and
    // reduce-scatter outputs but not all-gathers (_save_list in parallelize_llama.py @9dec370 and
    // @820504e): with SP the backward replays the two all-gathers of the layer's inputs.
    const double replay_tp_all = (c.recompute == Recompute::kSelective &&
                                  pb.training.selective_recompute == SelectiveRecompute::kPerOp)
                                     ? tp_sp_gathers
                                     : 0.0;
    const double replay_tp = replay_tp_all * (1.0 - cl.tp_comm_overlap);
    bwd_comm += replay_tp;
    if (replay_tp_all > 0) bwd_compute += 2.0 * symm_ag;  // the replayed gathers' shard copies
    // Recomputation (§3.2): full replays the forward (with its collectives) before
    // the backward; selective recomputes the core attention forward.
    // Pruned replay (training.recompute_skip_fc2, a compiled graph; docs/step-time.md
    // "torch.compile (torchtitan)"): the backward needs neither FC2's output nor the collective
    // after it, so a partitioner that recomputes only what the backward reads drops both from the
    // replay.
    const bool skip_fc2 = c.recompute == Recompute::kFull && pb.training.recompute_skip_fc2;
    const double skip_gemm = skip_fc2 ? gemm_time(m, d.h, fc2_k, gpu, lp) : 0.0;
    const double skip_tp_all = skip_fc2 ? tp_fc2_out : 0.0;
    const double skip_tp = skip_tp_all * (1.0 - cl.tp_comm_overlap);
    if (c.recompute == Recompute::kFull) {
      // The pruned replay drops FC2's reduce-scatter, and its partial sum with it.
      bwd_compute += fwd_compute - skip_gemm - (skip_fc2 ? symm_rs : 0.0);
      bwd_comm += tp_fwd - skip_tp + cp_fwd;
    } else if (c.recompute == Recompute::kSelective) {
      if (per_op) {
        // Per-op (torchtitan): every second matmul and the element-wise ops run again.
        for (int i = 1; i < n_mm; i += 2) {
          const bool row_parallel = (i == 3) || (i == n_mm - 1);  // wo, w2: k sharded
          bwd_compute += row_parallel ? gemm_time(m, mm[i].n, mm[i].k / t, gpu, lp)
                                      : gemm_time(m, mm[i].n / t, mm[i].k, gpu, lp);
        }
        bwd_compute += ew_fwd;
      } else if (pb.training.selective_recompute == SelectiveRecompute::kCoreAttention) {
        bwd_compute += att_fwd + alibi_fwd;
      }
      // kMlaUpProj (Megatron-Core recompute_modules = [mla_up_proj]) keeps the core attention:
      // only MLA's up projections run again, costed by apply_mla (moe.cpp).
    }
    L.fwd_s = fwd_compute + tp_fwd + cp_fwd;
    L.bwd_s = bwd_compute + bwd_comm;
    L.wgt_s = g_wgrad;
    L.compute_s = fwd_compute + bwd_compute + g_wgrad;
    L.tp_comm_s =
        tp_fwd + tp_bwd + replay_tp + (c.recompute == Recompute::kFull ? tp_fwd - skip_tp : 0.0);
    L.cp_comm_s = cp_fwd + cp_bwd + (c.recompute == Recompute::kFull ? cp_fwd : 0.0);
    // Full recomputation replays the forward's collectives once more.
    L.tp_total_s =
        tp_all + replay_tp_all + (c.recompute == Recompute::kFull ? tp_all_fwd - skip_tp_all : 0.0);
    // Hooks for the TP overlap charge in evaluate() (docs/step-time.md).
    {
      const bool full = c.recompute == Recompute::kFull;
      L.gemm_fwd_s = g_fwd;
      L.gemm_bwd_s = g_dgrad + g_wgrad + (full ? g_fwd - skip_gemm : 0.0);
      L.tp_fwd_s = tp_fwd;
      L.tp_bwd_s = tp_bwd + replay_tp + (full ? tp_fwd - skip_tp : 0.0);
      L.tp_fwd_total_s = tp_all_fwd;
      L.tp_bwd_total_s =
          tp_all - tp_all_fwd + replay_tp_all + (full ? tp_all_fwd - skip_tp_all : 0.0);
    }
    L.cp_total_s = cp_all + (c.recompute == Recompute::kFull ? cp_all_fwd : 0.0);

    // Parameters: TP-sharded matrices + replicated norms (§4.1).
    L.params = (d.h * (d.hq + 2 * d.hkv) + d.hq * d.h + d.h * d.F * (d.glu ? 3 : 2)) / t + 2 * d.h;
    set_static(L);
    // FP8 copies of the linear weights (and their transposes) next to the bf16 ones; under
    // ZeRO-3 only the gathered layer holds them (docs/precision.md "Memory").
    const double fp8_weights = prec.weight_copy_bytes * (L.params - 2 * d.h);
    if (!zero3) {
      L.weight_bytes += fp8_weights;
      L.static_bytes += fp8_weights;
    }
    // Activations (§4.2, Llama-style generalisation of Korthikanti Table 2): norm
    // inputs and QKV/FC1 inputs (8h, SP-sharded), Q, K, V, O (4h_q + 4h_kv), FC1
    // output and activation output (6F SwiGLU, 4F GeLU), FA's fp32 log-sum-exp.
    const double a_core = kBf16 * m * (4.0 * d.h / tsp);  // the 8h term
    const double a_tp = m * (4.0 * d.hq + 4.0 * d.hkv + (d.glu ? 6.0 : 4.0) * d.F) / t;
    const double a_lse = kFp32 * m * d.a / t;
    // In FP8 the inputs of QKV and FC1 (h each, SP-sharded) and of the out-projection (h_q) and
    // FC2 (F) are saved as FP8 for wgrad (TE Linear/LayerNormLinear; docs/precision.md).
    const double fp8_saved =
        (kBf16 - prec.saved_input_bytes) * m * (2.0 * d.h / tsp + (d.hq + d.F) / t);
    const double a_none = a_core + a_tp + a_lse - fp8_saved;
    double act = a_none, transient = 0;
    if (c.recompute == Recompute::kSelective && per_op) {
      // torchtitan's per-op policy (parallelize_llama.py, Dec 2024: save the outputs of
      // matmuls except every second one, of attention and of reduce-scatters; recompute the
      // rest): the block input, the outputs of matmuls 1, 3, 5, 7 (q, v, gate, down for
      // SwiGLU; q, v, fc1 for GeLU), the attention output and its log-sum-exp.
      double kept = d.h / tsp + d.hq / t;  // block input, attention output
      for (int i = 0; i < n_mm; i += 2) {
        const bool row_parallel = (i == 3) || (i == n_mm - 1);
        kept += row_parallel ? mm[i].n / tsp : mm[i].n / t;
      }
      act = kBf16 * m * kept + a_lse;
    } else if (c.recompute == Recompute::kSelective &&
               pb.training.selective_recompute == SelectiveRecompute::kCoreAttention) {
      act = a_none - a_lse;  // core attention recomputed: its softmax statistics are not kept
    } else if (c.recompute == Recompute::kFull) {
      act = kBf16 * m * d.h / tsp;  // layer input only (Korthikanti Table 2)
      transient = a_none;           // one layer's activations live during its backward (§4.3)
    }
    L.act_bytes = act * act_ovh;
    L.transient_bytes = (transient + cp_transient) * act_ovh;  // + the torch CP ring's buffers
    if (zero3) L.transient_bytes += fp8_weights;
    // ZeRO-3 / FSDP (docs/memory.md "ZeRO-3 buffers"): during a layer's backward these are
    // live at once, so they add up: its gathered bf16 weights, the next layer's weights
    // already prefetched (FSDP's backward prefetch, torchtitan/PyTorch FSDP2 default; Megatron
    // FSDP's bucketed prefetch), and the layer's unsharded gradients until their
    // reduce-scatter has run (in the main-gradient dtype).
    if (zero3) L.transient_bytes += L.params * (2.0 * kBf16 + grad_elem);
    // Zero-bubble W state (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §2: W computes
    // dW = Xᵀ·dY): every weight GEMM keeps its input X and its output gradient dY from B until
    // W. X: QKV and FC1 inputs (h, SP-sharded and re-gathered for wgrad as Megatron does),
    // attention output (h_q), activation output (F). dY: dQKV (h_q + 2h_kv), the out-projection
    // and FC2 output gradients (h each, SP-sharded), dFC1 (2F gated, F otherwise).
    const double w_x = 2.0 * d.h / tsp + d.hq / t + d.F / t;
    const double w_dy = (d.hq + 2.0 * d.hkv) / t + 2.0 * d.h / tsp + d.F * (d.glu ? 2.0 : 1.0) / t;
    L.wkeep_bytes = kBf16 * m * (w_x + w_dy) * act_ovh;
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
    set_static(E);
    E.act_bytes = 8.0 * m * act_ovh;  // int64 token ids (Megatron estimator, §4.4)
    // W of a lookup table is a scatter-add of dY into the rows the token ids select.
    E.wkeep_bytes = (8.0 * m + kBf16 * m * d.h / tsp) * act_ovh;
    // ZeRO-3: its gathered weights and unsharded gradients during its backward.
    if (zero3) E.transient_bytes = E.params * (kBf16 + grad_elem);
  }

  // ---- Final norm + output layer + loss (item L+1) ---------------------------------
  ItemCost& H = out.head;
  {
    const double vn = d.V / t;
    const double norm_fwd = norm_scale * kBf16 * m * 4.0 * d.h / tsp / mem_bw;
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
        const double rs = collective_time(Collective::kReduceScatter, S, tp_group, links);
        tp_bwd = pb.training.tp_bwd_overlap ? std::max(0.0, rs - g_wgrad) : rs;
      } else {
        tp_fwd = small;
        const double ar = collective_time(Collective::kAllReduce, S, tp_group, links);
        tp_bwd = pb.training.tp_bwd_overlap ? std::max(0.0, ar - g_wgrad) : ar;
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
    set_static(H);
    // Stored: final-norm input and the output-layer input (SP-sharded).
    H.act_bytes = kBf16 * m * 2.0 * d.h / tsp * act_ovh;
    // Logits transient (docs/memory.md "Logits"). Megatron's vocab-parallel cross entropy
    // (megatron/core/tensor_parallel/cross_entropy.py, also its native fused variant) casts
    // the bf16 logits to an fp32 copy, keeps it as the softmax for backward and turns it into
    // the gradient in place, which autograd casts back to bf16: 2 + 4 bytes per logit in the
    // forward and 4 + 2 in the backward, 6 at the peak. A cross entropy that works in place
    // on the bf16 logits (training.cross_entropy_fusion) keeps 2 when it writes the gradient
    // into them (Transformer Engine's parallel cross entropy) and 4 when the gradient is a new
    // bf16 buffer: flash-attn's Triton cross entropy (flash_attn/ops/triton/cross_entropy.py,
    // v2.4.2: save_for_backward(logits, ...), then dlogits = logits if inplace_backward else
    // torch.empty_like(logits), inplace_backward = False by default).
    const double per_logit = !pb.training.cross_entropy_fusion   ? kBf16 + kFp32
                             : pb.training.cross_entropy_inplace ? kBf16
                                                                 : 2.0 * kBf16;
    H.transient_bytes = per_logit * logits * act_ovh;
    // ZeRO-3: the output layer's gathered weights and unsharded gradients (the tied matrix when
    // it is shared), plus the last layer's weights prefetched for the next backward.
    if (zero3) H.transient_bytes += (d.V * d.h / t + d.h) * (kBf16 + grad_elem) + kBf16 * L.params;
    // Zero-bubble W state: the output layer's input X and the logits gradient dY (bf16).
    H.wkeep_bytes = kBf16 * m * (d.h / tsp + vn) * act_ovh;
    // Deferred output-layer wgrad (training.defer_embedding_wgrad; docs/step-time.md "Deferred
    // output-layer wgrad"). Megatron-Core's ColumnParallelLinear buffers the output layer's
    // input (the SP-local shard) in the forward and, in the backward, its output gradient
    // instead of running the wgrad GEMM, while fewer than wgrad_deferral_limit (0 = no limit)
    // are buffered (tensor_parallel/layers.py: len(grad_output_buffer) < wgrad_deferral_limit).
    // finish_embedding_wgrad_compute (pipeline_parallel/schedules.py) runs the buffered GEMMs
    // after the rank's last backward and before finalize_model_grads; Megatron refuses the
    // option without pipeline parallelism. The k = min(limit, M) deferred GEMMs leave the
    // steady state: per micro-batch the head keeps (1 − k/M) of its wgrad on average, and
    // k·g_wgrad runs at the end (evaluate.cpp adds it after the last backward). The buffers
    // (bf16 input and output gradient, k of each: the pair the zero-bubble W state keeps above)
    // live until then: they are held beside the logits transient.
    if (pb.training.defer_embedding_wgrad && c.pp > 1) {
      const double n_mb = std::max(1, c.num_microbatches);
      const double limit = pb.training.wgrad_deferral_limit;
      const double k = limit > 0 ? std::min(limit, n_mb) : n_mb;
      H.wgt_s = g_wgrad * (1.0 - k / n_mb);
      out.head_deferred_wgrad_s = k * g_wgrad;
      H.transient_bytes += k * H.wkeep_bytes;
    }
  }
  return out;
}

}  // namespace ppsearch
