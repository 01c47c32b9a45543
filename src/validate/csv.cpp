// The runs CSV of ppsearch-validate: RFC 4180 splitting and a check of every column
// (tests/validation/runs-README.md "Schema"; docs/validation.md).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/spec/host_keys.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/pipeline_layout.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"

namespace ppsearch {
namespace {

// Issues of one file, in order: the first kMaxIssues are kept, the rest only counted, so
// that a file of a million bad rows gives a screenful of messages and bounded memory.
constexpr std::size_t kMaxIssues = 20;

class IssueList {
 public:
  void add(ConfigIssue issue) {
    if (kept_.size() < kMaxIssues) {
      kept_.push_back(std::move(issue));
    } else {
      ++dropped_;
    }
  }
  bool empty() const { return kept_.empty(); }
  // The kept issues, then one line with the number left out.
  [[noreturn]] void raise(const std::string& source) {
    if (dropped_ > 0) {
      kept_.push_back(ConfigIssue{source, "",
                                  "... and " + std::to_string(dropped_) + " more issues",
                                  "the first " + std::to_string(kMaxIssues) + " are shown"});
    }
    throw ConfigError(std::move(kept_));
  }

 private:
  std::vector<ConfigIssue> kept_;
  std::int64_t dropped_ = 0;
};

std::string at(const std::string& source, int line) { return source + ":" + std::to_string(line); }

// The start of a text for a message: up to its first line break, at most 40 characters.
std::string excerpt(const std::string& s) {
  const std::string first = s.substr(0, s.find_first_of("\r\n"));
  return first.size() > 40 ? first.substr(0, 40) + "..." : first;
}

std::string trim(const std::string& s) {
  const char* ws = " \t";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return std::string();
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

namespace {

// RFC 4180 §2: records end at CRLF (LF accepted too); fields containing commas, quotes or line
// breaks are enclosed in double quotes, and a quote inside is written twice. Hands each record
// to `on_record` as soon as it is complete (one record in memory at a time).
void split_records(const std::string& text, const std::string& source,
                   const std::function<void(CsvRecord&&)>& on_record, IssueList* issues_out) {
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteSeen };
  IssueList& issues = *issues_out;
  const std::size_t n = text.size();
  std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // UTF-8 byte-order mark
  int line = 1;
  int quote_line = 0;  // where the open quoted field started

  State state = State::kFieldStart;
  CsvRecord rec;
  std::string field;
  bool started = false;  // the record has a character (a blank line is no record)
  auto end_field = [&] {
    rec.fields.push_back(field);
    field.clear();
  };
  auto end_record = [&] {
    if (started) {
      end_field();
      on_record(std::move(rec));
    }
    rec = CsvRecord{};
    field.clear();
    started = false;
    state = State::kFieldStart;
  };
  // After an error: drop the record and carry on at the next line break.
  auto fail = [&](const std::string& what, const std::string& allowed) {
    issues.add(ConfigIssue{at(source, line), "", excerpt(what), allowed});
    while (i < n && text[i] != '\n') ++i;
    started = false;
    end_record();
  };

  for (; i < n; ++i) {
    const char c = text[i];
    const bool crlf = c == '\r' && i + 1 < n && text[i + 1] == '\n';
    if (!started && !crlf && c != '\n') {
      started = true;
      rec.line = line;
    }
    switch (state) {
      case State::kFieldStart:
      case State::kUnquoted:
        if (c == ',') {
          end_field();
          state = State::kFieldStart;
        } else if (c == '\n') {
          end_record();
          ++line;
        } else if (crlf) {
          // the LF ends the record
        } else if (c == '"' && state == State::kFieldStart) {
          state = State::kQuoted;
          quote_line = line;
        } else if (c == '"') {
          fail(field + text.substr(i, 20),
               "a double quote only around a whole field, and written twice inside it "
               "(RFC 4180)");
          if (i < n) ++line;  // the line break that fail() stopped at
        } else {
          field += c;
          state = State::kUnquoted;
        }
        break;
      case State::kQuoted:
        if (c == '"') {
          state = State::kQuoteSeen;
        } else {
          if (c == '\n') ++line;
          field += c;
        }
        break;
      case State::kQuoteSeen:
        if (c == '"') {  // a doubled quote is one literal quote
          field += '"';
          state = State::kQuoted;
        } else if (c == ',') {
          end_field();
          state = State::kFieldStart;
        } else if (c == '\n') {
          end_record();
          ++line;
        } else if (!crlf) {
          fail("\"" + field + "\"" + text.substr(i, 20),
               "a comma or the end of the row after a closing double quote (RFC 4180)");
          if (i < n) ++line;
        }
        break;
    }
  }
  if (state == State::kQuoted) {
    issues.add(ConfigIssue{at(source, quote_line), "", "\"" + excerpt(field),
                           "a quoted field closed by a double quote (RFC 4180)"});
  } else {
    end_record();
  }
}

}  // namespace

std::vector<CsvRecord> split_csv(const std::string& text, const std::string& source) {
  std::vector<CsvRecord> records;
  IssueList issues;
  split_records(
      text, source, [&](CsvRecord&& rec) { records.push_back(std::move(rec)); }, &issues);
  if (!issues.empty()) issues.raise(source);
  return records;
}

namespace {

// Checks and converts the fields of one row; every problem becomes an issue naming the column.
class RowReader {
 public:
  RowReader(const std::string& source, const CsvRecord& rec, const std::map<std::string, int>& col,
            std::vector<ConfigIssue>* issues)
      : where_(at(source, rec.line)), rec_(rec), col_(col), issues_(issues) {}

