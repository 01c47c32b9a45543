// Launch configurations for one result row (docs/launch.md). Names pinned to:
//   Megatron-LM   d98e8a64 (2026-08-22) megatron/training/arguments.py
//   Megatron-Bridge 067f987d (2026-08-22) src/megatron/bridge/training/config.py (ConfigContainer)
//   torchtitan    b5bcd76c (2026-08-21) torchtitan/config/configs.py,
//                 torchtitan/distributed/activation_checkpoint.py
// tests/emit/*.txt hold the accepted names read from those files; tests/cli/test_emit.cpp checks
// every name emitted here against them.
#include "ppsearch/cli/emit.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/moe_recipe.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/stacks.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ppsearch {

namespace {

std::string stage_segment(int first, int last, int layers, int mtp) {
  std::string s;
  if (first == 0) s += "E";
  const int lo = std::max(first, 1), hi = std::min(last, layers);
  const int n = hi >= lo ? hi - lo + 1 : 0;
  if (n == 1) s += "t";
  if (n > 1) s += "t*" + std::to_string(n);
  if (last == layers + 1) {
    // Multi-token prediction sits on the last stage, after the decoder layers and before the
    // loss (Megatron-LM d98e8a64 pipeline_parallel_layer_layout.py: 'm' is an MTP layer, all of
    // them in one virtual stage, no decoder layer after them; "m*n" unrolls to n of them).
    if (mtp == 1) s += "m";
    if (mtp > 1) s += "m*" + std::to_string(mtp);
    s += "L";
  }
  return s;
}

}  // namespace

std::string megatron_layout(const std::vector<std::pair<int, int>>& stages, int layers,
                            int mtp_layers) {
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (i) out += "|";
    out += stage_segment(stages[i].first, stages[i].second, layers, mtp_layers);
  }
  return out;
}

std::string megatron_first_last_flags(const std::vector<std::pair<int, int>>& stages, int layers,
                                      int vpp) {
  const int P = static_cast<int>(stages.size());
  if (vpp != 1 || P < 3) return {};
  auto count = [&](int i) {
    const int lo = std::max(stages[i].first, 1), hi = std::min(stages[i].second, layers);
    return hi >= lo ? hi - lo + 1 : 0;
  };
  const int mid = count(1);
  for (int i = 2; i < P - 1; ++i)
    if (count(i) != mid) return {};
  if (count(0) == mid && count(P - 1) == mid) return "(even split: no flag needed)";
  return "--decoder-first-pipeline-num-layers " + std::to_string(count(0)) +
         " --decoder-last-pipeline-num-layers " + std::to_string(count(P - 1));
}

const char* to_string(LaunchFormat f) {
  switch (f) {
    case LaunchFormat::kMegatron:
      return "megatron";
    case LaunchFormat::kNemo:
      return "nemo";
    case LaunchFormat::kTorchtitan:
      return "torchtitan";
  }
  return "?";
}

bool parse_launch_format(const std::string& text, LaunchFormat* out) {
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan})
    if (text == to_string(f)) {
      *out = f;
      return true;
    }
  return false;
}

namespace {

// Builds the text: comment lines first, then flag lines.
class Builder {
 public:
  explicit Builder(LaunchFormat f) : format_(f) {}
  void comment(const std::string& s) { comments_.push_back("# " + s); }
  void approx(const std::string& s) {
    out_.approximated = true;
    comment("approximated: " + s);
  }
  void refuse(const std::string& s) {
    out_.runnable = false;
    comment("NOT RUNNABLE: " + s);
  }
  // A flag without a value (Megatron-LM store_true) or with one.
  void flag(const std::string& name, const std::string& value = "") {
    out_.names.push_back(name);
    if (format_ == LaunchFormat::kNemo)
      lines_.push_back(name + "=" + value);
    else
      lines_.push_back(value.empty() ? name : name + " " + value);
  }
  void flag(const std::string& name, long long value) { flag(name, std::to_string(value)); }
  // A torchtitan tyro subcommand ("activation-checkpoint:full"): a name without a value.
  void word(const std::string& w) {
    out_.names.push_back(w);
    lines_.push_back(w);
  }
  LaunchConfig finish() {
    std::string t;
    for (const auto& c : comments_) t += c + "\n";
    if (out_.runnable) {
      const bool shell = format_ != LaunchFormat::kNemo;
      for (std::size_t i = 0; i < lines_.size(); ++i)
        t += lines_[i] + (shell && i + 1 < lines_.size() ? " \\\n" : "\n");
    } else {
      out_.names.clear();  // nothing that would start a different job
    }
    out_.text = t;
    return out_;
  }

 private:
  LaunchFormat format_;
  LaunchConfig out_;
  std::vector<std::string> comments_, lines_;
};

std::string row_summary(const ResultRow& r) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%d GPUs: tp %d pp %d cp %d dp %d vpp %d mbs %d, %s, recompute %s, sp %s, zero %d",
                r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs,
                to_string(static_cast<Schedule>(r.schedule)),
                to_string(static_cast<Recompute>(r.recompute)), r.sequence_parallel ? "on" : "off",
                r.zero_stage);
  std::string s = buf;
  if (static_cast<Recompute>(r.recompute) == Recompute::kFull && r.recompute_num_layers != 0)
    s += r.recompute_num_layers > 0
             ? " (recompute " + std::to_string(r.recompute_num_layers) + " layers a stage)"
             : std::string(" (recompute layers chosen per stage)");
  return s;
}

int layers_in(const std::pair<int, int>& st, int L) {
  const int lo = std::max(st.first, 1), hi = std::min(st.second, L);
  return hi >= lo ? hi - lo + 1 : 0;
}

// Megatron's default split: every virtual stage has L / (pp·vpp) layers, the embedding on the
// first and the head on the last (arguments.py: num_layers % pp == 0, then / vpp).
bool even_split(const std::vector<std::pair<int, int>>& st, int L, int stages) {
  if (st.empty()) return true;
  if (static_cast<int>(st.size()) != stages || L % stages != 0) return false;
  for (const auto& s : st)
    if (layers_in(s, L) != L / stages) return false;
  return st.front().first == 0 && st.back().second == L + 1;
}

bool pipelined(const ResultRow& r) { return r.pp > 1; }
Schedule schedule_of(const ResultRow& r) { return static_cast<Schedule>(r.schedule); }
Recompute recompute_of(const ResultRow& r) { return static_cast<Recompute>(r.recompute); }
const char* tf(bool b) { return b ? "true" : "false"; }

