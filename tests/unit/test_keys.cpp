// The configuration-key registry (spec/keys.cpp) and the cross-field checks
// (spec/check.cpp). Expected values come from docs/interface.md §2 (key names, units)
// and closed forms (unit factors), never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {
namespace {

// ---- helpers -------------------------------------------------------------------------
// Field-by-field equality of two Problems (written out so that a field the registry
// forgets to write or read makes the round trip fail).
void expect_same(const Problem& a, const Problem& b) {
  EXPECT_EQ(a.model.name, b.model.name);
  EXPECT_EQ(a.model.layers, b.model.layers);
  EXPECT_EQ(a.model.hidden_size, b.model.hidden_size);
  EXPECT_EQ(a.model.ffn_hidden_size, b.model.ffn_hidden_size);
  EXPECT_EQ(a.model.attention_heads, b.model.attention_heads);
  EXPECT_EQ(a.model.kv_heads, b.model.kv_heads);
  EXPECT_EQ(a.model.head_dim, b.model.head_dim);
  EXPECT_EQ(a.model.vocab_size, b.model.vocab_size);
  EXPECT_EQ(a.model.seq_length, b.model.seq_length);
  EXPECT_EQ(a.model.mlp, b.model.mlp);
  EXPECT_EQ(a.model.tied_embeddings, b.model.tied_embeddings);
  EXPECT_EQ(a.training.global_batch_size, b.training.global_batch_size);
  EXPECT_EQ(a.training.precision, b.training.precision);
  EXPECT_EQ(a.training.attention_flops, b.training.attention_flops);
  EXPECT_EQ(a.training.overlap_grad_reduce, b.training.overlap_grad_reduce);
  EXPECT_EQ(a.training.overlap_param_gather, b.training.overlap_param_gather);
  EXPECT_EQ(a.gpu.name, b.gpu.name);
  EXPECT_EQ(a.gpu.peak_flop_per_s, b.gpu.peak_flop_per_s);
  EXPECT_EQ(a.gpu.memory_bytes, b.gpu.memory_bytes);
  EXPECT_EQ(a.gpu.hbm_bytes_per_s, b.gpu.hbm_bytes_per_s);
  EXPECT_EQ(a.gpu.sm_count, b.gpu.sm_count);
  EXPECT_EQ(a.gpu.gemm_tile_m, b.gpu.gemm_tile_m);
  EXPECT_EQ(a.gpu.gemm_tile_n, b.gpu.gemm_tile_n);
  EXPECT_EQ(a.gpu.gemm_efficiency, b.gpu.gemm_efficiency);
  EXPECT_EQ(a.gpu.gemm_overhead_s, b.gpu.gemm_overhead_s);
  EXPECT_EQ(a.gpu.attention_efficiency, b.gpu.attention_efficiency);
  EXPECT_EQ(a.gpu.memory_efficiency, b.gpu.memory_efficiency);
  EXPECT_EQ(a.gpu.memory_reserved_bytes, b.gpu.memory_reserved_bytes);
  EXPECT_EQ(a.gpu.activation_overhead, b.gpu.activation_overhead);
  EXPECT_EQ(a.gpu.comm_buffer_bytes, b.gpu.comm_buffer_bytes);
  EXPECT_EQ(a.cluster.name, b.cluster.name);
  EXPECT_EQ(a.cluster.gpu_preset, b.cluster.gpu_preset);
  EXPECT_EQ(a.cluster.gpus_per_node, b.cluster.gpus_per_node);
  EXPECT_EQ(a.cluster.nvlink_domain_size, b.cluster.nvlink_domain_size);
  EXPECT_EQ(a.cluster.nvlink_bytes_per_s, b.cluster.nvlink_bytes_per_s);
  EXPECT_EQ(a.cluster.nvlink_latency_s, b.cluster.nvlink_latency_s);
  EXPECT_EQ(a.cluster.network_bytes_per_s, b.cluster.network_bytes_per_s);
  EXPECT_EQ(a.cluster.network_latency_s, b.cluster.network_latency_s);
  EXPECT_EQ(a.cluster.fabric, b.cluster.fabric);
  EXPECT_EQ(a.cluster.nvlink_efficiency, b.cluster.nvlink_efficiency);
  EXPECT_EQ(a.cluster.network_efficiency, b.cluster.network_efficiency);
  EXPECT_EQ(a.cluster.tp_comm_overlap, b.cluster.tp_comm_overlap);
  EXPECT_EQ(a.cluster.dp_comm_overlap, b.cluster.dp_comm_overlap);
  EXPECT_EQ(a.cluster.p2p_blocking, b.cluster.p2p_blocking);
  EXPECT_EQ(a.cluster.allow_tp_across_domains, b.cluster.allow_tp_across_domains);
  EXPECT_EQ(a.search.tp, b.search.tp);
  EXPECT_EQ(a.search.pp, b.search.pp);
  EXPECT_EQ(a.search.cp, b.search.cp);
  EXPECT_EQ(a.search.vpp, b.search.vpp);
  EXPECT_EQ(a.search.mbs, b.search.mbs);
  EXPECT_EQ(a.search.schedule, b.search.schedule);
  EXPECT_EQ(a.search.recompute, b.search.recompute);
  EXPECT_EQ(a.search.sp, b.search.sp);
  EXPECT_EQ(a.search.zero, b.search.zero);
  EXPECT_EQ(a.search.reference_partitioner, b.search.reference_partitioner);
  EXPECT_EQ(a.search.full_simulation, b.search.full_simulation);
  EXPECT_EQ(a.search.max_candidates, b.search.max_candidates);
  EXPECT_EQ(a.gpus, b.gpus);
  // Step time: software stack, overlap, fixed costs (docs/step-time.md).
  EXPECT_EQ(a.training.stack, b.training.stack);
  EXPECT_EQ(a.training.tp_comm_overlap, b.training.tp_comm_overlap);
  EXPECT_EQ(a.training.p2p_overlap, b.training.p2p_overlap);
  EXPECT_EQ(a.training.attention_efficiency_scale, b.training.attention_efficiency_scale);
  EXPECT_EQ(a.training.fused_elementwise, b.training.fused_elementwise);
  EXPECT_EQ(a.training.step_overhead_s, b.training.step_overhead_s);
  EXPECT_EQ(a.gpu.comm_contention, b.gpu.comm_contention);
  EXPECT_EQ(a.gpu.kernel_overhead_s, b.gpu.kernel_overhead_s);
  EXPECT_EQ(a.cluster.step_jitter, b.cluster.step_jitter);
}

// A minimal INI reader for the round trip (the real loader, with Boost.PO, is
// tested in tests/io): "[section]" headers, "key = value" lines, '#' comments.
Problem apply_ini(const std::string& text) {
  Problem p;
  std::istringstream in(text);
  std::string line;
  std::string section;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line = line.substr(0, line.find('#'));
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t") - b + 1);
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const auto eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << "line " << n << ": " << line;
    std::string key = line.substr(0, eq);
    key = key.substr(0, key.find_last_not_of(" \t") + 1);
    auto issue = apply_key(p, section + "." + key, line.substr(eq + 1), "ini:" + std::to_string(n));
    EXPECT_FALSE(issue.has_value()) << issue->message();
  }
  return p;
}

