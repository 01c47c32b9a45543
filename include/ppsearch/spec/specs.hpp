// Plain specs of the problem: model, training, GPU, cluster and search knobs.
// SI units inside (bytes, seconds, FLOP/s); config keys carry their units
// (docs/interface.md §2) and are converted once, in spec/keys.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppsearch {

enum class MlpKind : std::uint8_t { kSwiGLU, kGeLU };
enum class AttentionFlops : std::uint8_t { kFull, kCausal };
// What "selective" recomputation recomputes (docs/memory.md "Activations"): Megatron's core
// attention (Korthikanti et al.), or torchtitan's per-op policy, which keeps the outputs of
// every other matmul and of attention and recomputes the rest.
// kMlaUpProj: Megatron-Core recompute_modules = ["mla_up_proj"] alone (docs/moe.md
// "Recomputation").
enum class SelectiveRecompute : std::uint8_t { kCoreAttention = 0, kPerOp = 1, kMlaUpProj = 2 };
enum class Recompute : std::uint8_t { kNone = 0, kSelective = 1, kFull = 2 };
// Keep in step with schedule/schedule.hpp's ScheduleKind (same numeric values).
enum class Schedule : std::uint8_t {
  kGPipe = 0,
  k1F1B = 1,
  kInterleaved1F1B = 2,
  kZBH1 = 3,
  // ZB-V and DualPipe schedules (docs/algorithms.md §2): appended, values stay in step.
  kZBV = 4,
  kDualPipe = 5,
  // ZB-H2 schedule (docs/algorithms.md §2): appended, value in step with ScheduleKind::kZBH2.
  kZBH2 = 6,
};
inline constexpr int kNumSchedules = 7;
inline constexpr int kNumRecompute = 3;

const char* to_string(Recompute);
const char* to_string(Schedule);
const char* to_string(MlpKind);
const char* to_string(AttentionFlops);
bool parse_recompute(const std::string&, Recompute*);
bool parse_schedule_name(const std::string&, Schedule*);

// FP8 scaling recipe (Transformer Engine): per-tensor delayed scaling (amax history), per-tensor
// current scaling (amax of the tensor itself, one more pass), or MXFP8 block scaling (Blackwell).
enum class Fp8Recipe : std::uint8_t { kDelayed = 0, kCurrent = 1, kMxfp8 = 2 };

// Context-parallel attention (docs/step-time.md "Long-sequence context parallelism"): Megatron /
// Transformer Engine's p2p ring, or PyTorch's context_parallel with its all-gather or all-to-all
// K/V rotation (torch.distributed.tensor.experimental._attention).
enum class CpCommType : std::uint8_t { kP2p = 0, kTorchAllGather = 1, kTorchAllToAll = 2 };

