// Software-stack profiles (docs/step-time.md "Software stacks"). Each row says what a training
// framework overlaps and fuses when a user runs its published recipe; the sources of each
// setting are given in docs/step-time.md, summarised beside the rows.
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

// Columns: grad-reduce overlap, param-gather overlap, TP comm overlap, p2p overlap (interleaved),
// attention efficiency scale, fused element-wise kernels, fused cross entropy, fp32 main grads;
// after the summary, the optimizer-state dtype and whether FSDP shards are the fp32 main weights.
// The later profiles set up to twenty-one fields, which clang-format would put one a line.
// clang-format off
constexpr StackProfile kProfiles[] = {
    // Megatron-LM as in Narayanan et al. (SC21): the local DDP all-reduces the contiguous
    // gradient buffer after the backward (no --overlap-grad-reduce, which came in 2023), no
    // distributed optimizer yet (so no parameter gather), no TE userbuffers, interleaved p2p as
    // batched isend/irecv waited at once; vocab-parallel cross entropy with its fp32 copy; fp32
    // main gradients. No FlashAttention: the s x s scores are materialised and the softmax is
    // memory-bound. The code of the time had fused kernels (apex's fused layer norm, the
    // TorchScript bias-GeLU and bias-dropout-add, the scaled masked softmax), but the SC21 rows
    // fit only with the element-wise kernels at half the preset's fused bandwidth: an effective
    // factor, not a statement about the kernels (docs/step-time.md "Megatron-LM 2022:
    // element-wise kernels against Korthikanti Table 4"). Attention at 0.2 of the preset's
    // fused-attention efficiency (0.08 of peak), fitted on the A100 rows.
    {"megatron-2021", false, false, false, false, 0.2, false, false, true,
     "Megatron-LM 2021 (SC21): no DP, TP or p2p overlap, fp32 grads", "fp32", false},
    // Megatron-LM 2022 as in Korthikanti et al. (arXiv 2205.05198): the code that added sequence
    // parallelism and selective recomputation, otherwise as megatron-2021 (no overlaps, no
    // FlashAttention, fp32 grads), with its fused element-wise kernels at the fused bandwidth
    // (apex's fused and persistent layer norm, megatron/model/fused_layer_norm.py; TorchScript
    // bias-dropout-add and bias-GeLU). The paper's Table 4 measures one 22B layer (A100, TP 8,
    // micro-batch 4 x 2048) in five settings; this profile reproduces all five within 2.4 %. The
    // megatron-2021 factor puts the three without SP 10-13 % too slow: the replicated layer
    // norms, dropouts and residual adds at half bandwidth cost 2.8 ms a layer where the paper
    // measures 0.6 ms. No constant is fitted to Table 4 (tests/e2e/validation_kor22_table4.sh).
    {"megatron-2022", false, false, false, false, 0.2, true, false, true,
     "Megatron-LM 2022 (Korthikanti et al.: SP, selective recompute): as megatron-2021, fused "
     "element-wise kernels",
     "fp32", false},
    // NeMo 24.x performance recipes (the DGX Cloud benchmark runs): distributed optimizer with
    // overlap_grad_sync and overlap_param_gather (NeMo docs, "Communication Overlap"), TE
    // userbuffers TP overlap (ub_tp_comm_overlap) and overlap_p2p_comm with interleaving
    // (MegatronCommOverlapCallback), cuDNN fused attention through Transformer Engine (the
    // H100 preset's attention efficiency was fitted on these runs: scale 1), TE fused kernels,
    // Megatron's vocab-parallel cross entropy (cross_entropy_loss_fusion off by default), bf16
    // gradient reduction (grad_sync_dtype=bf16 in the launcher's performance configurations).
    {"nemo-24.x", true, true, true, true, 1.0, true, false, false,
     "NeMo 24.x performance recipes: DP, TP and p2p overlap, bf16 grads", "fp32", false},
    // NeMo 25.x / Megatron-Bridge performance recipes: as 24.x, plus the fused cross entropy
    // (cross_entropy_loss_fusion = True) and grad_reduce_in_fp32 = False set by the recipes.
    {"nemo-25.x", true, true, true, true, 1.0, true, true, false,
     "NeMo 25.x / Megatron-Bridge performance recipes: as nemo-24.x plus fused cross entropy",
     "fp32", false},
    // torchtitan (2024 releases): FSDP2 reduce-scatters gradients and prefetches parameter
    // all-gathers behind compute (both overlaps on), TP without async TP
    // (enable_async_tensor_parallel off by default), pipeline p2p not overlapped, attention by
    // PyTorch SDPA (FlashAttention-2 kernels: about 0.7 of cuDNN/FA-3 attention throughput on
    // H100, Shah et al. 2024, FlashAttention-3 §4.1), eager element-wise ops
    // (compile off by default), eager cross entropy, fp32 gradient reduction
    // (mixed_precision_reduce = float32). TP is DTensor's (parallelize_module with
    // ColwiseParallel / RowwiseParallel / SequenceParallel): autograd runs each linear's dgrad and
    // wgrad in one node and the input-gradient collective after it, so the backward TP
    // collectives are not hidden (tp_bwd_overlap false; Megatron launches them between dgrad and
    // wgrad).
    // AdamW foreach=True until Feb 2025 (train.py @3bae958db; "foreach": not fused with
    // optimizer.fused off by default, torchtitan/optimizer.py @904913f7e and @9dec370).
    // Every torchtitan profile: ptd_checkpoint_wrapper is PyTorch's non-reentrant checkpoint,
    // which stops each replay before w2's GEMM (training.recompute_skip_fc2, as compile prunes
    // it), and FSDP2's gradient copy-in before each reduce-scatter (training.fsdp_impl = fsdp2);
    // docs/step-time.md "FSDP's gradient passes and early-stopping recomputation".
    {"torchtitan-2024", true, true, false, false, kFlashAttention2Scale, false, false, true,
     "torchtitan 2024 (FSDP2, eager, SDPA/FA-2): DP overlap only, fp32 grad reduce", "fp32", true,
     true, true, false, true, true, "torch-foreach", false, false, "fsdp2"},
    // Everything a current stack can turn on: every overlap, fused kernels and cross entropy,
    // bf16 gradient reduction. Attention stays at the preset's calibration.
    {"tuned", true, true, true, true, 1.0, true, true, false,
     "every overlap and fusion on, bf16 grads", "fp32", false},
    // Megatron-LM / Megatron-Core as its pretrain_gpt.py runs without extra flags (2024-25):
    // the distributed optimizer's grad reduce and param gather overlap only with
    // --overlap-grad-reduce / --overlap-param-gather (both off by default), TP communication
    // overlap only with --tp-comm-overlap (off), interleaved p2p overlapped (overlap_p2p_comm is
    // on unless --no-overlap-p2p-communication), Transformer Engine fused attention and fused
    // kernels, vocab-parallel cross entropy with its fp32 copy (--cross-entropy-loss-fusion is
    // off by default), fp32 main gradients (accumulate_allreduce_grads_in_fp32 for bf16 unless
    // --grad-reduce-in-bf16), fp32 optimizer state (--main-params-dtype, --exp-avg-dtype and
    // --exp-avg-sq-dtype default fp32). megatron/training/arguments.py.
    {"megatron-core", false, false, false, true, 1.0, true, false, true,
     "Megatron-Core defaults (2024-25): overlaps only when flagged, fp32 grads and state", "fp32",
     false},
    // NeMo 1.0 YAML recipes as they stand (dgxc-benchmarking v25.01
    // nemotron/nemotron4-340b-synth.yaml, NeMo-Framework-Launcher 24.07 nemotron_340b.yaml):
    // Apex distributed_fused_adam with overlap_grad_sync and overlap_param_sync, grad_sync_dtype
    // bf16 and dtype bf16 (the optimizer state in bf16); ub_tp_comm_overlap False and
    // overlap_p2p_comm False; cross_entropy_loss_fusion true; TE fused attention and kernels.
    // The dgxc runs override the two overlaps in nemotron/configure.sh, so their rows name
    // nemo-24.x with a bf16 optimizer_state_dtype column (docs/step-time.md "Software stacks").
    {"nemo-24.09-dfa", true, true, false, false, 1.0, true, true, false,
     "NeMo 24.09 YAML, Apex distributed Adam: bf16 optimizer state, DP overlap only", "bf16",
     false},
    // llm-foundry MPT benchmarks (mosaicml/llm-foundry scripts/train/benchmarking/README.md
    // @5e85bd62d), Composer + PyTorch FSDP1, no TP or PP: FSDP prefetch overlaps the gathers and
    // reduce-scatters. fsdp_config mixed_precision DEFAULT as every table prints it (Composer:
    // bf16 params, fp32 reduce), the fp32 sharded flat parameters are the main weights;
    // decoupled_adamw (two fp32 moments) in the mpt-*.yaml the benchmark scripts load; MPT's
    // loss_fn defaults to fused_crossentropy (flash-attn's xentropy kernel on the bf16 logits:
    // llmfoundry/models/mpt/modeling_mpt.py at v0.3.0 and @5e85bd62d). Element-wise ops: MPT's
    // low_precision_layernorm is F.layer_norm in bf16, its GELU nn.GELU and its residual adds
    // single native kernels, with no RoPE, so the 8- to 64-GPU profile states them fused
    // (training.fused_elementwise = true; docs/step-time.md "llm-foundry: the Triton kernel on
    // Hopper"). Attention: the 8- to 64-GPU tables (#543, Oct 2023, llm-foundry v0.3.0) ran
    // attn_impl: triton (submit_benchmarks.py default; llm-foundry's Triton FlashAttention on
    // triton-pre-mlir): training.triton_attention, at gpu.triton_attention_scale of the FA-2
    // rate (fitted on Hopper, 1 on Ampere). The >= 128-GPU table (#838, Jan 2024) ran flash
    // (flash-attn 2.4.2) for 1b/3b/7b/70b and triton for 13b/30b (sweep.py); its profile,
    // llmfoundry-2024 below, keeps the eager element-wise factor and the FA-2 scale for all its
    // rows as an effective setting: with the stated fused kernels its flash rows come out 12-19 %
    // fast, growing with the GPU count, a cost not found (docs/step-time.md "llm-foundry: the
    // Triton kernel on Hopper").
    // flash-attn's CrossEntropyLoss keeps inplace_backward = False (llmfoundry's
    // FusedCrossEntropyLoss(ignore_index=-100)): the gradient is a new bf16 buffer.
    // The 8- to 64-GPU table (#543) ran llm-foundry v0.3.0, which requires Composer >=0.16.3,
    // <0.17; the mpt-*.yaml set no backward_prefetch, so Composer's FSDP default applies,
    // BACKWARD_POST (composer/trainer/dist_strategy.py set_fsdp_default, v0.16.3-v0.17.0):
    // PyTorch FSDP prefetches the next unit's parameters only after the current unit's gradient
    // computation, so the backward's re-gather is waited for. The >= 128-GPU table is
    // llmfoundry-2024 below.
    // The campaign ran torch 2.1.0 (sweep.sh @b2a43a147: mosaicml/pytorch:2.1.0_cu121), whose
    // non-reentrant checkpoint (activation_checkpointing_reentrant: false) stops each replay
    // before the last linear's GEMM (training.recompute_skip_fc2), and PyTorch FSDP1, which casts
    // each unit's unsharded gradient to the fp32 reduce dtype and pre-divides it before the
    // reduce-scatter (training.fsdp_impl = fsdp1); docs/step-time.md "FSDP's gradient passes and
    // early-stopping recomputation".
    {"llmfoundry-2023", true, true, false, false, kFlashAttention2Scale, true, true, true,
     "llm-foundry MPT, Oct 2023 (Composer 0.16 FSDP): DP overlap, BACKWARD_POST, fused CE, fp32 "
     "shards as main, native element-wise kernels, Triton attention",
     "fp32", true, false, true, true, false, false, "megatron", false, true, "fsdp1"},
    // torchtitan with async TP (enable_async_tensor_parallel = true; torchtitan
    // benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md): the TP all-gather and
    // reduce-scatter are decomposed and pipelined with the matmuls they feed (torch
    // micro-pipeline TP), i.e. TP communication overlap; otherwise as torchtitan-2024, except
    // the optimizer: the page's runs (torchtitan 820504e, Jun 2025) use the fused AdamW that is
    // torchtitan's default from 6e4988550 (Feb 2025; optimizer.implementation = "fused",
    // torchtitan/config_manager.py @820504e). PyTorch's fused async-TP ops sum the TP partial
    // outputs in a separate pass and copy the local shard before each gather
    // (training.tp_symm_mem; docs/step-time.md "Async TP's own passes").
    {"torchtitan-asynctp", true, true, true, false, kFlashAttention2Scale, false, false, true,
     "torchtitan with async TP: DP and TP overlap, fp32 grad reduce", "fp32", true, true, true,
     false, true, true, "torch-fused", false, false, "fsdp2", true},
    // torchtitan with training.compile = true (docs/step-time.md "torch.compile (torchtitan)"):
    // apply_compile
    // wraps each TransformerBlock in torch.compile(fullgraph=True) after the AC wrapper and
    // before FSDP2 (torchtitan/parallelisms/parallelize_llama.py @9dec370,
    // torchtitan/models/llama3/parallelize_llama.py @820504e), so Inductor fuses everything
    // between the GEMMs and SDPA: the fp32 RMSNorm (x.float(), pow, mean, rsqrt, two multiplies,
    // type_as), the complex-fp32 RoPE, the SwiGLU silu and product, the residual adds, and in
    // the backward the recomputed element-wise ops into the gradient kernels (fused element-wise
    // kernels). With full AC the checkpointed block is traced into the graph and the
    // partitioner recomputes only what the backward reads: FC2 (w2) and the TP collective after
    // it are not replayed (torchtitan issue #2763); eager non-reentrant checkpointing stops at the
    // same point (early stop, see torchtitan-2024). Attention stays SDPA (an extern kernel for
    // Inductor), FSDP2 and TP communication run as in torchtitan-2024 (the FSDP2 hooks stay
    // outside the compiled blocks). The loss: eager at 9dec370 ("compiling loss function causes CUDA errors"),
    // compiled from bbb1b616e (Apr 2025, build_cross_entropy_loss); only the logits memory
    // would differ in the engine, and the profile keeps the eager cross entropy.
    // The optimizer as torchtitan-2024 (foreach AdamW, the 2024 code: the Aug and Dec 2024
    // compiled runs); torchtitan-2025-compile below has the fused one.
    {"torchtitan-compile", true, true, false, false, kFlashAttention2Scale, true, false, true,
     "torchtitan with torch.compile per block: fused element-wise, pruned full-AC replay", "fp32",
     true, true, true, false, true, true, "torch-foreach", false, false, "fsdp2"},
    // torchtitan with async TP, which needs compile ("Async TP requires --training.compile",
    // parallelize_llama.py @9dec370 and @820504e): torchtitan-asynctp's TP overlap plus what
    // torchtitan-compile fuses and prunes.
    // The optimizer as torchtitan-asynctp (fused AdamW, the Jun 2025 runs).
    {"torchtitan-asynctp-compile", true, true, true, false, kFlashAttention2Scale, true, false, true,
     "torchtitan with async TP and torch.compile: DP and TP overlap, fused, pruned replay", "fp32",
     true, true, true, false, true, true, "torch-fused", false, false, "fsdp2", true},
    // llm-foundry's ">= 128 GPUs" table (PR #838, Jan 2024, scripts/train/benchmarking/sweep.py
    // @5e85bd62d): as llmfoundry-2023, but sweep.py passes --fsdp_config_backward_prefetch
    // BACKWARD_PRE and --fsdp_config_forward_prefetch true, so the backward's re-gather is
    // issued before each unit's backward and hides behind it (PyTorch FSDP BackwardPrefetch:
    // "the most overlap"). Unlike llmfoundry-2023, an effective profile: eager element-wise ops
    // and the FA-2 scale for every row (flash-attn 2.4.2 for 1b/3b/7b/70b, triton for 13b/30b),
    // see llmfoundry-2023 above and docs/step-time.md "llm-foundry: the Triton kernel on Hopper".
    // torch 2.1 (setup.py @5e85bd62d pins torch>=2.1,<2.1.1) and FSDP1 as llmfoundry-2023.
    {"llmfoundry-2024", true, true, false, false, kFlashAttention2Scale, false, true, true,
     "llm-foundry MPT benchmarks, Jan 2024 (>= 128 GPUs): BACKWARD_PRE; eager element-wise and "
     "FA-2 attention as an effective setting",
     "fp32", true, false, true, true, false, true, "megatron", false, false, "fsdp1"},
    // torchtitan from Feb 2025 (6e4988550, "use Fused AdamW as default"): as torchtitan-2024
    // and torchtitan-compile, but torch.optim.AdamW(fused=True), the default of
    // optimizer.implementation (torchtitan/config_manager.py @820504e,
    // torchtitan/config/job_config.py @ce8a56fe7; no llama3 train config overrides it). One
    // multi-tensor kernel (28 B per parameter) instead of the foreach passes (80 B):
    // docs/step-time.md "Optimizer step by implementation". The RMSNorm became nn.RMSNorm
    // (torchtitan/models/llama3/model.py @820504e, model/model.py @ce8a56fe7); on the torch of
    // these runs (Jun 2025 and earlier) it is the composite, one of the unfused element-wise ops;
    // PyTorch 2.9 fuses it (torchtitan-2025-torch29 below; docs/step-time.md "Fused RMSNorm in
    // eager PyTorch").
    {"torchtitan-2025", true, true, false, false, kFlashAttention2Scale, false, false, true,
     "torchtitan 2025 (FSDP2, eager, fused AdamW): DP overlap only, fp32 grad reduce", "fp32", true,
     true, true, false, true, true, "torch-fused", false, false, "fsdp2"},
    {"torchtitan-2025-compile", true, true, false, false, kFlashAttention2Scale, true, false, true,
     "torchtitan 2025 with torch.compile per block and fused AdamW", "fp32", true, true, true,
     false, true, true, "torch-fused", false, false, "fsdp2"},
    // torchtitan-2025 on PyTorch 2.9 or a nightly from after its fused RMSNorm landed
    // (pytorch/pytorch PR #153666, merged in Jul 2025: issue #157345 still waits for it on
    // 9 Jul 2025, the follow-up PR #159317 of 29 Jul 2025 mends comments "from the original fused
    // rmsnorm PR"; 2.8 has no aten::_fused_rms_norm_backward, 2.9 of 15 Oct 2025 has it). In
    // eager, nn.RMSNorm -> F.rms_norm -> rms_norm_symint dispatches a bf16 input with a bf16
    // weight on CUDA to at::_fused_rms_norm and _fused_rms_norm_backward, one kernel each
    // (aten/src/ATen/native/layer_norm.cpp), where older versions ran rms_norm_composite
    // (upcast, pow, mean, add, rsqrt, two multiplies, type_as). So the norms run at the fused
    // bandwidth while RoPE, SwiGLU and the residual adds stay eager (docs/step-time.md "Fused
    // RMSNorm in eager PyTorch"). Otherwise as torchtitan-2025.
    {"torchtitan-2025-torch29", true, true, false, false, kFlashAttention2Scale, false, false, true,
     "torchtitan 2025 (FSDP2, eager, fused AdamW) on PyTorch 2.9: fused RMSNorm", "fp32", true,
     true, true, false, true, true, "torch-fused", true, false, "fsdp2"},
};
// clang-format on