// The TP overlap the cost model charges for the row: the stack's pipelined TP collectives
// (training.tp_comm_overlap, evaluate.cpp adjust_layer: Transformer Engine userbuffers, only with
// sequence parallelism) or the cluster's hidden fraction (cluster.tp_comm_overlap, items.cpp,
// with or without it). Either needs TP > 1; without SP no framework can launch it.
bool tp_overlap_modelled(const Problem& p, const ResultRow& r) {
  return r.tp > 1 &&
         ((p.training.tp_comm_overlap && r.sequence_parallel) || p.cluster.tp_comm_overlap > 0);
}

// Megatron-Core overlaps the interleaved schedule's p2p only with overlap_p2p_comm
// (evaluate.cpp: training.p2p_overlap applies to interleaved 1F1B alone).
bool interleaved(const ResultRow& r) { return r.pp > 1 && r.vpp > 1; }

// Settings of the costed stack that no Megatron-LM or Megatron-Bridge flag sets, because they
// are what the framework is (Transformer Engine's attention and fused kernels, fused QKV and FC1
// GEMMs, its own optimizer, backward TP collectives between dgrad and wgrad): where the row's
// value differs from the megatron-core profile, the launched job is not the one costed. Keys
// that cannot matter for the row (recompute_skip_fc2 without full recompute, tp_bwd_overlap at
// TP 1, cross_entropy_inplace without the fused loss) are not named.
std::vector<std::string> megatron_engine_differences(const Problem& p, const ResultRow& r) {
  std::vector<std::string> out;
  const StackProfile* m = find_stack("megatron-core");
  if (m == nullptr) return out;
  const TrainingSpec& t = p.training;
  if (t.attention_efficiency_scale != m->attention_scale) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", t.attention_efficiency_scale);
    out.push_back(std::string("training.attention_efficiency_scale = ") + scale +
                  " (its attention kernels)");
  }
  if (t.fused_elementwise != m->fused_elementwise)
    out.push_back("training.fused_elementwise = false (eager element-wise ops)");
  if (t.triton_attention != m->triton_attention)
    out.push_back("training.triton_attention = true (llm-foundry's Triton attention kernel)");
  if (t.split_linears != m->split_linears)
    out.push_back("training.split_linears = true (separate Q/K/V and gate/up GEMMs)");
  if (r.tp > 1 && t.tp_bwd_overlap != m->tp_bwd_overlap)
    out.push_back("training.tp_bwd_overlap = false (backward TP collectives not hidden)");
  if (recompute_of(r) == Recompute::kFull && t.recompute_skip_fc2 != m->recompute_skip_fc2)
    out.push_back(
        "training.recompute_skip_fc2 = true (a replay that stops before FC2: compiled, or "
        "PyTorch's non-reentrant checkpoint)");
  if (t.cross_entropy_fusion && t.cross_entropy_inplace != m->cross_entropy_inplace)
    out.push_back("training.cross_entropy_inplace = false (a new gradient buffer)");
  if (t.optimizer_impl != m->optimizer_impl)
    out.push_back("training.optimizer_impl = " + t.optimizer_impl + " (PyTorch's AdamW)");
  return out;
}

void note_engine_differences(Builder& b, const Problem& p, const ResultRow& r) {
  const std::vector<std::string> d = megatron_engine_differences(p, r);
  if (d.empty()) return;
  std::string list;
  for (const std::string& x : d) list += (list.empty() ? "" : "; ") + x;
  b.approx("the row was costed for stack " + p.training.stack + " with " + list +
           ", which the Megatron-LM engine does not do: it runs Transformer Engine's kernels and "
           "its own optimizer, so the step time differs from the costed one");
}

// What the TP-overlap comment says was modelled.
std::string tp_overlap_what(const Problem& p) {
  return p.training.tp_comm_overlap
             ? std::string(
                   "training.tp_comm_overlap = true (the stack's TP collectives pipelined "
                   "with their GEMMs)")
             : "cluster.tp_comm_overlap = " + std::to_string(p.cluster.tp_comm_overlap) +
                   " of TP communication hidden";
}

// Whether the row's modelled TP overlap is launched: every framework's needs sequence
// parallelism (`how` names it), so a modelled overlap without SP is said to be approximated.
bool launch_tp_overlap(Builder& b, const Problem& p, const ResultRow& r, const char* how) {
  if (!tp_overlap_modelled(p, r)) return false;
  if (r.sequence_parallel) return true;
  b.approx(tp_overlap_what(p) + " is modelled, but " + how +
           " needs sequence parallelism; without it the TP communication is not hidden");
  return false;
}

// training.tp_fp8_reduce_scatter where it changes the cost (src/cost/precision.cpp): FP8 delayed
// scaling, TP > 1 with SP and Transformer Engine's TP overlap. No framework flag sets fp8_buf;
// it is a field of the Userbuffers config of proj_fprop and fc2_fprop (`how` says where).
void note_fp8_reduce_scatter(Builder& b, const Problem& p, const ResultRow& r,
                             const std::string& how) {
  // The plan holds the key's conditions on the problem (precision.cpp); the row adds TP and SP.
  if (precision_plan(p.training, p.gpu).fwd_reduce_scatter_bytes_per_element >= 2.0 || r.tp <= 1 ||
      !r.sequence_parallel)
    return;
  b.approx(
      "training.tp_fp8_reduce_scatter: the out-projection's and FC2's forward "
      "reduce-scatters were costed in FP8; " +
      how);
}

// training.tp_symm_mem (docs/step-time.md "Async TP's own passes"): the TP overlap was costed
// with or without PyTorch async TP's partial-sum and shard-copy passes; says so where the launched
// framework's overlap is the other kind. `userbuffers`: the framework runs Transformer Engine's.
void note_tp_overlap_kind(Builder& b, const Problem& p, bool userbuffers) {
  if (userbuffers && p.training.tp_symm_mem)
    b.approx(
        "training.tp_symm_mem: the TP overlap was costed as PyTorch's async TP, with a "
        "partial-sum pass per reduce-scatter and a shard copy per all-gather; Transformer "
        "Engine's userbuffers run neither: faster than modelled");
  if (!userbuffers && !p.training.tp_symm_mem)
    b.approx(
        "training.tp_symm_mem = false: the TP overlap was costed without the partial-sum pass "
        "that each of torchtitan's async-TP reduce-scatters runs and the shard copy before each "
        "all-gather: slower than modelled");
}

// Schedules the Megatron-LM engine (Megatron-LM and Megatron-Bridge) runs: with pp > 1, 1F1B
// (vpp 1) and interleaved 1F1B (vpp > 1) only (megatron/core/pipeline_parallel/schedules.py).
bool megatron_schedule_ok(const ResultRow& r, std::string* why) {
  if (!pipelined(r)) return true;
  const Schedule s = schedule_of(r);
  if (s == Schedule::k1F1B && r.vpp == 1) return true;
  if (s == Schedule::kInterleaved1F1B && r.vpp > 1) return true;
  *why = std::string("Megatron-LM has no ") + to_string(s) +
         " pipeline schedule (it runs 1F1B, or interleaved 1F1B with vpp > 1)";
  return false;
}

