// The command line (cli/options.cpp): argument vectors parsed in-process, with the
// exact text users see for each kind of mistake (docs/interface.md §1, §4).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "ppsearch/build_info.hpp"
#include "ppsearch/cli/options.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

RunRequest run_of(const std::vector<std::string>& args) {
  CliOutcome out = parse_command_line(args);
  EXPECT_TRUE(out.run) << out.text;
  return out.request;
}

// The error text for `args` (exit code 2 expected).
std::string error_of(const std::vector<std::string>& args) {
  const CliOutcome out = parse_command_line(args);
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 2);
  return out.text;
}

// ---- help, version ----------------------------------------------------------------------------
TEST(Cli, HelpAndVersionExitZero) {
  CliOutcome out = parse_command_line({"--help"});
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.text.rfind("Usage: ppsearch --gpus LIST [options]\n", 0), 0U);
  for (const char* opt :
       {"--gpus",         "--model",     "--cluster",     "--config",     "--set",
        "--global-batch", "--tp",        "--pp",          "--cp",         "--vpp",
        "--mbs",          "--schedule",  "--recompute",   "--sp",         "--zero",
        "--output",       "--overwrite", "--top",         "--threads",    "--quiet",
        "--help",         "--version",   "--partitioner", "--simulation", "--max-candidates"}) {
    EXPECT_NE(out.text.find(std::string(opt) + " "), std::string::npos) << opt;
  }
  EXPECT_NE(out.text.find("Exit codes: 0 success"), std::string::npos);
  EXPECT_EQ(parse_command_line({"-h"}).text, out.text);

  out = parse_command_line({"--version"});
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.text,
            std::string("ppsearch ") + PPSEARCH_VERSION + " (" + PPSEARCH_GIT_HASH + ")\n");

  out = parse_command_line({"--help-config"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.text, help_text());
}

// ---- a normal run -------------------------------------------------------------------------------
TEST(Cli, DefaultsAndDerivedFields) {
  const RunRequest r = run_of({"--gpus", "128"});
  EXPECT_EQ(r.problem.gpus, std::vector<int>{128});
  EXPECT_EQ(r.problem.model.name, "llama3-70b");
  EXPECT_EQ(r.problem.cluster.name, "h200-16gpu-ib");
  EXPECT_EQ(r.model_name, "llama3-70b");
  EXPECT_EQ(r.cluster_name, "h200-16gpu-ib");
  EXPECT_EQ(r.output_path, "results/llama3-70b_h200-16gpu-ib_128.h5");
  EXPECT_FALSE(r.overwrite);
  EXPECT_EQ(r.top, 10);
  EXPECT_EQ(r.threads, 0);
  EXPECT_FALSE(r.quiet);
  EXPECT_EQ(r.command_line, "ppsearch --gpus 128");
  EXPECT_EQ(r.resolved_config, resolved_ini(r.problem));
  // Non-root ranks rebuild the identical Problem from the broadcast text.
  EXPECT_EQ(resolved_ini(problem_from_ini_text(r.resolved_config, "rank 0")), r.resolved_config);
}

TEST(Cli, EveryOptionReachesTheRequest) {
  TempDir dir;
  const RunRequest r = run_of({"--gpus",
                               "64:1024",
                               "--model",
                               "gpt3-175b",
                               "--cluster=a100-8gpu-hdr",
                               "--global-batch",
                               "512",
                               "--tp",
                               "8",
                               "--pp",
                               "8",
                               "--cp",
                               "1",
                               "--vpp",
                               "3",
                               "--mbs",
                               "1",
                               "--schedule",
                               "interleaved-1f1b",
                               "--recompute",
                               "selective",
                               "--sp",
                               "on",
                               "--zero",
                               "1",
                               "--partitioner",
                               "reference",
                               "--simulation",
                               "full",
                               "--output",
                               dir.write("o.h5", ""),
                               "--overwrite",
                               "--top",
                               "3",
                               "--threads",
                               "4",
                               "--quiet"});
  const Problem& p = r.problem;
  EXPECT_EQ(p.model.name, "gpt3-175b");
  EXPECT_EQ(p.cluster.name, "a100-8gpu-hdr");
  EXPECT_EQ(p.training.global_batch_size, 512);
  EXPECT_EQ(p.search.tp, std::vector<int>{8});
  EXPECT_EQ(p.search.pp, std::vector<int>{8});
  EXPECT_EQ(p.search.cp, std::vector<int>{1});
  EXPECT_EQ(p.search.vpp, std::vector<int>{3});
  EXPECT_EQ(p.search.mbs, std::vector<int>{1});
  EXPECT_EQ(p.search.schedule, std::vector<Schedule>{Schedule::kInterleaved1F1B});
  EXPECT_EQ(p.search.recompute, std::vector<Recompute>{Recompute::kSelective});
  EXPECT_EQ(p.search.sp, std::vector<int>{1});
  EXPECT_EQ(p.search.zero, std::vector<int>{1});
  EXPECT_TRUE(p.search.reference_partitioner);
  EXPECT_TRUE(p.search.full_simulation);
  EXPECT_TRUE(r.overwrite);
  EXPECT_TRUE(r.quiet);
  EXPECT_EQ(r.top, 3);
  EXPECT_EQ(r.threads, 4);
  // The output file exists already: the command line does not care (main decides).
  EXPECT_TRUE(fs::exists(r.output_path));
  // 64:1024 on 8-GPU nodes: every multiple of 8.
  EXPECT_EQ(p.gpus.size(), (1024u - 64u) / 8u + 1u);
}

