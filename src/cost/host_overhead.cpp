// Host (CPU) time of a mixture-of-experts layer per micro-batch (docs/moe.md "Host time of a MoE
// layer").
//
// Sources (read at these commits; the counts are framework-level launches read from the code,
// not a profile):
//  * M = NVIDIA/Megatron-LM @d98e8a64 (megatron/core/transformer/moe/): token_dispatcher.py,
//    router.py, experts.py, moe_layer.py; megatron/core/transformer/transformer_layer.py.
//  * T = NVIDIA/TransformerEngine @d0067d0: transformer_engine/pytorch/module/grouped_linear.py
//    (the discrete grouped-GEMM path: m_splits.tolist(), _split_quantize one quantisation per
//    expert, general_grouped_gemm), transformer_engine/common/gemm/cublaslt_gemm.cu
//    (nvte_multi_stream_cublas_gemm: one cuBLAS GEMM per expert, looped on the host).
//  * Per-operation host time (gpu.host_op_us): the host (CPU) time of one PyTorch op that
//    launches one kernel. NVIDIA/TransformerEngine#2053 ("High CPU overhead on Grace systems",
//    BF16 Linear forward, hidden 2048, 8192 tokens) measured torch.nn.Linear at 13.48 µs of CPU
//    time on an H100 DGX (Xeon Platinum 8480C), 37.08 µs on GB200 and 33.17 µs on GH200 (Grace):
//    the default 13.5 µs is the x86 figure, the GB200/GB300 presets set 37. The same issue
//    measured Transformer Engine's Linear (a Python autograd module around the same GEMM) at
//    99.66 µs on GB200 and 90.53 µs on GH200: a TE module call costs kTeModuleOps = 99.66/37.08
//    = 2.69 plain ops (GH200: 2.73), which the counts below use for every TE or Megatron
//    autograd module (Linear, LayerNormLinear, GroupedLinear, DotProductAttention, the fused
//    permute / sort / dispatch functions, the all-to-all autograd functions). Orders of magnitude
//    agree elsewhere: pytorch/pytorch#41383, about 7 µs per Python-level op with autograd before
//    any CUDA work; TransformerEngine#1191, 115-140 µs per TEColumnParallelLinear forward.
//  * The synchronisation: MoEAlltoAllTokenDispatcher copies input/output splits and the tokens
//    per expert to the host and waits for them before the EP all-to-all
//    (_maybe_dtoh_and_synchronize, cuda_sync_point "before_ep_alltoall"); the allgather
//    dispatcher calls .cpu() on the tokens per expert; HybridEP sizes its buffers from
//    tokens_per_expert.sum() ("CPU sync in dispatch") unless an expert-rank capacity is set;
//    and the grouped GEMM itself takes host split sizes (T: m_splits.tolist()). After the wait
//    the GPU queue is empty: the GPU then runs only what the host issues, so a layer's forward
//    takes max(GPU, host) (Megatron-Core MoE README "CPU Overhead Bottleneck": gaps between
//    kernels, remedies CUDA graphs, fewer TP ranks, larger micro-batches). The backward reuses
//    the forward's host split sizes and has no synchronisation, but the next forward's first
//    one discards any lead the host gained, so over a pass of uniform layers the host-bound
//    time is again Σ max(GPU, host) per layer.
#include "ppsearch/cost/host_overhead.hpp"

#include <algorithm>

#include "ppsearch/cost/moe_flex_backend.hpp"
#include "ppsearch/cost/moe_recipe.hpp"