void megatron_zero_refusal(Builder& b, const ResultRow& r) {
  b.refuse("ZeRO stage " + std::to_string(r.zero_stage) +
           " has no Megatron-LM flag as ppsearch models it (--use-distributed-optimizer is "
           "ZeRO-1). Run this row with torchtitan (FSDP): ppsearch --emit torchtitan. "
           "Megatron-FSDP (--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads" +
           std::string(r.zero_stage == 3 ? "_params" : "") +
           ") is not emitted: its cost is not what ppsearch modelled");
}

void common_header(Builder& b, const char* what, const ResultRow& r) {
  b.comment(std::string(what) + " for " + row_summary(r));
}

// Full recompute as Megatron's (method, num_layers): recompute_num_layers 0 = every layer
// (uniform, 1 layer a chunk), N > 0 = the first N layers of each stage (block, N), -1 = a
// count per stage (/stages recomputed_layers), which Megatron cannot express: block with the
// largest count, more recompute than modelled on the other stages (docs/memory.md).
struct FullRecompute {
  std::string method = "uniform";
  int layers = 1;
  std::string approximation;  // empty: exact
};

FullRecompute full_recompute(const ResultRow& r, const std::vector<std::int64_t>& recomputed) {
  FullRecompute f;
  if (r.recompute_num_layers > 0) {
    f.method = "block";
    f.layers = r.recompute_num_layers;
  } else if (r.recompute_num_layers < 0) {
    std::int64_t most = 0;
    bool differ = false;
    for (std::int64_t n : recomputed) {
      differ = differ || n != recomputed.front();
      most = std::max(most, n);
    }
    if (recomputed.empty()) {
      f.approximation =
          "recompute_num_layers = -1 (a count per stage) without the /stages counts: "
          "every layer is recomputed";
    } else if (most == 0) {
      f.method.clear();  // no stage recomputes anything: the figures of recompute = none
    } else {
      f.method = "block";
      f.layers = static_cast<int>(most);
      if (differ)
        f.approximation =
            "the per-stage recompute counts (/stages recomputed_layers) have no "
            "Megatron form; every stage recomputes its first " +
            std::to_string(most) + " layers (the most any stage needs)";
    }
  }
  return f;
}

// Why Megatron-Core cannot run the costed expert all-to-all overlap (training.moe_a2a_overlap >
// 0: overlap_moe_expert_parallel_comm with delay_wgrad_compute, src/cost/moe_recipe.cpp) for the
// row, or "" when it can: TransformerConfig.__post_init__ @d98e8a64 asserts EP > 1, the alltoall
// or flex dispatcher, no full recomputation, a virtual pipeline size when PP > 1 and at most one
// MTP layer.
std::string a2a_overlap_blocker(const ModelSpec& m, const TrainingSpec& t, const ResultRow& r) {
  if (r.ep <= 1) return "needs expert parallelism (EP > 1)";
  if (t.moe_dispatcher == static_cast<int>(MoeDispatcher::kAllGather))
    return "needs the alltoall or flex token dispatcher";
  if (recompute_of(r) == Recompute::kFull) return "refuses full recomputation";
  if (r.pp > 1 && r.vpp <= 1) return "needs a virtual pipeline size when PP > 1";
  if (m.mtp_layers > 1) return "supports at most one MTP layer";
  return "";
}

// Whether the costed expert all-to-all overlap is launched for this MoE row; when it is costed
// but Megatron-Core cannot run it, says so as an approximation.
bool launch_a2a_overlap(Builder& b, const ModelSpec& m, const TrainingSpec& t, const ResultRow& r) {
  if (!is_moe(m) || t.moe_a2a_overlap <= 0) return false;
  const std::string blocker = a2a_overlap_blocker(m, t, r);
  if (blocker.empty()) return true;
  b.approx(
      "training.moe_a2a_overlap > 0 is modelled, but Megatron-Core's "
      "overlap_moe_expert_parallel_comm " +
      blocker + ": the all-to-all stays exposed, slower than modelled");
  return false;
}

// Mixture of experts and MLA (docs/moe.md): Megatron-LM's MoE and MLA arguments, and the
// recompute modules ppsearch's selective recomputation means for such a model.
void megatron_moe_flags(Builder& b, const ModelSpec& m, const TrainingSpec& t, const ResultRow& r) {
  if (is_mla(m)) {
    b.flag("--multi-latent-attention");
    if (m.mla_q_lora_rank > 0) b.flag("--q-lora-rank", m.mla_q_lora_rank);
    b.flag("--kv-lora-rank", m.mla_kv_lora_rank);
    b.flag("--qk-head-dim", m.mla_qk_nope_head_dim);
    b.flag("--qk-pos-emb-head-dim", m.mla_qk_rope_head_dim);
    b.flag("--v-head-dim", m.mla_v_head_dim);
  }
  if (is_moe(m)) {
    b.flag("--num-experts", m.moe_experts);
    b.flag("--moe-router-topk", m.moe_top_k);
    b.flag("--moe-ffn-hidden-size", static_cast<long long>(expert_ffn(m)));
    if (m.moe_shared_experts > 0)
      b.flag("--moe-shared-expert-intermediate-size",
             static_cast<long long>(m.moe_shared_experts * shared_expert_ffn(m)));
    const int dense = dense_layer_count(m);
    if (dense > 0)
      b.flag("--moe-layer-freq", "\"([0]*" + std::to_string(dense) + "+[1]*" +
                                     std::to_string(m.layers - dense) + ")\"");
    b.flag("--moe-grouped-gemm");
    // The dispatcher and CUDA-graph scopes the host time was costed with (docs/moe.md "Host
    // time of a MoE layer"); flex as HybridEP or DeepEP (training.moe_flex_backend).
    const int d = t.moe_dispatcher;
    b.flag("--moe-token-dispatcher-type", moe_dispatcher_names().at(d));
    if (d == static_cast<int>(MoeDispatcher::kFlex))  // training.moe_flex_backend: 0 hybridep
      b.flag("--moe-flex-dispatcher-backend", t.moe_flex_backend == 1 ? "deepep" : "hybridep");
    unsigned graphs = 0;
    if (parse_cuda_graph_scope(t.cuda_graph_scope, &graphs) && graphs != 0) {
      if (graphs & kGraphFullIteration) {
        b.flag("--cuda-graph-impl", "full_iteration");
      } else {
        std::string modules = cuda_graph_scope_text(graphs);
        std::replace(modules.begin(), modules.end(), '+', ' ');
        b.flag("--cuda-graph-impl", "transformer_engine");
        b.flag("--cuda-graph-modules", modules);
      }
    }
    b.flag("--expert-model-parallel-size", std::max(1, r.ep));
    b.flag("--expert-tensor-parallel-size", std::max(1, r.etp));
    // The 26.06 recipe features that were costed (src/cost/moe_recipe.cpp, docs/moe.md).
    if (launch_a2a_overlap(b, m, t, r)) {
      b.flag("--overlap-moe-expert-parallel-comm");
      b.flag("--delay-wgrad-compute");
      b.comment("--overlap-moe-expert-parallel-comm: training.moe_a2a_overlap = " +
                std::to_string(t.moe_a2a_overlap) +
                " of the expert all-to-all is modelled as hidden (combined 1F1B)");
    }
  }
  if (recompute_of(r) == Recompute::kSelective && (is_moe(m) || is_mla(m))) {
    std::string modules = "core_attn";
    if (is_mla(m)) modules += " mla_up_proj";
    if (is_moe(m)) modules += " moe_act";
    // training.selective_recompute = mla-up-proj: the up projections alone (docs/moe.md
    // "Recomputation").
    if (t.selective_recompute == SelectiveRecompute::kMlaUpProj && is_mla(m))
      modules = "mla_up_proj";
    b.flag("--recompute-modules", modules);
  }
  // Multi-token prediction (docs/moe.md "MTP"), costed on the last pipeline stage, which is where
  // Megatron-Core builds it without a layout (multi_token_prediction.py mtp_on_this_rank: "all
  // of MTP layers on the last pipeline stage"); a layout carries it as 'm' (megatron_layout).
  if (m.mtp_layers > 0) b.flag("--mtp-num-layers", m.mtp_layers);
}