TEST(Cli, DefaultOutputNameUsesPresetsOrFileStemsAndTheGpusAsWritten) {
  TempDir dir;
  const std::string model = dir.write("my-model.ini",
                                      "[model]\nname = mine\nlayers = 2\nhidden_size = 64\n"
                                      "ffn_hidden_size = 256\nattention_heads = 4\n"
                                      "vocab_size = 100\nseq_length = 32\n"
                                      "[training]\nglobal_batch_size = 8\n");
  EXPECT_EQ(run_of({"--gpus", "64:1024", "--model", model}).output_path,
            "results/my-model_h200-16gpu-ib_64-1024.h5");
  EXPECT_EQ(run_of({"--gpus", "64,128,256", "--cluster", "h100-8gpu-ndr"}).output_path,
            "results/llama3-70b_h100-8gpu-ndr_64,128,256.h5");
  EXPECT_EQ(run_of({"--gpus", "64:1024:64"}).output_path,
            "results/llama3-70b_h200-16gpu-ib_64-1024-64.h5");
}

TEST(Cli, CommandLineIsShellQuoted) {
  const RunRequest r = run_of({"--gpus", "128", "--set", "model.name=two words"});
  EXPECT_EQ(r.command_line, "ppsearch --gpus 128 --set 'model.name=two words'");
  EXPECT_EQ(r.problem.model.name, "two words");
}

// ---- --gpus
// ---------------------------------------------------------------------------------------
TEST(Cli, GpuRangesUseTheClustersGpusPerNode) {
  EXPECT_EQ(run_of({"--gpus", "64:128"}).problem.gpus,
            (std::vector<int>{64, 80, 96, 112, 128}));  // h200-16gpu-ib: 16 per node
  EXPECT_EQ(run_of({"--gpus", "64:100", "--cluster", "h100-8gpu-ndr"}).problem.gpus,
            (std::vector<int>{64, 72, 80, 88, 96}));
  EXPECT_EQ(run_of({"--gpus", "64:128", "--set", "cluster.gpus_per_node=32"}).problem.gpus,
            (std::vector<int>{64, 96, 128}));
  EXPECT_EQ(run_of({"--gpus", "50:100"}).problem.gpus, (std::vector<int>{64, 80, 96}));
  EXPECT_EQ(run_of({"--gpus", "64:256:64"}).problem.gpus, (std::vector<int>{64, 128, 192, 256}));
  EXPECT_EQ(run_of({"--gpus", "256, 8,64:96,8"}).problem.gpus,
            (std::vector<int>{8, 64, 80, 96, 256}));
  EXPECT_EQ(run_of({"--gpus", "12:20", "--cluster", "gb200-nvl72"}).problem.gpus,
            (std::vector<int>{12, 16, 20}));  // NVL72 compute trays hold 4 GPUs
}