struct ModelSpec {
  std::string name = "model";
  int layers = 0;           // transformer layers L_t
  int hidden_size = 0;      // h
  int ffn_hidden_size = 0;  // F (width of each MLP matrix)
  int attention_heads = 0;  // a
  int kv_heads = 0;         // g (0 in a file = same as attention_heads; resolved on load)
  int head_dim = 0;         // d_h (0 = hidden_size / attention_heads; resolved on load)
  int vocab_size = 0;       // V (padded)
  int seq_length = 0;       // s
  MlpKind mlp = MlpKind::kSwiGLU;
  bool tied_embeddings = false;
  // Mixture of experts and multi-head latent attention (docs/moe.md); 0 = dense / plain attention.
  int moe_experts = 0;                 // routed experts E (0 = dense model)
  int moe_top_k = 0;                   // routed experts per token k
  int moe_ffn_hidden_size = 0;         // width of one routed expert F_e (0 = ffn_hidden_size)
  int moe_shared_experts = 0;          // shared experts run on every token
  int moe_shared_ffn_hidden_size = 0;  // width of one shared expert (0 = moe_ffn_hidden_size)
  int moe_first_dense_layers = 0;      // leading layers with a dense MLP of ffn_hidden_size
  int mla_q_lora_rank = 0;             // MLA query compression rank (0 = plain q projection)
  int mla_kv_lora_rank = 0;            // MLA key/value compression rank (0 = no MLA)
  int mla_qk_rope_head_dim = 0;        // MLA decoupled RoPE width per head
  int mla_qk_nope_head_dim = 0;        // MLA query/key width per head without RoPE
  int mla_v_head_dim = 0;              // MLA value width per head
  // Sliding-window attention (docs/moe.md "Sliding-window attention"; GPT-OSS).
  int attention_window = 0;       // keys before each query in a windowed layer (0 = full)
  int window_attn_skip_freq = 0;  // every N-th layer is full attention (0 = all windowed)
  // Multi-token prediction (docs/moe.md "MTP"; DeepSeek-V3 §2.2, Megatron-Core mtp_num_layers).
  int mtp_layers = 0;  // MTP modules on the last pipeline stage (0 = none)
  // Linear biases (docs/moe.md "Linear biases"; Megatron-Core add_bias_linear, GPT-OSS).
  bool linear_bias = false;  // every linear layer carries a bias
  // YaRN RoPE as its own position-embedding type (docs/moe.md "YaRN RoPE"; GPT-OSS).
  bool yarn_rope = false;  // Megatron-Core position_embedding_type = yarn
  // Document-masked attention (docs/step-time.md "Document-masked attention"): mean length of
  // the packed documents within which attention stays (block-causal masks); 0 = plain causal.
  int attention_document_tokens = 0;
  // ALiBi position biases (docs/step-time.md "ALiBi on materialised attention scores"; BLOOM).
  bool alibi = false;  // attention scores get ALiBi's per-head linear bias
  // Clamped gated activation (docs/moe.md "Clamped GLU activation"; GPT-OSS).
  double activation_clamp = 0;  // Megatron-Core activation_func_clamp_value (0 = no clamp)
};

