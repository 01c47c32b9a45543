// The configuration-key registry (docs/interface.md §2; docs/architecture.md §3.5 "one
// definition per knob"). Every key is one row of kKeys below: its parser, range
// check, unit conversion, canonical text, default and help all derive from it.
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/util/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace ppsearch {
namespace {

// ---------------------------------------------------------------------------
// Units. SI = file value × scale, or file value ÷ scale for sub-unit units:
// dividing keeps decimal microseconds exact (4 / 1e6 is the double nearest to
// 4e-6, whereas 4 * 1e-6 need not be).
struct Unit {
  const char* text;
  double scale;
  bool divide;
};
constexpr Unit kNoUnit{"", 1.0, false};
constexpr Unit kGB{"GB", 1e9, false};             // _gb = 10^9 bytes (docs/interface.md §2)
constexpr Unit kGBps{"GB/s", 1e9, false};         // _gb_per_s = 10^9 bytes/s
constexpr Unit kGbitps{"Gbit/s", 1.25e8, false};  // _gbit_per_s = 10^9 bits/s = 1.25e8 bytes/s
constexpr Unit kTflops{"TFLOP/s", 1e12, false};   // _tflops = 10^12 FLOP/s
constexpr Unit kUs{"µs", 1e6, true};              // _us = 10^-6 s

double file_to_si(const Unit& u, double x) { return u.divide ? x / u.scale : x * u.scale; }
double si_to_file(const Unit& u, double si) { return u.divide ? si * u.scale : si / u.scale; }

// ---------------------------------------------------------------------------
// One registry row.
struct KeyDef {
  std::string name;
  KeyType type = KeyType::kInt;
  Unit unit = kNoUnit;
  double lo = 0;  // numeric range in file units (ints and floats; list items)
  double hi = 0;
  bool lo_open = false;
  bool hi_open = false;
  bool has_hi = false;
  bool allow_auto = false;           // lists: "auto" = empty = every valid value
  bool allow_empty = false;          // lists: an empty value means an empty list
  std::size_t max_items = 0;         // lists: most values after de-duplication (0 = no limit)
  std::vector<std::string> choices;  // kEnum / kEnumList names (index = stored value); kString set
  bool count_suffix = false;         // kFloat: also K, M, B, T suffixes (parse_token_count)
  std::string allowed;               // filled from the fields above unless given
  std::string help;
  // Field access: exactly one group is set.
  int& (*int_ref)(Problem&) = nullptr;
  double& (*double_ref)(Problem&) = nullptr;
  bool& (*bool_ref)(Problem&) = nullptr;
  std::string& (*string_ref)(Problem&) = nullptr;
  std::vector<int>& (*list_ref)(Problem&) = nullptr;
  int (*enum_get)(const Problem&) = nullptr;
  void (*enum_set)(Problem&, int) = nullptr;
  std::vector<int> (*enum_list_get)(const Problem&) = nullptr;
  void (*enum_list_set)(Problem&, const std::vector<int>&) = nullptr;
};

constexpr double kIntMax = std::numeric_limits<int>::max();

std::string number_text(double x) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest text that parses back to x
  return std::string(buf, res.ptr);
}

std::string int_text(double x) { return std::to_string(static_cast<long long>(x)); }

// A range bound: whole numbers as plain digits ("100000", not "1e+05").
std::string bound_text(double x, bool integer) {
  return integer || (x == std::floor(x) && std::fabs(x) < 1e15) ? int_text(x) : number_text(x);
}

std::string describe_range(const KeyDef& d, bool integer) {
  const std::string lo = bound_text(d.lo, integer);
  if (!d.has_hi) return (d.lo_open ? "> " : "≥ ") + lo;
  const std::string hi = bound_text(d.hi, integer);
  return std::string("in ") + (d.lo_open ? "(" : "[") + lo + ", " + hi + (d.hi_open ? ")" : "]");
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string generated_allowed(const KeyDef& d) {
  switch (d.type) {
    case KeyType::kInt:
      return "an integer " + describe_range(d, true);
    case KeyType::kFloat:
      return "a number " + describe_range(d, false);
    case KeyType::kBool:
      return "true or false";
    case KeyType::kString:
      return d.choices.empty() ? "text without '#'" : "one of " + join(d.choices, ", ");
    case KeyType::kEnum:
      return "one of " + join(d.choices, ", ");
    case KeyType::kIntList:
      // The item limit is worth saying only where the range holds more values than it.
      return "a comma list of " +
             (d.max_items > 0 && d.has_hi && d.hi - d.lo + 1 > static_cast<double>(d.max_items)
                  ? "at most " + std::to_string(d.max_items) + " "
                  : std::string()) +
             "integers " + describe_range(d, true) + (d.allow_auto ? ", or auto" : "");
    case KeyType::kEnumList:
      return "a comma list of " + join(d.choices, ", ") + (d.allow_auto ? ", or auto" : "");
  }
  return "";
}

// --- builders ---------------------------------------------------------------
KeyDef int_key(const char* name, int& (*ref)(Problem&), double lo, const char* help,
               double hi = kIntMax, bool has_hi = false) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kInt;
  d.lo = lo;
  d.hi = hi;
  d.has_hi = has_hi;
  d.help = help;
  d.int_ref = ref;
  return d;
}

KeyDef float_key(const char* name, double& (*ref)(Problem&), Unit unit, double lo, bool lo_open,
                 const char* help) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kFloat;
  d.unit = unit;
  d.lo = lo;
  d.lo_open = lo_open;
  d.help = help;
  d.double_ref = ref;
  return d;
}

KeyDef fraction_key(const char* name, double& (*ref)(Problem&), bool lo_open, const char* help) {
  KeyDef d = float_key(name, ref, kNoUnit, 0.0, lo_open, help);
  d.hi = 1.0;
  d.has_hi = true;
  return d;
}

// Sets a closed range [lo, hi] (file units) on a row built above.
KeyDef within(KeyDef d, double lo, double hi) {
  d.lo = lo;
  d.hi = hi;
  d.lo_open = false;
  d.hi_open = false;
  d.has_hi = true;
  return d;
}

KeyDef bool_key(const char* name, bool& (*ref)(Problem&), const char* help) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kBool;
  d.help = help;
  d.bool_ref = ref;
  return d;
}

KeyDef string_key(const char* name, std::string& (*ref)(Problem&), const char* help,
                  std::vector<std::string> choices = {}) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kString;
  d.help = help;
  d.choices = std::move(choices);
  d.string_ref = ref;
  return d;
}

KeyDef enum_key(const char* name, std::vector<std::string> choices, int (*get)(const Problem&),
                void (*set)(Problem&, int), const char* help) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kEnum;
  d.choices = std::move(choices);
  d.help = help;
  d.enum_get = get;
  d.enum_set = set;
  return d;
}

KeyDef int_list_key(const char* name, std::vector<int>& (*ref)(Problem&), double lo, double hi,
                    bool has_hi, const char* help) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kIntList;
  d.lo = lo;
  d.hi = hi;
  d.has_hi = has_hi;
  d.allow_auto = true;
  d.max_items = static_cast<std::size_t>(kMaxListItems);
  d.help = help;
  d.list_ref = ref;
  return d;
}

KeyDef enum_list_key(const char* name, std::vector<std::string> choices,
                     std::vector<int> (*get)(const Problem&),
                     void (*set)(Problem&, const std::vector<int>&), const char* help) {
  KeyDef d;
  d.name = name;
  d.type = KeyType::kEnumList;
  d.choices = std::move(choices);
  d.allow_auto = true;
  d.help = help;
  d.enum_list_get = get;
  d.enum_list_set = set;
  return d;
}

template <typename Enum, int N>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (int i = 0; i < N; ++i) out.emplace_back(to_string(static_cast<Enum>(i)));
  return out;
}

template <typename Enum>
std::vector<int> enums_to_ints(const std::vector<Enum>& v) {
  std::vector<int> out;
  for (Enum e : v) out.push_back(static_cast<int>(e));
  return out;
}

template <typename Enum>
std::vector<Enum> ints_to_enums(const std::vector<int>& v) {
  std::vector<Enum> out;
  for (int i : v) out.push_back(static_cast<Enum>(i));
  return out;
}

// Field accessors as capture-less lambdas.
#define PPSEARCH_REF(T, member) [](Problem& p) -> T& { return p.member; }