TEST(Cli, ExpandGpuCountsMatchesBruteForce) {
  for (unsigned seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937 rng(seed);
    auto uni = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int lo = uni(1, 300);
    const int hi = lo + uni(0, 300);
    const int gpn = uni(1, 72);
    const bool explicit_step = uni(0, 1) == 1;
    const int step = uni(1, 50);
    std::vector<int> expected;
    for (int g = 1; g <= hi; ++g) {
      const bool in = explicit_step ? g >= lo && (g - lo) % step == 0 : g >= lo && g % gpn == 0;
      if (in) expected.push_back(g);
    }
    const std::string text = std::to_string(lo) + ":" + std::to_string(hi) +
                             (explicit_step ? ":" + std::to_string(step) : "");
    std::vector<int> got;
    std::string why;
    const bool ok = expand_gpu_counts(text, gpn, &got, &why);
    EXPECT_EQ(ok, !expected.empty()) << text << " gpn " << gpn << ": " << why;
    if (ok) {
      EXPECT_EQ(got, expected) << text << " gpn " << gpn;
    }
  }
}

// ---- errors: the exact text
// ------------------------------------------------------------------------
TEST(CliErrors, MissingGpus) {
  EXPECT_EQ(error_of({}),
            "ppsearch: error: --gpus: (missing): required, e.g. --gpus 128 or --gpus 64:1024\n");
  EXPECT_EQ(error_of({"--tp", "8"}),
            "ppsearch: error: --gpus: (missing): required, e.g. --gpus 128 or --gpus 64:1024\n");
}

TEST(CliErrors, GpuCountsFromAConfigFileAreEnough) {
  TempDir dir;
  const std::string f = dir.write("g.ini", "[search]\ngpus = 64,128\n");
  const RunRequest r = run_of({"--config", f});
  EXPECT_EQ(r.problem.gpus, (std::vector<int>{64, 128}));
  EXPECT_EQ(r.output_path, "results/llama3-70b_h200-16gpu-ib_64,128.h5");
}

TEST(CliErrors, BadGpus) {
  const std::string syntax =
      "GPU counts in [1, 131072]: N, a comma list N,M,..., START:END (every multiple of "
      "cluster.gpus_per_node in range) or START:END:STEP";
  for (const char* bad :
       {"abc", "64:x", "0", "-8", "64:", ":64", "8,,16", "1:2:3:4", "64:128:0", "99999999999"}) {
    EXPECT_EQ(error_of({std::string("--gpus=") + bad}),
              std::string("ppsearch: error: --gpus: search.gpus = ") + bad + ": " + syntax + "\n");
  }
  EXPECT_EQ(error_of({"--gpus", "64:32"}),
            "ppsearch: error: --gpus: search.gpus = 64:32: a range with START ≤ END\n");
  EXPECT_EQ(error_of({"--gpus", "17:31"}),
            "ppsearch: error: --gpus: search.gpus = 17:31: a range that holds a multiple of "
            "cluster.gpus_per_node (16)\n");
  EXPECT_EQ(error_of({"--gpus", "1:100000:1"}),
            "ppsearch: error: --gpus: search.gpus = 1:100000:1: at most 10000 GPU counts\n");
}

TEST(CliErrors, BadListOptions) {
  EXPECT_EQ(error_of({"--gpus", "128", "--tp", "3x"}),
            "ppsearch: error: --tp: search.tp = 3x: a comma list of at most 256 integers in [1, "
            "131072], or auto\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--zero", "4"}),
            "ppsearch: error: --zero: search.zero = 4: a comma list of integers in [0, 3], or "
            "auto\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--schedule", "1f1b,zb"}),
            "ppsearch: error: --schedule: search.schedule = 1f1b,zb: a comma list of gpipe, 1f1b, "
            "interleaved-1f1b, zb-h1, zb-v, dualpipe, zb-h2, or auto\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--sp", "yes"}),
            "ppsearch: error: --sp: search.sp = yes: a comma list of off, on, or auto\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--global-batch", "0"}),
            "ppsearch: error: --global-batch: training.global_batch_size = 0: an integer in [1, "
            "16777216]\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--partitioner", "slow"}),
            "ppsearch: error: --partitioner: search.partitioner = slow: one of fast, reference\n");
}

TEST(CliErrors, BadPlainOptions) {
  EXPECT_EQ(error_of({"--gpus", "128", "--top", "x"}),
            "ppsearch: error: --top: x: an integer in [0, 1000000]\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--threads", "0"}),
            "ppsearch: error: --threads: 0: an integer in [1, 4096]\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--tpp", "8"}),
            "ppsearch: error: --tpp: unknown option (did you mean --tp?)\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--tp"}), "ppsearch: error: --tp: needs a value\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--tp", "2", "--tp", "4"}),
            "ppsearch: error: --tp: given more than once (only --config and --set repeat)\n");
  EXPECT_EQ(error_of({"--gpus", "128", "stray"}),
            "ppsearch: error: stray: unexpected argument (options start with --)\n");
}