LaunchConfig megatron(const Problem& p, const ResultRow& r,
                      const std::vector<std::pair<int, int>>& st,
                      const std::vector<std::int64_t>& recomputed) {
  Builder b(LaunchFormat::kMegatron);
  common_header(b, "Megatron-LM pretrain_gpt.py arguments", r);
  b.comment("names pinned to NVIDIA/Megatron-LM d98e8a64 (2026-08-22), see docs/launch.md");
  std::string why;
  if (r.zero_stage >= 2) {
    megatron_zero_refusal(b, r);
    return b.finish();
  }
  if (!megatron_schedule_ok(r, &why)) {
    b.refuse(why + "; ppsearch --schedule 1f1b,interleaved-1f1b finds rows Megatron-LM can run");
    return b.finish();
  }
  const ModelSpec& m = p.model;
  b.comment("start on " + std::to_string(r.gpus) + " GPUs (world size = tp*pp*cp*dp; dp " +
            std::to_string(r.dp) + " follows); data, tokenizer (vocab " +
            std::to_string(m.vocab_size) +
            "), normalization, position embedding and optimizer settings are yours to add");
  // arguments.py @d98e8a64 asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP > 1 on GPUs
  // before Blackwell (compute capability < 10), unless the expert all-to-all overlap runs.
  if (r.tp > 1 || r.cp > 1)
    b.comment(
        "environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron-LM requires it with TP or CP > 1 "
        "before Blackwell; with --overlap-moe-expert-parallel-comm it only warns)");
  b.flag("--num-layers", m.layers);
  b.flag("--hidden-size", m.hidden_size);
  b.flag("--ffn-hidden-size", m.ffn_hidden_size);
  b.flag("--num-attention-heads", m.attention_heads);
  if (m.kv_heads != m.attention_heads) {
    b.flag("--group-query-attention");
    b.flag("--num-query-groups", m.kv_heads);
  }
  if (m.head_dim * m.attention_heads != m.hidden_size) b.flag("--kv-channels", m.head_dim);
  b.flag("--seq-length", m.seq_length);
  b.flag("--max-position-embeddings", m.seq_length);
  if (m.mlp == MlpKind::kSwiGLU) b.flag("--swiglu");
  if (!m.tied_embeddings) b.flag("--untie-embeddings-and-output-weights");
  b.flag("--bf16");
  // FP8 (docs/precision.md): Megatron-LM --fp8-format / --fp8-recipe (tensorwise = current
  // scaling) / --fp8-param-gather.
  if (p.training.precision == "fp8") {
    static const char* kRecipe[] = {"delayed", "tensorwise", "mxfp8"};
    b.flag("--fp8-format", p.training.fp8_recipe == Fp8Recipe::kMxfp8 ? "e4m3" : "hybrid");
    b.flag("--fp8-recipe", kRecipe[static_cast<int>(p.training.fp8_recipe)]);
    if (p.training.fp8_param_gather) b.flag("--fp8-param-gather");
    // TransformerConfig.tp_only_amax_red: arguments.py @d98e8a64 lists it among the fields with
    // no command-line flag.
    if (p.training.tp_only_amax_red && p.training.fp8_recipe == Fp8Recipe::kDelayed)
      b.approx(
          "training.tp_only_amax_red is modelled; Megatron-LM has no flag for "
          "tp_only_amax_red (set it in the model config): the amax reductions span DP too");
    // FP8 core attention (training.fp8_attention): TransformerConfig.fp8_dot_product_attention,
    // which arguments.py @d98e8a64 lists among the fields with no command-line flag.
    if (fp8_attention_speedup(p.training, p.gpu) != 1.0)
      b.approx(
          "training.fp8_attention is modelled; Megatron-LM has no flag for "
          "fp8_dot_product_attention (set it in the model config): bf16 attention is slower");
  }
  // Transformer Engine's fused grouped MLP (training.moe_fused_grouped_mlp with MXFP8).
  if (is_moe(m) && fused_grouped_mlp_active(p.training, p.gpu))
    b.flag("--use-transformer-engine-op-fuser");
  b.flag("--tensor-model-parallel-size", r.tp);
  b.flag("--pipeline-model-parallel-size", r.pp);
  b.flag("--context-parallel-size", r.cp);
  if (r.sequence_parallel && r.tp > 1) b.flag("--sequence-parallel");
  // Rank placement tp-cp-pp-dp (docs/topology.md): Megatron-Core's order "tp-cp-ep-pp-dp".
  if (r.placement == 1) b.flag("--use-tp-pp-dp-mapping");
  const int stages = r.pp * r.vpp;
  if (pipelined(r)) {
    if (even_split(st, m.layers, stages)) {
      if (r.vpp > 1) b.flag("--num-virtual-stages-per-pipeline-rank", r.vpp);
      if (st.empty()) b.comment("partition not given: Megatron's even split is assumed");
    } else {
      // Any partition, interleaved or not; Megatron derives the vpp size from it.
      b.flag("--pipeline-model-parallel-layout",
             "\"" + megatron_layout(st, m.layers, m.mtp_layers) + "\"");
    }
  }
  b.flag("--micro-batch-size", r.mbs);
  b.flag("--global-batch-size", r.global_batch_size);
  switch (recompute_of(r)) {
    case Recompute::kNone:
      break;
    case Recompute::kSelective:
      b.flag("--recompute-granularity", "selective");
      break;
    case Recompute::kFull: {
      const FullRecompute f = full_recompute(r, recomputed);
      if (!f.approximation.empty()) b.approx(f.approximation);
      if (f.method.empty()) break;
      b.flag("--recompute-granularity", "full");
      b.flag("--recompute-method", f.method);
      b.flag("--recompute-num-layers", f.layers);
      break;
    }
  }
  megatron_moe_flags(b, m, p.training, r);  // mixture of experts / MLA (docs/moe.md)
  if (r.zero_stage == 1) b.flag("--use-distributed-optimizer");
  // training.optimizer_state_dtype = bf16-moments: Megatron-Core's precision-aware optimizer with
  // bf16 Adam moments (docs/memory.md "Optimizer state"), which needs the distributed optimizer
  // (megatron/core/optimizer/__init__.py).
  if (p.training.optimizer_state_dtype == "bf16-moments") {
    if (r.zero_stage == 1) {
      b.flag("--use-precision-aware-optimizer");
      b.flag("--exp-avg-dtype", "bf16");
      b.flag("--exp-avg-sq-dtype", "bf16");
    } else {
      b.approx(
          "training.optimizer_state_dtype = bf16-moments needs --use-distributed-optimizer "
          "(ZeRO 1); the moments are left fp32");
    }
  }
  if (p.training.optimizer_state_dtype == "bf16")
    b.approx(
        "training.optimizer_state_dtype = bf16 (Apex distributed Adam's bf16 state, NeMo 1.0) "
        "has no Megatron-LM flag (--main-params-dtype takes fp32 or fp16): the state stays fp32, "
        "more memory and optimizer traffic than modelled");
  // The stack's settings the cost model assumed (src/spec/stacks.cpp; docs/step-time.md
  // "Software stacks"), as Megatron-LM d98e8a64 arguments.py spells them. Its defaults are the
  // megatron-core profile's: no DP or TP overlap, overlapped interleaved p2p, fp32 gradient
  // accumulation and reduction, unfused cross entropy.
  // DP overlap (evaluate.cpp: training.overlap_grad_reduce, training.overlap_param_gather).
  // The gradients are reduced over DP x CP (Megatron-Core's data-parallel group with context
  // parallelism; evaluate.cpp reduces over dp·cp ranks), so CP alone has a reduction to overlap.
  const bool dp_reduce = r.dp * r.cp > 1;
  if (dp_reduce && p.training.overlap_grad_reduce) b.flag("--overlap-grad-reduce");
  if (dp_reduce && r.zero_stage == 1 && p.training.overlap_param_gather) {
    // arguments.py asserts "Must use --overlap-param-gather with --overlap-grad-reduce".
    if (p.training.overlap_grad_reduce) {
      b.flag("--overlap-param-gather");
    } else {
      b.approx(
          "training.overlap_param_gather without training.overlap_grad_reduce: Megatron-LM "
          "refuses --overlap-param-gather without --overlap-grad-reduce, so the parameter "
          "all-gather is left exposed: slower than modelled");
    }
  }
  if (launch_tp_overlap(b, p, r, "Megatron's --tp-comm-overlap")) {
    b.flag("--tp-comm-overlap");
    b.comment("--tp-comm-overlap: " + tp_overlap_what(p) +
              " is modelled; needs Transformer Engine");
    note_tp_overlap_kind(b, p, true);
    note_fp8_reduce_scatter(b, p, r,
                            "pass --tp-comm-overlap-cfg with a YAML file whose proj_fprop and "
                            "fc2_fprop entries set method: pipeline and fp8_buf: true, or they "
                            "run in bf16, slower than modelled");
  }
  // Interleaved p2p: overlap_p2p_comm is on unless --no-overlap-p2p-communication.
  if (interleaved(r) && !p.training.p2p_overlap) b.flag("--no-overlap-p2p-communication");
  // 16-bit gradient buffer and reduction (training.grad_reduce_in_fp32 = false): arguments.py
  // sets accumulate_allreduce_grads_in_fp32 = False for --grad-reduce-in-bf16.
  if (!p.training.grad_reduce_in_fp32) b.flag("--grad-reduce-in-bf16");
  // Fused cross entropy (training.cross_entropy_fusion): Megatron-Core's native fusion, the only
  // one d98e8a64 accepts (the TE implementation is refused for stability).
  if (p.training.cross_entropy_fusion) b.flag("--cross-entropy-loss-fusion");
  note_engine_differences(b, p, r);
  return b.finish();
}

