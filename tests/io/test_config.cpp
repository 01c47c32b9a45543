// Loading configurations (io/config_file.cpp): the presets, the order of files and
// overrides, and the exact message for each kind of bad input.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/presets.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::vector<ConfigIssue> issues_of(const LoadRequest& req) {
  try {
    load_problem(req);
  } catch (const ConfigError& e) {
    return e.issues();
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

LoadRequest with_gpus(LoadRequest req = {}) {
  req.options.push_back(KeyOverride{"search.gpus", "128", "--gpus"});
  return req;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The 1-based line of `text` that starts with `prefix`, 0 if none.
int line_of(std::string_view text, const std::string& prefix) {
  std::istringstream in{std::string(text)};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind(prefix, 0) == 0) return n;
  }
  return 0;
}

// ---- presets -----------------------------------------------------------------------------
TEST(Presets, TheExpectedSetExists) {
  EXPECT_EQ(preset_names("models"),
            (std::vector<std::string>{"deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "gpt3-13b",
                                      "gpt3-175b", "llama3-405b", "llama3-70b", "llama3-8b",
                                      "mixtral-8x22b", "nemotron4-15b", "qwen3-30b-a3b",
                                      "seed-gpt-48l"}));
  EXPECT_EQ(preset_names("gpus"),
            (std::vector<std::string>{"a100-80gb", "b200", "b300", "gb200", "gb300", "h100",
                                      "h100-96gb-500w", "h200"}));
  EXPECT_EQ(preset_names("clusters"),
            (std::vector<std::string>{"a100-8gpu-hdr", "b200-8gpu-xdr", "b300-8gpu-xdr",
                                      "gb200-nvl72", "gb300-nvl72", "h100-8gpu-ndr",
                                      "h100-ndr-tor-2to1", "h100-roce-ecmp", "h100-roce-tor",
                                      "h200-16gpu-ib", "h200-16gpu-roce", "h200-8gpu-ndr"}));
  EXPECT_EQ(preset_names("searches"), (std::vector<std::string>{"default"}));
}

TEST(Presets, EveryModelLoadsOnTheDefaultClusterAndPassesCheck) {
  for (const std::string& model : preset_names("models")) {
    SCOPED_TRACE(model);
    LoadRequest req = with_gpus();
    req.model = model;
    Problem p;
    ASSERT_NO_THROW(p = load_problem(req));
    EXPECT_TRUE(check(p).empty());
    EXPECT_EQ(p.model.name, model);
    EXPECT_GE(p.training.global_batch_size, 1);
  }
}

TEST(Presets, EveryClusterAndItsGpuLoadAndPassCheck) {
  for (const std::string& cluster : preset_names("clusters")) {
    SCOPED_TRACE(cluster);
    LoadRequest req = with_gpus();
    req.cluster = cluster;
    Problem p;
    ASSERT_NO_THROW(p = load_problem(req));
    EXPECT_TRUE(check(p).empty());
    EXPECT_EQ(p.cluster.name, cluster);
    EXPECT_EQ(p.gpu.name, p.cluster.gpu_preset);  // the GPU preset it names was loaded
  }
  for (const std::string& gpu : preset_names("gpus")) {
    SCOPED_TRACE(gpu);
    LoadRequest req = with_gpus();
    req.sets = {"cluster.gpu=" + gpu};
    Problem p;
    ASSERT_NO_THROW(p = load_problem(req));
    EXPECT_EQ(p.gpu.name, gpu);
  }
  LoadRequest req = with_gpus();
  req.config_files = {"default"};  // the search preset
  EXPECT_NO_THROW(load_problem(req));
}

