// Hand-built problems for core tests (the core is tested without the config loader).
#pragma once

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch::test {

// Llama-3-70B-like model on the seed's 16-GPU H200 InfiniBand nodes.
inline Problem llama70b_h200() {
  Problem p;
  p.model.name = "llama3-70b";
  p.model.layers = 80;
  p.model.hidden_size = 8192;
  p.model.ffn_hidden_size = 28672;
  p.model.attention_heads = 64;
  p.model.kv_heads = 8;
  p.model.head_dim = 128;
  p.model.vocab_size = 128256;
  p.model.seq_length = 8192;
  p.model.mlp = MlpKind::kSwiGLU;
  p.training.global_batch_size = 256;
  p.gpu.name = "h200";
  p.gpu.peak_flop_per_s = 989e12;
  p.gpu.memory_bytes = 141e9;
  p.gpu.hbm_bytes_per_s = 4.8e12;
  p.cluster.name = "h200-16gpu-ib";
  p.cluster.gpus_per_node = 16;
  p.cluster.nvlink_domain_size = 8;
  p.cluster.nvlink_bytes_per_s = 450e9;
  p.cluster.nvlink_latency_s = 2e-6;
  p.cluster.network_bytes_per_s = 50e9;
  p.cluster.network_latency_s = 8e-6;
  p.gpus = {128};
  return p;
}

// GPT-style MHA model (F = 4h, GeLU), the Korthikanti Table 5 175B shape on A100.
inline Problem gpt175b_a100() {
  Problem p = llama70b_h200();
  p.model.name = "gpt3-175b";
  p.model.layers = 96;
  p.model.hidden_size = 12288;
  p.model.ffn_hidden_size = 4 * 12288;
  p.model.attention_heads = 96;
  p.model.kv_heads = 96;
  p.model.head_dim = 128;
  p.model.vocab_size = 51200;
  p.model.seq_length = 2048;
  p.model.mlp = MlpKind::kGeLU;
  p.training.global_batch_size = 64;
  p.gpu.name = "a100-80gb";
  p.gpu.peak_flop_per_s = 312e12;
  p.gpu.memory_bytes = 80e9;
  p.gpu.hbm_bytes_per_s = 2.039e12;
  p.gpu.sm_count = 108;
  p.cluster.gpus_per_node = 8;
  p.cluster.nvlink_domain_size = 8;
  p.cluster.nvlink_bytes_per_s = 300e9;
  p.cluster.network_bytes_per_s = 25e9;
  p.gpus = {64};
  return p;
}

// Llama 3 8B's layer shape (hidden 4096, FFN 14336, 32 heads, 8 KV heads of 128) with `layers`
// layers on the H200 problem above; a test sets the vocabulary, sequence, batch and GPUs it needs.
inline Problem llama8b_like(int layers) {
  Problem p = llama70b_h200();
  p.model.layers = layers;
  p.model.hidden_size = 4096;
  p.model.ffn_hidden_size = 14336;
  p.model.attention_heads = 32;
  p.model.kv_heads = 8;
  p.model.head_dim = 128;
  return p;
}

// Qwen3-30B-A3B-shaped MoE (8 of its layers: 128 experts of width 768, top 8) at sequence `seq`
// in BF16 on the H200 problem above, 8 GPUs.
inline Problem qwen3_30b_like(int seq = 4096) {
  Problem p = llama70b_h200();
  p.model.layers = 8;
  p.model.hidden_size = 2048;
  p.model.ffn_hidden_size = 6144;
  p.model.attention_heads = 32;
  p.model.kv_heads = 4;
  p.model.head_dim = 128;
  p.model.vocab_size = 151936;
  p.model.seq_length = seq;
  p.model.moe_experts = 128;
  p.model.moe_top_k = 8;
  p.model.moe_ffn_hidden_size = 768;
  p.training.global_batch_size = 64;
  p.gpus = {8};
  return p;
}

// The same in FP8 with an FP8 peak; `mxfp8` makes the GPU MXFP8-capable (Blackwell).
inline Problem qwen3_30b_fp8_like(Fp8Recipe recipe, bool mxfp8) {
  Problem p = qwen3_30b_like();
  p.gpu.peak_fp8_flop_per_s = 1979e12;
  p.gpu.gemm_efficiency_fp8 = 0.6;
  p.gpu.mxfp8 = mxfp8;
  p.training.precision = "fp8";
  p.training.fp8_recipe = recipe;
  return p;
}

// GPT-OSS-120B's attention shape (configs/models/gpt-oss-120b.ini: 64 query heads and 8 KV heads
// of 64, hidden 2880, vocabulary 201,088, 4k sequences) on the H200 problem above, 36 dense
// layers of width 2880; a test adds the feature it exercises (window, YaRN, MoE with biases).
inline Problem gpt_oss_dense_like() {
  Problem p = llama70b_h200();
  p.model.layers = 36;
  p.model.hidden_size = 2880;
  p.model.ffn_hidden_size = 2880;
  p.model.attention_heads = 64;
  p.model.kv_heads = 8;
  p.model.head_dim = 64;
  p.model.vocab_size = 201088;
  p.model.seq_length = 4096;
  p.training.global_batch_size = 64;
  p.gpus = {64};
  return p;
}

// gpt_oss_dense_like with GPT-OSS-120B's experts (configs/models/gpt-oss-120b.ini: 128 of
// width 2880, top 4) and a global batch of 256; a test adds the feature it exercises.
inline Problem gpt_oss_moe_like() {
  Problem p = gpt_oss_dense_like();
  p.model.moe_experts = 128;
  p.model.moe_top_k = 4;
  p.model.moe_ffn_hidden_size = 2880;
  p.training.global_batch_size = 256;
  return p;
}

inline Candidate make_candidate(const Problem& p, int tp, int pp, int dp, int mbs, Schedule s,
                                Recompute r = Recompute::kSelective, int sp = 1, int zero = 1,
                                int vpp = 1, int cp = 1) {
  Candidate c;
  c.gpus = tp * pp * dp * cp;
  c.tp = tp;
  c.pp = pp;
  c.dp = dp;
  c.cp = cp;
  c.vpp = vpp;
  c.mbs = mbs;
  c.global_batch_size = p.training.global_batch_size;
  c.num_microbatches = p.training.global_batch_size / (dp * mbs);
  c.schedule = s;
  c.recompute = r;
  c.sp = static_cast<std::uint8_t>(sp);
  c.zero = static_cast<std::uint8_t>(zero);
  return c;
}

}  // namespace ppsearch::test
