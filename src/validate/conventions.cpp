// FLOPs conventions of published utilisation figures (tests/validation/runs-README.md
// "FLOPs conventions" and README.md "FLOPs conventions"). None halves attention for the causal
// mask. B = global batch, s = sequence length, L = layers, h = hidden size, a = heads,
// G = KV heads, F = FFN size, V = vocabulary.
#include <cmath>
#include <limits>
#include <string>

#include "ppsearch/validate/conventions.hpp"

namespace ppsearch {

namespace {

struct Label {
  MfuConvention convention;
  const char* name;
};

constexpr Label kLabels[] = {
    {MfuConvention::kNar21Eq3Hfu, "nar21-eq3-hfu"},
    {MfuConvention::kKor22Model, "kor22-model"},
    {MfuConvention::kDgxcMha, "dgxc-mha"},
    {MfuConvention::kDgxcMhaOvercount, "dgxc-mha-overcount"},
    {MfuConvention::kPalm, "palm-6N+12Lhs"},
    {MfuConvention::kSixN, "6N"},
    {MfuConvention::kMegatronCore, "megatron-core"},
    {MfuConvention::kLlmFoundry, "llmfoundry-6N+12Lds"},
};

}  // namespace

MfuConvention parse_mfu_convention(const std::string& label) {
  for (const Label& l : kLabels) {
    if (label == l.name) return l.convention;
  }
  return MfuConvention::kUnknown;
}

const char* to_string(MfuConvention convention) {
  for (const Label& l : kLabels) {
    if (convention == l.convention) return l.name;
  }
  return "n/a";
}

double parameter_count(const ModelSpec& m) {
  const double h = m.hidden_size;
  const double d = m.head_dim > 0 ? m.head_dim : double(m.hidden_size) / m.attention_heads;
  const double a = m.attention_heads;
  const double g = m.kv_heads > 0 ? m.kv_heads : m.attention_heads;
  const double attention = h * (a * d + 2 * g * d) + a * d * h;  // Q, K, V, output projection
  const double mlp = h * double(m.ffn_hidden_size) * (m.mlp == MlpKind::kSwiGLU ? 3 : 2);
  const double norms = 2 * h;
  const double embeddings = double(m.vocab_size) * h * (m.tied_embeddings ? 1 : 2);
  return m.layers * (attention + mlp + norms) + embeddings + h;  // + final norm
}

double mpt_parameter_count(const ModelSpec& m) {
  // llm-foundry's MPT (llmfoundry/models/mpt/modeling_mpt.py, layers/attention.py, ffn.py at
  // v0.3.0): no_bias = False, so every Linear and LayerNorm has a bias; learned_pos_emb with
  // max_seq_len rows (no ALiBi in the benchmark yamls); tie_word_embeddings.
  const double h = m.hidden_size;
  const double d = m.head_dim > 0 ? m.head_dim : double(m.hidden_size) / m.attention_heads;
  const double a = m.attention_heads;
  const double g = m.kv_heads > 0 ? m.kv_heads : m.attention_heads;
  const double F = m.ffn_hidden_size;
  const double attention = h * (a * d + 2 * g * d) + (a * d + 2 * g * d) + a * d * h + h;
  const double mlp = 2 * h * F + F + h;
  const double norms = 4 * h;
  return m.layers * (attention + mlp + norms) + double(m.vocab_size) * h +
         double(m.seq_length) * h + 2 * h;
}

double convention_flops_per_step(MfuConvention convention, const ModelSpec& m, int global_batch) {
  const double B = global_batch, s = m.seq_length, L = m.layers, h = m.hidden_size;
  const double a = m.attention_heads, V = m.vocab_size, F = m.ffn_hidden_size;
  const double G = m.kv_heads > 0 ? m.kv_heads : m.attention_heads;
  switch (convention) {
    case MfuConvention::kNar21Eq3Hfu:
      // Narayanan et al. 2021 (arXiv:2104.04473) Eq. 3, per step; includes the extra forward
      // pass of full activation recomputation (factor 96 = 4 x 24).
      return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
    case MfuConvention::kKor22Model:
      // Korthikanti et al. 2022 (arXiv:2205.05198) Eq. 7, model FLOPs per step.
      return 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
    case MfuConvention::kDgxcMha:
    case MfuConvention::kDgxcMhaOvercount:
      // dgxc-benchmarking README (v24.11) FLOPs note, per sequence
      // s·(24·L·h² + 12·L·h·s + 48·L·h² + 6·V·h): MHA projections and a 4h MLP whatever the
      // model's KV heads and FFN size (the "overcount" label marks a GQA model).
      return B * s * (72 * L * h * h + 12 * L * h * s + 6 * V * h);
    case MfuConvention::kPalm:
      // Chowdhery et al. (PaLM, arXiv:2204.02311) App. B: per token 6N + 12·L·h·s, N all
      // parameters.
      return B * s * (6 * parameter_count(m) + 12 * L * h * s);
    case MfuConvention::kSixN:
      // Per token 6N (reproduces Nemotron-4 15B, runs README item 3).
      return B * s * 6 * parameter_count(m);
    case MfuConvention::kMegatronCore:
      // Megatron-Core num_floating_point_operations (r0.8.0), as in runs-README, per sequence
      // 12·s·L·h²·[(1 + G/a + s/h) + (F/h)·(1.5 if gated) + V/(2·L·h)].
      return B * 12 * s * L * h * h *
             ((1 + G / a + s / h) + (F / h) * (m.mlp == MlpKind::kSwiGLU ? 1.5 : 1.0) +
              V / (2 * L * h));
    case MfuConvention::kLlmFoundry:
      // mosaicml/llm-foundry scripts/train/benchmarking/collect_results.py @5e85bd62d:
      // 3·flops_per_seq + 3·attn_flops_per_seq with flops_per_seq = 2·n_params·s and
      // attn_flops_per_seq = n_layers·2·2·d_model·s² (the full s × s matrix), n_params the
      // printed NumParams (mpt_parameter_count).
      return B * s * (6 * mpt_parameter_count(m) + 12 * L * h * s);
    case MfuConvention::kUnknown:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double convention_mfu(MfuConvention convention, const ModelSpec& model, int global_batch,
                      double step_time_s, int gpus, double peak_flop_per_s) {
  if (!(step_time_s > 0) || gpus <= 0 || !(peak_flop_per_s > 0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // A FLOP count becomes a utilisation by dividing by (step time × GPUs × peak) (runs-README).
  return convention_flops_per_step(convention, model, global_batch) /
         (step_time_s * gpus * peak_flop_per_s);
}

}  // namespace ppsearch
