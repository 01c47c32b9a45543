// ppsearch-probe's pure part (docs/probe.md): nccl-tests log parser, α-β fit, cluster INI text.
#include "ppsearch/probe/probe.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/util/error.hpp"

namespace ppsearch {
namespace {

struct Name {
  ProbeCollective c;
  const char* perf;  // nccl-tests binary
};
constexpr Name kNames[] = {{ProbeCollective::kAllReduce, "all_reduce_perf"},
                           {ProbeCollective::kAllGather, "all_gather_perf"},
                           {ProbeCollective::kReduceScatter, "reduce_scatter_perf"},
                           {ProbeCollective::kSendRecv, "sendrecv_perf"}};
// nccl-tests binaries the probe does not import (named in the error instead of "garbage").
constexpr const char* kOtherPerf[] = {"alltoall_perf", "broadcast_perf", "reduce_perf",
                                      "gather_perf",   "scatter_perf",   "hypercube_perf"};

[[noreturn]] void fail(const std::string& path, int line, const std::string& text,
                       const std::string& allowed) {
  std::string shown = text.size() > 120 ? text.substr(0, 120) + "…" : text;
  throw ConfigError(
      ConfigIssue{path + ":" + std::to_string(line), "nccl-tests log", shown, allowed});
}

// `word` in `line` with no letter, digit or '_' right before or after it ("reduce_perf" is not
// found in "all_reduce_perf").
bool has_word(const std::string& line, const char* word) {
  const std::string w(word);
  const auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = line.find(w); at != std::string::npos; at = line.find(w, at + 1)) {
    const bool left = at == 0 || !part(line[at - 1]);
    const bool right = at + w.size() == line.size() || !part(line[at + w.size()]);
    if (left && right) return true;
  }
  return false;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool to_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*out);
}

}  // namespace