namespace ppsearch {

MoeHostOps moe_host_op_counts(MoeDispatcher d, double local_experts, bool fp8, int tp,
                              bool fused_mlp) {
  const double M = kTeModuleOps;  // one TE / Megatron autograd module call, in plain ops
  MoeHostOps o;
  // Attention block (M transformer_layer.py with the TE spec): modules: the QKV LayerNormLinear,
  // DotProductAttention, the output RowParallelLinear and the pre-MLP TENorm (a MoE layer's
  // norm is not fused into the router); plain ops: RoPE of q and k, bias-dropout-add, and the
  // reshapes / contiguous copies between them (4): 4 modules + 7 ops forward. Backward: the
  // four modules' backward, RoPE (2), bias-dropout-add and the residual gradient adds (4).
  o.attn = {4 * M + 7, 4 * M + 6};
  if (tp > 1) {  // the sequence-parallel all-gather / reduce-scatter and their backward twins
    o.attn.fwd += 2 * M;
    o.attn.bwd += 2 * M;
  }
  // Router (M router.py TopKRouter): router_gating_linear, the fused top-k with its score
  // function, the fused load-balancing loss and its MoEAuxLossAutoScaler attach, the fp32 cast:
  // 6 ops forward; gate dgrad + wgrad, top-k and aux-loss backward: 4.
  o.router = {6, 4};
  // Preprocessing and dispatch/combine per dispatcher (M token_dispatcher.py).
  switch (d) {
    case MoeDispatcher::kAllToAll:
      // preprocess(): routing_map.sum, the input-split reshape-sum, the all-gather of the
      // counts over the TP×EP group (buffer and NCCL call), the local-expert slice, three sums,
      // the output-split index; _maybe_dtoh_and_synchronize: five host copies on the side
      // stream, its wait_stream and record_event: 16 ops forward, none backward (integers).
      o.preprocess = {16, 0};
      // Modules: permute (TE moe_permute_with_probs), all_to_all of tokens and of probs,
      // sort_chunks_by_idxs; combine: sort back, all_to_all, unpermute: 7, plus the view and
      // output reshape (2 ops). Backward: the seven modules' backward.
      o.dispatch = {7 * M + 2, 7 * M};
      break;
    case MoeDispatcher::kAllGather:
      // dispatch_postprocess: local_map slice, sum, .cpu(): 3 ops.
      o.preprocess = {3, 0};
      // Modules: all-gather of tokens, probs and routing map, permute, unpermute,
      // reduce-scatter: 6; backward the same.
      o.dispatch = {6 * M, 6 * M};
      break;
    case MoeDispatcher::kFlex:
      // HybridEP setup_metadata: routing-map / probs reshape and the fp32 probs cast; after the
      // dispatch the tokens-per-expert cast and sum: 3 ops.
      o.preprocess = {3, 0};
      // Modules: hybrid_ep_dispatch (fused permute + dispatch) and hybrid_ep_combine (fused
      // combine + unpermute): 2, plus the padding trim (1 op); backward the two modules.
      o.dispatch = {2 * M + 1, 2 * M};
      break;
  }
  // Experts (M experts.py TEGroupedMLP; T grouped_linear.py): modules linear_fc1, the weighted
  // SwiGLU, linear_fc2 (3) and the split-size tolist, probs cast and output buffer (3 ops)
  // forward; the three modules' backward and the probs gradient and buffer (2 ops) backward.
  // Inside each GroupedLinear, per local expert: one GEMM launch forward, dgrad and wgrad
  // backward (cublaslt_gemm.cu's per-expert loop), and with FP8 one quantisation launch of the
  // input forward and of the output gradient backward (_split_quantize): per expert 2 (+2 FP8)
  // forward, 4 (+2 FP8) backward over FC1 and FC2. Each per-expert GEMM counts as a full plain
  // op although it is launched from C++, not Python: TE's cublas_gemm builds its cuBLASLt layouts
  // and descriptor and queries cublasLtMatmulAlgoGetHeuristic on every call (T cublaslt_gemm.cu,
  // cublasLtMatrixLayoutCreate / cublasLtMatmulDescCreate / cublasLtMatmulAlgoGetHeuristic before
  // each cublasLtMatmul).
  const double n = std::max(0.0, local_experts);
  o.experts.fwd = 3 * M + 3 + n * (2.0 + (fp8 ? 2.0 : 0.0));
  o.experts.bwd = 3 * M + 2 + n * (4.0 + (fp8 ? 2.0 : 0.0));
  // The fused grouped MLP (TE's CuTe DSL kernels through the op fuser; moe_recipe.cpp) runs every
  // expert's FC1, SwiGLU, FC2 and casts in one module call, forward and backward.
  if (fused_mlp) o.experts = {M + 3, M + 2};
  return o;
}

HostOps graphed_host_ops(const MoeHostOps& o, unsigned scope) {
  // A graphed scope replays its captured kernels with one graph launch per pass (TE
  // make_graphed_callables graphs the forward and the backward of the module; NVIDIA CUDA
  // programming guide §4.2: "CPU launch costs are reduced compared to streams").
  if (scope & kGraphFullIteration) return {};  // one launch per step for everything
  // TE's graphed callable is itself a Python autograd module around cudaGraphLaunch: one module
  // call per pass.
  auto part = [](const HostOps& h, bool graphed) {
    if (!graphed) return h;
    return HostOps{h.fwd > 0 ? kTeModuleOps : 0.0, h.bwd > 0 ? kTeModuleOps : 0.0};
  };
  HostOps r;
  auto add = [&r](const HostOps& h) {
    r.fwd += h.fwd;
    r.bwd += h.bwd;
  };
  add(part(o.attn, (scope & kGraphAttn) != 0));
  if (scope & kGraphMoe) {
    // The whole MoE block (router, preprocessing, dispatch, experts) as one graph.
    add(HostOps{kTeModuleOps, kTeModuleOps});
  } else {
    add(part(o.router, (scope & kGraphMoeRouter) != 0));
    add(part(o.preprocess, (scope & kGraphMoePreprocess) != 0));
    add(o.dispatch);
    add(o.experts);
  }
  return r;
}

HostOps moe_layer_host_time(const Problem& pb, const Candidate& c) {
  const ModelSpec& m = pb.model;
  if (m.moe_experts <= 0) return {};
  unsigned scope = 0;
  if (!parse_cuda_graph_scope(pb.training.cuda_graph_scope, &scope)) scope = 0;  // check() refuses
  const int ep = std::max(1, c.ep);
  const bool fp8 = pb.training.precision == "fp8";
  const auto disp = static_cast<MoeDispatcher>(pb.training.moe_dispatcher);
  MoeHostOps counts = moe_host_op_counts(disp, double(m.moe_experts) / ep, fp8, c.tp,
                                         fused_grouped_mlp_active(pb.training, pb.gpu));
  // The flex dispatcher on DeepEP (moe_flex_backend.cpp, docs/moe.md "DeepEP's host wait").
  if (disp == MoeDispatcher::kFlex &&
      static_cast<MoeFlexBackend>(pb.training.moe_flex_backend) == MoeFlexBackend::kDeepEp)
    counts = deepep_host_op_counts(counts);
  const HostOps ops = graphed_host_ops(counts, scope);
  const double t = pb.gpu.host_op_s;
  HostOps s{ops.fwd * t, ops.bwd * t};
  if (c.recompute == Recompute::kFull) s.bwd += s.fwd;  // the forward runs again
  return s;
}

double pass_time_with_host(double gpu_s, double host_s) { return std::max(gpu_s, host_s); }

// Serial host time under the all-to-all dispatcher (docs/moe.md "Serial host time under the
// all-to-all dispatcher").
//  * What the code does (M token_dispatcher.py, MoEAlltoAllTokenDispatcher): preprocess()
//    all-gathers the token counts over the TP×EP group (gather_from_sequence_parallel_region),
//    _maybe_dtoh_and_synchronize makes the host-copy stream wait for the compute stream
//    (cuda_dtoh_stream.wait_stream(current_stream)) and the host then blocks on
//    d2h_event.synchronize() at cuda_sync_point "before_ep_alltoall". Each layer's forward thus
//    empties the GPU queue and waits for the slowest rank of the EP group to reach the same
//    layer; the input / output split sizes of both all-to-alls (forward and backward), of the
//    chunk sort and of the grouped GEMM are host integers taken at that point.
//  * What the composition is: max(GPU, host) (pass_time_with_host) assumes that, after the wait,
//    the host's launches overlap the GPU's execution of what it launched before. The runs made
//    with this dispatcher do not show that overlap: on every row of
//    tests/validation/runs-moe.csv with moe_dispatcher = alltoall and no EP overlap, the measured
//    step exceeds the GPU-only prediction by at least 0.6 times the counted host time per MoE
//    layer and micro-batch (0.96 to 1.8 times on the DeepSeek-V3 and Qwen3 rows, 0.6 to 2.4 on
//    the GB200 / GB300 / H100 GPT-OSS rows), also where the GPU time is the larger (DGX B300
//    Qwen3-235B at MBS 2: GPU 13.0 ms, host 3.8 ms, measured excess 3.6 ms; the same model at
//    MBS 1 on DGX B200: 6.7, 3.8, 4.2 ms), where max() adds nothing. The excess
//    grows with the host time, not with the tokens (MBS 1 and 2 above), which is what a
//    serial composition gives and a larger per-operation time under max() does not (it would
//    need 2.9 times the counted host time at MBS 1 and 4.4 times at MBS 2). The flex (HybridEP)
//    rows, which synchronise too, show less and no common figure (0.2 to 0.9 times on the DGX
//    B200 / B300 DeepSeek-V3 and Qwen3 rows, -0.6 on the H100 Qwen3-30B EP 16 rows, -0.6 to 0.4
//    on GB200 / GB300), so they keep max(). The composition is a structural choice read from the
//    rows (no constant is fitted); the split = fit rows alone show the same (docs/moe.md).
// The rule itself lives in moe_host_wait_serial (moe_flex_backend.cpp), which also covers the
// flex dispatcher's DeepEP backend; this form is the default HybridEP backend's.
double moe_pass_time(MoeDispatcher d, double gpu_s, double host_s) {
  return moe_pass_time_with_backend(d, MoeFlexBackend::kHybridEp, gpu_s, host_s);
}

}  // namespace ppsearch