LaunchConfig nemo(const Problem& p, const ResultRow& r, const std::vector<std::pair<int, int>>& st,
                  const std::vector<std::int64_t>& recomputed) {
  Builder b(LaunchFormat::kNemo);
  common_header(b, "NeMo / Megatron-Bridge ConfigContainer overrides (key=value)", r);
  b.comment(
      "names pinned to NVIDIA-NeMo/Megatron-Bridge 067f987d (2026-08-22), see "
      "docs/launch.md");
  std::string why;
  if (r.zero_stage >= 2) {
    megatron_zero_refusal(b, r);
    return b.finish();
  }
  if (!megatron_schedule_ok(r, &why)) {
    b.refuse(why + " (Megatron-Bridge uses the same engine)");
    return b.finish();
  }
  const ModelSpec& m = p.model;
  b.comment("start on " + std::to_string(r.gpus) + " GPUs; data-parallel size " +
            std::to_string(r.dp) + " follows from the world size");
  if (m.mlp == MlpKind::kSwiGLU)
    b.comment("SwiGLU: gated_linear_unit=true with the recipe's activation_func (silu)");
  b.flag("model.num_layers", std::to_string(m.layers));
  b.flag("model.hidden_size", std::to_string(m.hidden_size));
  b.flag("model.ffn_hidden_size", std::to_string(m.ffn_hidden_size));
  b.flag("model.num_attention_heads", std::to_string(m.attention_heads));
  b.flag("model.num_query_groups", std::to_string(m.kv_heads));
  b.flag("model.kv_channels", std::to_string(m.head_dim));
  b.flag("model.seq_length", std::to_string(m.seq_length));
  b.flag("model.gated_linear_unit", tf(m.mlp == MlpKind::kSwiGLU));
  b.flag("model.share_embeddings_and_output_weights", tf(m.tied_embeddings));
  b.flag("model.bf16", "true");
  if (r.placement == 1)  // rank placement (docs/topology.md)
    b.approx(
        "rank placement tp-cp-pp-dp: set Megatron-Core's use_tp_pp_dp_mapping as the recipe "
        "allows; the default order places the ranks tp-cp-dp-pp");
  if (p.training.precision == "fp8") {  // docs/precision.md
    static const char* kRecipe[] = {"delayed", "tensorwise", "mxfp8"};
    b.flag("model.fp8", p.training.fp8_recipe == Fp8Recipe::kMxfp8 ? "e4m3" : "hybrid");
    b.flag("model.fp8_recipe", kRecipe[static_cast<int>(p.training.fp8_recipe)]);
    if (p.training.fp8_param_gather) {
      b.approx("training.fp8_param_gather: set mixed_precision.fp8_param_gather = true");
    }
    if (p.training.tp_only_amax_red && p.training.fp8_recipe == Fp8Recipe::kDelayed)
      b.flag("model.tp_only_amax_red", "true");  // a TransformerConfig field of the provider
  }
  b.flag("model.tensor_model_parallel_size", std::to_string(r.tp));
  b.flag("model.pipeline_model_parallel_size", std::to_string(r.pp));
  b.flag("model.virtual_pipeline_model_parallel_size",
         r.vpp > 1 ? std::to_string(r.vpp) : std::string("null"));
  if (pipelined(r) && !even_split(st, m.layers, r.pp * r.vpp))
    b.flag("model.pipeline_model_parallel_layout",
           "\"" + megatron_layout(st, m.layers, m.mtp_layers) + "\"");
  b.flag("model.context_parallel_size", std::to_string(r.cp));
  if (is_moe(m)) {  // mixture of experts (docs/moe.md): the model's MoE settings are its recipe's
    b.flag("model.expert_model_parallel_size", std::to_string(std::max(1, r.ep)));
    b.flag("model.expert_tensor_parallel_size", std::to_string(std::max(1, r.etp)));
  }
  // Multi-token prediction (docs/moe.md "MTP"): Megatron-Bridge passes the model provider's
  // mtp_num_layers to Megatron-Core, which places it as megatron() does.
  if (m.mtp_layers > 0) b.flag("model.mtp_num_layers", std::to_string(m.mtp_layers));
  // The 26.06 recipe features that were costed (src/cost/moe_recipe.cpp, docs/moe.md): the keys
  // the recipes set (scripts/performance/utils/overrides.py), here on the model provider.
  if (launch_a2a_overlap(b, m, p.training, r)) {
    b.flag("model.overlap_moe_expert_parallel_comm", "true");
    b.flag("model.delay_wgrad_compute", "true");
    b.comment(
        "model.overlap_moe_expert_parallel_comm: training.moe_a2a_overlap > 0 is modelled; a "
        "recipe with a comm_overlap config sets it from "
        "comm_overlap.overlap_moe_expert_parallel_comm, so make that true as well");
  }
  if (fp8_attention_speedup(p.training, p.gpu) != 1.0)
    b.flag("model.fp8_dot_product_attention", "true");
  if (is_moe(m) && fused_grouped_mlp_active(p.training, p.gpu))
    b.flag("model.use_transformer_engine_op_fuser", "true");
  b.flag("model.sequence_parallel", tf(r.sequence_parallel && r.tp > 1));
  switch (recompute_of(r)) {
    case Recompute::kNone:
      b.flag("model.recompute_granularity", "null");
      break;
    case Recompute::kSelective:
      b.flag("model.recompute_granularity", "selective");
      break;
    case Recompute::kFull: {
      const FullRecompute f = full_recompute(r, recomputed);
      if (!f.approximation.empty()) b.approx(f.approximation);
      if (f.method.empty()) {
        b.flag("model.recompute_granularity", "null");
        break;
      }
      b.flag("model.recompute_granularity", "full");
      b.flag("model.recompute_method", f.method);
      b.flag("model.recompute_num_layers", std::to_string(f.layers));
      break;
    }
  }
  b.flag("train.micro_batch_size", std::to_string(r.mbs));
  b.flag("train.global_batch_size", std::to_string(r.global_batch_size));
  b.flag("dataset.seq_length", std::to_string(m.seq_length));
  b.flag("optimizer.use_distributed_optimizer", tf(r.zero_stage == 1));
  b.flag("ddp.use_distributed_optimizer", tf(r.zero_stage == 1));
  // Reduced over DP x CP, as in megatron() above.
  b.flag("ddp.overlap_grad_reduce", tf(r.dp * r.cp > 1 && p.training.overlap_grad_reduce));
  b.flag("ddp.overlap_param_gather",
         tf(r.dp * r.cp > 1 && r.zero_stage == 1 && p.training.overlap_param_gather));
  // The rest of the stack the cost model assumed (src/spec/stacks.cpp), every key explicit since
  // the recipe's own values differ from model to model. The provider's defaults
  // (ModelParallelConfig @d98e8a64): tp_comm_overlap False, overlap_p2p_comm False with
  // batch_p2p_comm True.
  const bool tp_overlap = launch_tp_overlap(b, p, r, "Transformer Engine's TP overlap");
  b.flag("model.tp_comm_overlap", tf(tp_overlap));
  if (tp_overlap)
    b.comment(
        "model.tp_comm_overlap: " + tp_overlap_what(p) +
        " is modelled (Megatron-Bridge initialize.py then sets up TE userbuffers); a recipe "
        "with a comm_overlap config sets it from comm_overlap.tp_comm_overlap, so make that true "
        "as well");
  if (tp_overlap) note_tp_overlap_kind(b, p, true);
  note_fp8_reduce_scatter(b, p, r,
                          "set comm_overlap.tp_comm_overlap_cfg's proj_fprop and fc2_fprop to "
                          "PipelineOverlapCfg(..., fp8_buf=True) in the recipe, or they run in "
                          "bf16, slower than modelled");
  if (interleaved(r)) {
    // overlap_p2p_comm must come with batch_p2p_comm off (ModelParallelConfig.__post_init__).
    b.flag("model.overlap_p2p_comm", tf(p.training.p2p_overlap));
    b.flag("model.batch_p2p_comm", tf(!p.training.p2p_overlap));
  }
  b.flag("ddp.grad_reduce_in_fp32", tf(p.training.grad_reduce_in_fp32));
  b.flag("model.cross_entropy_loss_fusion", tf(p.training.cross_entropy_fusion));
  if (p.training.cross_entropy_fusion) b.flag("model.cross_entropy_fusion_impl", "native");
  if (p.training.optimizer_state_dtype == "bf16")
    b.approx(
        "training.optimizer_state_dtype = bf16 (Apex distributed Adam, NeMo 1.0) has no "
        "Megatron-Bridge key: the state stays fp32, more memory and optimizer traffic than "
        "modelled");
  note_engine_differences(b, p, r);
  return b.finish();
}