struct TrainingSpec {
  int global_batch_size = 0;  // sequences per optimizer step
  std::string precision = "bf16";
  AttentionFlops attention_flops = AttentionFlops::kFull;
  bool overlap_grad_reduce = true;   // Megatron --overlap-grad-reduce
  bool overlap_param_gather = true;  // Megatron --overlap-param-gather (distributed optimizer)
  // Main gradients (the DP gradient buffer) in fp32 (Megatron's default for bf16:
  // arguments.py sets accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16)
  // or in bf16 (NeMo/Megatron-Bridge performance recipes). docs/memory.md.
  bool grad_reduce_in_fp32 = true;
  // Cross entropy that overwrites the bf16 logits with their gradient in place (no fp32
  // logits copy), e.g. Transformer Engine's parallel cross entropy; false = Megatron's
  // vocab-parallel cross entropy, which keeps an fp32 copy. docs/memory.md.
  bool cross_entropy_fusion = false;
  SelectiveRecompute selective_recompute = SelectiveRecompute::kCoreAttention;
  double tokens = 0;  // training.tokens: tokens of the whole training run; 0 = not given
  // FP8 (docs/precision.md): the scaling recipe when precision = "fp8".
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  // FP8 primary weights (Megatron --fp8-param-gather): the FP8 weight replaces the bf16 copy.
  bool fp8_param_gather = false;
  // FP8 forward reduce-scatters (Transformer Engine Userbuffers fp8_buf on proj_fprop and
  // fc2_fprop): with delayed scaling, TP > 1, SP and training.tp_comm_overlap, the GEMM epilogue
  // of the out-projection and FC2 writes FP8 and the reduce-scatter moves one byte an element
  // (docs/precision.md "FP8 reduce-scatters of the forward").
  bool tp_fp8_reduce_scatter = false;
  // FP8 delayed scaling's amax reduction over the TP×CP group only instead of TP×CP×DP
  // (Megatron-Core TransformerConfig.tp_only_amax_red; docs/precision.md "Amax reductions").
  bool tp_only_amax_red = false;
  // Mixture of experts (docs/moe.md).
  double moe_load_imbalance = 1.0;  // tokens on the busiest expert rank / the mean (1 = balanced)
  double moe_a2a_overlap = 0.0;     // fraction of the dispatch/combine all-to-all hidden
  double moe_grouped_gemm_efficiency = 1.0;  // grouped expert GEMM throughput / dense GEMM's
  // FP8 grouped expert GEMMs: a further factor on moe_grouped_gemm_efficiency, fitted on the
  // split = fit rows of tests/validation/runs-moe.csv (docs/moe.md "FP8 grouped GEMM efficiency").
  double moe_grouped_gemm_efficiency_fp8 = 0.65;
  // Software stack and step-time mechanisms (docs/step-time.md). training.stack names a profile
  // (spec/stacks.hpp) that sets the keys below and the overlap / fusion keys above unless given;
  // the loader applies it, so a Problem built in code keeps these struct defaults.
  std::string stack = "nemo-25.x";
  bool tp_comm_overlap = true;  // TP collectives pipelined with their GEMMs (TE userbuffers)
  bool p2p_overlap = true;      // interleaved schedules send/receive asynchronously
  double attention_efficiency_scale = 1.0;  // FlashAttention generation, × gpu.attention_efficiency
  bool fused_elementwise = true;            // fused norm / activation / RoPE kernels (false: eager)
  // Core attention runs llm-foundry's Triton FlashAttention built by the pre-MLIR Triton
  // (triton-pre-mlir): its speed relative to FlashAttention-2 is gpu.triton_attention_scale
  // (docs/step-time.md "llm-foundry: the Triton kernel on Hopper").
  bool triton_attention = false;
  double step_overhead_s = 0.02;  // per-step data loading, logging, Python (seconds)
  // Optimizer state (docs/memory.md "Optimizer state"); defaults from training.stack.
  // Dtype of the optimizer's main weights and Adam moments: "fp32" (Megatron, FSDP) or "bf16"
  // (Apex DistributedFusedAdam with dtype=bf16, as NeMo 1.0 recipes set in optim.dtype).
  std::string optimizer_state_dtype = "fp32";
  // Under ZeRO-3 the sharded parameters are themselves the fp32 main weights (PyTorch FSDP
  // mixed precision: fp32 shards, bf16 gathered copies), so no separate 16-bit shard is kept.
  bool fsdp_fp32_params = false;
  // Fused cross entropy (docs/memory.md "Logits"): true when the kernel writes the logits'
  // gradient into the logits (Transformer Engine), false when it allocates a new bf16 gradient
  // (flash-attn's Triton kernel with inplace_backward = False, as llm-foundry runs it).
  bool cross_entropy_inplace = true;
  // MoE host time per micro-batch (docs/moe.md "Host time of a MoE layer"; names and parsing in
  // spec/host_keys.hpp). Defaults: the Megatron-Bridge MoE performance recipes on Blackwell,
  // the flex dispatcher with CUDA graphs of attention, router and preprocessing.
  int moe_dispatcher = 2;  // MoeDispatcher: 0 alltoall, 1 allgather, 2 flex
  std::string cuda_graph_scope = "attn+moe_router+moe_preprocess";  // '+'-joined, or none
  // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features"): FP8 core attention (TE
  // fp8_dot_product_attention) and the fused grouped expert MLP (TE's CuTe DSL kernels).
  bool fp8_attention = false;
  bool moe_fused_grouped_mlp = false;
  // torch.compile (docs/step-time.md "torch.compile (torchtitan)"): full recomputation replays only
  // what the backward reads, so the FC2 GEMM and the TP collective after it are not replayed (a
  // compiled graph's partitioner; eager checkpointing replays the whole layer). Default from
  // training.stack.
  bool recompute_skip_fc2 = false;
  // The backward TP collectives of the input gradients overlap the wgrad / dgrad GEMMs
  // (Megatron's asynchronous TP all-reduce / reduce-scatter); false: they run exposed after
  // each linear's backward (DTensor TP in torchtitan). Default from training.stack.
  bool tp_bwd_overlap = true;
  // Q, K, V and the SwiGLU gate and up projections as separate GEMMs (torchtitan's wq, wk, wv,
  // w1, w3) rather than one fused QKV and one fused FC1 GEMM (Megatron). Default from
  // training.stack.
  bool split_linears = false;
  // FSDP backward prefetch (docs/step-time.md "llm-foundry: FSDP backward prefetch"): under
  // ZeRO-3 the backward re-gathers each unit's weights; true when that gather is issued ahead
  // of the unit's backward and hides behind the compute (PyTorch FSDP BACKWARD_PRE, FSDP2,
  // Megatron/NeMo), false when it is issued only after the previous unit's gradients
  // (BACKWARD_POST, Composer 0.16's default) and the backward waits for it.
  bool overlap_backward_gather = true;
  // Long-sequence context parallelism (docs/step-time.md "Long-sequence context parallelism"):
  // how the CP attention exchanges K/V (no stack profile sets it: docs/step-time.md says why).
  CpCommType cp_comm_type = CpCommType::kP2p;
  // The flex dispatcher's backend (docs/moe.md "DeepEP's host wait"): 0 hybridep, 1 deepep
  // (MoeFlexBackend, include/ppsearch/cost/moe_flex_backend.hpp).
  int moe_flex_backend = 0;
  // Unfused core attention (docs/step-time.md "ALiBi on materialised attention scores"): the
  // scores are a [b·heads, s, s] tensor in HBM (baddbmm, softmax, bmm; Megatron-LM and
  // Megatron-DeepSpeed before FlashAttention). Only the ALiBi bias pass depends on it.
  bool unfused_attention = false;
  // DeepSpeed's BF16_Optimizer in the pipeline engine (docs/step-time.md "DeepSpeed's BF16
  // optimizer"): under ZeRO-1 the gradients are all-reduced in full, not reduce-scattered, before
  // each rank updates its shard and the shards are all-gathered.
  bool zero1_grad_allreduce = false;
  // Deferred output-layer weight gradient (docs/step-time.md "Deferred output-layer wgrad"):
  // Megatron-Core's defer_embedding_wgrad_compute buffers the output layer's input and output
  // gradient of the first wgrad_deferral_limit micro-batches (0 = all) and runs their wgrad GEMMs
  // after the last pipeline rank's last backward, in the pipeline flush. Only with pp > 1.
  bool defer_embedding_wgrad = false;
  int wgrad_deferral_limit = 0;
  // Optimizer step by implementation (docs/step-time.md "Optimizer step by implementation"):
  // "megatron" (fused Adam over fp32 main weights, 16-bit copy written, gradient buffer zeroed),
  // "torch-foreach" or "torch-fused" (torch.optim.AdamW on FSDP2's fp32 shards, gradients set to
  // None). Default from training.stack.
  std::string optimizer_impl = "megatron";
  // FSDP's gradient reduction (docs/step-time.md "FSDP's gradient passes and early-stopping
  // recomputation"): which FSDP runs the ZeRO-2/3 reduce-scatters, and so which element-wise passes
  // it makes over each unit's unsharded gradient every micro-batch (cost/fsdp_grad.hpp): "none"
  // (Megatron-style gradient buffers), "fsdp1" or "fsdp2" (PyTorch). Default from training.stack.
  std::string fsdp_impl = "none";
  // Fused norms in eager code (docs/step-time.md "Fused RMSNorm in eager PyTorch"): with
  // fused_elementwise = false, the two norms of a layer (and the final norm) still run as one
  // kernel each, at the fused bandwidth, while the other element-wise ops stay eager. PyTorch's
  // F.rms_norm / nn.RMSNorm on CUDA from 2.9 (at::_fused_rms_norm). Default from training.stack.
  bool fused_norm = false;
  // TP overlap by PyTorch's micro-pipelined async TP on SymmetricMemory (torchtitan
  // enable_async_tensor_parallel; docs/step-time.md "Async TP's own passes"): with
  // tp_comm_overlap and SP, each fused matmul-reduce-scatter sums its partial outputs in a
  // separate pass and each fused all-gather-matmul copies its local shard first. Transformer
  // Engine's Userbuffers (false) reduce inside the communication kernels. Default from
  // training.stack.
  bool tp_symm_mem = false;
};