// Every number in a preset carries a comment naming its source (or saying it is a
// calibration constant or an assumption).
TEST(Presets, EveryNumberHasASourceComment) {
  for (const std::string_view kind : kPresetKinds) {
    for (const std::string& name : preset_names(kind)) {
      const Preset* preset = find_preset(kind, name);
      ASSERT_NE(preset, nullptr);
      std::istringstream in{std::string(preset->text)};
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const std::string code = line.substr(0, line.find('#'));
        const auto eq = code.find('=');
        if (eq == std::string::npos) continue;
        std::string value = code.substr(eq + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t\r") + 1);
        const bool numeric = !value.empty() && std::isdigit(static_cast<unsigned char>(value[0])) &&
                             value.find_first_not_of("0123456789.,e+-") == std::string::npos;
        if (!numeric) continue;
        const auto hash = line.find('#');
        const std::string comment = hash == std::string::npos ? "" : line.substr(hash + 1);
        EXPECT_GE(comment.size(), 8U) << preset->name << ":" << n << ": " << line;
      }
    }
  }
}

// The values docs/interface.md and the known errors of the source document pin down.
TEST(Presets, HardwareFiguresMatchTheDatasheets) {
  auto gpu = [](const std::string& name) {
    LoadRequest req = with_gpus();
    req.sets = {"cluster.gpu=" + name};
    return load_problem(req).gpu;
  };
  EXPECT_EQ(gpu("h200").memory_bytes, 141e9);
  EXPECT_EQ(gpu("h200").peak_flop_per_s, 989e12);
  EXPECT_EQ(gpu("h100").peak_flop_per_s, 989e12);
  EXPECT_EQ(gpu("h100").memory_bytes, 80e9);
  EXPECT_EQ(gpu("a100-80gb").peak_flop_per_s, 312e12);
  EXPECT_EQ(gpu("b200").memory_bytes, 180e9);
  EXPECT_EQ(gpu("b300").memory_bytes, 288e9);  // not 192
  EXPECT_EQ(gpu("gb300").memory_bytes, 288e9);
  EXPECT_EQ(gpu("b300").peak_flop_per_s, 2250e12);
  EXPECT_EQ(gpu("gb200").peak_flop_per_s, 2450e12);
  // NVIDIA dgxc-benchmarking README "Peak Theoretical Throughput" (@841f546): GB300 has GB200's
  // dense BF16 and FP8 peaks (2450 / 4900), not B300's (2250 / 4500); docs/precision.md
  // "Blackwell presets against NVIDIA's sources".
  EXPECT_EQ(gpu("gb300").peak_flop_per_s, 2450e12);
  EXPECT_EQ(gpu("gb300").peak_flop_per_s, gpu("gb200").peak_flop_per_s);
  EXPECT_EQ(gpu("gb300").peak_fp8_flop_per_s, gpu("gb200").peak_fp8_flop_per_s);
  EXPECT_GT(gpu("gb300").peak_flop_per_s, gpu("b300").peak_flop_per_s);
  EXPECT_EQ(gpu("b300").peak_fp8_flop_per_s, gpu("b200").peak_fp8_flop_per_s);
  // The calibrated end-to-end GEMM efficiency stays below the single-GEMM ceiling,
  // MAMF / peak (stas00/ml-engineering): H100 794.5/989, B200 1745/2250, A100 271.2/312.
  EXPECT_LT(gpu("h100").gemm_efficiency, 794.5 / 989);
  EXPECT_LT(gpu("h200").gemm_efficiency, 794.5 / 989);
  EXPECT_LT(gpu("b200").gemm_efficiency, 1745.0 / 2250);
  EXPECT_LT(gpu("a100-80gb").gemm_efficiency, 271.2 / 312);
  EXPECT_GT(gpu("h100").gemm_efficiency, 0.5);
  // The 500 W H100 of the torchtitan benchmarks: "96GB HBM2e with 2.4 TB/sec"; a power limit
  // below 700 W can only lower the clock (docs/step-time.md "Power-capped GPUs").
  EXPECT_EQ(gpu("h100-96gb-500w").memory_bytes, 96e9);
  EXPECT_EQ(gpu("h100-96gb-500w").hbm_bytes_per_s, 2.4e12);
  EXPECT_EQ(gpu("h100-96gb-500w").peak_flop_per_s, 989e12);
  EXPECT_LT(gpu("h100-96gb-500w").clock_scale, 1.0);
  EXPECT_EQ(gpu("h100").clock_scale, 1.0);

  auto cluster = [](const std::string& name) {
    LoadRequest req = with_gpus();
    req.cluster = name;
    return load_problem(req).cluster;
  };
  EXPECT_EQ(cluster("h200-8gpu-ndr").nvlink_bytes_per_s, 450e9);  // NVLink 4 per direction
  EXPECT_EQ(cluster("h100-8gpu-ndr").nvlink_bytes_per_s, 450e9);
  EXPECT_EQ(cluster("a100-8gpu-hdr").nvlink_bytes_per_s, 300e9);
  EXPECT_EQ(cluster("b300-8gpu-xdr").nvlink_bytes_per_s, 900e9);
  EXPECT_EQ(cluster("a100-8gpu-hdr").network_bytes_per_s, 200e9 / 8);
  EXPECT_EQ(cluster("h200-8gpu-ndr").network_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(cluster("b300-8gpu-xdr").network_bytes_per_s, 800e9 / 8);
  // One NIC per GPU: DGX B200 and GB200 NVL72 carry 400 Gb/s ConnectX-7, GB300 NVL72 800 Gb/s
  // ConnectX-8 (NVIDIA DGX B200 User Guide; Multi-Node Tuning Guide; NVL72 Enterprise RA).
  EXPECT_EQ(cluster("b200-8gpu-xdr").network_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(cluster("gb200-nvl72").network_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(cluster("gb300-nvl72").network_bytes_per_s, 800e9 / 8);
  const ClusterSpec seed = cluster("h200-16gpu-ib");
  EXPECT_EQ(seed.gpus_per_node, 16);
  EXPECT_EQ(seed.nvlink_domain_size, 8);
  EXPECT_EQ(cluster("gb300-nvl72").nvlink_domain_size, 72);
  EXPECT_EQ(cluster("gb200-nvl72").nvlink_domain_size, 72);
  const ClusterSpec roce = cluster("h200-16gpu-roce");
  EXPECT_LT(roce.network_efficiency, seed.network_efficiency);
  EXPECT_GT(roce.network_latency_s, seed.network_latency_s);
}

TEST(Presets, DefaultsAreLlama70bOnTheSeedCluster) {
  const Problem p = load_problem(with_gpus());
  EXPECT_EQ(p.model.name, "llama3-70b");
  EXPECT_EQ(p.model.layers, 80);
  EXPECT_EQ(p.model.kv_heads, 8);
  EXPECT_EQ(p.model.head_dim, 128);              // resolved: 8192 / 64
  EXPECT_EQ(p.training.global_batch_size, 256);  // 2M tokens of 8192
  EXPECT_EQ(p.cluster.name, "h200-16gpu-ib");
  EXPECT_EQ(p.gpu.name, "h200");
}

// ---- round trip -----------------------------------------------------------------------------
TEST(Config, ResolvedIniRebuildsTheSameProblem) {
  for (const std::string& model : preset_names("models")) {
    for (const std::string& cluster : preset_names("clusters")) {
      SCOPED_TRACE(model + " on " + cluster);
      LoadRequest req = with_gpus();
      req.model = model;
      req.cluster = cluster;
      req.options.push_back(KeyOverride{"search.tp", "1,2,8", "--tp"});
      const Problem p = load_problem(req);
      const std::string text = resolved_ini(p);
      const Problem back = problem_from_ini_text(text, "rank 0");
      EXPECT_EQ(resolved_ini(back), text);
      EXPECT_EQ(back.gpu.memory_bytes, p.gpu.memory_bytes);
      EXPECT_EQ(back.cluster.network_latency_s, p.cluster.network_latency_s);
      EXPECT_EQ(back.search.tp, p.search.tp);
      EXPECT_EQ(back.gpus, p.gpus);
    }
  }
}

// ---- order of precedence --------------------------------------------------------------------
TEST(Config, LaterSourcesWin) {
  TempDir dir;
  const std::string cluster = dir.write("c.ini",
                                        "[cluster]\nname = mine\ngpu = h100\ngpus_per_node = 8\n"
                                        "nvlink_bandwidth_gb_per_s = 450\n"
                                        "network_bandwidth_gbit_per_s = 400\n"
                                        "[gpu]\nmemory_gb = 96\n");
  const std::string model = dir.write("m.ini",
                                      "[model]\nname = tiny\nlayers = 4\nhidden_size = 256\n"
                                      "ffn_hidden_size = 1024\nattention_heads = 4\n"
                                      "vocab_size = 1000\nseq_length = 128\n"
                                      "[training]\nglobal_batch_size = 32\n");
  const std::string a =
      dir.write("a.ini", "[training]\nglobal_batch_size = 64\n[search]\ntp = 2\n");
  const std::string b = dir.write("b.ini", "[training]\nglobal_batch_size = 128\n");

  LoadRequest req = with_gpus();
  req.cluster = cluster;
  req.model = model;
  Problem p = load_problem(req);
  EXPECT_EQ(p.gpu.name, "h100");                // from the GPU preset the cluster names
  EXPECT_EQ(p.gpu.peak_flop_per_s, 989e12);     // ditto
  EXPECT_EQ(p.gpu.memory_bytes, 96e9);          // the cluster file's [gpu] wins over the preset
  EXPECT_EQ(p.training.global_batch_size, 32);  // the model file's [training]
  EXPECT_EQ(p.model.kv_heads, 4);               // resolved default
  EXPECT_EQ(p.cluster.nvlink_domain_size, 8);   // resolved default = gpus_per_node

  req.config_files = {a, b};
  p = load_problem(req);
  EXPECT_EQ(p.training.global_batch_size, 128);  // the later --config wins
  EXPECT_EQ(p.search.tp, std::vector<int>{2});
  req.config_files = {b, a};
  EXPECT_EQ(load_problem(req).training.global_batch_size, 64);

  req.sets = {"training.global_batch_size=16", "search.tp = 4"};
  p = load_problem(req);
  EXPECT_EQ(p.training.global_batch_size, 16);  // --set wins over every file
  EXPECT_EQ(p.search.tp, std::vector<int>{4});
  req.options.push_back(KeyOverride{"training.global_batch_size", "8", "--global-batch"});
  EXPECT_EQ(load_problem(req).training.global_batch_size, 8);  // options win over --set

  // --set cluster.gpu switches the GPU preset itself, under the cluster file's [gpu] keys.
  req.sets = {"cluster.gpu=b200"};
  p = load_problem(req);
  EXPECT_EQ(p.gpu.name, "b200");
  EXPECT_EQ(p.gpu.peak_flop_per_s, 2250e12);
  EXPECT_EQ(p.gpu.memory_bytes, 96e9);
}

TEST(Config, RecordsWhereEachKeyCameFrom) {
  TempDir dir;
  const std::string a = dir.write("a.ini", "# search\n[search]\n\ntp = 2\n");
  LoadRequest req = with_gpus();
  req.config_files = {a};
  req.sets = {"search.pp=4"};
  const LoadedConfig loaded = apply_configuration(req);
  EXPECT_EQ(loaded.sources.at("search.tp"), a + ":4");
  EXPECT_EQ(loaded.sources.at("search.pp"), "--set");
  EXPECT_EQ(loaded.sources.at("search.gpus"), "--gpus");
  const Preset* model = find_preset("models", "llama3-70b");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(loaded.sources.at("model.layers"),
            "preset models/llama3-70b:" + std::to_string(line_of(model->text, "layers =")));
  const Preset* gpu = find_preset("gpus", "h200");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(loaded.sources.at("gpu.memory_gb"),
            "preset gpus/h200:" + std::to_string(line_of(gpu->text, "memory_gb =")));
  EXPECT_EQ(loaded.sources.count("search.cp"), 0U);
}

// ---- bad input: the exact message for each kind ---------------------------------------------
TEST(ConfigErrors, UnknownKeyNamesFileLineAndAHint) {
  TempDir dir;
  const std::string f = dir.write("x.ini",
                                  "[model]\nlayers = 80   # fine\nhiden_size = 8192\n"
                                  "[cluster]\ngpu_per_node = 8\n[search]\nfoo_bar_baz = 1\n");
  LoadRequest req = with_gpus();
  req.config_files = {f};
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 3U);
  EXPECT_EQ(issues[0].message(),
            f + ":3: model.hiden_size = 8192: unknown key (did you mean model.hidden_size?)");
  EXPECT_EQ(issues[1].message(),
            f + ":5: cluster.gpu_per_node = 8: unknown key (did you mean cluster.gpus_per_node?)");
  EXPECT_EQ(issues[2].message(), f + ":7: search.foo_bar_baz = 1: unknown key");
}

TEST(ConfigErrors, KeyOutsideASectionSuggestsTheSectionedKey) {
  TempDir dir;
  const std::string f = dir.write("x.ini", "layers = 80\n");
  LoadRequest req = with_gpus();
  req.model = f;
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].message(), f + ":1: layers = 80: unknown key (did you mean model.layers?)");
}