std::vector<KeyDef> build_table() {
  std::vector<KeyDef> t;
  // ---- [model] -------------------------------------------------------------
  t.push_back(string_key("model.name", PPSEARCH_REF(std::string, model.name),
                         "label used in reports and default output names"));
  t.push_back(int_key("model.layers", PPSEARCH_REF(int, model.layers), 1, "transformer layers L_t",
                      kMaxLayers, true));
  t.push_back(int_key("model.hidden_size", PPSEARCH_REF(int, model.hidden_size), 1, "model width h",
                      kMaxHiddenSize, true));
  t.push_back(int_key("model.ffn_hidden_size", PPSEARCH_REF(int, model.ffn_hidden_size), 1,
                      "MLP width F (width of each MLP matrix)", kMaxFfnHiddenSize, true));
  t.push_back(int_key("model.attention_heads", PPSEARCH_REF(int, model.attention_heads), 1,
                      "query heads a", kMaxHeads, true));
  t.push_back(int_key("model.kv_heads", PPSEARCH_REF(int, model.kv_heads), 0,
                      "key/value heads g (GQA); 0 = attention_heads (MHA)", kMaxHeads, true));
  t.back().allowed = "an integer in [0, 16384] (0 = model.attention_heads)";
  t.push_back(int_key("model.head_dim", PPSEARCH_REF(int, model.head_dim), 0,
                      "width of one head d_h; 0 = hidden_size / attention_heads", kMaxHeads, true));
  t.back().allowed = "an integer in [0, 16384] (0 = model.hidden_size / model.attention_heads)";
  t.push_back(int_key("model.vocab_size", PPSEARCH_REF(int, model.vocab_size), 1,
                      "padded vocabulary V", kMaxVocabSize, true));
  t.push_back(int_key("model.seq_length", PPSEARCH_REF(int, model.seq_length), 1,
                      "tokens per sequence s", kMaxSeqLength, true));
  t.push_back(enum_key(
      "model.mlp", enum_names<MlpKind, 2>(),
      [](const Problem& p) { return static_cast<int>(p.model.mlp); },
      [](Problem& p, int v) { p.model.mlp = static_cast<MlpKind>(v); },
      "MLP type: swiglu = gated, 3 matrices; gelu = 2 matrices (GeLU, squared ReLU, ...)"));
  t.push_back(bool_key("model.tied_embeddings", PPSEARCH_REF(bool, model.tied_embeddings),
                       "input embedding and output layer share one weight matrix"));
  // Mixture of experts and multi-head latent attention (docs/moe.md).
  t.push_back(int_key("model.moe_experts", PPSEARCH_REF(int, model.moe_experts), 0,
                      "routed experts per MoE layer E; 0 = dense model", kMaxMoeExperts, true));
  t.push_back(int_key("model.moe_top_k", PPSEARCH_REF(int, model.moe_top_k), 0,
                      "routed experts each token is sent to k (1..moe_experts with experts)",
                      kMaxMoeExperts, true));
  t.push_back(int_key("model.moe_ffn_hidden_size", PPSEARCH_REF(int, model.moe_ffn_hidden_size), 0,
                      "width of one routed expert's MLP F_e; 0 = ffn_hidden_size",
                      kMaxFfnHiddenSize, true));
  t.push_back(int_key("model.moe_shared_experts", PPSEARCH_REF(int, model.moe_shared_experts), 0,
                      "shared experts every token goes through (DeepSeek)", kMaxMoeExperts, true));
  t.push_back(int_key(
      "model.moe_shared_ffn_hidden_size", PPSEARCH_REF(int, model.moe_shared_ffn_hidden_size), 0,
      "width of one shared expert; 0 = moe_ffn_hidden_size", kMaxFfnHiddenSize, true));
  t.push_back(int_key(
      "model.moe_first_dense_layers", PPSEARCH_REF(int, model.moe_first_dense_layers), 0,
      "leading layers with a dense MLP of ffn_hidden_size (DeepSeek-V3: 3)", kMaxLayers, true));
  t.push_back(int_key("model.mla_q_lora_rank", PPSEARCH_REF(int, model.mla_q_lora_rank), 0,
                      "MLA query compression rank; 0 = uncompressed query projection",
                      kMaxHiddenSize, true));
  t.push_back(int_key("model.mla_kv_lora_rank", PPSEARCH_REF(int, model.mla_kv_lora_rank), 0,
                      "MLA key/value compression rank; 0 = no MLA (plain attention)",
                      kMaxHiddenSize, true));
  t.push_back(int_key("model.mla_qk_rope_head_dim", PPSEARCH_REF(int, model.mla_qk_rope_head_dim),
                      0, "MLA decoupled RoPE query/key width per head", kMaxHeads, true));
  t.push_back(int_key("model.mla_qk_nope_head_dim", PPSEARCH_REF(int, model.mla_qk_nope_head_dim),
                      0, "MLA query/key width per head without RoPE", kMaxHeads, true));
  t.push_back(int_key("model.mla_v_head_dim", PPSEARCH_REF(int, model.mla_v_head_dim), 0,
                      "MLA value width per head", kMaxHeads, true));
  // Sliding-window attention (docs/moe.md "Sliding-window attention").
  t.push_back(int_key("model.attention_window", PPSEARCH_REF(int, model.attention_window), 0,
                      "sliding-window attention: keys before each query in a windowed layer "
                      "(Megatron window_size (w, 0); GPT-OSS: 128); 0 = full attention",
                      kMaxSeqLength, true));
  t.push_back(int_key("model.window_attn_skip_freq", PPSEARCH_REF(int, model.window_attn_skip_freq),
                      0,
                      "with attention_window: every N-th layer is full attention (Megatron "
                      "window_attn_skip_freq; GPT-OSS: 2); 0 = every layer windowed",
                      kMaxLayers, true));
  // Multi-token prediction (docs/moe.md "MTP").
  t.push_back(
      int_key("model.mtp_layers", PPSEARCH_REF(int, model.mtp_layers), 0,
              "multi-token-prediction modules trained with the model (Megatron-Core "
              "mtp_num_layers; DeepSeek-V3: 1), costed on the last pipeline stage; 0 = none",
              kMaxLayers, true));
  // Linear biases (docs/moe.md "Linear biases").
  t.push_back(bool_key("model.linear_bias", PPSEARCH_REF(bool, model.linear_bias),
                       "every linear layer carries a bias (Megatron-Core add_bias_linear; "
                       "GPT-OSS: true): the routed experts' FC2 bias then costs extra "
                       "memory-bound passes unless training.moe_fused_grouped_mlp"));
  // YaRN RoPE (docs/moe.md "YaRN RoPE").
  t.push_back(bool_key("model.yarn_rope", PPSEARCH_REF(bool, model.yarn_rope),
                       "RoPE with YaRN scaling as its own position-embedding type (Megatron-Core "
                       "position_embedding_type = yarn; GPT-OSS: true): Megatron-Bridge then "
                       "runs RoPE unfused, extra memory-bound passes over q and k"));
  // Document-masked attention (docs/step-time.md "Document-masked attention").
  t.push_back(int_key("model.attention_document_tokens",
                      PPSEARCH_REF(int, model.attention_document_tokens), 0,
                      "document-masked (block-causal) attention: mean length of the packed "
                      "documents attention stays within (torchtitan attn_mask_type "
                      "block_causal); 0 = causal over the whole sequence",
                      kMaxSeqLength, true));
  // ALiBi (docs/step-time.md "ALiBi on materialised attention scores").
  t.push_back(bool_key("model.alibi", PPSEARCH_REF(bool, model.alibi),
                       "attention scores get ALiBi's per-head linear position bias (BLOOM: true): "
                       "with training.unfused_attention, 4 bytes of HBM traffic per score element "
                       "in each forward pass; no cost with a fused attention kernel"));
  // Clamped gated activation (docs/moe.md "Clamped GLU activation").
  t.push_back(within(float_key("model.activation_clamp",
                               PPSEARCH_REF(double, model.activation_clamp), kNoUnit, 0.0, false,
                               "limit of the clamped gated activation (Megatron-Core "
                               "activation_func_clamp_value; GPT-OSS: 7.0): the routed experts' "
                               "clamp then runs eagerly unless training.moe_fused_grouped_mlp; "
                               "0 = no clamp"),
                     0.0, 1e4));

  // ---- [training] ----------------------------------------------------------
  t.push_back(int_key("training.global_batch_size", PPSEARCH_REF(int, training.global_batch_size),
                      1, "sequences per optimizer step B", kMaxGlobalBatch, true));
  t.push_back(string_key("training.precision", PPSEARCH_REF(std::string, training.precision),
                         "compute dtype of the transformer layers' linear GEMMs: bf16, or fp8 "
                         "(needs gpu.fp8_peak_tflops; docs/precision.md)",
                         {"bf16", "fp8"}));
  t.push_back(enum_key(
      "training.attention_flops", enum_names<AttentionFlops, 2>(),
      [](const Problem& p) { return static_cast<int>(p.training.attention_flops); },
      [](Problem& p, int v) { p.training.attention_flops = static_cast<AttentionFlops>(v); },
      "core-attention FLOPs counted for MFU: full s x s matrix (PaLM, Korthikanti et al.) or "
      "causal half (Megatron-LM since 2025-03); docs/algorithms.md §3.1"));
  t.push_back(bool_key("training.overlap_grad_reduce",
                       PPSEARCH_REF(bool, training.overlap_grad_reduce),
                       "DP gradient reduction overlaps the backward pass (Megatron "
                       "--overlap-grad-reduce)"));
  t.push_back(bool_key("training.overlap_param_gather",
                       PPSEARCH_REF(bool, training.overlap_param_gather),
                       "distributed-optimizer parameter all-gather overlaps the forward pass "
                       "(Megatron --overlap-param-gather)"));
  t.push_back(bool_key("training.grad_reduce_in_fp32",
                       PPSEARCH_REF(bool, training.grad_reduce_in_fp32),
                       "main gradients and their DP reduction in fp32 (Megatron's default for "
                       "bf16) instead of bf16 (--grad-reduce-in-bf16); docs/memory.md"));
  t.push_back(bool_key("training.cross_entropy_fusion",
                       PPSEARCH_REF(bool, training.cross_entropy_fusion),
                       "cross entropy computed in place on the bf16 logits (no fp32 logits copy, "
                       "e.g. Transformer Engine's parallel cross entropy); docs/memory.md"));
  t.push_back(enum_key(
      "training.selective_recompute", {"core-attention", "per-op", "mla-up-proj"},
      [](const Problem& p) { return static_cast<int>(p.training.selective_recompute); },
      [](Problem& p, int v) {
        p.training.selective_recompute = static_cast<SelectiveRecompute>(v);
      },
      "what recompute = selective recomputes: core-attention (Megatron-LM, Korthikanti et al.) or "
      "per-op (torchtitan: keeps every other matmul output and attention); docs/memory.md; "
      "mla-up-proj (MLA models: only the q/kv up projections, Megatron-Core recompute_modules "
      "mla_up_proj; docs/moe.md \"Recomputation\")"));
  {
    KeyDef tokens = within(
        float_key("training.tokens", PPSEARCH_REF(double, training.tokens), kNoUnit, 0, false,
                  "tokens of the whole training run, for time to train, GPU-hours and cost "
                  "(0 = not given); also --tokens"),
        0, 1e18);
    tokens.count_suffix = true;
    tokens.allowed =
        "a number in [0, 1e18], also with a suffix K, M, B or T (2.5e12, 300B, 15T); "
        "0 = not given";
    t.push_back(tokens);
  }
  // FP8 scaling recipe (docs/precision.md).
  t.push_back(enum_key(
      "training.fp8_recipe", {"delayed", "current", "mxfp8"},
      [](const Problem& p) { return static_cast<int>(p.training.fp8_recipe); },
      [](Problem& p, int v) { p.training.fp8_recipe = static_cast<Fp8Recipe>(v); },
      "FP8 scaling with training.precision = fp8: per-tensor delayed (amax history), per-tensor "
      "current (one more amax pass), or mxfp8 block scaling (needs gpu.mxfp8); docs/precision.md"));
  t.push_back(bool_key("training.fp8_param_gather", PPSEARCH_REF(bool, training.fp8_param_gather),
                       "with fp8: FP8 primary weights replace the bf16 weight copy (Megatron "
                       "--fp8-param-gather); docs/precision.md"));
  t.push_back(bool_key("training.tp_fp8_reduce_scatter",
                       PPSEARCH_REF(bool, training.tp_fp8_reduce_scatter),
                       "with fp8 delayed scaling, SP and training.tp_comm_overlap: the "
                       "out-projection's and FC2's forward reduce-scatters move FP8 (Transformer "
                       "Engine Userbuffers fp8_buf on proj_fprop and fc2_fprop); no effect "
                       "otherwise; docs/precision.md"));
  t.push_back(bool_key("training.tp_only_amax_red", PPSEARCH_REF(bool, training.tp_only_amax_red),
                       "with fp8 delayed scaling: each chunk's amax all-reduces span the TP x CP "
                       "ranks only instead of TP x CP x DP (Megatron-Core "
                       "TransformerConfig.tp_only_amax_red); docs/precision.md"));
  // Mixture of experts (docs/moe.md).
  t.push_back(within(float_key("training.moe_load_imbalance",
                               PPSEARCH_REF(double, training.moe_load_imbalance), kNoUnit, 1, false,
                               "tokens on the busiest expert rank over the mean (1 = balanced, "
                               "as in force-balanced benchmarks)"),
                     1, 64));
  t.push_back(fraction_key("training.moe_a2a_overlap",
                           PPSEARCH_REF(double, training.moe_a2a_overlap), false,
                           "fraction of the expert dispatch/combine all-to-all hidden behind "
                           "compute (0 = none)"));
  t.push_back(within(fraction_key("training.moe_grouped_gemm_efficiency",
                                  PPSEARCH_REF(double, training.moe_grouped_gemm_efficiency), true,
                                  "grouped expert GEMM throughput relative to a dense GEMM of "
                                  "the same shape"),
                     0.01, 1));
  // FP8 grouped expert GEMMs (docs/moe.md "FP8 grouped GEMM efficiency").
  t.push_back(
      within(fraction_key("training.moe_grouped_gemm_efficiency_fp8",
                          PPSEARCH_REF(double, training.moe_grouped_gemm_efficiency_fp8), true,
                          "further factor on moe_grouped_gemm_efficiency for grouped "
                          "expert GEMMs run in FP8 (fitted on the MoE fit rows)"),
             0.01, 1));

  // ---- [gpu] ---------------------------------------------------------------
  t.push_back(string_key("gpu.name", PPSEARCH_REF(std::string, gpu.name), "GPU label, e.g. h200"));
  // Float ranges: docs/configuration.md "Ranges" gives the reasoning for each band.
  t.push_back(
      within(float_key("gpu.peak_tflops", PPSEARCH_REF(double, gpu.peak_flop_per_s), kTflops, 0,
                       true, "dense 16-bit tensor-core peak per GPU (no sparsity)"),
             1, 1e5));
  t.push_back(within(float_key("gpu.memory_gb", PPSEARCH_REF(double, gpu.memory_bytes), kGB, 0,
                               true, "HBM capacity per GPU"),
                     1, 1e4));
  t.push_back(
      within(float_key("gpu.memory_bandwidth_gb_per_s", PPSEARCH_REF(double, gpu.hbm_bytes_per_s),
                       kGBps, 0, true, "HBM bandwidth per GPU"),
             1, 1e6));
  t.push_back(
      int_key("gpu.sm_count", PPSEARCH_REF(int, gpu.sm_count), 1,
              "streaming multiprocessors, for GEMM wave quantisation (docs/algorithms.md §3.3)",
              kMaxSmCount, true));
  t.push_back(int_key("gpu.gemm_tile_m", PPSEARCH_REF(int, gpu.gemm_tile_m), 1,
                      "GEMM output-tile rows, for tile/wave quantisation", kMaxGemmTile, true));
  t.push_back(int_key("gpu.gemm_tile_n", PPSEARCH_REF(int, gpu.gemm_tile_n), 1,
                      "GEMM output-tile columns, for tile/wave quantisation", kMaxGemmTile, true));
  t.push_back(
      within(fraction_key("gpu.gemm_efficiency", PPSEARCH_REF(double, gpu.gemm_efficiency), true,
                          "achievable fraction of peak for large GEMMs (measured MAMF / peak)"),
             0.01, 1));
  t.push_back(
      within(float_key("gpu.gemm_overhead_us", PPSEARCH_REF(double, gpu.gemm_overhead_s), kUs, 0,
                       false, "fixed cost per GEMM kernel (launch, prologue, tail)"),
             0, 1e3));
  t.push_back(within(
      fraction_key("gpu.attention_efficiency", PPSEARCH_REF(double, gpu.attention_efficiency), true,
                   "achieved fraction of peak in fused (Flash) attention"),
      0.01, 1));
  t.push_back(within(
      float_key("gpu.attention_tile_blocks", PPSEARCH_REF(double, gpu.attention_tile_blocks),
                kNoUnit, 0, false,
                "fixed work per attention query tile in 128-key blocks: causal attention over n "
                "blocks per call runs at gpu.attention_efficiency x n / (n + this); 0 = one rate"),
      0, 1e3));
  t.push_back(
      within(fraction_key("gpu.memory_efficiency", PPSEARCH_REF(double, gpu.memory_efficiency),
                          true, "achieved fraction of HBM bandwidth in memory-bound kernels"),
             0.01, 1));
  t.push_back(within(
      float_key("gpu.memory_reserved_gb", PPSEARCH_REF(double, gpu.memory_reserved_bytes), kGB, 0,
                false, "memory the model cannot use: CUDA context, library workspaces"),
      0, 1e4));
  t.push_back(
      within(float_key("gpu.activation_overhead", PPSEARCH_REF(double, gpu.activation_overhead),
                       kNoUnit, 1, false,
                       "factor on activation memory for allocator fragmentation and temporaries"),
             1, 10));
  t.push_back(within(float_key("gpu.comm_buffer_gb", PPSEARCH_REF(double, gpu.comm_buffer_bytes),
                               kGB, 0, false, "memory per NCCL communicator a rank belongs to"),
                     0, 100));
  t.push_back(within(float_key("gpu.memory_headroom_gb",
                               PPSEARCH_REF(double, gpu.memory_headroom_bytes), kGB, 0, false,
                               "memory kept free on every GPU: a candidate fits when its peak is "
                               "at most gpu.memory_gb minus this"),
                     0, 1e4));
  // GEMM shape curve and FP8 (docs/precision.md).
  t.push_back(
      within(float_key("gpu.gemm_k_overhead", PPSEARCH_REF(double, gpu.gemm_k_overhead), kNoUnit, 0,
                       false, "per-tile GEMM fill/drain as extra bf16 k-steps (short-k fall-off)"),
             0, 1e5));
  t.push_back(int_key("gpu.gemm_split_k_min", PPSEARCH_REF(int, gpu.gemm_split_k_min), 0,
                      "smallest k slice of a split-K GEMM (fewer tiles than SMs); 0 = no split-K",
                      1 << 20, true));
  t.push_back(within(
      float_key("gpu.fp8_peak_tflops", PPSEARCH_REF(double, gpu.peak_fp8_flop_per_s), kTflops, 0,
                false, "dense FP8 tensor-core peak per GPU (no sparsity); 0 = no FP8"),
      0, 1e5));
  t.push_back(within(
      fraction_key("gpu.gemm_efficiency_fp8", PPSEARCH_REF(double, gpu.gemm_efficiency_fp8), false,
                   "fraction of the FP8 peak large FP8 GEMMs reach in training; 0 = "
                   "gpu.gemm_efficiency"),
      0, 1));
  t.push_back(bool_key("gpu.mxfp8", PPSEARCH_REF(bool, gpu.mxfp8),
                       "tensor cores take block-scaled MXFP8 operands (Blackwell)"));

  // ---- [cluster] -----------------------------------------------------------
  t.push_back(string_key("cluster.name", PPSEARCH_REF(std::string, cluster.name),
                         "cluster label, e.g. h200-16gpu-ib"));
  t.push_back(string_key("cluster.gpu", PPSEARCH_REF(std::string, cluster.gpu_preset),
                         "GPU preset of the cluster (configs/gpus/NAME.ini); loaded before the "
                         "cluster file, whose [gpu] keys override it"));
  t.push_back(int_key("cluster.gpus_per_node", PPSEARCH_REF(int, cluster.gpus_per_node), 1,
                      "GPUs per node; --gpus START:END steps by this", kMaxGpusPerNode, true));
  t.push_back(int_key("cluster.nvlink_domain_size", PPSEARCH_REF(int, cluster.nvlink_domain_size),
                      0, "GPUs sharing one NVLink domain (72 for NVL72); 0 = gpus_per_node",
                      kMaxGpus, true));
  t.back().allowed = "an integer in [0, 131072] (0 = cluster.gpus_per_node)";
  t.push_back(
      within(float_key("cluster.nvlink_bandwidth_gb_per_s",
                       PPSEARCH_REF(double, cluster.nvlink_bytes_per_s), kGBps, 0, true,
                       "NVLink line rate per GPU, per direction (NVLink 4: 450; NVLink 5: 900)"),
             1, 1e5));
  t.push_back(within(float_key("cluster.nvlink_latency_us",
                               PPSEARCH_REF(double, cluster.nvlink_latency_s), kUs, 0, false,
                               "latency of one transfer step over NVLink (alpha per hop, "
                               "docs/algorithms.md §5.3)"),
                     0, 1e3));
  t.push_back(within(float_key("cluster.network_bandwidth_gbit_per_s",
                               PPSEARCH_REF(double, cluster.network_bytes_per_s), kGbitps, 0, true,
                               "scale-out NIC line rate per GPU, per direction (NDR: 400)"),
                     1, 1e5));
  t.push_back(within(float_key("cluster.network_latency_us",
                               PPSEARCH_REF(double, cluster.network_latency_s), kUs, 0, false,
                               "latency of one transfer step over the network (alpha per hop, "
                               "docs/algorithms.md §5.3)"),
                     0, 1e3));
  t.push_back(string_key("cluster.fabric", PPSEARCH_REF(std::string, cluster.fabric),
                         "scale-out fabric: infiniband, roce, ... (informational)"));
  t.push_back(within(
      fraction_key("cluster.nvlink_efficiency", PPSEARCH_REF(double, cluster.nvlink_efficiency),
                   true, "achieved collective bus bandwidth / NVLink line rate"),
      0.01, 1));
  t.push_back(within(
      fraction_key("cluster.network_efficiency", PPSEARCH_REF(double, cluster.network_efficiency),
                   true, "achieved bus bandwidth / NIC line rate"),
      0.01, 1));
  t.push_back(fraction_key("cluster.tp_comm_overlap", PPSEARCH_REF(double, cluster.tp_comm_overlap),
                           false, "fraction of TP communication hidden behind compute"));
  t.push_back(fraction_key("cluster.dp_comm_overlap", PPSEARCH_REF(double, cluster.dp_comm_overlap),
                           false,
                           "no effect (kept so that older files load): DP and ZeRO traffic is "
                           "charged against the compute it hides behind, docs/step-time.md"));
  t.push_back(enum_key(
      "cluster.p2p", {"async", "blocking"},
      [](const Problem& p) { return p.cluster.p2p_blocking ? 1 : 0; },
      [](Problem& p, int v) { p.cluster.p2p_blocking = (v == 1); },
      "pipeline send/recv: blocking (Megatron non-interleaved 1F1B) or async (overlapped)"));
  t.push_back(bool_key("cluster.allow_tp_across_domains",
                       PPSEARCH_REF(bool, cluster.allow_tp_across_domains),
                       "allow tensor-parallel groups to span NVLink domains"));
  t.push_back(within(float_key("cluster.price_per_gpu_hour",
                               PPSEARCH_REF(double, cluster.price_per_gpu_hour), kNoUnit, 0, false,
                               "price of one GPU for one hour, a plain number in your currency, "
                               "for the cost column (0 = not given); also --price-per-gpu-hour"),
                     0, 1e6));
  // Fabric model (docs/topology.md).
  t.push_back(int_key("cluster.nics_per_node", PPSEARCH_REF(int, cluster.nics_per_node), 0,
                      "scale-out NICs per node, each of network_bandwidth_gbit_per_s; 0 = one "
                      "per GPU (the bandwidth is then per GPU)",
                      kMaxGpusPerNode, true));
  t.back().allowed = "an integer in [0, 1024] (0 = one per GPU)";
  t.push_back(bool_key("cluster.rail_optimized", PPSEARCH_REF(bool, cluster.rail_optimized),
                       "NIC i of every node sits on the leaf switch of rail i, so one leaf tier "
                       "joins leaf_nic_ports nodes (false: leaf_nic_ports NICs)"));
  t.push_back(int_key("cluster.leaf_nic_ports", PPSEARCH_REF(int, cluster.leaf_nic_ports), 0,
                      "NIC-facing ports of one leaf switch; traffic between leaves crosses the "
                      "spine and pays oversubscription; 0 = one non-blocking tier",
                      1 << 20, true));
  t.back().allowed = "an integer in [0, 1048576] (0 = no leaf boundary)";
  t.push_back(within(
      float_key("cluster.oversubscription", PPSEARCH_REF(double, cluster.oversubscription), kNoUnit,
                1, false, "leaf downlink : uplink bandwidth ratio (taper), e.g. 2 for 2:1"),
      1, 64));
  t.push_back(bool_key("cluster.adaptive_routing", PPSEARCH_REF(bool, cluster.adaptive_routing),
                       "the fabric spreads traffic over the spine per packet (InfiniBand AR, "
                       "Spectrum-X); false = static ECMP hashing, whose flow collisions lower "
                       "the bandwidth between leaves"));
  t.push_back(within(float_key("cluster.nvls_bandwidth_gb_per_s",
                               PPSEARCH_REF(double, cluster.nvls_bytes_per_s), kGBps, 0, false,
                               "NVLink SHARP (NVLS) all-reduce bus bandwidth inside one NVLink "
                               "domain, as nccl-tests reports it; 0 = no NVLS"),
                     0, 1e5));
  t.push_back(bool_key("cluster.sharp", PPSEARCH_REF(bool, cluster.sharp),
                       "in-network all-reduce across nodes (SHARP, NCCL CollNet) is available"));

  // ---- [search] ------------------------------------------------------------
  KeyDef gpus = int_list_key("search.gpus", PPSEARCH_REF(std::vector<int>, gpus), 1, kMaxGpus, true,
                             "GPU counts to search (normally set by --gpus)");
  gpus.allow_auto = false;
  gpus.allow_empty = true;
  gpus.max_items = static_cast<std::size_t>(kMaxGpuCounts);
  gpus.allowed = "a comma list of at most 10000 GPU counts in [1, 131072]";
  t.push_back(gpus);
  t.push_back(int_list_key("search.tp", PPSEARCH_REF(std::vector<int>, search.tp), 1, kMaxGpus,
                           true, "tensor-parallel degrees"));
  t.push_back(int_list_key("search.pp", PPSEARCH_REF(std::vector<int>, search.pp), 1, kMaxGpus,
                           true, "pipeline-parallel degrees"));
  t.push_back(int_list_key("search.cp", PPSEARCH_REF(std::vector<int>, search.cp), 1, kMaxGpus,
                           true, "context-parallel degrees"));
  t.push_back(int_list_key("search.vpp", PPSEARCH_REF(std::vector<int>, search.vpp), 1, kMaxVpp,
                           true, "model chunks per pipeline rank (1 = not interleaved)"));
  // A fixed pipeline layout (docs/memory.md "A fixed pipeline layout"); checked in check.cpp.
  t.push_back(string_key("search.pp_layout", PPSEARCH_REF(std::string, search.pp_layout),
                         "fixed pipeline layout in Megatron-LM's --pipeline-model-parallel-layout "
                         "notation (E embedding, t layer, m MTP module, L loss, one '|' per "
                         "virtual stage); empty = the partitioner splits the layers"));
  t.push_back(int_list_key("search.mbs", PPSEARCH_REF(std::vector<int>, search.mbs), 1,
                           kMaxGlobalBatch, true, "micro-batch sizes in sequences"));
  t.push_back(enum_list_key(
      "search.schedule", enum_names<Schedule, kNumSchedules>(),
      [](const Problem& p) { return enums_to_ints(p.search.schedule); },
      [](Problem& p, const std::vector<int>& v) { p.search.schedule = ints_to_enums<Schedule>(v); },
      "pipeline schedules"));
  t.push_back(enum_list_key(
      "search.recompute", enum_names<Recompute, kNumRecompute>(),
      [](const Problem& p) { return enums_to_ints(p.search.recompute); },
      [](Problem& p, const std::vector<int>& v) {
        p.search.recompute = ints_to_enums<Recompute>(v);
      },
      "activation recomputation modes"));
  t.push_back(enum_list_key(
      "search.sp", {"off", "on"}, [](const Problem& p) { return p.search.sp; },
      [](Problem& p, const std::vector<int>& v) { p.search.sp = v; },
      "sequence parallelism (with TP)"));
  t.push_back(int_list_key(
      "search.recompute_num_layers", PPSEARCH_REF(std::vector<int>, search.recompute_num_layers), 0,
      kMaxLayers, true,
      "with recompute = full: layers recomputed per pipeline stage (Megatron --recompute-method "
      "block --recompute-num-layers N); 0 = every layer; auto = per stage the fewest that fit"));
  t.push_back(int_list_key("search.zero", PPSEARCH_REF(std::vector<int>, search.zero), 0, 3, true,
                           "ZeRO stages: optimizer-state (1), gradient (2), parameter (3) "
                           "sharding over DP"));
  t.push_back(enum_key(
      "search.partitioner", {"fast", "reference"},
      [](const Problem& p) { return p.search.reference_partitioner ? 1 : 0; },
      [](Problem& p, int v) { p.search.reference_partitioner = (v == 1); },
      "layer partitioner: fast (exact, accelerated) or reference (plain DP, for checking)"));
  t.push_back(enum_key(
      "search.simulation", {"fast", "full"},
      [](const Problem& p) { return p.search.full_simulation ? 1 : 0; },
      [](Problem& p, int v) { p.search.full_simulation = (v == 1); },
      "schedule simulation: fast (periodic steady state) or full (every micro-batch)"));
  t.push_back(int_key("search.max_candidates", PPSEARCH_REF(int, search.max_candidates), 1,
                      "sweep budget: a search with more candidates stops before it starts "
                      "(exit 2); also --max-candidates",
                      kMaxCandidatesLimit, true));
  // Mixture of experts (docs/moe.md).
  t.push_back(int_list_key("search.ep", PPSEARCH_REF(std::vector<int>, search.ep), 1, kMaxGpus,
                           true,
                           "expert-parallel degrees (MoE; auto = the divisors of the expert "
                           "count that fit the TP·CP·DP ranks)"));
  t.push_back(int_list_key("search.etp", PPSEARCH_REF(std::vector<int>, search.etp), 1, kMaxGpus,
                           true, "expert-tensor-parallel degrees (MoE; auto = 1)"));
  t.push_back(bool_key("search.fsdp_with_pp", PPSEARCH_REF(bool, search.fsdp_with_pp),
                       "also search ZeRO-2/3 (FSDP) with PP > 1, costed as torchtitan runs them; "
                       "off = the rule zero23_needs_pp1 (docs/moe.md)"));

  // ---- step time: software stacks, overlap, fixed costs (docs/step-time.md) ----
  t.push_back(string_key("training.stack", PPSEARCH_REF(std::string, training.stack),
                         "software-stack profile: sets the overlap and fusion keys that are not "
                         "given explicitly (docs/step-time.md); also --stack",
                         stack_names()));
  t.push_back(bool_key("training.tp_comm_overlap", PPSEARCH_REF(bool, training.tp_comm_overlap),
                       "TP collectives pipelined with their GEMMs (Megatron --tp-comm-overlap, "
                       "Transformer Engine userbuffers); default from training.stack"));
  t.push_back(bool_key("training.p2p_overlap", PPSEARCH_REF(bool, training.p2p_overlap),
                       "interleaved schedules send and receive activations asynchronously "
                       "(Megatron overlap_p2p_comm); default from training.stack"));
  t.push_back(
      within(float_key("training.attention_efficiency_scale",
                       PPSEARCH_REF(double, training.attention_efficiency_scale), kNoUnit, 0, true,
                       "factor on gpu.attention_efficiency for the stack's attention "
                       "kernels (FlashAttention generation); default from training.stack"),
             0.1, 2));
  t.push_back(bool_key("training.fused_elementwise", PPSEARCH_REF(bool, training.fused_elementwise),
                       "norm, activation and RoPE run as fused kernels (false: eager PyTorch, "
                       "about twice the memory traffic); default from training.stack"));
  t.push_back(within(
      float_key("training.step_overhead_s", PPSEARCH_REF(double, training.step_overhead_s), kNoUnit,
                0, false, "fixed time per step outside the model: data loading, logging"),
      0, 60));
  t.push_back(fraction_key("gpu.comm_contention", PPSEARCH_REF(double, gpu.comm_contention), false,
                           "share of compute throughput lost while a communication kernel runs "
                           "beside it (SMs and HBM taken by NCCL); 1 = overlap hides nothing"));
  t.push_back(
      within(float_key("gpu.kernel_overhead_us", PPSEARCH_REF(double, gpu.kernel_overhead_s), kUs,
                       0, false, "fixed cost per non-GEMM kernel (launch, prologue, tail)"),
             0, 1e3));
  t.push_back(fraction_key("cluster.step_jitter", PPSEARCH_REF(double, cluster.step_jitter), false,
                           "per-rank step-time jitter (coefficient of variation) that a blocking "
                           "collective waits for: the straggler term"));
  // Optimizer state (docs/memory.md "Optimizer state").
  t.push_back(string_key("training.optimizer_state_dtype",
                         PPSEARCH_REF(std::string, training.optimizer_state_dtype),
                         "dtype of the optimizer's main weights and Adam moments: fp32, or bf16 "
                         "(Apex DistributedFusedAdam dtype=bf16); default from training.stack; "
                         "bf16-moments: fp32 main weights, bf16 moments (Megatron-Core "
                         "--use-precision-aware-optimizer --exp-avg-dtype bf16 "
                         "--exp-avg-sq-dtype bf16)",
                         {"fp32", "bf16", "bf16-moments"}));
  t.push_back(bool_key("training.fsdp_fp32_params", PPSEARCH_REF(bool, training.fsdp_fp32_params),
                       "under ZeRO-2/3 the sharded parameters and gradients are fp32 and are the "
                       "main weights (PyTorch FSDP mixed precision); default from training.stack"));
  // Usable memory capacity (docs/memory.md "Capacity").
  t.push_back(within(float_key("gpu.memory_usable_factor",
                               PPSEARCH_REF(double, gpu.memory_usable_factor), kNoUnit, 1, false,
                               "bytes the CUDA runtime reports as the GPU's total memory per "
                               "nominal byte of gpu.memory_gb: a candidate fits when its peak is "
                               "at most gpu.memory_gb times this, less the headroom"),
                     0.5, 1.2));
  t.push_back(bool_key("training.cross_entropy_inplace",
                       PPSEARCH_REF(bool, training.cross_entropy_inplace),
                       "with training.cross_entropy_fusion: the fused kernel writes the logits' "
                       "gradient into the logits (true, Transformer Engine) or into a new bf16 "
                       "buffer (false, flash-attn's default); default from training.stack"));
  // torch.compile (docs/step-time.md "torch.compile (torchtitan)").
  t.push_back(bool_key("training.recompute_skip_fc2",
                       PPSEARCH_REF(bool, training.recompute_skip_fc2),
                       "full recomputation does not replay the FC2 GEMM and the TP collective "
                       "after it (a compiled graph recomputes only what the backward reads); "
                       "default from training.stack"));
  t.push_back(bool_key("training.tp_bwd_overlap", PPSEARCH_REF(bool, training.tp_bwd_overlap),
                       "the backward TP collectives of the input gradients overlap the weight- "
                       "and data-gradient GEMMs (Megatron; false: exposed, DTensor TP as in "
                       "torchtitan); default from training.stack"));
  t.push_back(bool_key("training.split_linears", PPSEARCH_REF(bool, training.split_linears),
                       "Q, K, V and the gate and up projections run as separate GEMMs "
                       "(torchtitan) rather than fused QKV and FC1 GEMMs (Megatron); default "
                       "from training.stack"));
  // FSDP backward prefetch (docs/step-time.md "llm-foundry: FSDP backward prefetch").
  t.push_back(bool_key("training.overlap_backward_gather",
                       PPSEARCH_REF(bool, training.overlap_backward_gather),
                       "under ZeRO-3 the backward's re-gather of each unit's weights hides behind "
                       "the backward (true: FSDP BACKWARD_PRE, FSDP2, Megatron) or is waited for "
                       "(false: FSDP BACKWARD_POST); default from training.stack"));
  // Fused norms in eager code (docs/step-time.md "Fused RMSNorm in eager PyTorch").
  t.push_back(bool_key("training.fused_norm", PPSEARCH_REF(bool, training.fused_norm),
                       "with training.fused_elementwise = false, the norms still run as one "
                       "fused kernel each (PyTorch >= 2.9 F.rms_norm); no effect when the "
                       "element-wise ops are fused; default from training.stack"));
  // PyTorch's async TP (docs/step-time.md "Async TP's own passes").
  t.push_back(bool_key("training.tp_symm_mem", PPSEARCH_REF(bool, training.tp_symm_mem),
                       "with training.tp_comm_overlap and SP, TP overlap is PyTorch's "
                       "micro-pipelined async TP on SymmetricMemory: each fused "
                       "matmul-reduce-scatter sums its partial outputs in a separate pass, each "
                       "fused all-gather-matmul copies its local shard first; default from "
                       "training.stack"));
  // llm-foundry's Triton FlashAttention (docs/step-time.md "llm-foundry: the Triton kernel on
  // Hopper").
  t.push_back(bool_key("training.triton_attention", PPSEARCH_REF(bool, training.triton_attention),
                       "core attention runs llm-foundry's Triton FlashAttention (pre-MLIR "
                       "Triton), at gpu.triton_attention_scale of the FlashAttention-2 rate; "
                       "default from training.stack"));
  t.push_back(within(float_key("gpu.triton_attention_scale",
                               PPSEARCH_REF(double, gpu.triton_attention_scale), kNoUnit, 0, true,
                               "speed of llm-foundry's pre-MLIR Triton FlashAttention against "
                               "FlashAttention-2 on this GPU (with training.triton_attention)"),
                     0.05, 1.5));

  // Power-capped GPUs (docs/step-time.md "Power-capped GPUs").
  t.push_back(
      within(float_key("gpu.clock_scale", PPSEARCH_REF(double, gpu.clock_scale), kNoUnit, 0, true,
                       "sustained tensor-core clock under the board power limit, relative "
                       "to the part the GEMM and attention efficiencies were fitted on; "
                       "scales GEMM and attention throughput, not HBM or links"),
             0.1, 1.5));
  // MoE host time per micro-batch (docs/moe.md "Host time of a MoE layer").
  t.push_back(enum_key(
      "training.moe_dispatcher", moe_dispatcher_names(),
      [](const Problem& p) { return p.training.moe_dispatcher; },
      [](Problem& p, int v) { p.training.moe_dispatcher = v; },
      "Megatron-Core MoE token dispatcher (moe_token_dispatcher_type): its host-launched "
      "operations per MoE layer; alltoall and allgather also copy the token counts to the host"));
  {
    KeyDef scope = string_key("training.cuda_graph_scope",
                              PPSEARCH_REF(std::string, training.cuda_graph_scope),
                              "CUDA-graph scopes of the run (Megatron-Core cuda_graph_scope): a "
                              "graphed scope costs one graph launch per pass instead of its "
                              "host-launched operations");
    scope.allowed = cuda_graph_scope_allowed();
    t.push_back(scope);
  }
  t.push_back(within(float_key("gpu.host_op_us", PPSEARCH_REF(double, gpu.host_op_s), kUs, 0, false,
                               "host (CPU) time of one PyTorch operation launching one kernel, "
                               "on the host that drives the GPU; a Transformer Engine module "
                               "call counts as 2.7 of them (docs/moe.md)"),
                     0, 1e4));

  // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features").
  t.push_back(bool_key("training.fp8_attention", PPSEARCH_REF(bool, training.fp8_attention),
                       "core attention in FP8 (Transformer Engine fp8_dot_product_attention) "
                       "with training.precision = fp8: the attention kernels at the FP8 peak "
                       "with FlashAttention-3's FP8/16-bit efficiency ratio"));
  t.push_back(bool_key("training.moe_fused_grouped_mlp",
                       PPSEARCH_REF(bool, training.moe_fused_grouped_mlp),
                       "fused grouped expert MLP (Transformer Engine's MXFP8 CuTe DSL kernels, "
                       "Megatron-Bridge cutedsl_fused_grouped_mlp) with fp8_recipe = mxfp8: all "
                       "experts' tiles in one launch, the SwiGLU and FP8 casts in the GEMM "
                       "epilogues"));
  // Long-sequence context parallelism (docs/step-time.md "Long-sequence context parallelism").
  t.push_back(enum_key(
      "training.cp_comm_type", {"p2p", "torch-allgather", "torch-alltoall"},
      [](const Problem& p) { return static_cast<int>(p.training.cp_comm_type); },
      [](Problem& p, int v) { p.training.cp_comm_type = static_cast<CpCommType>(v); },
      "K/V exchange of the CP attention: p2p (Megatron/Transformer Engine ring, overlapped per "
      "step), torch-allgather or torch-alltoall (PyTorch context_parallel as torchtitan runs "
      "it: K/V repeated to the query heads, fp32 merges, fp32 dK/dV rotation)"));
  // The flex dispatcher's backend (docs/moe.md "DeepEP's host wait").
  t.push_back(enum_key(
      "training.moe_flex_backend", {"hybridep", "deepep"},
      [](const Problem& p) { return p.training.moe_flex_backend; },
      [](Problem& p, int v) { p.training.moe_flex_backend = v; },
      "backend of the flex token dispatcher (Megatron-Core moe_flex_dispatcher_backend): "
      "deepep's dispatch waits on the host for the received token counts, so under it a MoE "
      "layer's host time adds to its GPU time as under alltoall; no effect unless "
      "training.moe_dispatcher = flex"));
  // Unfused attention (docs/step-time.md "ALiBi on materialised attention scores").
  t.push_back(bool_key("training.unfused_attention", PPSEARCH_REF(bool, training.unfused_attention),
                       "the core attention materialises the [b x heads, s, s] scores in HBM "
                       "(baddbmm, softmax, bmm: Megatron-DeepSpeed, Megatron-LM before "
                       "FlashAttention); only model.alibi's bias pass depends on it"));
  // DeepSpeed's BF16 optimizer (docs/step-time.md "DeepSpeed's BF16 optimizer").
  t.push_back(bool_key("training.zero1_grad_allreduce",
                       PPSEARCH_REF(bool, training.zero1_grad_allreduce),
                       "under ZeRO-1 the gradients are all-reduced in full rather than "
                       "reduce-scattered before the sharded optimizer step (DeepSpeed's "
                       "BF16_Optimizer in the pipeline engine); the updated shards are then "
                       "all-gathered as usual"));
  // Deferred output-layer wgrad (docs/step-time.md "Deferred output-layer wgrad").
  t.push_back(bool_key("training.defer_embedding_wgrad",
                       PPSEARCH_REF(bool, training.defer_embedding_wgrad),
                       "with pp > 1 the output layer's weight-gradient GEMMs of the first "
                       "training.wgrad_deferral_limit micro-batches run after the last pipeline "
                       "rank's last backward, in the pipeline flush, and their inputs and output "
                       "gradients stay buffered until then (Megatron-Core "
                       "defer_embedding_wgrad_compute)"));
  t.push_back(int_key("training.wgrad_deferral_limit",
                      PPSEARCH_REF(int, training.wgrad_deferral_limit), 0,
                      "micro-batches whose output-layer wgrad training.defer_embedding_wgrad "
                      "defers, 0 = all (Megatron-Core wgrad_deferral_limit)",
                      1e6, true));
  // MXFP8 against per-tensor FP8 (docs/precision.md "MXFP8 against per-tensor FP8").
  t.push_back(bool_key("gpu.fp8_non_tn_gemm", PPSEARCH_REF(bool, gpu.fp8_non_tn_gemm),
                       "the FP8 GEMMs take any operand layout (Blackwell), so per-tensor FP8 "
                       "casts write no transposed copy"));
  t.push_back(within(fraction_key("gpu.mxfp8_gemm_efficiency",
                                  PPSEARCH_REF(double, gpu.mxfp8_gemm_efficiency), true,
                                  "rate of an MXFP8 block-scaled GEMM as a fraction of the "
                                  "per-tensor FP8 GEMM's at the same shape"),
                     0.01, 1));
  // Optimizer step by implementation (docs/step-time.md "Optimizer step by implementation").
  t.push_back(string_key("training.optimizer_impl",
                         PPSEARCH_REF(std::string, training.optimizer_impl),
                         "the optimizer step's kernels, which set its HBM traffic per parameter: "
                         "megatron (fused Adam over fp32 main weights plus the 16-bit copy and "
                         "the zeroed gradient buffer: 46 B with fp32 gradients), torch-fused "
                         "(torch.optim.AdamW fused=True on FSDP2 fp32 shards: 40 B), "
                         "torch-foreach (AdamW foreach=True: 92 B); default from training.stack",
                         {"megatron", "torch-foreach", "torch-fused"}));
  // FSDP's gradient passes (docs/step-time.md "FSDP's gradient passes and early-stopping
  // recomputation").
  t.push_back(string_key("training.fsdp_impl", PPSEARCH_REF(std::string, training.fsdp_impl),
                         "the FSDP whose ZeRO-2/3 gradient reduction runs element-wise passes over "
                         "each unit's unsharded gradient every micro-batch: none (gradient "
                         "buffers, Megatron), fsdp1 (PyTorch FSDP1: cast to the reduce dtype and "
                         "pre-division, 14 B a parameter with fp32 reduction), fsdp2 (copy-in to "
                         "the reduce-scatter buffer, 6 B); default from training.stack",
                         {"none", "fsdp1", "fsdp2"}));
  for (auto& d : t) {
    if (d.allowed.empty()) d.allowed = generated_allowed(d);
  }
  return t;
}