struct GpuSpec {
  std::string name;
  double peak_flop_per_s = 0;  // dense 16-bit
  double memory_bytes = 0;     // HBM capacity
  double hbm_bytes_per_s = 0;  // HBM bandwidth
  // Calibration constants (each preset documents its source).
  int sm_count = 132;     // for wave quantisation
  int gemm_tile_m = 128;  // output tile for wave quantisation
  int gemm_tile_n = 256;
  double gemm_efficiency = 0.8;       // achievable fraction of peak for large GEMMs (MAMF / peak)
  double gemm_overhead_s = 4e-6;      // fixed cost per GEMM kernel
  double attention_efficiency = 0.5;  // FlashAttention achieved fraction of peak
  // Fixed work of one attention query tile, in 128-key blocks, beyond the blocks it computes:
  // the causal kernel runs at attention_efficiency × n / (n + this), n = the keys of one call /
  // 128 (cost/attention_window.hpp attention_length_factor). 0 = one rate at every length.
  double attention_tile_blocks = 0.0;
  double memory_efficiency = 0.8;      // achieved HBM fraction for element-wise ops
  double memory_reserved_bytes = 2e9;  // CUDA context + library workspaces
  double activation_overhead = 1.08;  // allocator fragmentation / temporaries factor on activations
  double comm_buffer_bytes = 0.7e9;   // per NCCL communicator
  double memory_headroom_bytes = 0;  // kept free on every GPU: feasible when need ≤ memory − this
  // Not a key: the HBM fraction of the library kernels' (GEMM, grouped GEMM) roofline when the
  // stack's element-wise kernels run eager; 0 = memory_efficiency. stack_costed()
  // (cost/items.hpp) sets it to the fused figure before it derates memory_efficiency.
  double gemm_memory_efficiency = 0;
  double gemm_memory_bandwidth() const {
    return hbm_bytes_per_s *
           (gemm_memory_efficiency > 0 ? gemm_memory_efficiency : memory_efficiency);
  }
  // GEMM shape curve and FP8 (docs/precision.md; src/cost/gemm.cpp).
  double gemm_k_overhead = 64;     // per-tile fill/drain, in extra bf16 k-steps
  int gemm_split_k_min = 32;       // smallest k slice of a split-K GEMM; 0 = no split-K
  double peak_fp8_flop_per_s = 0;  // dense FP8 tensor-core peak; 0 = no FP8 (fp8 refused)
  double gemm_efficiency_fp8 = 0;  // fraction of the FP8 peak in training; 0 = gemm_efficiency
  bool mxfp8 = false;              // tensor cores take block-scaled MXFP8 (Blackwell)
  // Step-time mechanisms (docs/step-time.md).
  // Share of compute throughput lost while a collective runs beside it.
  double comm_contention = 0.25;
  double kernel_overhead_s = 3e-6;  // fixed cost per non-GEMM kernel (launch, prologue, tail)
  // Usable capacity (docs/memory.md "Capacity"): bytes the CUDA runtime reports as the device's
  // total memory per nominal byte of memory_bytes; the fit check uses memory_bytes × this.
  double memory_usable_factor = 1.0;
  double usable_memory_bytes() const { return memory_bytes * memory_usable_factor; }
  // Power-limited clock (docs/step-time.md "Power-capped GPUs"): sustained tensor-core clock
  // under the board's power limit relative to the part gemm/attention_efficiency were fitted on.
  double clock_scale = 1.0;
  // llm-foundry's pre-MLIR Triton FlashAttention kernel (training.triton_attention) against the
  // FlashAttention-2 rate that attention_efficiency × training.attention_efficiency_scale gives
  // (docs/step-time.md "llm-foundry: the Triton kernel on Hopper"): 1 where it keeps up (Ampere,
  // the architecture that Triton generation targets), fitted on Hopper.
  double triton_attention_scale = 1.0;
  // MoE host time (docs/moe.md "Host time of a MoE layer"): host time of one PyTorch operation
  // that launches one kernel, on the host CPU that drives this GPU (x86 DGX/HGX; Grace on
  // GH200/GB200/GB300 presets), seconds.
  double host_op_s = 13.5e-6;
  // MXFP8 on Blackwell (docs/precision.md "MXFP8 against per-tensor FP8").
  // The FP8 GEMMs take any operand layout (Transformer Engine's nvte_is_non_tn_fp8_gemm_supported:
  // sm 10.x and 13.x), so per-tensor FP8 casts write no transposed copy.
  bool fp8_non_tn_gemm = false;
  // Rate of an MXFP8 block-scaled GEMM as a fraction of the per-tensor FP8 GEMM's (TE's GEMM
  // benchmark on B300, pre-quantised: 6.812 / 7.161 ms per layer).
  double mxfp8_gemm_efficiency = 0.951;
};