TEST(ConfigErrors, BadValueNamesFileLineKeyValueAndWhatIsAllowed) {
  TempDir dir;
  const std::string f = dir.write("x.ini",
                                  "[model]\nhidden_size = abc\nmlp = relu\n[gpu]\n"
                                  "memory_gb = -5\n[search]\nzero = 0,4\n");
  LoadRequest req = with_gpus();
  req.config_files = {f};
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 4U);
  EXPECT_EQ(issues[0].message(), f + ":2: model.hidden_size = abc: an integer in [1, 262144]");
  EXPECT_EQ(issues[1].message(), f + ":3: model.mlp = relu: one of swiglu, gelu");
  EXPECT_EQ(issues[2].message(), f + ":5: gpu.memory_gb = -5: a number in [1, 10000]");
  EXPECT_EQ(issues[3].message(),
            f + ":7: search.zero = 0,4: a comma list of integers in [0, 3], or auto");
}

TEST(ConfigErrors, MalformedLineAndDuplicateKey) {
  TempDir dir;
  const std::string f = dir.write("x.ini", "[model]\nlayers 80\n");
  LoadRequest req = with_gpus();
  req.config_files = {f};
  auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].source, f + ":2");
  EXPECT_EQ(issues[0].key, "");
  EXPECT_EQ(issues[0].value, "layers 80");
  EXPECT_EQ(issues[0].allowed, "not a 'key = value' line or a [section] header");

  const std::string g = dir.write("y.ini", "[model]\nlayers = 80\nlayers = 81\n");
  req.config_files = {g};
  issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].message(),
            g + ":3: model.layers = 81: set once per file (first set at line 2)");
}

