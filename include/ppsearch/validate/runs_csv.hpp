/// \file
/// The runs CSV of `ppsearch-validate` (tests/validation/runs-README.md, docs/validation.md): one
/// measured training run per row. RFC 4180 splitting and a check of every column, collected at
/// once so that a user fixes a whole file in one pass. Pure core: std only.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

/// \brief One CSV record: its fields and the 1-based file line on which it starts
///        (a quoted field may span lines; the header is line 1 of a file without blank lines).
struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};

/// \brief Splits `text` into records by RFC 4180: fields separated by commas, records by CRLF or
///        LF; a field may be enclosed in double quotes, inside which commas, line breaks and
///        doubled quotes ("") are literal. A leading UTF-8 byte-order mark and blank lines are
///        skipped.
/// \param source label for messages ("runs.csv")
/// \throws ConfigError for an unterminated quoted field or a quote inside an unquoted field or
///         after a closing quote ("runs.csv:LINE: TEXT: what is allowed")
std::vector<CsvRecord> split_csv(const std::string& text, const std::string& source);

/// \brief The columns of the runs schema, in the order of runs-README.md. Every one must appear
///        in the header (in any order); further columns are ignored.
inline constexpr std::array<const char*, 29> kRunsColumns = {
    "id",
    "source",
    "layers",
    "hidden_size",
    "ffn_hidden_size",
    "attention_heads",
    "kv_heads",
    "vocab_size",
    "seq_length",
    "mlp",
    "gpu",
    "gpus",
    "gpus_per_node",
    "network_gbit_per_s",
    "tp",
    "pp",
    "vpp",
    "cp",
    "dp",
    "mbs",
    "global_batch_size",
    "recompute",
    "sequence_parallel",
    "zero_stage",
    "measured_step_time_s",
    "step_time_derivation",
    "measured_mfu_pct",
    "mfu_convention",
    "trust",
};