struct ClusterSpec {
  std::string name;
  std::string gpu_preset;  // name of the GPU preset the cluster uses (informational once resolved)
  int gpus_per_node = 8;
  int nvlink_domain_size = 0;     // 0 = gpus_per_node (resolved on load)
  double nvlink_bytes_per_s = 0;  // per GPU, per direction
  double nvlink_latency_s = 0;
  double network_bytes_per_s = 0;  // scale-out NIC bandwidth per GPU, per direction
  double network_latency_s = 0;
  std::string fabric = "infiniband";
  // Calibration constants.
  double nvlink_efficiency = 0.8;  // achieved bus bandwidth / line rate
  double network_efficiency = 0.9;
  double tp_comm_overlap = 0.0;  // fraction of TP communication hidden behind compute
  double dp_comm_overlap = 0.9;  // no effect (older files load); docs/step-time.md
  bool p2p_blocking = true;      // Megatron non-interleaved 1F1B uses blocking p2p
  bool allow_tp_across_domains = false;
  double price_per_gpu_hour = 0;  // cluster.price_per_gpu_hour, user's currency; 0 = not given
  // Step-time mechanisms (docs/step-time.md): per-rank step-time jitter (coefficient of variation)
  // behind the straggler term of the blocking collectives.
  double step_jitter = 0.003;
  // Fabric model (docs/topology.md): scale-out NICs, leaf switches, taper, routing, NVLS, SHARP.
  int nics_per_node = 0;          // scale-out NICs per node; 0 = one per GPU
  bool rail_optimized = true;     // NIC i of every node on the leaf of rail i
  int leaf_nic_ports = 0;         // NIC-facing ports of one leaf switch; 0 = one non-blocking tier
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth (taper), ≥ 1
  bool adaptive_routing = true;   // false: static ECMP hashing of flows onto the uplinks
  double nvls_bytes_per_s = 0;    // NVLink SHARP all-reduce bus bandwidth; 0 = no NVLS
  bool sharp = false;             // in-network all-reduce (SHARP / NCCL CollNet) across nodes
};