// torchtitan splits by modules; its names for the parts are "tok_embeddings", "layers.N",
// "norm" and "output" (torchtitan/models/*/model.py).
std::string fqns_of(const std::vector<std::pair<int, int>>& st, int L) {
  std::string s = "[";
  for (std::size_t i = 0; i < st.size(); ++i) {
    s += i ? ", [" : "[";
    bool first = true;
    auto add = [&](const std::string& n) {
      s += (first ? "\"" : ", \"") + n + "\"";
      first = false;
    };
    for (int item = st[i].first; item <= st[i].second; ++item) {
      if (item == 0) add("tok_embeddings");
      if (item >= 1 && item <= L) add("layers." + std::to_string(item - 1));
      if (item == L + 1) {
        add("norm");
        add("output");
      }
    }
    s += "]";
  }
  return s + "]";
}

LaunchConfig torchtitan(const Problem& p, const ResultRow& r,
                        const std::vector<std::pair<int, int>>& st) {
  Builder b(LaunchFormat::kTorchtitan);
  common_header(b, "torchtitan train.py options (--section.key value)", r);
  b.comment(
      "names pinned to pytorch/torchtitan b5bcd76c (2026-08-21), see docs/launch.md; "
      "the model itself is chosen with --module/--config");
  if (r.placement == 1)  // rank placement (docs/topology.md)
    b.approx(
        "rank placement tp-cp-pp-dp has no torchtitan option: its device mesh keeps pp "
        "outermost (tp-cp-dp-pp), which costs more on this fabric");
  const ModelSpec& m = p.model;
  const Schedule sch = schedule_of(r);
  std::string schedule_name;
  if (pipelined(r)) {
    if (sch == Schedule::kGPipe && r.vpp == 1) schedule_name = "GPipe";
    if (sch == Schedule::k1F1B && r.vpp == 1) schedule_name = "1F1B";
    if (sch == Schedule::kInterleaved1F1B && r.vpp > 1) schedule_name = "Interleaved1F1B";
    // ZB-V: torch.distributed.pipelining's ScheduleZBVZeroBubble, 2 stages per rank placed in
    // a V (torchtitan picks the V placement for it); its W placement is its own.
    if (sch == Schedule::kZBV && r.vpp == 2) {
      schedule_name = "ZBVZeroBubble";
      b.approx(
          "ZBVZeroBubble places B and W with its own rules; ppsearch simulated the reference "
          "zbv.py order (docs/algorithms.md §2.4) and reports its period under optimizer "
          "post-validation, where one step's cool-down overlaps the next step's warm-up; "
          "torch.distributed.pipelining flushes every step, so expect up to (PP-1) chunk "
          "forwards more per step than the row's iteration_time_s");
    }
    if (sch == Schedule::kDualPipe) {
      b.refuse(
          "torch.distributed.pipelining has no bidirectional DualPipe with two parameter "
          "copies (its DualPipeV is the one-copy V variant, not what ppsearch simulated); "
          "ppsearch --schedule zb-v,interleaved-1f1b,1f1b finds rows torchtitan can run");
      return b.finish();
    }
    if (schedule_name.empty()) {
      b.refuse(std::string("torch.distributed.pipelining has no ") + to_string(sch) +
               " schedule with " + std::to_string(r.vpp) +
               " stage(s) per rank (its zero-bubble schedules, InterleavedZeroBubble and "
               "ZBVZeroBubble, need several stages per rank); ppsearch --schedule "
               "gpipe,1f1b,interleaved-1f1b finds rows torchtitan can run");
      return b.finish();
    }
  }
  b.comment("start on " + std::to_string(r.gpus) + " GPUs (NGPU = tp*pp*cp*dp)");
  // Data parallelism: ZeRO-0 = DDP (replicate), ZeRO-3 = FSDP resharding after forward (the
  // model gathers the parameters again for every micro-batch's backward, evaluate.cpp),
  // ZeRO-2 = FSDP keeping them between forward and backward. torchtitan has no ZeRO-1.
  int replicate = r.dp, shard = 1;
  std::string reshard;
  if (r.zero_stage >= 1) {
    replicate = 1;
    shard = r.dp;
    reshard = r.zero_stage == 3 ? "always" : "never";
  }
  if (r.zero_stage == 1)
    b.approx(
        "ZeRO-1 (optimizer state sharded) has no torchtitan form; FSDP with "
        "fsdp_reshard_after_forward never (ZeRO-2-like) is used: less memory than "
        "modelled, about the same traffic");
  // FSDP's gradient passes (training.fsdp_impl, src/cost/fsdp_grad.cpp): torchtitan's FSDP is
  // FSDP2, whose copy-in differs from what another implementation was costed with.
  if (r.zero_stage >= 2 && r.dp * r.cp > 1 && p.training.fsdp_impl != "fsdp2")
    b.approx("training.fsdp_impl = " + p.training.fsdp_impl +
             " was costed; torchtitan runs FSDP2 (fully_shard), whose gradient copy-in before "
             "each reduce-scatter moves other bytes (docs/step-time.md \"FSDP's gradient "
             "passes\")");
  b.flag("--parallelism.data_parallel_replicate_degree", replicate);
  b.flag("--parallelism.data_parallel_shard_degree", shard);
  if (!reshard.empty() && shard > 1) b.flag("--parallelism.fsdp_reshard_after_forward", reshard);
  b.flag("--parallelism.tensor_parallel_degree", r.tp);
  // tyro takes a bool as a flag pair: --x.key / --x.no-key.
  if (r.tp > 1)
    b.word(r.sequence_parallel ? "--parallelism.enable_sequence_parallel"
                               : "--parallelism.no-enable_sequence_parallel");
  b.flag("--parallelism.context_parallel_degree", r.cp);
  if (is_moe(m)) {  // mixture of experts (docs/moe.md)
    b.flag("--parallelism.expert_parallel_degree", std::max(1, r.ep));
    b.flag("--parallelism.expert_tensor_parallel_degree", std::max(1, r.etp));
    b.approx(
        "torchtitan's expert parallelism borrows its ranks from data and context parallelism, "
        "ppsearch modelled Megatron-Core's folding over TP x CP x DP");
  }
  b.flag("--parallelism.pipeline_parallel_degree", r.pp);
  if (pipelined(r)) {
    b.flag("--parallelism.pipeline_parallel_schedule", schedule_name);
    b.flag("--parallelism.num_pp_microbatches", r.num_microbatches);
    const int stages = r.pp * r.vpp;
    if (even_split(st, m.layers, stages)) {
      b.flag("--parallelism.pipeline_parallel_layers_per_stage", m.layers / stages);
      b.flag("--parallelism.pipeline_parallel_first_stage_less_layers", 0);
      b.flag("--parallelism.pipeline_parallel_last_stage_less_layers", 0);
    } else {
      b.approx(
          "the uneven partition has no command-line form; set it in the config function: "
          "parallelism.module_fqns_per_model_part = " +
          fqns_of(st, m.layers) + " (below: the even split is launched instead)");
      b.flag("--parallelism.pipeline_parallel_layers_per_stage", (m.layers + stages - 1) / stages);
    }
  }
  b.flag("--training.max_context_length", m.seq_length);
  b.flag("--training.num_tokens_per_microbatch_per_dp_rank",
         static_cast<long long>(r.mbs) * m.seq_length);
  b.flag("--training.num_tokens_per_train_step",
         static_cast<long long>(r.global_batch_size) * m.seq_length);
  b.flag("--training.mixed_precision_param", "bfloat16");
  // Gradient reduce-scatter dtype (training.grad_reduce_in_fp32; torchtitan's default float32).
  b.flag("--training.mixed_precision_reduce",
         p.training.grad_reduce_in_fp32 ? "float32" : "bfloat16");
  if (p.training.precision == "fp8") {  // docs/precision.md
    b.approx(
        "training.precision = fp8 is modelled on Transformer Engine's recipes; torchtitan's FP8 "
        "(--model.converters float8, torchao) is its own implementation and is not set here");
  }
  // The optimizer step (training.optimizer_impl, src/cost/optimizer_step.cpp):
  // OptimizersContainer.Config.implementation @b5bcd76c, "fused" by default.
  const std::string& impl = p.training.optimizer_impl;
  if (impl == "torch-foreach") {
    b.flag("--optimizer.implementation", "foreach");
  } else if (p.training.optimizer_state_dtype == "bf16-moments") {
    // Fused AdamW with bf16 moments ("fused_opt_states_bf16", fp32 parameters).
    b.flag("--optimizer.implementation", "fused_opt_states_bf16");
  } else {
    b.flag("--optimizer.implementation", "fused");
    if (impl != "torch-fused")
      b.comment(
          "--optimizer.implementation fused: the step was costed as Megatron's distributed "
          "optimizer (30-36 B a parameter), PyTorch's fused AdamW moves 28 B");
    if (p.training.optimizer_state_dtype == "bf16")
      b.approx(
          "training.optimizer_state_dtype = bf16 (bf16 weights and moments) has no torchtitan "
          "form: the fp32 state takes more memory than modelled");
  }
  // Fused element-wise kernels (training.fused_elementwise) are torch.compile's in torchtitan,
  // and async TP (the TP collectives pipelined with their matmuls) needs compile
  // (CompileConfig.__post_init__ @b5bcd76c: "Async TP requires 'model' in --compile.components",
  // which the default components include).
  // torchtitan's async TP pipelines the sequence-parallel all-gathers and reduce-scatters.
  const bool async_tp = launch_tp_overlap(b, p, r, "torchtitan's async TP");
  const bool compile = p.training.fused_elementwise || async_tp;
  b.word(compile ? "--compile.enable" : "--compile.no-enable");
  // training.fused_norm (docs/step-time.md "Fused RMSNorm in eager PyTorch"): no torchtitan flag
  // chooses it; the torch version does.
  if (!compile && p.training.fused_norm)
    b.comment(
        "training.fused_norm: the norms were costed as PyTorch >= 2.9's fused RMSNorm kernel; "
        "an older torch runs them composed, slower than modelled");
  if (async_tp) {
    b.word("--compile.enable_async_tensor_parallel");
    b.comment("--compile.enable_async_tensor_parallel: " + tp_overlap_what(p) + " is modelled");
    note_tp_overlap_kind(b, p, false);
    note_fp8_reduce_scatter(b, p, r,
                            "torchtitan has no such option (its row-parallel matmuls write bf16 "
                            "outputs, which it reduce-scatters): slower than modelled");
    if (!p.training.fused_elementwise)
      b.approx(
          "async TP needs torch.compile, which also fuses the element-wise ops that were "
          "costed unfused (training.fused_elementwise = false): faster than modelled");
  }
  if (p.training.cross_entropy_fusion)
    b.approx(
        "training.cross_entropy_fusion: torchtitan has no fused cross-entropy option (compile "
        "covers the loss with --compile.components loss); the logits' memory differs");
  switch (recompute_of(r)) {
    case Recompute::kNone:
      b.word("activation-checkpoint:none");
      break;
    case Recompute::kSelective:
      b.word("activation-checkpoint:selective");
      b.approx(
          "torchtitan's selective policy saves matmul outputs chosen per op; ppsearch models "
          "Megatron's selective recompute (attention core only)");
      break;
    case Recompute::kFull:
      if (r.recompute_num_layers != 0)
        b.approx(
            "torchtitan's full activation checkpointing covers every layer; ppsearch "
            "modelled recomputing only some (recompute_num_layers = " +
            std::to_string(r.recompute_num_layers) + "): slower, less memory than modelled");
      b.word("activation-checkpoint:full");
      // torchtitan's checkpoint wrapper is PyTorch's non-reentrant one, which stops the replay
      // before FC2 (docs/step-time.md "Early-stopping recomputation").
      if (!p.training.recompute_skip_fc2)
        b.approx(
            "torchtitan's full activation checkpointing (non-reentrant) stops each replay "
            "before FC2; the row was costed replaying it (training.recompute_skip_fc2 = "
            "false): faster than modelled");
      break;
  }
  return b.finish();
}

}  // namespace

LaunchConfig emit_launch_config(LaunchFormat format, const Problem& problem, const ResultRow& row,
                                const std::vector<std::pair<int, int>>& stages,
                                const std::vector<std::int64_t>& recomputed_layers) {
  switch (format) {
    case LaunchFormat::kMegatron:
      return megatron(problem, row, stages, recomputed_layers);
    case LaunchFormat::kNemo:
      return nemo(problem, row, stages, recomputed_layers);
    case LaunchFormat::kTorchtitan:
      return torchtitan(problem, row, stages);
  }
  return {};
}

}  // namespace ppsearch