ConfigIssue issue_of(const std::string& key, const std::string& value) {
  Problem p;
  auto issue = apply_key(p, key, value, "src");
  EXPECT_TRUE(issue.has_value()) << key << " = " << value << " was accepted";
  return issue.value_or(ConfigIssue{});
}

// A Problem that passes check(): Llama-3-70B on 16-GPU H200 nodes, built by hand.
Problem valid_problem() {
  Problem p;
  p.model.name = "m";
  p.model.layers = 80;
  p.model.hidden_size = 8192;
  p.model.ffn_hidden_size = 28672;
  p.model.attention_heads = 64;
  p.model.kv_heads = 8;
  p.model.vocab_size = 128256;
  p.model.seq_length = 8192;
  p.training.global_batch_size = 256;
  p.gpu.peak_flop_per_s = 989e12;
  p.gpu.memory_bytes = 141e9;
  p.gpu.hbm_bytes_per_s = 4.8e12;
  p.cluster.gpus_per_node = 16;
  p.cluster.nvlink_domain_size = 8;
  p.cluster.nvlink_bytes_per_s = 450e9;
  p.cluster.network_bytes_per_s = 50e9;
  p.gpus = {128};
  return p;
}

std::vector<std::string> keys_of(const std::vector<ConfigIssue>& issues) {
  std::vector<std::string> out;
  for (const auto& i : issues) out.push_back(i.key);
  return out;
}