/// \brief Further columns of the runs schema that a file may leave out (older files and files of
///        time-only runs): absent means empty in every row.
///        `measured_peak_memory_gb` GB (1e9 bytes) of the busiest GPU; `memory_metric` what was
///        measured (allocated = torch.cuda.max_memory_allocated, reserved =
///        torch.cuda.max_memory_reserved, device = nvidia-smi or similar); `memory_derivation`
///        how the figure was read or converted; `split` fit or held-out (whether the calibration
///        constants of configs/ were fitted on the row); `stack` the training framework named by
///        the source; `precision` the training precision (bf16, fp16, fp8, ...).
///        Mixture of experts (docs/moe.md, tests/validation/runs-moe.csv): `head_dim` (empty =
///        hidden_size / attention_heads), the model.moe_* and model.mla_* keys of the same names
///        (empty = 0), `ep` and `etp` (empty = 1) and `routing` (force-balanced, natural, ...).
///        Sliding-window attention: `attention_window`, `window_attn_skip_freq` (empty = 0).
///        MoE host time (docs/moe.md "Host time of a MoE layer"): `moe_dispatcher` (alltoall,
///        allgather or flex) and `cuda_graph_scope` ('+'-joined scopes or none); empty = the
///        key's default.
///        Multi-token prediction: `mtp_layers`, the model.mtp_layers key (empty = 0).
///        Document-masked attention: `attention_document_tokens`, the
///        model.attention_document_tokens key (empty = 0).
///        A fixed pipeline layout: `pp_layout`, the search.pp_layout key in Megatron-LM's
///        notation, pp·vpp segments (vpp empty: taken from the layout); empty = partitioned.
///        ALiBi on materialised scores: `alibi` (model.alibi, empty = 0) and
///        `unfused_attention` (training.unfused_attention, empty = the key's default).
///        `tied_embeddings` (model.tied_embeddings, empty = 0) and `zero1_grad_allreduce`
///        (training.zero1_grad_allreduce, empty = the key's default).
///        Clamped GLU activation (docs/moe.md): `activation_clamp` (model.activation_clamp, a
///        number in [0, 10000], empty = 0).
///        Deferred output-layer wgrad: `wgrad_deferral_limit` (an integer in [0, 1000000]:
///        training.defer_embedding_wgrad = true and training.wgrad_deferral_limit = it; empty =
///        the keys' values).
///        FP8 forward reduce-scatters: `tp_fp8_reduce_scatter` (training.tp_fp8_reduce_scatter,
///        0 or 1, empty = the key's default).
///        Transformer Engine's flash-attn backend: `flash_attention_2` (0 or 1: 1 sets
///        training.attention_efficiency_scale to kFlashAttention2Scale; 0 or empty = the
///        stack's attention).
inline constexpr std::array<const char*, 43> kRunsOptionalColumns = {
    "measured_peak_memory_gb",
    "memory_metric",
    "memory_derivation",
    "split",
    "stack",
    "precision",
    // Mixture of experts (docs/moe.md).
    "head_dim",
    "moe_experts",
    "moe_top_k",
    "moe_ffn_hidden_size",
    "moe_shared_experts",
    "moe_shared_ffn_hidden_size",
    "moe_first_dense_layers",
    "mla_q_lora_rank",
    "mla_kv_lora_rank",
    "mla_qk_rope_head_dim",
    "mla_qk_nope_head_dim",
    "mla_v_head_dim",
    "ep",
    "etp",
    "routing",
    // Sliding-window attention (docs/moe.md "Sliding-window attention").
    "attention_window",
    "window_attn_skip_freq",
    // MoE host time (docs/moe.md "Host time of a MoE layer").
    "moe_dispatcher",
    "cuda_graph_scope",
    // Multi-token prediction (docs/moe.md "MTP").
    "mtp_layers",
    // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features"): the recipe's
    // moe_a2a_overlap (a fraction in [0, 1]: training.moe_a2a_overlap), fp8_dot_product_attention
    // and cutedsl_fused_grouped_mlp (0 or 1: training.fp8_attention,
    // training.moe_fused_grouped_mlp); empty = the key's default.
    "moe_a2a_overlap",
    "fp8_attention",
    "moe_fused_grouped_mlp",
    // Linear biases (docs/moe.md "Linear biases"): model.linear_bias, 0 or 1 (empty = 0).
    "linear_bias",
    // YaRN RoPE (docs/moe.md "YaRN RoPE"): model.yarn_rope, 0 or 1 (empty = 0).
    "yarn_rope",
    // Document-masked attention (docs/step-time.md "Document-masked attention"):
    // model.attention_document_tokens, empty = 0 (causal over the whole sequence).
    "attention_document_tokens",
    // Selective recomputation's flavour (docs/moe.md "Recomputation"): training.selective_recompute
    // (core-attention, per-op or mla-up-proj); empty = the key's default (per-op for torchtitan).
    "selective_recompute",
    // The optimizer's state dtype (docs/memory.md "Optimizer state"):
    // training.optimizer_state_dtype (fp32, bf16 or bf16-moments); empty = the stack's value.
    "optimizer_state_dtype",
    // A fixed pipeline layout (docs/memory.md "A fixed pipeline layout"): search.pp_layout in
    // Megatron-LM's notation, the recipe's own split; empty = the partitioner decides.
    "pp_layout",
    // ALiBi on materialised attention scores (docs/step-time.md): model.alibi (0 or 1, empty =
    // 0) and training.unfused_attention (0 or 1, empty = the key's default).
    "alibi",
    "unfused_attention",
    // Tied input and output embeddings (model.tied_embeddings: 0 or 1, empty = 0) and DeepSpeed's
    // BF16 optimizer (training.zero1_grad_allreduce: 0 or 1, empty = the key's default);
    // docs/step-time.md "DeepSpeed's BF16 optimizer".
    "tied_embeddings",
    "zero1_grad_allreduce",
    // Clamped gated activation (docs/moe.md "Clamped GLU activation"): model.activation_clamp,
    // a number >= 0 (empty = 0, no clamp).
    "activation_clamp",
    // Deferred output-layer wgrad (docs/step-time.md "Deferred output-layer wgrad"): the run's
    // wgrad_deferral_limit with defer_embedding_wgrad_compute on (0 = every micro-batch); empty =
    // the keys' values (off unless --set).
    "wgrad_deferral_limit",
    // FP8 forward reduce-scatters (docs/precision.md "FP8 reduce-scatters of the forward"): the
    // run's Userbuffers config set fp8_buf on proj_fprop and fc2_fprop
    // (training.tp_fp8_reduce_scatter: 0 or 1, empty = the key's default).
    "tp_fp8_reduce_scatter",
    // Transformer Engine's flash-attn backend (docs/step-time.md "FlashAttention-2 in the NeMo
    // DGX Cloud runs"): the recipe exports NVTE_FUSED_ATTN=0, so TE runs Tri Dao's
    // FlashAttention-2 instead of cuDNN's fused attention (1: training.attention_efficiency_scale
    // = kFlashAttention2Scale; 0 or empty = the stack's scale).
    "flash_attention_2",
};