TEST(ConfigErrors, MissingFileAndUnknownPreset) {
  LoadRequest req = with_gpus();
  req.config_files = {"/no/such/dir/x.ini"};
  req.model = "llama3-71b";
  req.cluster = "./nope.ini";
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 3U);
  // Cluster first (it is read first), then model, then --config.
  EXPECT_EQ(issues[0].source, "--cluster");
  EXPECT_EQ(issues[0].value, "./nope.ini");
  EXPECT_EQ(issues[0].allowed, "an existing INI file (no such file) or a cluster preset (" +
                                   join_names(preset_names("clusters")) + ")");
  EXPECT_EQ(issues[1].source, "--model");
  EXPECT_EQ(issues[1].value, "llama3-71b");
  EXPECT_EQ(issues[1].allowed, "a model preset (" + join_names(preset_names("models")) +
                                   ") or an INI file path (did you mean llama3-70b?)");
  EXPECT_EQ(issues[2].source, "--config");
  EXPECT_EQ(issues[2].value, "/no/such/dir/x.ini");
  EXPECT_EQ(issues[2].allowed, "an existing INI file (no such file) or a search preset (default)");
}

TEST(ConfigErrors, UnknownGpuPresetNamedByTheCluster) {
  TempDir dir;
  const std::string f = dir.write("c.ini", "[cluster]\nname = c\ngpu = h20\n");
  LoadRequest req = with_gpus();
  req.cluster = f;
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].message(), f + ":3: cluster.gpu = h20: a GPU preset (" +
                                     join_names(preset_names("gpus")) +
                                     ") or an INI file path (did you mean h200?)");
}