TEST(CliErrors, MissingFilesAndUnknownPresets) {
  const std::string text =
      error_of({"--gpus", "128", "--model", "llama3-71b", "--config", "/no/such/file.ini"});
  EXPECT_NE(text.find("ppsearch: error: --model: llama3-71b: a model preset ("), std::string::npos)
      << text;
  EXPECT_NE(text.find(") or an INI file path (did you mean llama3-70b?)\n"), std::string::npos);
  EXPECT_NE(text.find("ppsearch: error: --config: /no/such/file.ini: an existing INI file (no "
                      "such file) or a search preset (default)\n"),
            std::string::npos)
      << text;
}

TEST(CliErrors, UnknownKeyInAConfigFile) {
  TempDir dir;
  const std::string f = dir.write("x.ini", "[model]\nhiden_size = 8192\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--config", f}),
            "ppsearch: error: " + f +
                ":2: model.hiden_size = 8192: unknown key (did you mean model.hidden_size?)\n");
}

TEST(CliErrors, ConflictingAndImpossibleValues) {
  EXPECT_EQ(error_of({"--gpus", "128", "--schedule", "gpipe", "--vpp", "2"}),
            "ppsearch: error: --vpp: search.vpp = 2: 1 unless search.schedule includes "
            "interleaved-1f1b (search.schedule = gpipe)\n");
  EXPECT_EQ(error_of({"--gpus", "64", "--tp", "128"}),
            "ppsearch: error: --tp: search.tp = 128: at most the largest GPU count (search.gpus "
            "= 64)\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--mbs", "512"}),
            "ppsearch: error: --mbs: search.mbs = 512: at most training.global_batch_size (256)\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--set", "model.kv_heads=7"}),
            "ppsearch: error: --set: model.kv_heads = 7: a divisor of model.attention_heads "
            "(64)\n");
  EXPECT_EQ(error_of({"--gpus", "128", "--set", "gpu.memory_reserved_gb=200"}),
            "ppsearch: error: --set: gpu.memory_reserved_gb = 200: less than gpu.memory_gb "
            "(141)\n");
}

TEST(CliErrors, EveryMistakeIsReportedAtOnce) {
  const std::string text =
      error_of({"--top=-1", "--tp", "3x", "--set", "model.hiden_size=1", "--zero", "9"});
  EXPECT_EQ(text,
            "ppsearch: error: --gpus: (missing): required, e.g. --gpus 128 or --gpus 64:1024\n"
            "ppsearch: error: --top: -1: an integer in [0, 1000000]\n"
            "ppsearch: error: --set: model.hiden_size = 1: unknown key (did you mean "
            "model.hidden_size?)\n"
            "ppsearch: error: --tp: search.tp = 3x: a comma list of at most 256 integers in [1, "
            "131072], or auto\n"
            "ppsearch: error: --zero: search.zero = 9: a comma list of integers in [0, 3], or "
            "auto\n");
}

// ---- precedence
// ----------------------------------------------------------------------------------
TEST(Cli, SetWinsOverFilesAndOptionsWinOverSet) {
  TempDir dir;
  const std::string a = dir.write("a.ini", "[training]\nglobal_batch_size = 100\n");
  const std::string b = dir.write("b.ini", "[training]\nglobal_batch_size = 200\n");
  EXPECT_EQ(
      run_of({"--gpus", "128", "--config", a, "--config", b}).problem.training.global_batch_size,
      200);
  EXPECT_EQ(
      run_of({"--gpus", "128", "--config", b, "--config", a}).problem.training.global_batch_size,
      100);
  EXPECT_EQ(run_of({"--gpus", "128", "--config", a, "--set", "training.global_batch_size=300"})
                .problem.training.global_batch_size,
            300);
  EXPECT_EQ(run_of({"--gpus", "128", "--set", "training.global_batch_size=300", "--global-batch",
                    "400", "--config", a})
                .problem.training.global_batch_size,
            400);
  EXPECT_EQ(run_of({"--gpus", "128", "--set", "search.tp=2", "--tp", "4"}).problem.search.tp,
            std::vector<int>{4});
}

