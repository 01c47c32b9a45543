// ppsearch-probe: measures the cluster (or imports nccl-tests logs) and writes a cluster INI that
// ppsearch --cluster loads (docs/probe.md).
//   srun -n N ppsearch-probe --output cluster.ini [--base NAME|INI] [--compare NAME|INI]
//   ppsearch-probe --nccl-tests LOG... --output cluster.ini [--base NAME|INI] [--compare ...]
// Exit: 0 written; 2 usage, configuration or log error (file:line named; nothing written);
//       4 the INI cannot be written.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/comm/probe.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/probe/probe.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/util/error.hpp"

namespace {

using namespace ppsearch;

const char* kUsage =
    "usage: ppsearch-probe --output FILE.ini [--nccl-tests LOG...] [--base NAME|INI]\n"
    "                      [--compare NAME|INI] [--max-bytes N] [--iters N]\n"
    "Under srun/mpirun: measures point-to-point and collective (all-reduce, all-gather,\n"
    "reduce-scatter) bandwidth and latency over MPI inside a node and across nodes. With\n"
    "--nccl-tests: fits bus bandwidth and latency per span from nccl-tests logs instead.\n"
    "Writes a cluster INI (the --base cluster, default h200-16gpu-ib, with the measured keys\n"
    "replaced and commented) and warns when --compare (a preset or INI) is more than 20 % off.\n"
    "Exit status: 0 written; 2 usage, configuration or log error; 4 cannot write FILE.\n";

int usage_error(const std::string& what) {
  std::cerr << "ppsearch-probe: error: " << what << "\n" << kUsage;
  return static_cast<int>(ExitCode::kUsage);
}

Problem load_cluster(const std::string& cluster) {
  LoadRequest req;
  req.cluster = cluster;
  req.options.push_back({"search.gpus", "1", "ppsearch-probe"});  // only the cluster is used
  return load_problem(req);
}

std::string fmt(double x, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

struct Span {
  const char* name;     // "inside a node", "across nodes"
  const char* bw_key;   // INI key of the bandwidth
  const char* eff_key;  // its efficiency
  const char* lat_key;  // latency
  double bw_unit;       // bytes/s per file unit
  const char* bw_unit_name;
};
const Span kIntra{"inside a node",
                  "cluster.nvlink_bandwidth_gb_per_s",
                  "cluster.nvlink_efficiency",
                  "cluster.nvlink_latency_us",
                  1e9,
                  "GB/s"};
const Span kInter{"across nodes",
                  "cluster.network_bandwidth_gbit_per_s",
                  "cluster.network_efficiency",
                  "cluster.network_latency_us",
                  1e9 / 8,
                  "Gbit/s"};

// Findings of one span from its series (empty when the span has none).
// `nominal` is the base cluster's bandwidth of the span (B/s): a measured bus bandwidth below it
// becomes the efficiency (bandwidth × efficiency is what the cost model uses, docs/algorithms.md
// §5.2), one above it replaces the bandwidth with efficiency 1.
std::vector<ProbeFinding> findings_of(const Span& span, const std::vector<const ProbeSeries*>& ss,
                                      const std::string& how, double nominal) {
  std::vector<ProbeFinding> out;
  const ProbeSeries* bw = nullptr;
  const ProbeSeries* p2p = nullptr;
  for (const ProbeSeries* s : ss) {
    if (s->collective == ProbeCollective::kSendRecv) {
      p2p = s;
    } else if (bw == nullptr || s->collective == ProbeCollective::kAllReduce) {
      bw = s;
    }
  }
  if (bw == nullptr) bw = p2p;
  if (bw == nullptr) return out;
  const auto sizes = [](const ProbeSeries& s) {
    return fmt(s.points.front().bytes, "%.0f") + ".." + fmt(s.points.back().bytes, "%.0f") +
           " B, " + std::to_string(s.points.size()) + " sizes";
  };
  const AlphaBeta f = fit_alpha_beta(*bw);
  const std::string what = std::string(span.name) + ": " + to_string(bw->collective) +
                           " bus bandwidth " + fmt(f.busbw / 1e9) + " GB/s (" + how +
                           "; alpha-beta fit of time on size, " + sizes(*bw) + ", " +
                           std::to_string(bw->ranks) + " ranks, worst fit error " +
                           fmt(100 * f.max_rel_err, "%.1f") + " %; " + bw->source + ")";
  // Keys' ranges (src/spec/keys.cpp): bandwidths >= 1 file unit, efficiencies in [0.01, 1].
  const double eff = nominal > 0 ? f.busbw / nominal : 0;
  if (eff >= 0.01 && eff <= 1) {
    out.push_back({span.eff_key, eff,
                   what + " = this share of the nominal " + fmt(nominal / span.bw_unit) + " " +
                       span.bw_unit_name});
  } else if (f.busbw / span.bw_unit >= 1) {
    out.push_back({span.bw_key, f.busbw / span.bw_unit, what});
    out.push_back({span.eff_key, 1.0,
                   std::string(span.name) +
                       ": efficiency 1, the bandwidth above is the measured bus bandwidth"});
  } else {
    const double e = std::max(0.01, f.busbw / span.bw_unit);
    out.push_back({span.bw_key, 1.0, what});
    out.push_back(
        {span.eff_key, e,
         std::string(span.name) + ": with the bandwidth at its lower limit 1 " + span.bw_unit_name +
             ", this efficiency gives the measured bus bandwidth" +
             (e > f.busbw / span.bw_unit ? " (clamped at 0.01: the measurement is lower)" : "")});
  }
  if (p2p != nullptr) {
    const AlphaBeta g = fit_alpha_beta(*p2p);
    out.push_back({span.lat_key, g.alpha_s * 1e6,
                   std::string(span.name) + ": point-to-point latency (" + how +
                       "; intercept of the alpha-beta fit, " + sizes(*p2p) + "; " + p2p->source +
                       ")"});
  } else if (bw->ranks > 1) {
    // A ring all-reduce pays 2(n−1) hop latencies (docs/algorithms.md §5.3).
    const double hops = bw->collective == ProbeCollective::kAllReduce ? 2.0 * (bw->ranks - 1)
                                                                      : 1.0 * (bw->ranks - 1);
    out.push_back({span.lat_key, f.alpha_s / hops * 1e6,
                   std::string(span.name) + ": per-hop latency = " + to_string(bw->collective) +
                       " intercept / " + fmt(hops, "%.0f") + " ring hops (" + how + "; " +
                       bw->source + ")"});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string output, base, compare;
  std::vector<std::string> logs;
  bool import = false;
  ProbeRunOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(what) + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (a == "--output") {
        output = value("--output");
      } else if (a == "--base") {
        base = value("--base");
      } else if (a == "--compare") {
        compare = value("--compare");
      } else if (a == "--max-bytes" || a == "--iters") {
        const std::string v = value(a.c_str());
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        if (end != v.c_str() + v.size() || !(x >= 1) || x > 1e10)
          return usage_error(a + " = " + v + ": a number from 1 to 1e10");
        if (a == "--iters")
          opt.iters = static_cast<int>(x);
        else
          opt.max_bytes = x;
      } else if (a == "--nccl-tests") {
        import = true;
        while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
          logs.push_back(argv[++i]);
        if (logs.empty()) return usage_error("--nccl-tests needs at least one log file");
      } else {
        return usage_error("unknown argument '" + a + "'");
      }
    } catch (const std::invalid_argument& e) {
      return usage_error(e.what());
    }
  }
  if (output.empty()) return usage_error("--output FILE.ini is required");
  if (base.empty()) base = compare.empty() ? kDefaultCluster : compare;

  Problem base_pb, compare_pb;
  std::vector<ProbeSeries> series;
  std::string how;
  try {
    base_pb = load_cluster(base);
    if (!compare.empty()) compare_pb = load_cluster(compare);
    if (import) {
      for (const std::string& path : logs) {
        std::ifstream in(path, std::ios::binary);
        if (!in) {
          throw ConfigError(ConfigIssue{"--nccl-tests", "log", path, "a readable nccl-tests log"});
        }
        std::ostringstream text;
        text << in.rdbuf();
        series.push_back(parse_nccl_tests(path, text.str()));
      }
      how = "nccl-tests log";
    }
  } catch (const ConfigError& e) {
    for (const ConfigIssue& issue : e.issues())
      std::cerr << "ppsearch-probe: error: " << issue.message() << "\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  int world = 1, nodes = 1;
  std::string hosts;
  if (!import) {
    const ProbeRun run = run_mpi_probe(&argc, &argv, opt);
    if (!run.error.empty()) return usage_error(run.error);
    if (run.rank != 0) return 0;
    series = run.series;
    world = run.world;
    nodes = run.nodes;
    for (const std::string& h : run.hosts) hosts += (hosts.empty() ? "" : ",") + h;
    how = "MPI on host memory, " + std::to_string(opt.iters) + " timed repetitions per size";
  }

  std::vector<const ProbeSeries*> intra, inter;
  for (const ProbeSeries& s : series) (s.nodes >= 2 ? inter : intra).push_back(&s);
  std::vector<ProbeFinding> found =
      findings_of(kIntra, intra, how, base_pb.cluster.nvlink_bytes_per_s);
  const std::vector<ProbeFinding> f2 =
      findings_of(kInter, inter, how, base_pb.cluster.network_bytes_per_s);
  found.insert(found.end(), f2.begin(), f2.end());

  // Warnings: what --compare assumes against the measurement, for the effective bandwidth
  // (bandwidth × efficiency, GB/s) and the latency (µs) of each measured span.
  if (!compare.empty()) {
    Problem measured = base_pb;
    for (const ProbeFinding& f : found) apply_key(measured, f.key, fmt(f.value, "%.9g"), "probe");
    struct Check {
      const char* what;
      double got, assumed;
      const char* unit;
    };
    const ClusterSpec& m = measured.cluster;
    const ClusterSpec& c = compare_pb.cluster;
    std::vector<Check> checks;
    if (!intra.empty()) {
      checks.push_back({"inside a node: effective bandwidth",
                        m.nvlink_bytes_per_s * m.nvlink_efficiency / 1e9,
                        c.nvlink_bytes_per_s * c.nvlink_efficiency / 1e9, "GB/s"});
      checks.push_back(
          {"inside a node: latency", m.nvlink_latency_s * 1e6, c.nvlink_latency_s * 1e6, "us"});
    }
    if (!inter.empty()) {
      checks.push_back({"across nodes: effective bandwidth",
                        m.network_bytes_per_s * m.network_efficiency / 1e9,
                        c.network_bytes_per_s * c.network_efficiency / 1e9, "GB/s"});
      checks.push_back(
          {"across nodes: latency", m.network_latency_s * 1e6, c.network_latency_s * 1e6, "us"});
    }
    for (const Check& k : checks) {
      if (k.assumed > 0 && std::fabs(k.got / k.assumed - 1) > 0.2) {
        std::cerr << "ppsearch-probe: warning: " << k.what << ": measured " << fmt(k.got) << " "
                  << k.unit << ", " << compare << " assumes " << fmt(k.assumed) << " " << k.unit
                  << " (" << fmt(100 * (k.got / k.assumed - 1), "%+.0f") << " %)\n";
      }
    }
  }

  std::vector<std::pair<std::string, std::string>> values;
  for (const std::string& key : known_keys()) {
    if (key.rfind("cluster.", 0) != 0) continue;
    std::string v = key_value(base_pb, key);
    if (key == "cluster.name") v = v + "-probed";
    values.emplace_back(key, v);
  }
  std::string header = "Written by ppsearch-probe (docs/probe.md) from the " + base +
                       " cluster with measured keys replaced.\n";
  if (import) {
    header += "Source: nccl-tests logs";
    for (const std::string& l : logs) header += " " + l;
    header += "\n";
  } else {
    header += "Source: " + std::to_string(world) + " MPI ranks on " + std::to_string(nodes) +
              " node(s) (" + hosts + "); MPI measures the host path, not NCCL on the GPUs.\n";
  }
  if (intra.empty()) header += "No measurement inside a node: its keys are the base's.\n";
  if (inter.empty()) header += "No measurement across nodes: its keys are the base's.\n";
  const std::string text = probe_ini(values, found, header);
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) {
      std::cerr << "ppsearch-probe: error: " << output << ": cannot write\n";
      std::remove(tmp.c_str());
      return static_cast<int>(ExitCode::kOutput);
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::cerr << "ppsearch-probe: error: " << output << ": cannot write\n";
    std::remove(tmp.c_str());
    return static_cast<int>(ExitCode::kOutput);
  }
  std::cout << "ppsearch-probe: wrote " << output << " (" << found.size() << " measured keys)\n";
  for (const ProbeFinding& f : found) std::cout << "  " << f.key << " = " << fmt(f.value) << "\n";
  return 0;
}