/// \brief One checked row of a runs CSV. Integers that the source does not state are
///        std::nullopt (or 0 where noted); numbers are in the schema's units.
struct RunRecord {
  int line = 0;  ///< file line of the row (for messages)
  std::string id;
  std::string source;
  int layers = 0;
  int hidden_size = 0;
  int ffn_hidden_size = 0;  ///< 0 = not stated
  int attention_heads = 0;
  int kv_heads = 0;    ///< 0 = not stated
  int vocab_size = 0;  ///< 0 = not stated
  int seq_length = 0;
  MlpKind mlp = MlpKind::kGeLU;
  std::string gpu;  ///< lower-case, e.g. "a100-80gb"
  int gpus = 0;
  int gpus_per_node = 0;          ///< GPUs per NVLink domain; 0 = not stated
  double network_gbit_per_s = 0;  ///< scale-out Gbit/s per GPU per direction; 0 = not stated
  int tp = 1, pp = 1, cp = 1, dp = 1;
  std::optional<int> vpp;  ///< not stated = searched
  std::optional<int> mbs;  ///< not stated = searched
  int global_batch_size = 0;
  std::optional<Recompute> recompute;     ///< not stated = searched
  std::optional<bool> sequence_parallel;  ///< not stated = searched
  std::optional<int> zero_stage;          ///< not stated = searched
  std::optional<double> measured_step_time_s;
  std::string step_time_derivation;
  std::optional<double> measured_mfu_pct;         ///< as printed by the source, in percent
  std::string mfu_convention;                     ///< label; "" = not given
  std::string trust;                              ///< A, A-, B, C, no-time or "" (not graded)
  std::optional<double> measured_peak_memory_gb;  ///< peak memory of the busiest GPU, GB (1e9)
  std::string memory_metric;      ///< "allocated", "reserved", "device" ("" without a memory)
  std::string memory_derivation;  ///< how the memory figure was read ("" = not given)
  std::string split;              ///< "fit", "held-out" or "" (not stated)
  std::string stack;              ///< training framework named by the source ("" = not stated)
  std::string precision;          ///< "bf16", "fp16", ... lower-case ("" = not stated)
  // Mixture of experts (docs/moe.md): 0 = not stated (dense, plain attention); ep, etp 1.
  int head_dim = 0, moe_experts = 0, moe_top_k = 0, moe_ffn_hidden_size = 0, moe_shared_experts = 0,
      moe_shared_ffn_hidden_size = 0, moe_first_dense_layers = 0, mla_q_lora_rank = 0,
      mla_kv_lora_rank = 0, mla_qk_rope_head_dim = 0, mla_qk_nope_head_dim = 0, mla_v_head_dim = 0;
  int ep = 1, etp = 1;
  std::string routing;  ///< "force-balanced", "natural", ... lower-case ("" = not stated)
  // Sliding-window attention (docs/moe.md): the model keys of the same names, empty = 0.
  int attention_window = 0, window_attn_skip_freq = 0;
  // MoE host time (docs/moe.md): training.moe_dispatcher and training.cuda_graph_scope as the
  // row states them (lower-case), "" = not stated (the key's default).
  std::string moe_dispatcher, cuda_graph_scope;
  // Multi-token prediction (docs/moe.md "MTP"): model.mtp_layers, empty = 0.
  int mtp_layers = 0;
  // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features"): the training keys of the
  // same names; empty = the key's default (or --set) value.
  std::optional<double> moe_a2a_overlap;
  std::optional<bool> fp8_attention, moe_fused_grouped_mlp;
  // Linear biases (docs/moe.md "Linear biases"): model.linear_bias, empty = false.
  bool linear_bias = false;
  // YaRN RoPE (docs/moe.md "YaRN RoPE"): model.yarn_rope, empty = false.
  bool yarn_rope = false;
  // Document-masked attention (docs/step-time.md): model.attention_document_tokens, empty = 0.
  int attention_document_tokens = 0;
  // training.selective_recompute as the row states it ("" = not stated: the key's default).
  std::string selective_recompute;
  // training.optimizer_state_dtype as the row states it ("" = not stated: the stack's value).
  std::string optimizer_state_dtype;
  // A fixed pipeline layout (docs/memory.md "A fixed pipeline layout"): search.pp_layout, with
  // pp·vpp segments for this row's model; empty = the partitioner decides.
  std::string pp_layout;
  // The flex dispatcher's backend (docs/moe.md "DeepEP's host wait"), stated in the
  // moe_dispatcher column as flex:deepep or flex:hybridep; "" = not stated (the key's default).
  std::string moe_flex_backend;
  // ALiBi on materialised attention scores (docs/step-time.md): model.alibi, empty = false;
  // training.unfused_attention, empty = the key's default (or --set) value.
  bool alibi = false;
  std::optional<bool> unfused_attention;
  // docs/step-time.md "DeepSpeed's BF16 optimizer": model.tied_embeddings, empty = false;
  // training.zero1_grad_allreduce, empty = the key's default (or --set) value.
  bool tied_embeddings = false;
  std::optional<bool> zero1_grad_allreduce;
  // Clamped gated activation (docs/moe.md "Clamped GLU activation"): model.activation_clamp,
  // empty = 0.
  double activation_clamp = 0;
  // Deferred output-layer wgrad: training.defer_embedding_wgrad = true with
  // training.wgrad_deferral_limit = this; std::nullopt = the keys' values.
  std::optional<int> wgrad_deferral_limit;
  // FP8 forward reduce-scatters: training.tp_fp8_reduce_scatter, empty = the key's default (or
  // --set) value.
  std::optional<bool> tp_fp8_reduce_scatter;
  // Transformer Engine's flash-attn backend (NVTE_FUSED_ATTN=0): attention at the FA-2 scale;
  // false = the stack's (or --set) attention scale.
  bool flash_attention_2 = false;
};

/// \brief Parses and checks a whole runs CSV. Checks the header (every schema column of
///        kRunsColumns present, none twice; those of kRunsOptionalColumns may be absent), the field
///        count of every row and every column of every row, and the cross-column rules: dp =
///        gpus/(tp·pp·cp), global_batch_size a multiple of dp, mbs a divisor of
///        global_batch_size/dp, kv_heads a divisor of attention_heads, tp a divisor of
///        attention_heads, vpp = 1 when pp = 1, sequence_parallel off when tp = 1, unique ids,
///        memory_metric given exactly when measured_peak_memory_gb is.
/// \param source label for messages, normally the path as the user gave it
/// \throws ConfigError with every issue, each "SOURCE:LINE: column = value: what is allowed"
std::vector<RunRecord> parse_runs_csv(const std::string& text, const std::string& source);

}  // namespace ppsearch