TEST(Cli, FixingEveryKnobLeavesOneCandidateSpace) {
  const RunRequest r =
      run_of({"--gpus",      "512",       "--tp",    "8",         "--pp",       "8",
              "--vpp",       "3",         "--mbs",   "1",         "--schedule", "interleaved-1f1b",
              "--recompute", "selective", "--sp",    "on",        "--zero",     "1",
              "--cp",        "1",         "--model", "gpt3-175b", "--cluster",  "a100-8gpu-hdr"});
  const SearchSpec& s = r.problem.search;
  for (const auto* v : {&s.tp, &s.pp, &s.cp, &s.vpp, &s.mbs, &s.sp, &s.zero}) {
    EXPECT_EQ(v->size(), 1U);
  }
  EXPECT_EQ(s.schedule.size(), 1U);
  EXPECT_EQ(s.recompute.size(), 1U);
}

TEST(Cli, PrintConfigPrintsTheResolvedIni) {
  const CliOutcome out = parse_command_line({"--gpus", "128", "--print-config", "--tp", "4"});
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.text, resolved_ini(run_of({"--gpus", "128", "--tp", "4"}).problem));
  EXPECT_NE(out.text.find("\ntp = 4\n"), std::string::npos);
}

TEST(Cli, IssueLine) {
  EXPECT_EQ(issue_line(ConfigIssue{"f.ini:3", "model.layers", "x", "an integer ≥ 1"}),
            "f.ini:3: model.layers = x: an integer ≥ 1");
  EXPECT_EQ(issue_line(ConfigIssue{"--gpus", "", "(missing)", "required"}),
            "--gpus: (missing): required");
  EXPECT_EQ(issue_line(ConfigIssue{"--tpp", "", "", "unknown option"}), "--tpp: unknown option");
}

// ---- input limits: the audit's reproducers stop with exit 2 before anything runs --------
TEST(CliLimits, AuditedReproducersAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string first_line;
  };
  const std::vector<Case> cases = {
      {{"--gpus", "1073741824"},
       "ppsearch: error: --gpus: search.gpus = 1073741824: GPU counts in [1, 131072]: N, a comma "
       "list N,M,..., START:END (every multiple of cluster.gpus_per_node in range) or "
       "START:END:STEP"},
      {{"--gpus", "2147483647"},
       "ppsearch: error: --gpus: search.gpus = 2147483647: GPU counts in [1, 131072]: N, a comma "
       "list N,M,..., START:END (every multiple of cluster.gpus_per_node in range) or "
       "START:END:STEP"},
      {{"--gpus", "64", "--global-batch", "2147483647", "--mbs", "1073741824", "--tp", "1", "--pp",
        "1", "--cp", "1"},
       "ppsearch: error: --global-batch: training.global_batch_size = 2147483647: an integer in "
       "[1, 16777216]"},
      {{"--gpus", "65536", "--tp", "65536", "--pp", "65536", "--cp", "65536"},
       "ppsearch: error: --tp: search.tp = 65536: tp x pp x cp (smallest values: "
       "281474976710656) at most the largest GPU count (search.gpus = 65536)"},
      {{"--gpus", "64", "--tp", "1,2147483647"},
       "ppsearch: error: --tp: search.tp = 1,2147483647: a comma list of at most 256 integers in "
       "[1, 131072], or auto"},
      {{"--gpus", "64", "--vpp", "2147483647"},
       "ppsearch: error: --vpp: search.vpp = 2147483647: a comma list of integers in [1, 64], or "
       "auto"},
      {{"--gpus", "64", "--set", "model.layers=2147483647"},
       "ppsearch: error: --set: model.layers = 2147483647: an integer in [1, 4096]"},
      {{"--gpus", "64", "--set", "model.layers=100000000"},
       "ppsearch: error: --set: model.layers = 100000000: an integer in [1, 4096]"},
      {{"--gpus", "64", "--set", "gpu.activation_overhead=1e308"},
       "ppsearch: error: --set: gpu.activation_overhead = 1e308: a number in [1, 10]"},
      {{"--gpus", "64", "--set", "gpu.peak_tflops=1e-300"},
       "ppsearch: error: --set: gpu.peak_tflops = 1e-300: a number in [1, 100000]"},
      {{"--gpus", "64", "--set", "cluster.network_bandwidth_gbit_per_s=1e-300"},
       "ppsearch: error: --set: cluster.network_bandwidth_gbit_per_s = 1e-300: a number in [1, "
       "100000]"},
      {{"--gpus", "64", "--set", "cluster.nvlink_bandwidth_gb_per_s=1e-300"},
       "ppsearch: error: --set: cluster.nvlink_bandwidth_gb_per_s = 1e-300: a number in [1, "
       "100000]"},
      {{"--gpus", "64", "--set", "cluster.network_latency_us=1e300"},
       "ppsearch: error: --set: cluster.network_latency_us = 1e300: a number in [0, 1000]"},
      {{"--gpus", "64", "--set", "cluster.nvlink_latency_us=1e300"},
       "ppsearch: error: --set: cluster.nvlink_latency_us = 1e300: a number in [0, 1000]"},
      {{"--gpus", "64", "--top", "99999999999"},
       "ppsearch: error: --top: 99999999999: an integer in [0, 1000000]"},
      {{"--gpus", "64", "--max-candidates", "0"},
       "ppsearch: error: --max-candidates: search.max_candidates = 0: an integer in [1, "
       "1000000000]"},
  };
  for (const Case& c : cases) {
    const std::string text = error_of(c.args);
    EXPECT_EQ(text.substr(0, text.find('\n')), c.first_line);
  }
}