struct Alias {
  const char* alias;
  const char* name;
};
// The runs CSV's older stack names.
constexpr Alias kAliases[] = {
    {"megatron", "megatron-2021"}, {"nemo", "nemo-24.x"}, {"torchtitan", "torchtitan-2024"}};

}  // namespace

const std::vector<std::string>& stack_keys() {
  static const std::vector<std::string> kKeys = {"training.overlap_grad_reduce",
                                                 "training.overlap_param_gather",
                                                 "training.tp_comm_overlap",
                                                 "training.p2p_overlap",
                                                 "training.attention_efficiency_scale",
                                                 "training.fused_elementwise",
                                                 "training.cross_entropy_fusion",
                                                 "training.grad_reduce_in_fp32",
                                                 "training.optimizer_state_dtype",
                                                 "training.fsdp_fp32_params",
                                                 "training.cross_entropy_inplace",
                                                 "training.recompute_skip_fc2",
                                                 "training.tp_bwd_overlap",
                                                 "training.split_linears",
                                                 "training.overlap_backward_gather",
                                                 "training.optimizer_impl",
                                                 "training.fused_norm",
                                                 "training.triton_attention",
                                                 "training.fsdp_impl",
                                                 "training.tp_symm_mem"};
  return kKeys;
}

const std::vector<std::string>& stack_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const StackProfile& p : kProfiles) v.emplace_back(p.name);
    return v;
  }();
  return kNames;
}

