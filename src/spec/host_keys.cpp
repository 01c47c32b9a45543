// MoE dispatcher and CUDA-graph scope names (docs/moe.md "Host time of a MoE layer").
#include "ppsearch/spec/host_keys.hpp"

namespace ppsearch {

const std::vector<std::string>& moe_dispatcher_names() {
  static const std::vector<std::string> kNames = {"alltoall", "allgather", "flex"};
  return kNames;
}

const std::vector<std::string>& cuda_graph_scope_names() {
  // Megatron-Core CudaGraphModule names (megatron/core/transformer/enums.py; the Megatron-Bridge
  // cuda_graph_scope values: attn, mlp, moe, moe_router, moe_preprocess, full_iteration).
  static const std::vector<std::string> kNames = {
      "attn", "mlp", "moe", "moe_router", "moe_preprocess", "full_iteration"};
  return kNames;
}

bool parse_cuda_graph_scope(const std::string& text, unsigned* mask) {
  if (text == "none") {
    *mask = 0;
    return true;
  }
  const auto& names = cuda_graph_scope_names();
  unsigned m = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t plus = text.find('+', start);
    const std::string item =
        text.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    bool found = false;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] != item) continue;
      const unsigned bit = 1u << i;
      if (m & bit) return false;  // named twice
      m |= bit;
      found = true;
    }
    if (!found) return false;
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  *mask = m;
  return true;
}

std::string cuda_graph_scope_text(unsigned mask) {
  const auto& names = cuda_graph_scope_names();
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!(mask & (1u << i))) continue;
    if (!out.empty()) out += '+';
    out += names[i];
  }
  return out.empty() ? "none" : out;
}

std::string cuda_graph_scope_allowed() {
  std::string names;
  for (const auto& n : cuda_graph_scope_names()) names += (names.empty() ? "" : ", ") + n;
  return "none, or a '+'-joined list of " + names + " (each at most once)";
}

}  // namespace ppsearch