#undef PPSEARCH_REF

const std::vector<KeyDef>& table() {
  static const std::vector<KeyDef> kTable = build_table();
  return kTable;
}

const KeyDef* find_def(const std::string& key) {
  for (const auto& d : table()) {
    if (d.name == key) return &d;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Parsing.
std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return std::string();
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool parse_long(const std::string& s, long long* out) {
  if (s.empty()) return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto res = std::from_chars(first, last, *out);
  return res.ec == std::errc() && res.ptr == last;
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto res = std::from_chars(first, last, *out, std::chars_format::general);
  return res.ec == std::errc() && res.ptr == last && std::isfinite(*out);
}

bool in_range(const KeyDef& d, double x) {
  if (d.lo_open ? !(x > d.lo) : !(x >= d.lo)) return false;
  if (d.has_hi && (d.hi_open ? !(x < d.hi) : !(x <= d.hi))) return false;
  return true;
}

bool parse_int_value(const KeyDef& d, const std::string& s, int* out) {
  long long v = 0;
  if (!parse_long(s, &v)) return false;
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) return false;
  if (!in_range(d, static_cast<double>(v))) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parse_bool(const std::string& s, bool* out) {
  if (s == "true" || s == "on" || s == "yes" || s == "1") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "off" || s == "no" || s == "0") {
    *out = false;
    return true;
  }
  return false;
}

int choice_index(const KeyDef& d, const std::string& s) {
  for (std::size_t i = 0; i < d.choices.size(); ++i) {
    if (d.choices[i] == s) return static_cast<int>(i);
  }
  return -1;
}

// Parses "auto" or "a,b,c" into sorted, de-duplicated ints (choice indices for enum lists).
bool parse_list(const KeyDef& d, const std::string& s, std::vector<int>* out) {
  out->clear();
  if (s == "auto" && d.allow_auto) return true;
  if (s.empty()) return d.allow_empty;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    const std::string item =
        trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    int v = 0;
    if (d.type == KeyType::kIntList) {
      if (!parse_int_value(d, item, &v)) return false;
    } else {
      v = choice_index(d, item);
      if (v < 0) return false;
    }
    out->push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return d.max_items == 0 || out->size() <= d.max_items;
}

// Parses `s` and stores it; false if `s` is not allowed.
bool store(const KeyDef& d, Problem& p, const std::string& s) {
  switch (d.type) {
    case KeyType::kInt: {
      int v = 0;
      if (!parse_int_value(d, s, &v)) return false;
      d.int_ref(p) = v;
      return true;
    }
    case KeyType::kFloat: {
      double x = 0;
      const bool ok = d.count_suffix ? parse_token_count(s, &x) : parse_double(s, &x);
      if (!ok || !in_range(d, x)) return false;
      d.double_ref(p) = file_to_si(d.unit, x);
      return true;
    }
    case KeyType::kBool: {
      bool b = false;
      if (!parse_bool(s, &b)) return false;
      d.bool_ref(p) = b;
      return true;
    }
    case KeyType::kString: {
      if (s.find_first_of("#\r\n") != std::string::npos) return false;
      if (!d.choices.empty() && choice_index(d, s) < 0) return false;
      d.string_ref(p) = s;
      return true;
    }
    case KeyType::kEnum: {
      const int i = choice_index(d, s);
      if (i < 0) return false;
      d.enum_set(p, i);
      return true;
    }
    case KeyType::kIntList:
    case KeyType::kEnumList: {
      std::vector<int> v;
      if (!parse_list(d, s, &v)) return false;
      if (d.type == KeyType::kIntList) {
        d.list_ref(p) = v;
      } else {
        d.enum_list_set(p, v);
      }
      return true;
    }
  }
  return false;
}

// Shortest file-unit text whose conversion gives back exactly `si`.
std::string si_text(const Unit& u, double si) {
  const double x = si_to_file(u, si);
  if (file_to_si(u, x) == si) return number_text(x);
  double up = x;
  double down = x;
  for (int i = 0; i < 4; ++i) {
    up = std::nextafter(up, std::numeric_limits<double>::infinity());
    down = std::nextafter(down, -std::numeric_limits<double>::infinity());
    if (file_to_si(u, up) == si) return number_text(up);
    if (file_to_si(u, down) == si) return number_text(down);
  }
  return number_text(x);  // not exactly representable in file units; nearest
}

std::string format(const KeyDef& d, const Problem& cp) {
  // Accessors take a mutable Problem; reading through them does not modify it.
  Problem& p = const_cast<Problem&>(cp);
  switch (d.type) {
    case KeyType::kInt:
      return std::to_string(d.int_ref(p));
    case KeyType::kFloat:
      return si_text(d.unit, d.double_ref(p));
    case KeyType::kBool:
      return d.bool_ref(p) ? "true" : "false";
    case KeyType::kString:
      return d.string_ref(p);
    case KeyType::kEnum: {
      const int i = d.enum_get(cp);
      return i >= 0 && i < static_cast<int>(d.choices.size()) ? d.choices[i] : "?";
    }
    case KeyType::kIntList:
    case KeyType::kEnumList: {
      std::vector<int> v = d.type == KeyType::kIntList ? d.list_ref(p) : d.enum_list_get(cp);
      if (v.empty()) return d.allow_auto ? "auto" : "";
      std::string out;
      for (int x : v) {
        if (!out.empty()) out += ",";
        if (d.type == KeyType::kIntList) {
          out += std::to_string(x);
        } else {
          out += x >= 0 && x < static_cast<int>(d.choices.size()) ? d.choices[x] : "?";
        }
      }
      return out;
    }
  }
  return "";
}

std::string section_of(const std::string& key) {
  const auto dot = key.find('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

std::string leaf_of(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

const char* type_word(KeyType t) {
  switch (t) {
    case KeyType::kInt:
      return "int";
    case KeyType::kFloat:
      return "number";
    case KeyType::kBool:
      return "bool";
    case KeyType::kString:
      return "text";
    case KeyType::kEnum:
      return "name";
    case KeyType::kIntList:
      return "int list";
    case KeyType::kEnumList:
      return "name list";
  }
  return "";
}

std::string default_text(const KeyDef& d) {
  const Problem defaults{};
  const std::string text = format(d, defaults);
  Problem scratch;
  if (!store(d, scratch, text)) return "(must be set)";
  return text.empty() ? "(empty)" : text;
}

const char* const kSections[] = {"model", "training", "gpu", "cluster", "search"};

}  // namespace

// ---------------------------------------------------------------------------
bool parse_token_count(const std::string& text, double* out) {
  std::string s = trim(text);
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
      default:
        break;
    }
    if (scale != 1) s.pop_back();
  }
  double x = 0;
  if (!parse_double(s, &x)) return false;
  x *= scale;
  if (!std::isfinite(x)) return false;
  *out = x;
  return true;
}

std::vector<KeyInfo> key_infos() {
  std::vector<KeyInfo> out;
  for (const auto& d : table()) {
    out.push_back(
        KeyInfo{d.name, d.type, d.unit.text, d.allowed, default_text(d), d.help, d.choices});
  }
  return out;
}

std::vector<std::string> known_keys() {
  std::vector<std::string> out;
  for (const auto& d : table()) out.push_back(d.name);
  return out;
}

bool is_known_key(const std::string& key) { return find_def(key) != nullptr; }

std::optional<ConfigIssue> apply_key(Problem& problem, const std::string& key,
                                     const std::string& value, const std::string& source) {
  const std::string v = trim(value);
  const KeyDef* d = find_def(key);
  if (d == nullptr) {
    const std::string hint = closest_key(key);
    return ConfigIssue{source, key, v,
                       hint.empty() ? "unknown key" : "unknown key (did you mean " + hint + "?)"};
  }
  Problem candidate = problem;
  if (!store(*d, candidate, v)) return ConfigIssue{source, key, v, d->allowed};
  problem = std::move(candidate);
  return std::nullopt;
}

std::string key_value(const Problem& problem, const std::string& key) {
  const KeyDef* d = find_def(key);
  if (d == nullptr) throw std::out_of_range("ppsearch: no configuration key " + key);
  return format(*d, problem);
}

std::vector<ConfigIssue> check_key_values(const Problem& problem) {
  std::vector<ConfigIssue> issues;
  for (const auto& d : table()) {
    const std::string text = format(d, problem);
    Problem scratch;
    if (!store(d, scratch, text)) issues.push_back(ConfigIssue{"", d.name, text, d.allowed});
  }
  return issues;
}

std::string closest_key(const std::string& key) {
  // No registered key is near a name this long (the longest has under 64 bytes), and the
  // edit distance costs O(length) per key: skip the search rather than spend seconds on it.
  if (key.size() > 128) return std::string();
  const std::string leaf = leaf_of(key);
  const std::string section = section_of(key);
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& d : table()) {
    std::size_t dist = edit_distance(key, d.name);
    if (leaf_of(d.name) == leaf) {
      dist = std::min<std::size_t>(dist, 1);  // same key name in another section
    } else {
      const std::size_t penalty = section_of(d.name) == section ? 0 : 2;
      dist = std::min(dist, edit_distance(leaf, leaf_of(d.name)) + penalty);
    }
    if (dist < best_d) {
      best_d = dist;
      best = d.name;
    }
  }
  const std::size_t threshold = std::max<std::size_t>(2, leaf.size() / 3);
  return best_d <= threshold ? best : std::string();
}