const StackProfile* find_stack(const std::string& name) {
  std::string target = name;
  for (const Alias& a : kAliases) {
    if (name == a.alias) target = a.name;
  }
  for (const StackProfile& p : kProfiles) {
    if (target == p.name) return &p;
  }
  return nullptr;
}

bool apply_stack(Problem* problem, const std::set<std::string>& explicit_keys) {
  const StackProfile* s = find_stack(problem->training.stack);
  if (!s) return false;
  TrainingSpec& t = problem->training;
  auto set = [&](const char* key, auto value, auto& field) {
    if (explicit_keys.count(key) == 0) field = value;
  };
  set("training.overlap_grad_reduce", s->overlap_grad_reduce, t.overlap_grad_reduce);
  set("training.overlap_param_gather", s->overlap_param_gather, t.overlap_param_gather);
  set("training.tp_comm_overlap", s->tp_comm_overlap, t.tp_comm_overlap);
  set("training.p2p_overlap", s->p2p_overlap, t.p2p_overlap);
  set("training.attention_efficiency_scale", s->attention_scale, t.attention_efficiency_scale);
  set("training.fused_elementwise", s->fused_elementwise, t.fused_elementwise);
  set("training.cross_entropy_fusion", s->cross_entropy_fusion, t.cross_entropy_fusion);
  set("training.grad_reduce_in_fp32", s->grad_reduce_in_fp32, t.grad_reduce_in_fp32);
  set("training.optimizer_state_dtype", std::string(s->optimizer_state_dtype),
      t.optimizer_state_dtype);
  set("training.fsdp_fp32_params", s->fsdp_fp32_params, t.fsdp_fp32_params);
  set("training.cross_entropy_inplace", s->cross_entropy_inplace, t.cross_entropy_inplace);
  set("training.recompute_skip_fc2", s->recompute_skip_fc2, t.recompute_skip_fc2);
  set("training.tp_bwd_overlap", s->tp_bwd_overlap, t.tp_bwd_overlap);
  set("training.split_linears", s->split_linears, t.split_linears);
  set("training.overlap_backward_gather", s->overlap_backward_gather, t.overlap_backward_gather);
  set("training.optimizer_impl", std::string(s->optimizer_impl), t.optimizer_impl);
  set("training.fused_norm", s->fused_norm, t.fused_norm);
  set("training.triton_attention", s->triton_attention, t.triton_attention);
  set("training.fsdp_impl", std::string(s->fsdp_impl), t.fsdp_impl);
  set("training.tp_symm_mem", s->tp_symm_mem, t.tp_symm_mem);
  return true;
}

}  // namespace ppsearch
