// ppsearch-probe's pure part (docs/probe.md): nccl-tests parsing, the α-β fit, the INI text.
// Expected values: the fixtures' chosen figures (tests/probe/fixtures/make_fixtures.py), exact
// synthetic data, and the bus factors of nccl-tests doc/PERFORMANCE.md.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ppsearch/probe/probe.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(PPSEARCH_SOURCE_DIR) + "/tests/probe/fixtures/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The source of the one issue a ConfigError carries ("" when no error).
std::string error_source(const std::string& path, const std::string& text) {
  try {
    parse_nccl_tests(path, text);
  } catch (const ConfigError& e) {
    return e.issues().at(0).source;
  }
  return "";
}

TEST(Probe, BusFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(ProbeCollective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(ProbeCollective::kAllGather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(ProbeCollective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(ProbeCollective::kSendRecv, 2), 1.0);
}

TEST(Probe, FitRecoversExactAlphaBeta) {
  ProbeSeries s;
  s.collective = ProbeCollective::kAllReduce;
  s.ranks = 4;
  for (double b = 8; b <= (1 << 26); b *= 4) s.points.push_back({b, 20e-6 + b / 80e9, 0, 0});
  const AlphaBeta f = fit_alpha_beta(s);
  EXPECT_NEAR(f.alpha_s, 20e-6, 1e-12);
  EXPECT_NEAR(f.algbw, 80e9, 80e9 * 1e-9);
  EXPECT_NEAR(f.busbw, 80e9 * 1.5, 1.2e11 * 1e-9);
  EXPECT_LT(f.max_rel_err, 1e-9);
}

TEST(Probe, FixturesGiveTheirChosenBusBandwidth) {
  struct Case {
    const char* file;
    ProbeCollective c;
    int ranks, nodes;
    double busbw_gb;
  };
  for (const Case& k :
       {Case{"all_reduce_1node_8gpu.log", ProbeCollective::kAllReduce, 8, 1, 360},
        Case{"all_reduce_2node_16gpu.log", ProbeCollective::kAllReduce, 16, 2, 45},
        Case{"all_gather_2node_16gpu.log", ProbeCollective::kAllGather, 16, 2, 44},
        Case{"reduce_scatter_2node_16gpu.log", ProbeCollective::kReduceScatter, 16, 2, 43},
        Case{"sendrecv_2node.log", ProbeCollective::kSendRecv, 2, 2, 47}}) {
    SCOPED_TRACE(k.file);
    const std::string text = fixture(k.file);
    ASSERT_FALSE(text.empty());
    const ProbeSeries s = parse_nccl_tests(k.file, text);
    EXPECT_EQ(s.collective, k.c);
    EXPECT_EQ(s.ranks, k.ranks);
    EXPECT_EQ(s.nodes, k.nodes);
    EXPECT_EQ(s.points.size(), 14u);  // 8 B .. 1 GiB by 4
    const AlphaBeta f = fit_alpha_beta(s);
    EXPECT_NEAR(f.busbw / 1e9, k.busbw_gb, 0.05 * k.busbw_gb);
    // Without the lines that name the binary, the collective is inferred from the columns.
    std::string unnamed;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.find("_perf") == std::string::npos) unnamed += line + "\n";
    }
    EXPECT_EQ(parse_nccl_tests(k.file, unnamed).collective, k.c);
  }
}

TEST(Probe, BadLogsNameFileAndLine) {
  EXPECT_EQ(error_source("g.log", "hello\nworld\n"), "g.log:1");
  EXPECT_EQ(error_source("e.log", ""), "e.log:1");
  EXPECT_EQ(error_source("c.log", "# only comments\n# nThread 1\n"), "c.log:2");
  const std::string head = "# nThread 1 nGpus 1\n#  Rank  0 Group  0 Pid 1 on a device 0\n";
  EXPECT_EQ(error_source("s.log", head + "  8 2 float sum -1 12.0\n"), "s.log:3");
  EXPECT_EQ(error_source("n.log", head + "  8 2 float sum -1 x 0.0 0.0 0 1 0 0 0\n"), "n.log:3");
  EXPECT_EQ(error_source("a.log", "# alltoall_perf\n" + head), "a.log:1");
  EXPECT_EQ(error_source("ok.log", "# all_reduce_perf\n" + head +
                                       "  8 2 float sum -1 12.0 0.0 0.0 0 12.1 0.0 0.0 0\n"),
            "");
}

TEST(Probe, IniCommentsTheMeasuredKeysOnly) {
  const std::string ini =
      probe_ini({{"cluster.name", "x"}, {"cluster.network_latency_us", "14"}},
                {{"cluster.network_latency_us", 6.5, "across nodes: sendrecv latency"}}, "hdr");
  EXPECT_EQ(ini,
            "# hdr\n[cluster]\nname = x\n# across nodes: sendrecv latency\n"
            "network_latency_us = 6.5    # measured (was 14)\n");
}

}  // namespace
}  // namespace ppsearch