// ---- the registry holds the contract's keys ----------------------------------------------
TEST(Keys, HoldsEveryKeyOfTheInterface) {
  // docs/interface.md §2, plus the calibration keys and search.gpus.
  const std::vector<std::string> required = {"model.name",
                                             "model.layers",
                                             "model.hidden_size",
                                             "model.ffn_hidden_size",
                                             "model.attention_heads",
                                             "model.kv_heads",
                                             "model.head_dim",
                                             "model.vocab_size",
                                             "model.seq_length",
                                             "model.mlp",
                                             "model.tied_embeddings",
                                             "training.global_batch_size",
                                             "training.precision",
                                             "training.attention_flops",
                                             "training.overlap_grad_reduce",
                                             "training.overlap_param_gather",
                                             "gpu.name",
                                             "gpu.peak_tflops",
                                             "gpu.memory_gb",
                                             "gpu.memory_bandwidth_gb_per_s",
                                             "gpu.sm_count",
                                             "gpu.gemm_efficiency",
                                             "gpu.gemm_overhead_us",
                                             "gpu.attention_efficiency",
                                             "gpu.memory_efficiency",
                                             "gpu.memory_reserved_gb",
                                             "gpu.activation_overhead",
                                             "gpu.comm_buffer_gb",
                                             "cluster.name",
                                             "cluster.gpu",
                                             "cluster.gpus_per_node",
                                             "cluster.nvlink_domain_size",
                                             "cluster.nvlink_bandwidth_gb_per_s",
                                             "cluster.nvlink_latency_us",
                                             "cluster.network_bandwidth_gbit_per_s",
                                             "cluster.network_latency_us",
                                             "cluster.fabric",
                                             "cluster.nvlink_efficiency",
                                             "cluster.network_efficiency",
                                             "cluster.tp_comm_overlap",
                                             "cluster.dp_comm_overlap",
                                             "cluster.p2p",
                                             "cluster.allow_tp_across_domains",
                                             "search.tp",
                                             "search.pp",
                                             "search.cp",
                                             "search.vpp",
                                             "search.mbs",
                                             "search.schedule",
                                             "search.recompute",
                                             "search.sp",
                                             "search.zero",
                                             "search.partitioner",
                                             "search.simulation",
                                             "search.gpus"};
  const std::vector<std::string> known = known_keys();
  for (const auto& k : required) {
    EXPECT_NE(std::find(known.begin(), known.end(), k), known.end()) << k;
    EXPECT_TRUE(is_known_key(k)) << k;
  }
  EXPECT_EQ(std::set<std::string>(known.begin(), known.end()).size(), known.size())
      << "duplicate key";
  EXPECT_FALSE(is_known_key("model.hiden_size"));
  EXPECT_EQ(key_infos().size(), known.size());
}