TEST(ConfigErrors, BadSetAndOptionOverrides) {
  LoadRequest req = with_gpus();
  req.sets = {"model.hiden_size=5", "no-equals-sign", "model.layers=-1"};
  req.options.push_back(KeyOverride{"search.tp", "3x", "--tp"});
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 4U);
  EXPECT_EQ(issues[0].message(),
            "--set: model.hiden_size = 5: unknown key (did you mean model.hidden_size?)");
  EXPECT_EQ(issues[1].source, "--set");
  EXPECT_EQ(issues[1].value, "no-equals-sign");
  EXPECT_EQ(issues[1].allowed, "SECTION.KEY=VALUE, e.g. model.layers=80");
  EXPECT_EQ(issues[2].message(), "--set: model.layers = -1: an integer in [1, 4096]");
  EXPECT_EQ(issues[3].message(),
            "--tp: search.tp = 3x: a comma list of at most 256 integers in [1, 131072], or auto");
}

TEST(ConfigErrors, CrossFieldIssuesNameWhereTheValueWasSet) {
  TempDir dir;
  const std::string f = dir.write("x.ini", "[model]\n\nkv_heads = 7\n");
  LoadRequest req = with_gpus();
  req.config_files = {f};
  req.sets = {"model.attention_heads=60"};
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 2U);
  const Preset* model = find_preset("models", "llama3-70b");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(issues[0].message(),
            "preset models/llama3-70b:" + std::to_string(line_of(model->text, "hidden_size =")) +
                ": model.hidden_size = 8192: a multiple of "
                "model.attention_heads (60) when model.head_dim is 0 "
                "(derived)");
  EXPECT_EQ(issues[1].message(),
            f + ":3: model.kv_heads = 7: a divisor of model.attention_heads (60)");
}

