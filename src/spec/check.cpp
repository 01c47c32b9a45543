// Cross-field validation of a Problem (docs/architecture.md §3.5 "Validation").
#include "ppsearch/spec/check.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/pipeline_layout.hpp"

namespace ppsearch {
namespace {

struct Checker {
  const Problem& p;
  std::vector<ConfigIssue> issues;

  void add(const std::string& key, const std::string& allowed) {
    issues.push_back(ConfigIssue{"", key, key_value(p, key), allowed});
  }
};

bool contains(const std::vector<Schedule>& v, Schedule s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

int min_or(const std::vector<int>& v, int fallback) {
  return v.empty() ? fallback : *std::min_element(v.begin(), v.end());
}

void check_model(Checker& c) {
  const ModelSpec& m = c.p.model;
  if (m.attention_heads < 1) return;  // already reported as a range issue
  if (m.head_dim == 0 && m.hidden_size > 0 && m.hidden_size % m.attention_heads != 0) {
    c.add("model.hidden_size", "a multiple of model.attention_heads (" +
                                   std::to_string(m.attention_heads) +
                                   ") when model.head_dim is 0 (derived)");
  }
  if (m.kv_heads > 0 && m.attention_heads % m.kv_heads != 0) {
    c.add("model.kv_heads",
          "a divisor of model.attention_heads (" + std::to_string(m.attention_heads) + ")");
  }
}

void check_hardware(Checker& c) {
  const GpuSpec& g = c.p.gpu;
  if (g.memory_bytes > 0 && g.memory_reserved_bytes >= g.memory_bytes) {
    c.add("gpu.memory_reserved_gb",
          "less than gpu.memory_gb (" + key_value(c.p, "gpu.memory_gb") + ")");
  }
  if (g.memory_bytes > 0 && g.memory_headroom_bytes > 0 &&
      g.memory_reserved_bytes + g.memory_headroom_bytes >= g.memory_bytes) {
    c.add("gpu.memory_headroom_gb", "less than gpu.memory_gb minus gpu.memory_reserved_gb (" +
                                        key_value(c.p, "gpu.memory_gb") + " - " +
                                        key_value(c.p, "gpu.memory_reserved_gb") + ")");
  }
  const ClusterSpec& k = c.p.cluster;
  const int dom = k.nvlink_domain_size;
  if (dom > 0 && k.gpus_per_node > 0 && dom % k.gpus_per_node != 0 && k.gpus_per_node % dom != 0) {
    c.add("cluster.nvlink_domain_size", "a divisor or a multiple of cluster.gpus_per_node (" +
                                            std::to_string(k.gpus_per_node) + ")");
  }
}

void check_search(Checker& c) {
  const Problem& p = c.p;
  const SearchSpec& s = p.search;
  if (p.gpus.empty()) c.add("search.gpus", "at least one GPU count (--gpus)");

  // Degrees that exceed every GPU count can never be used.
  if (!p.gpus.empty()) {
    const int max_gpus = *std::max_element(p.gpus.begin(), p.gpus.end());
    const struct {
      const char* key;
      const std::vector<int>& values;
    } degrees[] = {{"search.tp", s.tp}, {"search.pp", s.pp}, {"search.cp", s.cp}};
    for (const auto& d : degrees) {
      if (!d.values.empty() && min_or(d.values, 1) > max_gpus) {
        c.add(d.key,
              "at most the largest GPU count (search.gpus = " + key_value(p, "search.gpus") + ")");
      }
    }
    // 64-bit: each degree is at most kMaxGpus (2^17), so the product stays below 2^51.
    const long long min_product =
        1LL * min_or(s.tp, 1) * min_or(s.pp, 1) * static_cast<long long>(min_or(s.cp, 1));
    if (min_or(s.tp, 1) <= max_gpus && min_or(s.pp, 1) <= max_gpus && min_or(s.cp, 1) <= max_gpus &&
        min_product > max_gpus) {
      c.add("search.tp", "tp x pp x cp (smallest values: " + std::to_string(min_product) +
                             ") at most the largest GPU count (search.gpus = " +
                             key_value(p, "search.gpus") + ")");
    }
  }

  // A micro-batch larger than the global batch never fits (B = b x M x dp).
  if (p.training.global_batch_size >= 1) {
    for (int b : s.mbs) {
      if (b > p.training.global_batch_size) {
        c.add("search.mbs", "at most training.global_batch_size (" +
                                std::to_string(p.training.global_batch_size) + ")");
        break;
      }
    }
  }

  // Interleaving: vpp > 1 needs the interleaved schedule and pp > 1
  // (Narayanan et al. SC'21 §2.2.2); interleaved-1f1b needs vpp > 1.
  const bool all_vpp_interleaved = !s.vpp.empty() && min_or(s.vpp, 1) > 1;
  const bool only_vpp_one = !s.vpp.empty() && *std::max_element(s.vpp.begin(), s.vpp.end()) == 1;
  if (all_vpp_interleaved && !s.schedule.empty() &&
      !contains(s.schedule, Schedule::kInterleaved1F1B)) {
    c.add("search.vpp", "1 unless search.schedule includes interleaved-1f1b (search.schedule = " +
                            key_value(p, "search.schedule") + ")");
  }
  if (only_vpp_one && s.schedule.size() == 1 && s.schedule[0] == Schedule::kInterleaved1F1B) {
    c.add("search.schedule",
          "a schedule other than interleaved-1f1b alone, or search.vpp > 1 "
          "(search.vpp = 1)");
  }
  if (all_vpp_interleaved && !s.pp.empty() && *std::max_element(s.pp.begin(), s.pp.end()) == 1) {
    c.add("search.vpp", "1 when search.pp = 1 (interleaving needs pipeline parallelism)");
  }
  // Every pipeline stage needs at least one of the L_t + 2 pipeline items
  // (embedding, layers, output layer; docs/algorithms.md §0).
  if (p.model.layers >= 1 && !s.pp.empty()) {
    const long long stages = static_cast<long long>(min_or(s.pp, 1)) * min_or(s.vpp, 1);
    if (stages > p.model.layers + 2LL) {
      c.add("search.pp", "pp x vpp (smallest values: " + std::to_string(stages) +
                             ") at most model.layers + 2 (" + std::to_string(p.model.layers + 2LL) +
                             ")");
    }
  }
}

// FP8 (docs/precision.md): the GPU must have FP8 tensor cores, and MXFP8 block scaling needs
// tensor cores that take it (Blackwell).
// A fixed pipeline layout (docs/memory.md "A fixed pipeline layout"): Megatron-LM's notation for
// this model, one pipeline size and one VPP whose product is its segment count, and a schedule
// that places virtual stage σ on rank σ mod pp (not the V-shaped ZB-V or DualPipe).
void check_pp_layout(Checker& c) {
  const SearchSpec& s = c.p.search;
  if (s.pp_layout.empty()) return;
  std::vector<int> bounds;
  std::string why;
  if (!parse_pipeline_layout(s.pp_layout, c.p.model.layers, c.p.model.mtp_layers, &bounds, &why)) {
    c.add("search.pp_layout", "a Megatron-LM pipeline layout of this model: " + why);
    return;
  }
  const int segments = static_cast<int>(bounds.size()) - 1;
  if (s.pp.size() != 1 || s.vpp.size() != 1 ||
      static_cast<long long>(s.pp[0]) * s.vpp[0] != segments) {
    c.add("search.pp_layout",
          "a layout of search.pp x search.vpp segments, with search.pp and "
          "search.vpp one value each (this layout has " +
              std::to_string(segments) + ")");
  }
  for (int r : s.recompute_num_layers)
    if (r != 0) {
      c.add("search.pp_layout",
            "empty with partial recomputation (search.recompute_num_layers = " +
                key_value(c.p, "search.recompute_num_layers") +
                "): the partitioner chooses the recomputed layers together with the split");
      break;
    }
  for (Schedule sc : {Schedule::kZBV, Schedule::kDualPipe})
    if (contains(s.schedule, sc))
      c.add("search.pp_layout",
            "empty with the V-shaped schedules zb-v and dualpipe (search.schedule = " +
                key_value(c.p, "search.schedule") + ")");
}

void check_precision(Checker& c) {
  const Problem& p = c.p;
  if (p.training.precision != "fp8") return;
  if (p.gpu.peak_fp8_flop_per_s <= 0) {
    c.add("training.precision",
          "bf16 (gpu '" + p.gpu.name + "' has no FP8 tensor cores: gpu.fp8_peak_tflops = 0)");
  } else if (p.training.fp8_recipe == Fp8Recipe::kMxfp8 && !p.gpu.mxfp8) {
    c.add("training.fp8_recipe", "delayed or current (gpu '" + p.gpu.name +
                                     "' has no MXFP8 tensor cores: gpu.mxfp8 = false)");
  }
}

// Mixture of experts and MLA (docs/moe.md).
void check_moe(Checker& c) {
  const ModelSpec& m = c.p.model;
  if (m.moe_experts > 0) {
    if (m.moe_top_k < 1 || m.moe_top_k > m.moe_experts)
      c.add("model.moe_top_k",
            "an integer in [1, model.moe_experts] (" + std::to_string(m.moe_experts) + ")");
    if (m.layers >= 1 && m.moe_first_dense_layers >= m.layers)
      c.add("model.moe_first_dense_layers",
            "less than model.layers (" + std::to_string(m.layers) + ")");
  } else {
    const char* moe_only[] = {"model.moe_top_k", "model.moe_shared_experts",
                              "model.moe_first_dense_layers"};
    for (const char* k : moe_only)
      if (key_value(c.p, k) != "0") c.add(k, "0 unless model.moe_experts > 0 (a MoE model)");
  }
  if (m.mla_kv_lora_rank > 0 && m.attention_heads >= 1) {
    const int qk = m.mla_qk_nope_head_dim + m.mla_qk_rope_head_dim;
    if (qk < 1 || m.mla_v_head_dim < 1)
      c.add("model.mla_v_head_dim",
            "> 0 with model.mla_qk_nope_head_dim + model.mla_qk_rope_head_dim > 0 for MLA");
    else if (2 * m.head_dim != qk + m.mla_v_head_dim)
      c.add("model.head_dim",
            "(qk_nope + qk_rope + v) / 2 = " + std::to_string((qk + m.mla_v_head_dim) / 2.0) +
                " with MLA (its plain-attention stand-in, docs/moe.md)");
    if (m.kv_heads != 0 && m.kv_heads != m.attention_heads)
      c.add("model.kv_heads", "model.attention_heads (" + std::to_string(m.attention_heads) +
                                  ") or 0 with MLA (one key and value per head)");
  }
  // Sliding-window attention (docs/moe.md "Sliding-window attention").
  if (m.attention_window == 0 && m.window_attn_skip_freq != 0)
    c.add("model.window_attn_skip_freq", "0 unless model.attention_window > 0");
  if (m.layers >= 1 && m.window_attn_skip_freq > m.layers)
    c.add("model.window_attn_skip_freq",
          "at most model.layers (" + std::to_string(m.layers) + "), or 0");
}

// MoE host time (docs/moe.md "Host time of a MoE layer"): the CUDA-graph scope list.
void check_host(Checker& c) {
  unsigned mask = 0;
  if (!parse_cuda_graph_scope(c.p.training.cuda_graph_scope, &mask)) {
    c.add("training.cuda_graph_scope", cuda_graph_scope_allowed());
    return;
  }
  // Megatron-Core (megatron/training/arguments.py, --cuda-graph-modules): "moe_preprocess ...
  // Must be used together with moe_router"; full_iteration graphs the whole step, alone.
  if ((mask & kGraphMoePreprocess) && !(mask & kGraphMoeRouter))
    c.add("training.cuda_graph_scope", "moe_preprocess only together with moe_router");
  if ((mask & kGraphFullIteration) && mask != kGraphFullIteration)
    c.add("training.cuda_graph_scope", "full_iteration alone (it graphs the whole step)");
}

// Optimizer step by implementation (docs/step-time.md "Optimizer step by implementation"):
// torch.optim.AdamW keeps its moments in the parameter's dtype, the fp32 FSDP2 shard, so the
// PyTorch implementations are costed with fp32 state only.
void check_optimizer(Checker& c) {
  const TrainingSpec& t = c.p.training;
  if (t.optimizer_impl != "megatron" && t.optimizer_state_dtype != "fp32")
    c.add("training.optimizer_state_dtype",
          "fp32 with training.optimizer_impl = " + t.optimizer_impl +
              " (torch.optim.AdamW keeps its moments in the fp32 parameter's dtype)");
}

}  // namespace

std::vector<ConfigIssue> check(const Problem& problem) {
  Checker c{problem, check_key_values(problem)};
  check_model(c);
  check_hardware(c);
  check_search(c);
  check_pp_layout(c);
  check_precision(c);
  check_moe(c);
  check_host(c);
  check_optimizer(c);
  return c.issues;
}

void resolve_defaults(Problem& p) {
  ModelSpec& m = p.model;
  if (m.kv_heads == 0) m.kv_heads = m.attention_heads;
  if (m.head_dim == 0 && m.attention_heads > 0 && m.hidden_size % m.attention_heads == 0) {
    m.head_dim = m.hidden_size / m.attention_heads;
  }
  if (p.cluster.nvlink_domain_size == 0) p.cluster.nvlink_domain_size = p.cluster.gpus_per_node;
}

}  // namespace ppsearch