const char* to_string(ProbeCollective c) {
  switch (c) {
    case ProbeCollective::kAllReduce:
      return "all_reduce";
    case ProbeCollective::kAllGather:
      return "all_gather";
    case ProbeCollective::kReduceScatter:
      return "reduce_scatter";
    case ProbeCollective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

double bus_factor(ProbeCollective c, int n) {
  // NVIDIA/nccl-tests doc/PERFORMANCE.md "Bus bandwidth" (docs/algorithms.md §5.1).
  if (n < 1) return 1.0;
  switch (c) {
    case ProbeCollective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case ProbeCollective::kAllGather:
    case ProbeCollective::kReduceScatter:
      return static_cast<double>(n - 1) / n;
    case ProbeCollective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

ProbeSeries parse_nccl_tests(const std::string& path, const std::string& text) {
  ProbeSeries s;
  s.source = path;
  std::istringstream in(text);
  std::string line;
  int no = 0;
  int named = -1;  // index into kNames when the log names its binary
  int named_line = 0;
  std::set<std::string> hosts;
  int ranks = 0;
  bool header_seen = false;                         // the "# nThread ..." line or the column header
  std::vector<std::pair<std::string, int>> redops;  // per data row
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      for (std::size_t k = 0; k < std::size(kNames); ++k) {
        if (has_word(line, kNames[k].perf)) {
          named = static_cast<int>(k);
          named_line = no;
        }
      }
      for (const char* other : kOtherPerf) {
        if (has_word(line, other)) {
          fail(path, no, line,
               "a log of all_reduce_perf, all_gather_perf, reduce_scatter_perf or sendrecv_perf "
               "(" +
                   std::string(other) + " is not imported)");
        }
      }
      if (line.find("nThread") != std::string::npos || line.find("busbw") != std::string::npos) {
        header_seen = true;
      }
      // "#  Rank  0 Group  0 Pid  1234 on   node-a device  0 [0x18] NVIDIA H200"
      const std::vector<std::string> w = split_ws(line.substr(first + 1));
      if (w.size() >= 6 && w[0] == "Rank") {
        ++ranks;
        for (std::size_t k = 0; k + 1 < w.size(); ++k) {
          if (w[k] == "on") hosts.insert(w[k + 1]);
        }
      }
      continue;
    }
    // A data row: size count type redop root time algbw busbw #wrong (out-of-place) ...
    const std::vector<std::string> w = split_ws(line);
    double size = 0;
    if (!header_seen || !to_double(w[0], &size)) {
      fail(path, no, line,
           "nccl-tests output: '#' comment lines and rows 'size count type redop root time algbw "
           "busbw #wrong ...' after its '# nThread' header");
    }
    // Columns: with redop and root (nccl-tests >= 2.10 for every binary) 13 fields, older
    // sendrecv_perf without them 11. Either way time, algbw, busbw follow the type (and redop,
    // root) and the row ends with the in-place block.
    std::size_t t = 0;
    if (w.size() >= 13) {
      t = 5;
    } else if (w.size() >= 11) {
      t = 3;
    } else {
      fail(path, no, line, "a row of 13 fields (or 11 for an old sendrecv_perf)");
    }
    double time_us = 0, algbw = 0, busbw = 0, count = 0;
    if (!to_double(w[1], &count) || !to_double(w[t], &time_us) || !to_double(w[t + 1], &algbw) ||
        !to_double(w[t + 2], &busbw) || size <= 0 || time_us <= 0 || busbw < 0) {
      fail(path, no, line,
           "numbers in the size, count, time (µs), algbw and busbw (GB/s) columns, size and time > "
           "0");
    }
    redops.emplace_back(t == 5 ? w[3] : std::string("none"), no);
    ProbePoint p;
    p.bytes = size;
    p.time_s = time_us * 1e-6;
    p.busbw = busbw * 1e9;
    p.line = no;
    s.points.push_back(p);
  }
  if (s.points.empty()) {
    fail(path, std::max(no, 1), no == 0 ? std::string() : line,
         "nccl-tests output with at least one data row (the log has none)");
  }
  s.ranks = ranks;
  s.nodes = static_cast<int>(hosts.size());
  if (named >= 0) {
    s.collective = kNames[named].c;
  } else {
    // Not named: infer from the reduction column and busbw/algbw of the largest row (the
    // factors of bus_factor(); all_reduce and sendrecv coincide at 2 ranks, the redop tells).
    const ProbePoint& big = s.points.back();
    const double alg = big.bytes / big.time_s;
    const double ratio = alg > 0 ? big.busbw / alg : 0;
    const bool reduces = redops.back().first != "none";
    const int n = std::max(ranks, 1);
    const auto close = [&](double f) { return std::fabs(ratio - f) <= 0.05 * f; };
    if (reduces && close(bus_factor(ProbeCollective::kAllReduce, n))) {
      s.collective = ProbeCollective::kAllReduce;
    } else if (reduces && close(bus_factor(ProbeCollective::kReduceScatter, n))) {
      s.collective = ProbeCollective::kReduceScatter;
    } else if (!reduces && close(bus_factor(ProbeCollective::kAllGather, n)) && n > 2) {
      s.collective = ProbeCollective::kAllGather;
    } else if (!reduces && close(1.0)) {
      s.collective = ProbeCollective::kSendRecv;
    } else {
      fail(path, redops.back().second, "busbw/algbw = " + std::to_string(ratio),
           "a log that names its binary (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
           "sendrecv_perf) or whose bus-bandwidth factor identifies it");
    }
  }
  (void)named_line;
  return s;
}

AlphaBeta fit_alpha_beta(const ProbeSeries& s) {
  // Weighted least squares of t = α + x·γ with weights 1/t² (relative errors), γ = 1/β.
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (const ProbePoint& p : s.points) {
    const double w = 1.0 / (p.time_s * p.time_s);
    sw += w;
    swx += w * p.bytes;
    swxx += w * p.bytes * p.bytes;
    swt += w * p.time_s;
    swxt += w * p.bytes * p.time_s;
  }
  AlphaBeta r;
  const double det = sw * swxx - swx * swx;
  double alpha = 0, gamma = 0;
  if (det > 0) {
    alpha = (swt * swxx - swx * swxt) / det;
    gamma = (sw * swxt - swx * swt) / det;
  }
  if (alpha < 0 || det <= 0) {  // latency clamped at 0: refit the slope alone
    alpha = 0;
    gamma = swxx > 0 ? swxt / swxx : 0;
  }
  r.alpha_s = alpha;
  r.algbw = gamma > 0 ? 1.0 / gamma : 0;
  r.busbw = r.algbw * bus_factor(s.collective, s.ranks);
  for (const ProbePoint& p : s.points) {
    const double fit = alpha + p.bytes * gamma;
    r.max_rel_err = std::max(r.max_rel_err, std::fabs(fit - p.time_s) / p.time_s);
  }
  return r;
}

std::string probe_ini(const std::vector<std::pair<std::string, std::string>>& base_values,
                      const std::vector<ProbeFinding>& findings, const std::string& header) {
  std::string out;
  std::istringstream h(header);
  std::string l;
  while (std::getline(h, l)) out += "# " + l + "\n";
  out += "[cluster]\n";
  for (const auto& [key, value] : base_values) {
    const std::string name = key.substr(key.find('.') + 1);
    const ProbeFinding* f = nullptr;
    for (const ProbeFinding& x : findings) {
      if (x.key == key) f = &x;
    }
    if (f != nullptr) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", f->value);
      out += "# " + f->comment + "\n";
      out += name + " = " + buf + "    # measured (was " + value + ")\n";
    } else {
      out += name + " = " + value + "\n";
    }
  }
  return out;
}

}  // namespace ppsearch