// ---- unit conversions (docs/interface.md §2: _gb = 1e9 B, _gbit_per_s = 1e9 bit/s, _us = 1e-6 s)
// --
TEST(Keys, ConvertsFileUnitsToSI) {
  Problem p;
  ASSERT_FALSE(apply_key(p, "gpu.peak_tflops", "989", "t"));
  EXPECT_EQ(p.gpu.peak_flop_per_s, 989e12);
  ASSERT_FALSE(apply_key(p, "gpu.memory_gb", "141", "t"));
  EXPECT_EQ(p.gpu.memory_bytes, 141e9);
  ASSERT_FALSE(apply_key(p, "gpu.memory_bandwidth_gb_per_s", "4800", "t"));
  EXPECT_EQ(p.gpu.hbm_bytes_per_s, 4.8e12);
  ASSERT_FALSE(apply_key(p, "gpu.memory_reserved_gb", "2", "t"));
  EXPECT_EQ(p.gpu.memory_reserved_bytes, 2e9);
  ASSERT_FALSE(apply_key(p, "gpu.comm_buffer_gb", "0.7", "t"));
  EXPECT_DOUBLE_EQ(p.gpu.comm_buffer_bytes, 0.7e9);
  ASSERT_FALSE(apply_key(p, "gpu.gemm_overhead_us", "4", "t"));
  EXPECT_EQ(p.gpu.gemm_overhead_s, 4e-6);
  ASSERT_FALSE(apply_key(p, "cluster.nvlink_bandwidth_gb_per_s", "450", "t"));
  EXPECT_EQ(p.cluster.nvlink_bytes_per_s, 450e9);
  ASSERT_FALSE(apply_key(p, "cluster.network_bandwidth_gbit_per_s", "400", "t"));
  EXPECT_EQ(p.cluster.network_bytes_per_s, 50e9);  // 400e9 bit/s / 8
  ASSERT_FALSE(apply_key(p, "cluster.network_bandwidth_gbit_per_s", "200", "t"));
  EXPECT_EQ(p.cluster.network_bytes_per_s, 25e9);
  ASSERT_FALSE(apply_key(p, "cluster.network_latency_us", "14", "t"));
  EXPECT_EQ(p.cluster.network_latency_s, 14e-6);
  ASSERT_FALSE(apply_key(p, "cluster.nvlink_latency_us", "3.4", "t"));
  EXPECT_EQ(p.cluster.nvlink_latency_s, 3.4e-6);
  // Unitless keys are stored as written.
  ASSERT_FALSE(apply_key(p, "gpu.gemm_efficiency", "0.803", "t"));
  EXPECT_EQ(p.gpu.gemm_efficiency, 0.803);
  // And back to file units.
  EXPECT_EQ(key_value(p, "gpu.memory_gb"), "141");
  EXPECT_EQ(key_value(p, "cluster.network_bandwidth_gbit_per_s"), "200");
  EXPECT_EQ(key_value(p, "cluster.nvlink_latency_us"), "3.4");
  EXPECT_EQ(key_value(p, "gpu.comm_buffer_gb"), "0.7");
  EXPECT_EQ(key_value(p, "gpu.peak_tflops"), "989");
}