TEST(CliLimits, ASweepAboveTheBudgetIsRefusedWithItsSize) {
  // The default model on --gpus 1:65536 (4096 GPU counts): 943047 candidates, above the
  // default budget; the message names the count, the limit and how to narrow the sweep.
  const std::string text = error_of({"--gpus", "1:65536"});
  EXPECT_EQ(text.rfind("ppsearch: error: (default): search.max_candidates = 500000: at least "
                       "the sweep's 943047 candidates (results alone need about ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("narrow the sweep (fix --tp, --pp, --cp, --mbs, --schedule or "
                      "--recompute, or give a smaller --gpus range) or raise the limit with "
                      "--max-candidates N\n"),
            std::string::npos);
  // The 405B sweep over micro-batch sizes of the audit, and the budget's own sources.
  EXPECT_NE(error_of({"--model", "llama3-405b", "--gpus", "1:65536", "--global-batch", "1048576",
                      "--mbs", "1,2,4,8,16,32,64,128"})
                .find("the sweep's 3117648 candidates"),
            std::string::npos);
  EXPECT_EQ(error_of({"--gpus", "128", "--max-candidates", "100"})
                .rfind("ppsearch: error: --max-candidates: search.max_candidates = 100: at "
                       "least the sweep's ",
                       0),
            0u);
  EXPECT_EQ(error_of({"--gpus", "128", "--set", "search.max_candidates=100"})
                .rfind("ppsearch: error: --set: search.max_candidates = 100: ", 0),
            0u);
  // Raising the limit lets the same sweep run; --print-config is not a sweep.
  EXPECT_TRUE(parse_command_line({"--gpus", "1:65536", "--max-candidates", "943047"}).run);
  EXPECT_EQ(parse_command_line({"--gpus", "1:65536", "--print-config"}).exit_code, 0);
  // The largest sweep of the documentation fits the default.
  EXPECT_TRUE(parse_command_line({"--gpus", "64:1024", "--model", "llama3-405b"}).run);
}

TEST(CliLimits, TheLimitsThemselvesAreAccepted) {
  EXPECT_TRUE(parse_command_line({"--gpus", "131072", "--tp", "8", "--pp", "16", "--cp", "1",
                                  "--mbs", "1", "--global-batch", "16777216"})
                  .run);
  EXPECT_FALSE(parse_command_line({"--gpus", "131073"}).run);
  EXPECT_TRUE(parse_command_line({"--gpus", "128", "--top", "1000000"}).run);
}

TEST(CliLimits, AModelPathThatIsNoRegularFileIsAUsageError) {
  TempDir dir;
  const std::string fifo = dir.path() + "/model.ini";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of({"--gpus", "64", "--model", fifo}),
            "ppsearch: error: --model: " + fifo +
                ": an existing INI file (not a regular file) or a model preset (deepseek-v3, "
                "gpt-oss-120b, gpt-oss-20b, gpt3-13b, gpt3-175b, llama3-405b, llama3-70b, "
                "llama3-8b, mixtral-8x22b, nemotron4-15b, qwen3-30b-a3b, seed-gpt-48l)\n");
}

}  // namespace
}  // namespace ppsearch
