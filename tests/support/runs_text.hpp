// The validation runs CSVs as text, and one cell of one row replaced by column name (for tests
// that a bad cell is refused with its column and line). Quoted fields (the sources) are kept.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ppsearch::test {

inline std::string validation_text(const std::string& file) {
  std::ifstream in(std::string(PPSEARCH_SOURCE_DIR) + "/tests/validation/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// [begin, end) of each field of the line text[from, to), honouring double quotes.
inline std::vector<std::pair<std::size_t, std::size_t>> csv_fields(const std::string& text,
                                                                   std::size_t from,
                                                                   std::size_t to) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  bool quoted = false;
  std::size_t start = from;
  for (std::size_t i = from; i < to; ++i) {
    if (text[i] == '"') quoted = !quoted;
    if (text[i] == ',' && !quoted) {
      out.emplace_back(start, i);
      start = i + 1;
    }
  }
  out.emplace_back(start, to);
  return out;
}

// The cell of `column` in the row whose id is `id`; *old_value receives what was there. Returns
// false when the column or the row is missing.
inline bool replace_cell(std::string* text, const std::string& id, const std::string& column,
                         const std::string& value, std::string* old_value = nullptr) {
  const std::size_t header_end = text->find('\n');
  if (header_end == std::string::npos) return false;
  const auto names = csv_fields(*text, 0, header_end);
  std::size_t col = names.size();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (text->compare(names[k].first, names[k].second - names[k].first, column) == 0) col = k;
  const std::size_t row = text->find("\n" + id + ",");
  if (col == names.size() || row == std::string::npos) return false;
  std::size_t eol = text->find('\n', row + 1);
  if (eol == std::string::npos) eol = text->size();
  const auto cells = csv_fields(*text, row + 1, eol);
  if (col >= cells.size()) return false;
  const auto [b, e] = cells[col];
  if (old_value) *old_value = text->substr(b, e - b);
  text->replace(b, e - b, value);
  return true;
}

// One MoE row of the runs schema (Qwen3-30B-like, 8 B200s, EP 8) with the dispatcher and the
// CUDA-graph scope cells given: for tests of how those optional columns are parsed.
inline std::string moe_row_csv(const std::string& dispatcher, const std::string& scope) {
  std::string h, v;
  auto add = [&](const char* k, const std::string& x) {
    h += (h.empty() ? "" : ",") + std::string(k);
    v += (v.empty() ? "" : ",") + x;
  };
  const char* fixed[][2] = {{"id", "r1"},
                            {"source", "test"},
                            {"layers", "8"},
                            {"hidden_size", "2048"},
                            {"ffn_hidden_size", "6144"},
                            {"attention_heads", "32"},
                            {"kv_heads", "4"},
                            {"vocab_size", "151936"},
                            {"seq_length", "4096"},
                            {"mlp", "swiglu"},
                            {"gpu", "b200"},
                            {"gpus", "8"},
                            {"gpus_per_node", "8"},
                            {"network_gbit_per_s", ""},
                            {"tp", "1"},
                            {"pp", "1"},
                            {"vpp", "1"},
                            {"cp", "1"},
                            {"dp", "8"},
                            {"mbs", "1"},
                            {"global_batch_size", "64"},
                            {"recompute", "none"},
                            {"sequence_parallel", "off"},
                            {"zero_stage", "1"},
                            {"measured_step_time_s", "1.0"},
                            {"step_time_derivation", "x"},
                            {"measured_mfu_pct", ""},
                            {"mfu_convention", ""},
                            {"trust", "B"},
                            {"moe_experts", "128"},
                            {"moe_top_k", "8"},
                            {"moe_ffn_hidden_size", "768"},
                            {"ep", "8"}};
  for (const auto& kv : fixed) add(kv[0], kv[1]);
  add("moe_dispatcher", dispatcher);
  add("cuda_graph_scope", scope);
  return h + "\n" + v + "\n";
}

}  // namespace ppsearch::test
