// One runs row → the Problem it describes, the configurations it allows and the best prediction
// (docs/validation.md "How a row is modelled").
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {

GpuMapping map_gpu(const std::string& gpu) {
  // Cluster presets whose [cluster] gpu names the GPU preset (configs/clusters/*.ini).
  static const std::map<std::string, std::string> kClusters = {
      {"a100-80gb", "a100-8gpu-hdr"}, {"h100-80gb", "h100-8gpu-ndr"}, {"h200", "h200-8gpu-ndr"},
      {"gb200", "gb200-nvl72"},       {"b200", "b200-8gpu-xdr"},      {"b300", "b300-8gpu-xdr"},
      {"gb300", "gb300-nvl72"},
  };
  GpuMapping m;
  if (gpu == "a100-40gb") {
    // Same chip and HBM2 bandwidth class as the 80 GB part; only the capacity differs
    // (NVIDIA A100 datasheet: 40 GB HBM2, 1,555 GB/s vs 80 GB HBM2e, 2,039 GB/s).
    m.supported = true;
    m.cluster_preset = "a100-8gpu-hdr";
    m.memory_gb = 40;
    m.note = "a100-40gb modelled as a100-80gb with gpu.memory_gb = 40";
    return m;
  }
  if (gpu == "h100-96gb") {
    // H100 SXM with 96 GB HBM2e at 2.4 TB/s and a 500 W power limit (Meta's Grand Teton, as the
    // torchtitan benchmark pages describe it): the H100 cluster with its own GPU preset
    // (configs/gpus/h100-96gb-500w.ini: capacity, bandwidth and the power-limited clock).
    m.supported = true;
    m.cluster_preset = "h100-8gpu-ndr";
    m.gpu_preset = "h100-96gb-500w";
    m.note = "h100-96gb modelled with the h100-96gb-500w GPU preset (96 GB HBM2e, 500 W)";
    return m;
  }
  const auto it = kClusters.find(gpu);
  if (it == kClusters.end()) {
    m.reason = "unsupported GPU '" + gpu +
               "' (supported: a100-80gb, a100-40gb, h100-80gb, h100-96gb, h200, gb200, b200, b300, "
               "gb300)";
    return m;
  }
  m.supported = true;
  m.cluster_preset = it->second;
  return m;
}

std::string precheck_run(const RunRecord& run) {
  const bool time = run.measured_step_time_s && run.trust != "no-time";
  if (!time && !run.measured_peak_memory_gb) {
    return run.trust == "no-time"
               ? "trust = no-time: the source gives no honest step time (and no peak memory)"
               : "no measured step time or peak memory";
  }
  const GpuMapping gpu = map_gpu(run.gpu);
  if (!gpu.supported) return gpu.reason;
  std::string missing;
  if (run.ffn_hidden_size == 0) missing += "ffn_hidden_size";
  if (run.kv_heads == 0) missing += std::string(missing.empty() ? "" : ", ") + "kv_heads";
  if (run.vocab_size == 0) missing += std::string(missing.empty() ? "" : ", ") + "vocab_size";
  if (!missing.empty()) return "model not fully stated (empty: " + missing + ")";
  return {};
}

bool apply_run_to_problem(const RunRecord& run, const GpuMapping& gpu, Problem* p,
                          std::string* why) {
  ModelSpec& m = p->model;
  m = ModelSpec{};
  m.name = run.id;
  m.layers = run.layers;
  m.hidden_size = run.hidden_size;
  m.ffn_hidden_size = run.ffn_hidden_size;
  m.attention_heads = run.attention_heads;
  m.kv_heads = run.kv_heads;
  // head_dim = hidden/heads (0 = "derived" makes check() report a hidden size that is not a
  // multiple of the heads).
  m.head_dim =
      run.hidden_size % run.attention_heads == 0 ? run.hidden_size / run.attention_heads : 0;
  m.vocab_size = run.vocab_size;
  m.seq_length = run.seq_length;
  m.mlp = run.mlp;
  // The optional column tied_embeddings (docs/step-time.md "DeepSpeed's BF16 optimizer"); empty:
  // false, the interface default.
  m.tied_embeddings = run.tied_embeddings;
  // Mixture of experts and MLA (docs/moe.md), from the optional columns.
  if (run.head_dim > 0) m.head_dim = run.head_dim;
  m.moe_experts = run.moe_experts;
  m.moe_top_k = run.moe_top_k;
  m.moe_ffn_hidden_size = run.moe_ffn_hidden_size;
  m.moe_shared_experts = run.moe_shared_experts;
  m.moe_shared_ffn_hidden_size = run.moe_shared_ffn_hidden_size;
  m.moe_first_dense_layers = run.moe_first_dense_layers;
  m.mla_q_lora_rank = run.mla_q_lora_rank;
  m.mla_kv_lora_rank = run.mla_kv_lora_rank;
  m.mla_qk_rope_head_dim = run.mla_qk_rope_head_dim;
  m.mla_qk_nope_head_dim = run.mla_qk_nope_head_dim;
  m.mla_v_head_dim = run.mla_v_head_dim;
  // Sliding-window attention (docs/moe.md "Sliding-window attention").
  m.attention_window = run.attention_window;
  m.window_attn_skip_freq = run.window_attn_skip_freq;
  // Document-masked attention (docs/step-time.md "Document-masked attention").
  m.attention_document_tokens = run.attention_document_tokens;
  // MoE host time (docs/moe.md "Host time of a MoE layer"): stated values replace the default.
  if (!run.moe_dispatcher.empty()) {
    const auto& names = moe_dispatcher_names();
    p->training.moe_dispatcher =
        int(std::find(names.begin(), names.end(), run.moe_dispatcher) - names.begin());
  }
  if (!run.cuda_graph_scope.empty()) p->training.cuda_graph_scope = run.cuda_graph_scope;
  // Multi-token prediction (docs/moe.md "MTP").
  m.mtp_layers = run.mtp_layers;
  // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features").
  // An empty cell keeps the loaded value (the key's default or --set).
  if (run.moe_a2a_overlap) p->training.moe_a2a_overlap = *run.moe_a2a_overlap;
  if (run.fp8_attention) p->training.fp8_attention = *run.fp8_attention;
  if (run.moe_fused_grouped_mlp) p->training.moe_fused_grouped_mlp = *run.moe_fused_grouped_mlp;
  // The flex dispatcher's backend (docs/moe.md "DeepEP's host wait").
  if (!run.moe_flex_backend.empty())
    p->training.moe_flex_backend = run.moe_flex_backend == "deepep" ? 1 : 0;
  // Linear biases (docs/moe.md "Linear biases").
  m.linear_bias = run.linear_bias;
  // YaRN RoPE (docs/moe.md "YaRN RoPE").
  m.yarn_rope = run.yarn_rope;
  // ALiBi on materialised attention scores (docs/step-time.md); an empty unfused_attention cell
  // keeps the loaded value.
  m.alibi = run.alibi;
  if (run.unfused_attention) p->training.unfused_attention = *run.unfused_attention;
  if (run.zero1_grad_allreduce) p->training.zero1_grad_allreduce = *run.zero1_grad_allreduce;
  // Clamped gated activation (docs/moe.md "Clamped GLU activation").
  m.activation_clamp = run.activation_clamp;
  // Deferred output-layer wgrad (docs/step-time.md "Deferred output-layer wgrad").
  if (run.wgrad_deferral_limit) {
    p->training.defer_embedding_wgrad = true;
    p->training.wgrad_deferral_limit = *run.wgrad_deferral_limit;
  }
  // FP8 forward reduce-scatters (docs/precision.md "FP8 reduce-scatters of the forward").
  if (run.tp_fp8_reduce_scatter) p->training.tp_fp8_reduce_scatter = *run.tp_fp8_reduce_scatter;
  // Transformer Engine's flash-attn backend (docs/step-time.md "FlashAttention-2 in the NeMo DGX
  // Cloud runs"): NVTE_FUSED_ATTN=0 makes TE run Tri Dao's FlashAttention-2, at the FA-2 scale
  // of the stacks that run it (spec/stacks.hpp).
  if (run.flash_attention_2) p->training.attention_efficiency_scale = kFlashAttention2Scale;

  p->training.global_batch_size = run.global_batch_size;
  p->training.attention_flops = AttentionFlops::kFull;  // no source halves attention FLOPs
  // "selective" is the framework's own: torchtitan's per-op policy (docs/memory.md). The stack
  // may carry a profile suffix (torchtitan-2024).
  if (run.stack.rfind("torchtitan", 0) == 0) {
    p->training.selective_recompute = SelectiveRecompute::kPerOp;
  }
  // A stated flavour replaces it (docs/moe.md "Recomputation": the recipes' recompute_modules).
  if (run.selective_recompute == "core-attention")
    p->training.selective_recompute = SelectiveRecompute::kCoreAttention;
  if (run.selective_recompute == "per-op")
    p->training.selective_recompute = SelectiveRecompute::kPerOp;
  if (run.selective_recompute == "mla-up-proj")
    p->training.selective_recompute = SelectiveRecompute::kMlaUpProj;
  // A stated optimizer state dtype (docs/memory.md "Optimizer state"), e.g. the precision-aware
  // optimizer with bf16 moments of the Megatron-Bridge DeepSeek-V3 recipes.
  if (!run.optimizer_state_dtype.empty())
    p->training.optimizer_state_dtype = run.optimizer_state_dtype;
  // fp16 runs keep 16-bit main gradients: Megatron-LM sets accumulate_allreduce_grads_in_fp32
  // only for bf16 (megatron/training/arguments.py), so an fp16 run reduces in fp16
  // (docs/memory.md "Static memory").
  if (run.precision == "fp16") p->training.grad_reduce_in_fp32 = false;
  // FP8 rows (docs/precision.md): fp8 (per-tensor delayed scaling), fp8-cs (current scaling),
  // fp8-mx or mxfp8 (MXFP8 block scaling); anything else is a 16-bit run.
  p->training.precision = "bf16";
  p->training.fp8_recipe = Fp8Recipe::kDelayed;
  if (run.precision == "fp8" || run.precision == "fp8-delayed" || run.precision == "fp8-cs" ||
      run.precision == "fp8-mx" || run.precision == "mxfp8") {
    p->training.precision = "fp8";
    if (run.precision == "fp8-cs") p->training.fp8_recipe = Fp8Recipe::kCurrent;
    if (run.precision == "fp8-mx" || run.precision == "mxfp8") {
      p->training.fp8_recipe = Fp8Recipe::kMxfp8;
    }
    // Megatron-Bridge's FP8 performance recipes (scripts/performance, v0.2.0: get_precision_config
    // and set_llama3_common_configs) keep FP8 primary weights and bf16 main gradients.
    if (run.stack.rfind("nemo", 0) == 0 && run.precision != "fp8") {
      p->training.fp8_param_gather = true;
      p->training.grad_reduce_in_fp32 = false;
    }
  }

  if (gpu.memory_gb > 0) p->gpu.memory_bytes = gpu.memory_gb * 1e9;
  ClusterSpec& c = p->cluster;
  if (run.gpus_per_node > 0) {
    // The schema's gpus_per_node is the NVLink domain. The preset's node (e.g. a 4-GPU GB200
    // tray) stays when it divides the domain; otherwise the node is the domain.
    c.nvlink_domain_size = run.gpus_per_node;
    if (c.gpus_per_node <= 0 || run.gpus_per_node % c.gpus_per_node != 0) {
      c.gpus_per_node = run.gpus_per_node;
    }
  }
  if (run.network_gbit_per_s > 0) c.network_bytes_per_s = run.network_gbit_per_s * 1e9 / 8;

  p->gpus = {run.gpus};
  p->search = SearchSpec{};
  p->search.tp = {run.tp};
  p->search.pp = {run.pp};
  p->search.cp = {run.cp};
  // The recipe's own pipeline layout (docs/memory.md "A fixed pipeline layout"); the CSV check
  // gave the row a vpp that matches it.
  if (!run.pp_layout.empty()) {
    p->search.pp_layout = run.pp_layout;
    p->search.vpp = {run.vpp.value_or(1)};
  }

  const std::vector<ConfigIssue> issues = check(*p);
  if (!issues.empty()) {
    std::string text;
    for (const ConfigIssue& i : issues) text += (text.empty() ? "" : "; ") + i.message();
    if (why) *why = "the row does not make a valid problem: " + text;
    return false;
  }
  resolve_defaults(*p);
  return true;
}

std::vector<Candidate> run_candidates(const RunRecord& run) {
  const int per_dp = run.global_batch_size / run.dp;
  std::vector<int> mbs;
  if (run.mbs) {
    mbs = {*run.mbs};
  } else {
    for (int b = 1; b <= std::min(16, per_dp); ++b) {
      if (per_dp % b == 0) mbs.push_back(b);
    }
  }
  std::vector<int> vpp;
  if (run.vpp) {
    vpp = {*run.vpp};
  } else {
    vpp = {1};
    if (run.pp > 1) {
      for (int v = 2; 1LL * run.pp * v <= run.layers; ++v) {
        if (run.layers % (run.pp * v) == 0) vpp.push_back(v);
      }
    }
  }
  std::vector<Recompute> recompute;
  if (run.recompute) {
    recompute = {*run.recompute};
  } else {
    recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  }
  std::vector<int> sp;
  if (run.sequence_parallel) {
    sp = {*run.sequence_parallel ? 1 : 0};
  } else {
    sp = run.tp > 1 ? std::vector<int>{0, 1} : std::vector<int>{0};
  }
  const std::vector<int> zero =
      run.zero_stage ? std::vector<int>{*run.zero_stage} : std::vector<int>{0, 1};

  std::vector<Candidate> out;
  out.reserve(mbs.size() * vpp.size() * recompute.size() * sp.size() * zero.size());
  for (int b : mbs) {
    for (int v : vpp) {
      for (Recompute r : recompute) {
        for (int s : sp) {
          for (int z : zero) {
            Candidate c;
            c.gpus = run.gpus;
            c.tp = run.tp;
            c.pp = run.pp;
            c.cp = run.cp;
            c.dp = run.dp;
            c.vpp = v;
            c.mbs = b;
            c.num_microbatches = per_dp / b;
            c.global_batch_size = run.global_batch_size;
            c.schedule = v > 1 ? Schedule::kInterleaved1F1B : Schedule::k1F1B;
            c.recompute = r;
            c.sp = static_cast<std::uint8_t>(s);
            c.zero = static_cast<std::uint8_t>(z);
            c.ep = run.ep;  // mixture of experts (docs/moe.md)
            c.etp = run.etp;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

namespace {

void fill_common(const RunRecord& run, RunResult* r) {
  r->id = run.id;
  r->convention = parse_mfu_convention(run.mfu_convention);
  r->convention_label = run.mfu_convention;
  if (run.measured_step_time_s && run.trust != "no-time") {
    r->measured_step_time_s = *run.measured_step_time_s;
  }
  if (run.measured_peak_memory_gb) r->measured_peak_memory_gb = *run.measured_peak_memory_gb;
  r->memory_metric = run.memory_metric;
  r->split = run.split;
  if (run.measured_mfu_pct) r->reported_mfu = *run.measured_mfu_pct / 100.0;
}

// Preference when the row leaves recomputation unstated: less recomputation first.
int recompute_rank(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return 0;
    case Recompute::kSelective:
      return 1;
    case Recompute::kFull:
      return 2;
  }
  return 3;
}

// The knobs the row left empty that had a choice, with the chosen values.
std::string searched_text(const RunRecord& run, const Candidate& c) {
  std::string s;
  auto add = [&](const std::string& item) { s += (s.empty() ? "" : " ") + item; };
  const int per_dp = run.global_batch_size / run.dp;
  if (!run.mbs && per_dp > 1) add("mbs=" + std::to_string(c.mbs));
  if (!run.vpp && run.pp > 1) add("vpp=" + std::to_string(c.vpp));
  if (!run.recompute) add(std::string("recompute=") + to_string(c.recompute));
  if (!run.sequence_parallel && run.tp > 1) add(std::string("sp=") + (c.sp ? "on" : "off"));
  if (!run.zero_stage) add("zero=" + std::to_string(c.zero));
  return s;
}

}  // namespace

double metric_memory_bytes(double device_bytes, double workspace_bytes, const std::string& metric) {
  if (metric == "allocated" || metric == "reserved") {
    const double allocated = device_bytes - workspace_bytes + kAllocatorLibraryBytes;
    return metric == "allocated" ? allocated : allocated / (1.0 - kAllocatorFragmentation);
  }
  return device_bytes;
}

RunResult not_modelled(const RunRecord& run, const std::string& reason) {
  RunResult r;
  fill_common(run, &r);
  r.modelled = false;
  r.reason = reason;
  return r;
}

RunResult predict_run(const RunRecord& run, const Problem& problem) {
  RunResult r;
  fill_common(run, &r);
  const std::vector<Candidate> cands = run_candidates(run);
  EvalOptions opt;
  opt.want_stages = false;
  Evaluator ev(problem, opt);
  Evaluation e;
  Evaluation best_eval;
  const Candidate* best = nullptr;
  // For the message when nothing fits: the count per reason and one example, the memory failure
  // that needs the least memory when there is one.
  int reason_count[kNumInfeasible] = {};
  Evaluation example;
  bool have_example = false;
  for (const Candidate& c : cands) {
    ev.evaluate(c, &e);
    ++r.evaluated;
    if (!e.feasible) {
      ++reason_count[static_cast<int>(e.reason)];
      const bool better_memory =
          e.reason == Infeasible::kMemory &&
          (example.reason != Infeasible::kMemory || e.needed_bytes < example.needed_bytes);
      if (!have_example || better_memory) {
        example = e;
        have_example = true;
      }
      continue;
    }
    ++r.feasible;
    // Recomputation the row leaves unstated: the least that fits (none, then selective, then
    // full), as a run that fits without recomputing does not recompute; then the fastest.
    const bool less_recompute = best != nullptr && !run.recompute &&
                                static_cast<int>(c.recompute) != static_cast<int>(best->recompute);
    if (less_recompute) {
      if (recompute_rank(c.recompute) < recompute_rank(best->recompute)) {
        best = &c;
        best_eval = e;
      }
      continue;
    }
    if (best == nullptr || e.iteration_time_s < best_eval.iteration_time_s ||
        (e.iteration_time_s == best_eval.iteration_time_s && key_less(c, *best))) {
      best = &c;
      best_eval = e;
    }
  }
  if (best == nullptr) {
    r.modelled = false;
    std::string counts;
    for (int k = 0; k < kNumInfeasible; ++k) {
      if (reason_count[k] == 0) continue;
      counts += (counts.empty() ? "" : ", ") + std::string(to_string(static_cast<Infeasible>(k))) +
                " " + std::to_string(reason_count[k]);
    }
    r.does_not_fit = reason_count[static_cast<int>(Infeasible::kMemory)] == r.evaluated;
    if (r.evaluated == 1) {
      r.reason = "the model says the stated configuration does not fit: " + explain(example);
      if (example.reason == Infeasible::kMemory) {
        // The single stated configuration: what it would need is still its memory prediction.
        r.device_peak_memory_gb = example.needed_bytes / 1e9;
        r.peak_memory_gb =
            metric_memory_bytes(example.needed_bytes, workspace_bytes(problem, cands.front()),
                                run.memory_metric) /
            1e9;
        r.memory_error_pct =
            100.0 * (r.peak_memory_gb - r.measured_peak_memory_gb) / r.measured_peak_memory_gb;
      }
    } else {
      r.reason = "no feasible configuration among " + std::to_string(r.evaluated) + " (" + counts +
                 "); closest: " + explain(example);
    }
    return r;
  }
  r.modelled = true;
  r.chosen = *best;
  r.searched = searched_text(run, *best);
  r.predicted_step_time_s = best_eval.iteration_time_s;
  r.error_pct = 100.0 * (r.predicted_step_time_s - r.measured_step_time_s) / r.measured_step_time_s;
  r.engine_mfu = best_eval.mfu;
  // The measured metric's figure (docs/memory.md "What a measured peak counts").
  r.device_peak_memory_gb = best_eval.peak_memory_gb;
  r.peak_memory_gb = metric_memory_bytes(best_eval.peak_memory_gb * 1e9,
                                         workspace_bytes(problem, *best), run.memory_metric) /
                     1e9;
  r.memory_error_pct =
      100.0 * (r.peak_memory_gb - r.measured_peak_memory_gb) / r.measured_peak_memory_gb;
  const double peak = problem.gpu.peak_flop_per_s;
  r.predicted_mfu = convention_mfu(r.convention, problem.model, run.global_batch_size,
                                   r.predicted_step_time_s, run.gpus, peak);
  r.measured_mfu = convention_mfu(r.convention, problem.model, run.global_batch_size,
                                  r.measured_step_time_s, run.gpus, peak);
  if (!run.mfu_convention.empty() && r.convention == MfuConvention::kUnknown) {
    r.note = "mfu_convention '" + run.mfu_convention + "' unknown: MFU not comparable";
  }
  return r;
}

}  // namespace ppsearch
