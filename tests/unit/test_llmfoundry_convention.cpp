// The llm-foundry MFU convention (src/validate/conventions.cpp, "llmfoundry-6N+12Lds"): MPT's
// printed NumParams and the MFU column of mosaicml/llm-foundry
// scripts/train/benchmarking/README.md @5e85bd62d, "H100 80GB BF16" table, reproduced from the
// model shape, the global batch and the step time (GlobalBatchSize (T) / Throughput (T/s)).
#include <gtest/gtest.h>

#include <string>

#include "ppsearch/validate/conventions.hpp"

namespace ppsearch {
namespace {

ModelSpec mpt(int layers, int hidden, int heads, int seq) {
  ModelSpec m;
  m.layers = layers;
  m.hidden_size = hidden;
  m.ffn_hidden_size = 4 * hidden;
  m.attention_heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.vocab_size = 50368;
  m.seq_length = seq;
  m.mlp = MlpKind::kGeLU;
  m.tied_embeddings = true;  // MPT ties the output layer to the embedding
  return m;
}

TEST(LlmFoundryConvention, LabelRoundTrips) {
  EXPECT_EQ(parse_mfu_convention("llmfoundry-6N+12Lds"), MfuConvention::kLlmFoundry);
  EXPECT_STREQ(to_string(MfuConvention::kLlmFoundry), "llmfoundry-6N+12Lds");
}

TEST(LlmFoundryConvention, ReproducesPrintedNumParams) {
  // README column NumParams: the position embedding grows with max_seq_len.
  EXPECT_EQ(mpt_parameter_count(mpt(48, 7168, 56, 8192)), 30019254272.0);
  EXPECT_EQ(mpt_parameter_count(mpt(48, 7168, 56, 4096)), 29989894144.0);
  EXPECT_EQ(mpt_parameter_count(mpt(48, 7168, 56, 2048)), 29975214080.0);
  EXPECT_EQ(mpt_parameter_count(mpt(80, 8192, 64, 2048)), 64862437376.0);
  EXPECT_EQ(mpt_parameter_count(mpt(40, 5120, 40, 32768)), 13011240960.0);
  EXPECT_EQ(mpt_parameter_count(mpt(32, 4096, 32, 65536)), 6918905856.0);
  EXPECT_EQ(mpt_parameter_count(mpt(32, 2560, 20, 8192)), 2667566080.0);
  EXPECT_EQ(mpt_parameter_count(mpt(24, 2048, 16, 512)), 1312804864.0);
  // More than the weights-only count of the 6N conventions: biases, LayerNorm biases and the
  // position embedding.
  EXPECT_GT(mpt_parameter_count(mpt(24, 2048, 16, 2048)), parameter_count(mpt(24, 2048, 16, 2048)));
}

TEST(LlmFoundryConvention, ReproducesPrintedMfu) {
  struct Row {
    ModelSpec m;
    int gbs, gpus;
    double tokens, tput, mfu;
  };
  const Row rows[] = {
      // 30b | 8192 | 8: GBS 168, 1376256 / 11072 T/s, MFU 29.92
      {mpt(48, 7168, 56, 8192), 168, 8, 1376256, 11072, 29.92},
      // 13b | 32768 | 8: GBS 24, 786432 / 15812, MFU 31.68
      {mpt(40, 5120, 40, 32768), 24, 8, 786432, 15812, 31.68},
      // 7b | 2048 | 8: GBS 48, 98304 / 85144, MFU 46.44
      {mpt(32, 4096, 32, 2048), 48, 8, 98304, 85144, 46.44},
      // 1b | 8192 | 8: GBS 96, 786432 / 233256, MFU 37.73
      {mpt(24, 2048, 16, 8192), 96, 8, 786432, 233256, 37.73},
      // 70b | 2048 | 512 (Large Scale): GBS 4096, 8388608 / 515636, MFU 41.25
      {mpt(80, 8192, 64, 2048), 4096, 512, 8388608, 515636, 41.25},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::to_string(r.m.layers) + " layers, s " + std::to_string(r.m.seq_length));
    const double step = r.tokens / r.tput;
    // Composer's GPU_AVAILABLE_FLOPS for h100-sxm amp_bf16 is 989e12; the printed figure is
    // rounded to 0.01 and the throughput to an integer.
    const double mfu = convention_mfu(MfuConvention::kLlmFoundry, r.m, r.gbs, step, r.gpus, 989e12);
    EXPECT_NEAR(mfu * 100, r.mfu, 0.03);
  }
  // The attention term counts the full s × s matrix: 12·L·h·s² per sequence.
  const ModelSpec m = mpt(48, 7168, 56, 8192);
  const double attn = convention_flops_per_step(MfuConvention::kLlmFoundry, m, 1) -
                      6.0 * mpt_parameter_count(m) * m.seq_length;
  EXPECT_NEAR(attn / (12.0 * 48 * 7168 * 8192.0 * 8192.0), 1.0, 1e-12);
}

}  // namespace
}  // namespace ppsearch