TEST(ConfigErrors, UntouchedKeysAreNamedDefault) {
  LoadRequest req;  // no GPU counts anywhere
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].message(), "(default): search.gpus = : at least one GPU count (--gpus)");
}

TEST(ConfigErrors, ProblemFromIniTextReportsItsLabel) {
  try {
    problem_from_ini_text("[model]\nlayers = x\n[cluster]\nbogus = 1\n", "rank 0");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 2U);
    EXPECT_EQ(e.issues()[0].message(), "rank 0:2: model.layers = x: an integer in [1, 4096]");
    EXPECT_EQ(e.issues()[1].message(), "rank 0:4: cluster.bogus = 1: unknown key");
  }
}

TEST(Config, PresetNamesAndLabels) {
  EXPECT_TRUE(is_preset_name("llama3-70b"));
  EXPECT_FALSE(is_preset_name("llama3-70b.ini"));
  EXPECT_FALSE(is_preset_name("./llama3-70b"));
  EXPECT_FALSE(is_preset_name(""));
  EXPECT_EQ(config_label("llama3-70b"), "llama3-70b");
  EXPECT_EQ(config_label("configs/models/my-model.ini"), "my-model");
  EXPECT_EQ(config_label("dir/plain"), "plain");
}

// ---- files: regular files only, never blocking, capped; a UTF-8 BOM is accepted ----------
TEST(ConfigFiles, ABomAtTheStartOfAnIniFileIsIgnored) {
  TempDir dir;
  const std::string path = dir.write("bom.ini", "\xEF\xBB\xBF[model]\nlayers = 40\n");
  LoadRequest req = with_gpus();
  req.config_files = {path};
  EXPECT_EQ(load_problem(req).model.layers, 40);
  // Only at the very start: a BOM later in the file is text, and an error.
  const std::string late = dir.write("late.ini", "[model]\n\xEF\xBB\xBFlayers = 40\n");
  req.config_files = {late};
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].source, late + ":2");
}

// The issue for a --config file that cannot be used, and what `read_regular_file` says.
std::string config_issue(const std::string& path) {
  LoadRequest req = with_gpus();
  req.config_files = {path};
  const auto issues = issues_of(req);
  EXPECT_EQ(issues.size(), 1u);
  return issues.empty() ? std::string() : issues[0].message();
}

std::string why_unreadable(const std::string& path, std::size_t cap) {
  std::string text = "unchanged";
  std::string why;
  EXPECT_FALSE(read_regular_file(path, cap, &text, &why)) << path;
  EXPECT_TRUE(text.empty());
  return why;
}