  // An optional column the header lacks reads as empty.
  std::string raw(const char* name) const {
    const auto it = col_.find(name);
    return it == col_.end() ? std::string() : rec_.fields[static_cast<std::size_t>(it->second)];
  }
  std::string text(const char* name) const { return trim(raw(name)); }

  void issue(const char* name, const std::string& allowed) {
    const std::string v = text(name);
    issues_->push_back(ConfigIssue{where_, name, v.empty() ? "(empty)" : excerpt(v), allowed});
  }

  // An integer written without decimals; nullopt when empty or malformed (then an issue unless
  // empty is allowed).
  std::optional<int> integer(const char* name, int min, int max, bool optional,
                             const std::string& allowed) {
    const std::string v = text(name);
    if (v.empty()) {
      if (!optional) issue(name, allowed);
      return std::nullopt;
    }
    const bool digits = std::all_of(
        v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!digits || v.size() > 9) {
      issue(name, allowed);
      return std::nullopt;
    }
    const int x = std::atoi(v.c_str());
    if (x < min || x > max) {
      issue(name, allowed);
      return std::nullopt;
    }
    return x;
  }

  std::optional<double> number(const char* name, double lo_exclusive, double hi_inclusive,
                               const std::string& allowed) {
    const std::string v = text(name);
    if (v.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool ok = end == v.c_str() + v.size() && errno == 0 && std::isfinite(x) &&
                    x > lo_exclusive && x <= hi_inclusive &&
                    (std::isdigit(static_cast<unsigned char>(v.front())) || v.front() == '.');
    if (!ok) {
      issue(name, allowed);
      return std::nullopt;
    }
    return x;
  }

 private:
  std::string where_;
  const CsvRecord& rec_;
  const std::map<std::string, int>& col_;
  std::vector<ConfigIssue>* issues_;
};

// The column ranges are those of the configuration keys the columns set (spec/keys.hpp).
std::string int_range(int max) { return "an integer in [1, " + std::to_string(max) + "]"; }

RunRecord read_row(const std::string& source, const CsvRecord& rec,
                   const std::map<std::string, int>& col, std::vector<ConfigIssue>* issues) {
  RowReader r(source, rec, col, issues);
  RunRecord run;
  run.line = rec.line;

  run.id = r.text("id");
  if (run.id.empty()) r.issue("id", "a non-empty run id");
  run.source = r.text("source");

  const std::size_t before = issues->size();
  auto req = [&](const char* name, int max, int* out) {
    if (auto v = r.integer(name, 1, max, false, int_range(max))) *out = *v;
  };
  auto opt0 = [&](const char* name, int max, int* out) {
    if (auto v = r.integer(name, 1, max, true, int_range(max) + ", or empty (not stated)")) {
      *out = *v;
    }
  };
  req("layers", kMaxLayers, &run.layers);
  req("hidden_size", kMaxHiddenSize, &run.hidden_size);
  opt0("ffn_hidden_size", kMaxFfnHiddenSize, &run.ffn_hidden_size);
  req("attention_heads", kMaxHeads, &run.attention_heads);
  opt0("kv_heads", kMaxHeads, &run.kv_heads);
  opt0("vocab_size", kMaxVocabSize, &run.vocab_size);
  req("seq_length", kMaxSeqLength, &run.seq_length);

  const std::string mlp = lower(r.text("mlp"));
  if (mlp == "swiglu") {
    run.mlp = MlpKind::kSwiGLU;
  } else if (mlp == "gelu") {
    run.mlp = MlpKind::kGeLU;
  } else {
    r.issue("mlp", "swiglu or gelu");
  }

  run.gpu = lower(r.text("gpu"));
  const bool gpu_ok = !run.gpu.empty() && std::all_of(run.gpu.begin(), run.gpu.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
  if (!gpu_ok) {
    r.issue("gpu",
            "a GPU name of letters, digits and '-' (a100-80gb, a100-40gb, h100-80gb, h100-96gb, "
            "h200, gb200)");
  }
  req("gpus", kMaxGpus, &run.gpus);
  opt0("gpus_per_node", kMaxGpusPerNode, &run.gpus_per_node);
  // As cluster.network_bandwidth_gbit_per_s: [1, 1e5] Gbit/s (docs/configuration.md).
  if (auto v = r.number("network_gbit_per_s", std::nextafter(1.0, 0.0), 1e5,
                        "a number in [1, 100000] (Gbit/s per GPU), or empty")) {
    run.network_gbit_per_s = *v;
  }
  req("tp", kMaxGpus, &run.tp);
  req("pp", kMaxGpus, &run.pp);
  run.vpp = r.integer("vpp", 1, kMaxVpp, true, int_range(kMaxVpp) + ", or empty (searched)");
  req("cp", kMaxGpus, &run.cp);
  req("dp", kMaxGpus, &run.dp);
  run.mbs = r.integer("mbs", 1, kMaxGlobalBatch, true,
                      int_range(kMaxGlobalBatch) + ", or empty (searched)");
  req("global_batch_size", kMaxGlobalBatch, &run.global_batch_size);

  const std::string rc = lower(r.text("recompute"));
  if (!rc.empty()) {
    Recompute x;
    if (parse_recompute(rc, &x)) {
      run.recompute = x;
    } else {
      r.issue("recompute", "none, selective or full, or empty (searched)");
    }
  }
  const std::string sp = lower(r.text("sequence_parallel"));
  if (sp == "on") {
    run.sequence_parallel = true;
  } else if (sp == "off") {
    run.sequence_parallel = false;
  } else if (!sp.empty()) {
    r.issue("sequence_parallel", "on or off, or empty (searched)");
  }
  const std::string z = r.text("zero_stage");
  if (!z.empty()) {
    if (z.size() == 1 && z[0] >= '0' && z[0] <= '3') {
      run.zero_stage = z[0] - '0';
    } else {
      r.issue("zero_stage", "0, 1, 2 or 3, or empty (searched)");
    }
  }
  run.measured_step_time_s =
      r.number("measured_step_time_s", 0, 1e9, "a number > 0 (seconds), or empty");
  run.step_time_derivation = r.text("step_time_derivation");
  run.measured_mfu_pct =
      r.number("measured_mfu_pct", 0, 100, "a number > 0 and <= 100 (percent), or empty");
  run.mfu_convention = r.text("mfu_convention");
  run.trust = r.text("trust");
  if (!(run.trust.empty() || run.trust == "A" || run.trust == "A-" || run.trust == "B" ||
        run.trust == "C" || run.trust == "no-time")) {
    r.issue("trust", "A, A-, B, C or no-time, or empty (not graded)");
  }

  // Optional columns (kRunsOptionalColumns): memory, split, stack, precision.
  run.measured_peak_memory_gb =
      r.number("measured_peak_memory_gb", 0, 1e6, "a number > 0 (GB = 1e9 bytes), or empty");
  run.memory_metric = lower(r.text("memory_metric"));
  if (!(run.memory_metric.empty() || run.memory_metric == "allocated" ||
        run.memory_metric == "reserved" || run.memory_metric == "device")) {
    r.issue("memory_metric", "allocated, reserved or device, or empty");
  } else if (run.measured_peak_memory_gb && run.memory_metric.empty()) {
    r.issue("memory_metric", "allocated, reserved or device when measured_peak_memory_gb is given");
  } else if (!run.measured_peak_memory_gb && !run.memory_metric.empty() &&
             r.text("measured_peak_memory_gb").empty()) {
    r.issue("memory_metric", "empty when measured_peak_memory_gb is empty");
  }
  run.memory_derivation = r.text("memory_derivation");
  run.split = lower(r.text("split"));
  if (!(run.split.empty() || run.split == "fit" || run.split == "held-out")) {
    r.issue("split", "fit or held-out, or empty (not stated)");
  }
  run.stack = r.text("stack");
  run.precision = lower(r.text("precision"));
  // Mixture of experts (docs/moe.md): the model.moe_* / model.mla_* ranges, empty = 0.
  auto opt_zero = [&](const char* name, int max, int* out) {
    if (auto v = r.integer(name, 0, max, true,
                           "an integer in [0, " + std::to_string(max) + "], or empty (0)"))
      *out = *v;
  };
  opt_zero("head_dim", kMaxHeads, &run.head_dim);
  opt_zero("moe_experts", kMaxMoeExperts, &run.moe_experts);
  opt_zero("moe_top_k", kMaxMoeExperts, &run.moe_top_k);
  opt_zero("moe_ffn_hidden_size", kMaxFfnHiddenSize, &run.moe_ffn_hidden_size);
  opt_zero("moe_shared_experts", kMaxMoeExperts, &run.moe_shared_experts);
  opt_zero("moe_shared_ffn_hidden_size", kMaxFfnHiddenSize, &run.moe_shared_ffn_hidden_size);
  opt_zero("moe_first_dense_layers", kMaxLayers, &run.moe_first_dense_layers);
  opt_zero("mla_q_lora_rank", kMaxHiddenSize, &run.mla_q_lora_rank);
  opt_zero("mla_kv_lora_rank", kMaxHiddenSize, &run.mla_kv_lora_rank);
  opt_zero("mla_qk_rope_head_dim", kMaxHeads, &run.mla_qk_rope_head_dim);
  opt_zero("mla_qk_nope_head_dim", kMaxHeads, &run.mla_qk_nope_head_dim);
  opt_zero("mla_v_head_dim", kMaxHeads, &run.mla_v_head_dim);
  if (auto v = r.integer("ep", 1, kMaxGpus, true, int_range(kMaxGpus) + ", or empty (1)"))
    run.ep = *v;
  if (auto v = r.integer("etp", 1, kMaxGpus, true, int_range(kMaxGpus) + ", or empty (1)"))
    run.etp = *v;
  run.routing = lower(r.text("routing"));
  // Sliding-window attention (docs/moe.md "Sliding-window attention"), empty = 0.
  opt_zero("attention_window", kMaxSeqLength, &run.attention_window);
  opt_zero("window_attn_skip_freq", kMaxLayers, &run.window_attn_skip_freq);
  // Document-masked attention (docs/step-time.md "Document-masked attention"), empty = 0.
  opt_zero("attention_document_tokens", kMaxSeqLength, &run.attention_document_tokens);
  // MoE host time (docs/moe.md "Host time of a MoE layer"): the keys' names, empty = default.
  run.moe_dispatcher = lower(r.text("moe_dispatcher"));
  // The flex dispatcher's backend (docs/moe.md "DeepEP's host wait"): flex:deepep, flex:hybridep.
  if (run.moe_dispatcher == "flex:deepep" || run.moe_dispatcher == "flex:hybridep") {
    run.moe_flex_backend = run.moe_dispatcher.substr(5);
    run.moe_dispatcher = "flex";
  }
  if (!run.moe_dispatcher.empty()) {
    const auto& names = moe_dispatcher_names();
    if (std::find(names.begin(), names.end(), run.moe_dispatcher) == names.end())
      r.issue("moe_dispatcher",
              "alltoall, allgather or flex, or empty (training.moe_dispatcher); flex:deepep or "
              "flex:hybridep also name the flex backend (training.moe_flex_backend)");
  }
  run.cuda_graph_scope = lower(r.text("cuda_graph_scope"));
  unsigned scope_mask = 0;
  if (!run.cuda_graph_scope.empty() && !parse_cuda_graph_scope(run.cuda_graph_scope, &scope_mask))
    r.issue("cuda_graph_scope", cuda_graph_scope_allowed() + ", or empty");
  // Multi-token prediction (docs/moe.md "MTP"), empty = 0.
  opt_zero("mtp_layers", kMaxLayers, &run.mtp_layers);
  // 26.06 MoE recipe features (docs/moe.md "26.06 recipe features"); empty = the key's default.
  run.moe_a2a_overlap =
      r.number("moe_a2a_overlap", -1.0, 1.0, "a number in [0, 1], or empty (default)");
  if (auto v = r.integer("fp8_attention", 0, 1, true, "0 or 1, or empty (default)"))
    run.fp8_attention = *v == 1;
  if (auto v = r.integer("moe_fused_grouped_mlp", 0, 1, true, "0 or 1, or empty (default)"))
    run.moe_fused_grouped_mlp = *v == 1;
  // Linear biases (docs/moe.md "Linear biases"), empty = 0.
  if (auto v = r.integer("linear_bias", 0, 1, true, "0 or 1, or empty (0)"))
    run.linear_bias = *v == 1;
  // YaRN RoPE (docs/moe.md "YaRN RoPE"), empty = 0.
  if (auto v = r.integer("yarn_rope", 0, 1, true, "0 or 1, or empty (0)")) run.yarn_rope = *v == 1;
  // ALiBi on materialised attention scores (docs/step-time.md), empty = 0 / the key's default.
  if (auto v = r.integer("alibi", 0, 1, true, "0 or 1, or empty (0)")) run.alibi = *v == 1;
  if (auto v = r.integer("unfused_attention", 0, 1, true, "0 or 1, or empty (default)"))
    run.unfused_attention = *v == 1;
  // Tied embeddings and DeepSpeed's BF16 optimizer (docs/step-time.md "DeepSpeed's BF16
  // optimizer"), empty = 0 / the key's default.
  if (auto v = r.integer("tied_embeddings", 0, 1, true, "0 or 1, or empty (0)"))
    run.tied_embeddings = *v == 1;
  if (auto v = r.integer("zero1_grad_allreduce", 0, 1, true, "0 or 1, or empty (default)"))
    run.zero1_grad_allreduce = *v == 1;
  // Selective recomputation's flavour (docs/moe.md "Recomputation"), empty = the key's default.
  run.selective_recompute = lower(r.text("selective_recompute"));
  if (!run.selective_recompute.empty() && run.selective_recompute != "core-attention" &&
      run.selective_recompute != "per-op" && run.selective_recompute != "mla-up-proj")
    r.issue("selective_recompute",
            "core-attention, per-op or mla-up-proj, or empty (training.selective_recompute)");
  // The optimizer's state dtype (docs/memory.md "Optimizer state"), empty = the stack's value.
  run.optimizer_state_dtype = lower(r.text("optimizer_state_dtype"));
  if (!run.optimizer_state_dtype.empty() && run.optimizer_state_dtype != "fp32" &&
      run.optimizer_state_dtype != "bf16" && run.optimizer_state_dtype != "bf16-moments")
    r.issue("optimizer_state_dtype",
            "fp32, bf16 or bf16-moments, or empty (training.optimizer_state_dtype)");

  // Clamped gated activation (docs/moe.md "Clamped GLU activation"), empty = 0.
  if (auto v = r.number("activation_clamp", std::nextafter(0.0, -1.0), 1e4,
                        "a number in [0, 10000], or empty (0: no clamp)"))
    run.activation_clamp = *v;
  // Deferred output-layer wgrad (docs/step-time.md "Deferred output-layer wgrad"), empty = the
  // keys' values.
  if (auto v = r.integer("wgrad_deferral_limit", 0, 1000000, true,
                         "an integer in [0, 1000000] (0 = every micro-batch), or empty (off)"))
    run.wgrad_deferral_limit = static_cast<int>(*v);
  // FP8 forward reduce-scatters (docs/precision.md), empty = the key's value.
  if (auto v = r.integer("tp_fp8_reduce_scatter", 0, 1, true, "0 or 1, or empty (default)"))
    run.tp_fp8_reduce_scatter = *v == 1;
  // Transformer Engine's flash-attn backend (docs/step-time.md "FlashAttention-2 in the NeMo DGX
  // Cloud runs"), empty = 0: the stack's attention.
  if (auto v = r.integer("flash_attention_2", 0, 1, true, "0 or 1, or empty (0: the stack's)"))
    run.flash_attention_2 = *v == 1;

  // Cross-column rules, only when the columns they use are valid.
  if (issues->size() != before) return run;
  if (run.kv_heads > 0 && run.attention_heads % run.kv_heads != 0) {
    r.issue("kv_heads",
            "a divisor of attention_heads (" + std::to_string(run.attention_heads) + ")");
  }
  if (run.attention_heads % run.tp != 0) {
    r.issue("tp", "a divisor of attention_heads (" + std::to_string(run.attention_heads) + ")");
  }
  const long long model_parallel = 1LL * run.tp * run.pp * run.cp;
  if (model_parallel * run.dp != run.gpus) {
    std::string want = "gpus/(tp*pp*cp)";
    if (run.gpus % model_parallel == 0) {
      want += " = " + std::to_string(run.gpus / model_parallel);
    } else {
      want += ", an integer (gpus = " + std::to_string(run.gpus) +
              ", tp*pp*cp = " + std::to_string(model_parallel) + ")";
    }
    r.issue("dp", want);
  } else if (run.global_batch_size % run.dp != 0) {
    r.issue("global_batch_size", "a multiple of dp (" + std::to_string(run.dp) + ")");
  } else if (run.mbs && (run.global_batch_size / run.dp) % *run.mbs != 0) {
    r.issue("mbs", "a divisor of global_batch_size/dp (" +
                       std::to_string(run.global_batch_size / run.dp) + "), or empty (searched)");
  }
  if (run.vpp && *run.vpp > 1 && run.pp == 1) {
    r.issue("vpp", "1 or empty when pp = 1 (interleaving needs pipeline parallelism)");
  }
  if (run.sequence_parallel && *run.sequence_parallel && run.tp == 1) {
    r.issue("sequence_parallel", "off or empty when tp = 1");
  }
  // A fixed pipeline layout (docs/memory.md "A fixed pipeline layout"): this row's model, and
  // pp·vpp segments (an empty vpp is the layout's segments / pp).
  run.pp_layout = r.text("pp_layout");
  if (!run.pp_layout.empty()) {
    std::vector<int> bounds;
    std::string why;
    if (!parse_pipeline_layout(run.pp_layout, run.layers, run.mtp_layers, &bounds, &why)) {
      r.issue("pp_layout",
              "a Megatron-LM pipeline layout of this row's model (" + why + "), or empty");
    } else {
      const int segments = static_cast<int>(bounds.size()) - 1;
      if (!run.vpp && segments % run.pp == 0) run.vpp = segments / run.pp;
      if (!run.vpp || 1LL * run.pp * *run.vpp != segments)
        r.issue("pp_layout",
                "pp x vpp segments (this layout has " + std::to_string(segments) + "), or empty");
    }
  }
  return run;
}

}  // namespace

std::vector<RunRecord> parse_runs_csv(const std::string& text, const std::string& source) {
  // One pass: each record is checked as the splitter completes it, so that only the runs
  // (not every field of every row) are held. Splitting issues win over header issues, and
  // those over row issues, as when the steps ran one after the other.
  IssueList split_issues;
  IssueList header_issues;
  IssueList issues;
  bool have_header = false;
  CsvRecord header;
  std::map<std::string, int> col;
  std::vector<RunRecord> runs;
  std::map<std::string, int> first_line;
  std::vector<ConfigIssue> row_issues;

  auto on_header = [&](CsvRecord&& rec) {
    header = std::move(rec);
    have_header = true;
    for (std::size_t k = 0; k < header.fields.size(); ++k) {
      const std::string name = trim(header.fields[k]);
      if (!col.emplace(name, static_cast<int>(k)).second) {
        header_issues.add(
            ConfigIssue{at(source, header.line), "header", name,
                        "each column once (column " + std::to_string(k + 1) + " repeats it)"});
      }
    }
    std::string missing;
    for (const char* name : kRunsColumns) {
      if (col.count(name) == 0) missing += (missing.empty() ? "" : ", ") + std::string(name);
    }
    if (!missing.empty()) {
      header_issues.add(ConfigIssue{at(source, header.line), "header", "missing " + missing,
                                    "every column of the runs schema (docs/validation.md)"});
    }
  };
  auto on_row = [&](CsvRecord&& rec) {
    if (!header_issues.empty()) return;  // the columns are unknown
    if (rec.fields.size() != header.fields.size()) {
      issues.add(
          ConfigIssue{at(source, rec.line), "", std::to_string(rec.fields.size()) + " fields",
                      std::to_string(header.fields.size()) + " fields, as many as the header has"});
      return;
    }
    row_issues.clear();
    RunRecord run = read_row(source, rec, col, &row_issues);
    for (ConfigIssue& i : row_issues) issues.add(std::move(i));
    if (!run.id.empty()) {
      const auto [it, fresh] = first_line.emplace(run.id, rec.line);
      if (!fresh) {
        issues.add(ConfigIssue{at(source, rec.line), "id", run.id,
                               "a unique id (also on line " + std::to_string(it->second) + ")"});
      }
    }
    if (issues.empty()) {
      runs.push_back(std::move(run));
    } else if (!runs.empty()) {
      std::vector<RunRecord>().swap(runs);  // the file is rejected: keep no rows
    }
  };
  split_records(
      text, source,
      [&](CsvRecord&& rec) {
        if (have_header) {
          on_row(std::move(rec));
        } else {
          on_header(std::move(rec));
        }
      },
      &split_issues);
  if (!split_issues.empty()) split_issues.raise(source);
  if (!have_header) {
    throw ConfigError(ConfigIssue{source, "", "no header",
                                  "a header naming the runs columns, then one row per run"});
  }
  if (!header_issues.empty()) header_issues.raise(source);
  if (!issues.empty()) issues.raise(source);
  return runs;
}

}  // namespace ppsearch