struct SearchSpec {
  // Empty list = auto (every valid value).
  std::vector<int> tp, pp, cp, vpp, mbs;
  std::vector<Schedule> schedule;
  std::vector<Recompute> recompute;
  std::vector<int> sp;    // 0/1
  std::vector<int> zero;  // 0..3
  // With recompute = full: layers recomputed per stage, 0 = all (default); empty (auto) = per
  // stage the fewest that fit (docs/memory.md "Partial recomputation").
  std::vector<int> recompute_num_layers = {0};
  bool reference_partitioner = false;  // --partitioner reference
  bool full_simulation = false;  // simulate every micro-batch instead of the periodic fast path
  // Sweep budget (search.max_candidates): a sweep with more candidates stops with exit 2.
  int max_candidates = 500000;
  // Mixture of experts (docs/moe.md): expert-parallel and expert-tensor-parallel degrees.
  std::vector<int> ep, etp;
  // FSDP (ZeRO-2/3) together with pipeline parallelism, as torchtitan runs it (docs/moe.md
  // "FSDP with TP and PP"); off = the rule zero23_needs_pp1 (Megatron, DeepSpeed).
  bool fsdp_with_pp = false;
  // A fixed pipeline layout in Megatron-LM's notation (docs/memory.md "A fixed pipeline layout"):
  // when set, the candidates use it instead of the partitioner; "" = the partitioner decides.
  std::string pp_layout;
};

struct Problem {
  ModelSpec model;
  TrainingSpec training;
  GpuSpec gpu;
  ClusterSpec cluster;
  SearchSpec search;
  std::vector<int> gpus;  // GPU counts to search
};

// The factor on gpu.attention_efficiency for the problem's attention kernels: the stack's
// FlashAttention generation, times the Triton kernel's rate on this GPU when the stack runs
// it (docs/step-time.md "llm-foundry: the Triton kernel on Hopper").
inline double attention_scale(const Problem& p) {
  return p.training.attention_efficiency_scale *
         (p.training.triton_attention ? p.gpu.triton_attention_scale : 1.0);
}

}  // namespace ppsearch