TEST(Keys, ParsesEnumsBoolsAndLists) {
  Problem p;
  ASSERT_FALSE(apply_key(p, "model.mlp", "gelu", "t"));
  EXPECT_EQ(p.model.mlp, MlpKind::kGeLU);
  ASSERT_FALSE(apply_key(p, "training.attention_flops", " causal ", "t"));
  EXPECT_EQ(p.training.attention_flops, AttentionFlops::kCausal);
  ASSERT_FALSE(apply_key(p, "cluster.p2p", "async", "t"));
  EXPECT_FALSE(p.cluster.p2p_blocking);
  ASSERT_FALSE(apply_key(p, "cluster.p2p", "blocking", "t"));
  EXPECT_TRUE(p.cluster.p2p_blocking);
  for (const char* yes : {"true", "on", "yes", "1"}) {
    p.model.tied_embeddings = false;
    ASSERT_FALSE(apply_key(p, "model.tied_embeddings", yes, "t"));
    EXPECT_TRUE(p.model.tied_embeddings) << yes;
  }
  ASSERT_FALSE(apply_key(p, "search.partitioner", "reference", "t"));
  EXPECT_TRUE(p.search.reference_partitioner);
  ASSERT_FALSE(apply_key(p, "search.simulation", "full", "t"));
  EXPECT_TRUE(p.search.full_simulation);

  // Lists are sorted and de-duplicated; "auto" is the empty list.
  ASSERT_FALSE(apply_key(p, "search.tp", "8, 2,4,2", "t"));
  EXPECT_EQ(p.search.tp, (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(key_value(p, "search.tp"), "2,4,8");
  ASSERT_FALSE(apply_key(p, "search.tp", "auto", "t"));
  EXPECT_TRUE(p.search.tp.empty());
  EXPECT_EQ(key_value(p, "search.tp"), "auto");
  ASSERT_FALSE(apply_key(p, "search.schedule", "zb-h1,gpipe,interleaved-1f1b", "t"));
  EXPECT_EQ(p.search.schedule,
            (std::vector<Schedule>{Schedule::kGPipe, Schedule::kInterleaved1F1B, Schedule::kZBH1}));
  ASSERT_FALSE(apply_key(p, "search.recompute", "full,none", "t"));
  EXPECT_EQ(p.search.recompute, (std::vector<Recompute>{Recompute::kNone, Recompute::kFull}));
  ASSERT_FALSE(apply_key(p, "search.sp", "on,off", "t"));
  EXPECT_EQ(p.search.sp, (std::vector<int>{0, 1}));
  ASSERT_FALSE(apply_key(p, "search.zero", "3,0", "t"));
  EXPECT_EQ(p.search.zero, (std::vector<int>{0, 3}));
  ASSERT_FALSE(apply_key(p, "search.gpus", "256,64", "t"));
  EXPECT_EQ(p.gpus, (std::vector<int>{64, 256}));
}

// ---- bad values: the issue names source, key, value and what is allowed -------------------
TEST(Keys, RejectsBadValuesWithTheExactMessage) {
  EXPECT_EQ(issue_of("model.hidden_size", "abc").message(),
            "src: model.hidden_size = abc: an integer in [1, 262144]");
  EXPECT_EQ(issue_of("model.layers", "0").message(),
            "src: model.layers = 0: an integer in [1, 4096]");
  EXPECT_EQ(issue_of("model.layers", "1.5").allowed, "an integer in [1, 4096]");
  EXPECT_EQ(issue_of("model.layers", "3000000000").allowed,
            "an integer in [1, 4096]");  // > INT_MAX
  EXPECT_EQ(issue_of("model.kv_heads", "-1").allowed,
            "an integer in [0, 16384] (0 = model.attention_heads)");
  EXPECT_EQ(issue_of("gpu.gemm_efficiency", "1.5").message(),
            "src: gpu.gemm_efficiency = 1.5: a number in [0.01, 1]");
  EXPECT_EQ(issue_of("gpu.gemm_efficiency", "0").allowed, "a number in [0.01, 1]");
  EXPECT_EQ(issue_of("cluster.tp_comm_overlap", "-0.1").allowed, "a number in [0, 1]");
  EXPECT_EQ(issue_of("gpu.memory_gb", "0").allowed, "a number in [1, 10000]");
  EXPECT_EQ(issue_of("gpu.memory_gb", "nan").allowed, "a number in [1, 10000]");
  EXPECT_EQ(issue_of("gpu.memory_gb", "inf").allowed, "a number in [1, 10000]");
  EXPECT_EQ(issue_of("gpu.memory_gb", "1e400").allowed, "a number in [1, 10000]");
  EXPECT_EQ(issue_of("gpu.memory_gb", "80GB").allowed, "a number in [1, 10000]");
  EXPECT_EQ(issue_of("gpu.activation_overhead", "0.9").allowed, "a number in [1, 10]");
  EXPECT_EQ(issue_of("gpu.gemm_overhead_us", "-1").allowed, "a number in [0, 1000]");
  EXPECT_EQ(issue_of("model.tied_embeddings", "maybe").allowed, "true or false");
  EXPECT_EQ(issue_of("model.mlp", "relu").message(), "src: model.mlp = relu: one of swiglu, gelu");
  EXPECT_EQ(issue_of("training.precision", "fp16").allowed, "one of bf16, fp8");
  EXPECT_EQ(issue_of("cluster.p2p", "sync").allowed, "one of async, blocking");
  EXPECT_EQ(issue_of("model.name", "a#b").allowed, "text without '#'");
  EXPECT_EQ(issue_of("search.tp", "3x").message(),
            "src: search.tp = 3x: a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_EQ(issue_of("search.tp", "1,,2").allowed,
            "a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_EQ(issue_of("search.tp", "auto,2").allowed,
            "a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_EQ(issue_of("search.tp", "0").allowed,
            "a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_EQ(issue_of("search.tp", "").allowed,
            "a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_EQ(issue_of("search.zero", "4").allowed, "a comma list of integers in [0, 3], or auto");
  EXPECT_EQ(issue_of("search.schedule", "1f1b,zb").allowed,
            "a comma list of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe, zb-h2, or auto");
  EXPECT_EQ(issue_of("search.sp", "yes").allowed, "a comma list of off, on, or auto");
  EXPECT_EQ(issue_of("search.gpus", "auto").allowed,
            "a comma list of at most 10000 GPU counts in [1, 131072]");
  EXPECT_EQ(issue_of("search.partitioner", "slow").allowed, "one of fast, reference");
}

TEST(Keys, LeavesTheProblemUntouchedOnError) {
  Problem p;
  ASSERT_FALSE(apply_key(p, "search.tp", "2,4", "t"));
  ASSERT_TRUE(apply_key(p, "search.tp", "2,x", "t"));
  EXPECT_EQ(p.search.tp, (std::vector<int>{2, 4}));
  ASSERT_TRUE(apply_key(p, "model.layers", "-3", "t"));
  EXPECT_EQ(p.model.layers, 0);
}

TEST(Keys, UnknownKeyGetsAHint) {
  Problem p;
  auto issue = apply_key(p, "model.hiden_size", "8192", "f.ini:3");
  ASSERT_TRUE(issue);
  EXPECT_EQ(issue->message(),
            "f.ini:3: model.hiden_size = 8192: unknown key (did you mean model.hidden_size?)");
  issue = apply_key(p, "bogus.entirely_unrelated_thing", "1", "f.ini:4");
  ASSERT_TRUE(issue);
  EXPECT_EQ(issue->message(), "f.ini:4: bogus.entirely_unrelated_thing = 1: unknown key");
}

TEST(Keys, ClosestKey) {
  EXPECT_EQ(closest_key("model.hiden_size"), "model.hidden_size");
  EXPECT_EQ(closest_key("cluster.gpu_per_node"), "cluster.gpus_per_node");
  EXPECT_EQ(closest_key("search.schedules"), "search.schedule");
  EXPECT_EQ(closest_key("layers"), "model.layers");  // key outside any section
  EXPECT_EQ(closest_key("model.gpus_per_node"), "cluster.gpus_per_node");  // wrong section
  EXPECT_EQ(closest_key("gpu.peak_bf16_tflops"), "gpu.peak_tflops");
  EXPECT_EQ(closest_key("search.tensor_parallel_degree"), "");
  EXPECT_EQ(closest_key("zzz.qqqqqqqq"), "");
  // Brute force: a one-character typo of every key finds that key back, or another key one
  // substitution away (gpu.gemm_tile_x is as close to gemm_tile_m as to gemm_tile_n).
  for (const std::string& key : known_keys()) {
    std::string typo = key;
    typo.back() = typo.back() == 'x' ? 'y' : 'x';
    if (is_known_key(typo)) continue;
    const std::string found = closest_key(typo);
    int mismatches = 0;
    for (std::size_t i = 0; i < std::min(found.size(), typo.size()); ++i) {
      mismatches += found[i] != typo[i] ? 1 : 0;
    }
    EXPECT_TRUE(found == key || (found.size() == typo.size() && mismatches == 1))
        << typo << " -> " << found;
  }
}

// ---- to_ini round trip --------------------------------------------------------------------
// A random valid value for a key, as text in file units (for floats: 1–4 significant digits,
// in (0, 1) or [1, 5000], whichever the key accepts).
std::string random_value(const KeyInfo& info, std::mt19937_64& rng, int attempt) {
  auto uni = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  switch (info.type) {
    case KeyType::kInt:  // wide values, and small ones for the narrow ranges (vpp, layers)
      return std::to_string(attempt % 2 == 0 ? uni(1, 200000) : uni(1, 64));
    case KeyType::kFloat: {
      const int mantissa = uni(1, 9999);
      std::ostringstream s;
      if (attempt % 3 == 0) {
        s << mantissa / 10000.0;  // (0, 1)
      } else if (attempt % 3 == 1) {
        s << 1 + mantissa / 2.0;  // [1, 5000]
      } else {
        s << 1 + mantissa / 2000.0;  // [1, 6)
      }
      return s.str();
    }
    case KeyType::kBool:
      return uni(0, 1) ? "true" : "false";
    case KeyType::kString: {
      if (!info.choices.empty()) return info.choices[uni(0, int(info.choices.size()) - 1)];
      std::string s;
      const std::string alphabet = "abcxyz-_.0189 ";
      for (int i = uni(1, 12); i > 0; --i) s += alphabet[uni(0, int(alphabet.size()) - 1)];
      const auto b = s.find_first_not_of(' ');
      return b == std::string::npos ? "x" : s.substr(b, s.find_last_not_of(' ') - b + 1);
    }
    case KeyType::kEnum:
      return info.choices[uni(0, int(info.choices.size()) - 1)];
    case KeyType::kIntList:
    case KeyType::kEnumList: {
      if (uni(0, 4) == 0) return "auto";
      std::string s;
      for (int i = uni(1, 4); i > 0; --i) {
        if (!s.empty()) s += ",";
        if (info.type == KeyType::kEnumList) {
          s += info.choices[uni(0, int(info.choices.size()) - 1)];
        } else {
          s += std::to_string(attempt % 2 == 0 ? uni(1, 64) : uni(0, 3));
        }
      }
      return s;
    }
  }
  return "";
}

TEST(Keys, ToIniRoundTripsRandomProblems) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    Problem p;
    for (const KeyInfo& info : key_infos()) {
      bool stored = false;
      for (int attempt = 0; attempt < 40 && !stored; ++attempt) {  // narrow ranges need a few tries
        stored = !apply_key(p, info.name, random_value(info, rng, attempt), "rand");
      }
      EXPECT_TRUE(stored) << info.name;
    }
    const std::string text = to_ini(p);
    const Problem back = apply_ini(text);
    expect_same(p, back);
    EXPECT_EQ(to_ini(back), text);
  }
}

TEST(Keys, ToIniRoundTripsAHandBuiltProblem) {
  Problem p = valid_problem();
  p.gpu.comm_buffer_bytes = 0.7e9;  // SI values set in code, not parsed
  p.cluster.nvlink_latency_s = 3.4e-6;
  p.cluster.network_bytes_per_s = 400e9 / 8;
  p.search.schedule = {Schedule::k1F1B, Schedule::kZBH1};
  const Problem back = apply_ini(to_ini(p));
  expect_same(p, back);
}

TEST(Keys, ToIniListsEverySectionAndKeyOnce) {
  const std::string text = to_ini(valid_problem());
  for (const char* section : {"[model]", "[training]", "[gpu]", "[cluster]", "[search]"}) {
    const auto first = text.find(std::string("\n") + section + "\n");
    ASSERT_NE(first, std::string::npos) << section;
    EXPECT_EQ(text.find(std::string("\n") + section + "\n", first + 1), std::string::npos);
  }
  std::istringstream in(text);
  std::string line;
  int settings = 0;
  while (std::getline(in, line)) settings += line.find(" =") != std::string::npos ? 1 : 0;
  EXPECT_EQ(settings, static_cast<int>(known_keys().size()));
}

TEST(Keys, HelpTextNamesEveryKey) {
  const std::string help = help_text();
  const std::string md = help_markdown();
  for (const KeyInfo& info : key_infos()) {
    EXPECT_NE(help.find("  " + info.name + " ("), std::string::npos) << info.name;
    EXPECT_NE(md.find("| `" + info.name + "` |"), std::string::npos) << info.name;
    EXPECT_FALSE(info.help.empty()) << info.name;
    EXPECT_FALSE(info.allowed.empty()) << info.name;
  }
  EXPECT_NE(help.find("gpu.memory_gb (number, GB)"), std::string::npos);
  EXPECT_NE(help.find("cluster.network_latency_us (number, µs)"), std::string::npos);
}

// ---- check() ------------------------------------------------------------------------------
TEST(Check, AcceptsAValidProblem) {
  const auto issues = check(valid_problem());
  EXPECT_TRUE(issues.empty()) << issues.front().message();
}

TEST(Check, ReportsUnsetRequiredKeysOfTheDefaultProblem) {
  const auto keys = keys_of(check(Problem{}));
  for (const char* k :
       {"model.layers", "model.hidden_size", "model.ffn_hidden_size", "model.attention_heads",
        "model.vocab_size", "model.seq_length", "training.global_batch_size", "gpu.peak_tflops",
        "gpu.memory_gb", "gpu.memory_bandwidth_gb_per_s", "cluster.nvlink_bandwidth_gb_per_s",
        "cluster.network_bandwidth_gbit_per_s", "search.gpus"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "model.kv_heads"), keys.end());
}

TEST(Check, ReportsEveryCrossFieldProblemAtOnce) {
  Problem p = valid_problem();
  p.model.hidden_size = 8190;           // not a multiple of 64 heads, head_dim unset
  p.model.kv_heads = 7;                 // does not divide 64
  p.cluster.nvlink_domain_size = 12;    // neither divides nor is a multiple of 16
  p.gpu.memory_reserved_bytes = 141e9;  // leaves nothing
  p.search.mbs = {1, 512};              // 512 > global batch 256
  p.search.tp = {256};                  // > every GPU count (128)
  const auto issues = check(p);
  std::vector<std::string> messages;
  for (const auto& i : issues) messages.push_back(i.message());
  const std::vector<std::string> expected = {
      "model.hidden_size = 8190: a multiple of model.attention_heads (64) when model.head_dim "
      "is 0 (derived)",
      "model.kv_heads = 7: a divisor of model.attention_heads (64)",
      "gpu.memory_reserved_gb = 141: less than gpu.memory_gb (141)",
      "cluster.nvlink_domain_size = 12: a divisor or a multiple of cluster.gpus_per_node (16)",
      "search.tp = 256: at most the largest GPU count (search.gpus = 128)",
      "search.mbs = 1,512: at most training.global_batch_size (256)"};
  EXPECT_EQ(messages, expected);
}

TEST(Check, HeadDimGivenMakesAnyWidthValid) {
  Problem p = valid_problem();
  p.model.hidden_size = 8190;
  p.model.head_dim = 128;
  EXPECT_TRUE(check(p).empty());
}

TEST(Check, ReportsImpossibleSearchCombinations) {
  Problem p = valid_problem();
  p.search.vpp = {2};
  p.search.schedule = {Schedule::k1F1B};
  EXPECT_EQ(check(p).at(0).message(),
            "search.vpp = 2: 1 unless search.schedule includes interleaved-1f1b "
            "(search.schedule = 1f1b)");
  p.search.schedule = {Schedule::kInterleaved1F1B, Schedule::k1F1B};
  EXPECT_TRUE(check(p).empty());

  p = valid_problem();
  p.search.vpp = {1};
  p.search.schedule = {Schedule::kInterleaved1F1B};
  EXPECT_EQ(keys_of(check(p)), std::vector<std::string>{"search.schedule"});

  p = valid_problem();
  p.search.vpp = {2, 4};
  p.search.pp = {1};
  EXPECT_EQ(keys_of(check(p)), std::vector<std::string>{"search.vpp"});

  p = valid_problem();
  p.search.tp = {8};
  p.search.pp = {32};  // 8 x 32 = 256 > 128 GPUs
  EXPECT_EQ(keys_of(check(p)), std::vector<std::string>{"search.tp"});

  p = valid_problem();
  p.gpus = {1024};
  p.search.pp = {64};
  p.search.vpp = {2};  // 128 virtual stages > 80 layers + 2
  p.search.schedule = {Schedule::kInterleaved1F1B};
  EXPECT_EQ(keys_of(check(p)), std::vector<std::string>{"search.pp"});

  p = valid_problem();
  p.gpus.clear();
  EXPECT_EQ(check(p).at(0).message(), "search.gpus = : at least one GPU count (--gpus)");
}

TEST(Check, ResolveDefaults) {
  Problem p = valid_problem();
  p.model.kv_heads = 0;
  p.model.head_dim = 0;
  p.cluster.nvlink_domain_size = 0;
  resolve_defaults(p);
  EXPECT_EQ(p.model.kv_heads, 64);
  EXPECT_EQ(p.model.head_dim, 8192 / 64);
  EXPECT_EQ(p.cluster.nvlink_domain_size, 16);
  const Problem once = p;
  resolve_defaults(p);
  expect_same(once, p);
}

}  // namespace
}  // namespace ppsearch