std::string to_ini(const Problem& problem) {
  std::ostringstream out;
  out << "# ppsearch configuration: every key, units as in the key names\n";
  for (const char* section : kSections) {
    out << "\n[" << section << "]\n";
    for (const auto& d : table()) {
      if (section_of(d.name) != section) continue;
      const std::string v = format(d, problem);
      out << leaf_of(d.name) << " =" << (v.empty() ? "" : " ") << v << "\n";
    }
  }
  return out.str();
}

std::string help_text() {
  std::ostringstream out;
  out << "Configuration keys, by INI section. Units are in the key names: _gb = 10^9 bytes,\n"
         "_gb_per_s = 10^9 bytes/s, _gbit_per_s = 10^9 bits/s, _tflops = 10^12 FLOP/s,\n"
         "_us = microseconds. Search lists accept 'auto' (every valid value).\n";
  for (const char* section : kSections) {
    out << "\n[" << section << "]\n";
    for (const auto& d : table()) {
      if (section_of(d.name) != section) continue;
      out << "  " << d.name << " (" << type_word(d.type);
      if (d.unit.text[0] != '\0') out << ", " << d.unit.text;
      out << ")  default: " << default_text(d) << "\n";
      out << "      " << d.help << "\n";
      out << "      allowed: " << d.allowed << "\n";
    }
  }
  return out.str();
}

std::string help_markdown() {
  std::ostringstream out;
  for (const char* section : kSections) {
    out << "\n### [" << section << "]\n\n";
    out << "| key | type | unit | default | allowed | meaning |\n";
    out << "|---|---|---|---|---|---|\n";
    for (const auto& d : table()) {
      if (section_of(d.name) != section) continue;
      const std::string def = default_text(d);
      out << "| `" << d.name << "` | " << type_word(d.type) << " | " << d.unit.text << " | "
          << (def[0] == '(' ? def : "`" + def + "`") << " | " << d.allowed << " | " << d.help
          << " |\n";
    }
  }
  return out.str();
}

}  // namespace ppsearch