TEST(ConfigFiles, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo.ini";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens it: a blocking open would hang here.
  EXPECT_EQ(why_unreadable(fifo, kMaxIniBytes), "not a regular file");
  EXPECT_EQ(config_issue(fifo), "--config: " + fifo +
                                    ": an existing INI file (not a regular file) or a search "
                                    "preset (default)");
}

TEST(ConfigFiles, ADirectoryAndADeviceAreRefused) {
  TempDir dir;
  const std::string sub = dir.path() + "/sub.ini";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  EXPECT_EQ(why_unreadable(sub, kMaxIniBytes), "not a regular file");
  EXPECT_NE(config_issue(sub).find("(not a regular file)"), std::string::npos);
  // A private character device (the null device's numbers); needs the right to mknod.
  const std::string dev = dir.path() + "/null.ini";
  if (::mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod not permitted here";
  }
  EXPECT_EQ(why_unreadable(dev, kMaxIniBytes), "not a regular file");
  LoadRequest req = with_gpus();
  req.model = dev;
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].source, "--model");
  EXPECT_NE(issues[0].allowed.find("(not a regular file)"), std::string::npos);
}

TEST(ConfigFiles, MissingAndOversizedFilesAreRefused) {
  TempDir dir;
  EXPECT_EQ(why_unreadable(dir.path() + "/none.ini", kMaxIniBytes), "no such file");
  EXPECT_EQ(why_unreadable(dir.path() + "/none/x.ini", kMaxIniBytes), "no such file");
  // A file of comments one byte over 1 MiB.
  const std::string big = dir.write("big.ini", std::string(kMaxIniBytes + 1, '#'));
  EXPECT_EQ(why_unreadable(big, kMaxIniBytes), "larger than 1 MiB");
  EXPECT_EQ(config_issue(big), "--config: " + big +
                                   ": an existing INI file (larger than 1 MiB) or a search "
                                   "preset (default)");
  // Exactly at the cap it is read.
  const std::string full = dir.write("full.ini", std::string(kMaxIniBytes, '#'));
  std::string text;
  std::string why;
  EXPECT_TRUE(read_regular_file(full, kMaxIniBytes, &text, &why)) << why;
  EXPECT_EQ(text.size(), kMaxIniBytes);
}

TEST(ConfigFiles, AnUnreadableFileIsAConfigurationError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir;
  const std::string path = dir.write("secret.ini", "[model]\nlayers = 40\n");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  EXPECT_EQ(why_unreadable(path, kMaxIniBytes).rfind("cannot be opened: ", 0), 0u);
}

// ---- usable capacity (docs/memory.md "Capacity") ------------------------------------------------
TEST(Presets, UsableCapacityFollowsTheMeasuredDeviceTotal) {
  auto gpu = [](const std::string& name) {
    LoadRequest req = with_gpus();
    req.sets = {"cluster.gpu=" + name};
    return load_problem(req).gpu;
  };
  // H100 80GB HBM3: the CUDA runtime reports 79.11 GiB = 84.94e9 bytes (vllm-project/vllm#27508).
  // The preset keeps the datasheet's 80 GB and may not claim more than the device reports.
  const GpuSpec h100 = gpu("h100");
  EXPECT_EQ(h100.memory_bytes, 80e9);
  EXPECT_GT(h100.usable_memory_bytes(), 84.5e9);
  EXPECT_LE(h100.usable_memory_bytes(), 79.11 * 1073741824.0);
  // Presets without a cited device total keep the nominal figure.
  for (const char* name : {"h200", "a100-80gb", "b200", "b300", "gb200", "gb300"}) {
    EXPECT_EQ(gpu(name).memory_usable_factor, 1.0) << name;
  }
  // A bad factor is refused with the key and the allowed range.
  LoadRequest req = with_gpus();
  req.sets = {"gpu.memory_usable_factor=2"};
  const auto issues = issues_of(req);
  ASSERT_EQ(issues.size(), 1U);
  EXPECT_EQ(issues[0].message(), "--set: gpu.memory_usable_factor = 2: a number in [0.5, 1.2]");
}

}  // namespace
}  // namespace ppsearch
