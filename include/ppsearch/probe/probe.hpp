#pragma once
/// \file
/// ppsearch-probe's pure part (docs/probe.md): the nccl-tests log parser, the α-β fit of time
/// against message size, and the cluster INI the probe writes. std-only; the MPI measurements
/// live in src/comm/probe_mpi.cpp.

#include <string>
#include <vector>

namespace ppsearch {

/// \brief The collectives the probe measures and the nccl-tests binaries it imports.
enum class ProbeCollective { kAllReduce, kAllGather, kReduceScatter, kSendRecv };

/// \brief "all_reduce", "all_gather", "reduce_scatter" or "sendrecv".
const char* to_string(ProbeCollective c);

/// \brief Bus-bandwidth factor of nccl-tests doc/PERFORMANCE.md for n ranks: 2(n−1)/n for
/// all-reduce, (n−1)/n for all-gather and reduce-scatter, 1 for sendrecv.
double bus_factor(ProbeCollective c, int n);

/// \brief One measured message size: bytes, time in seconds, bus bandwidth in B/s.
struct ProbePoint {
  double bytes = 0;
  double time_s = 0;
  double busbw = 0;  ///< bytes/time·bus_factor (what nccl-tests prints as busbw, in B/s)
  int line = 0;      ///< source line (0 when measured)
};

/// \brief A series of points of one collective over one group.
struct ProbeSeries {
  ProbeCollective collective = ProbeCollective::kAllReduce;
  int ranks = 0;
  int nodes = 0;       ///< distinct hosts among the ranks (0 = not known)
  std::string source;  ///< log path, or a description of the measurement
  std::vector<ProbePoint> points;
};

/// \brief Parses nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
/// sendrecv_perf; the table of doc/PERFORMANCE.md: size count type redop root time algbw busbw
/// #wrong for out-of-place, then the same for in-place; sendrecv has no redop/root columns in
/// older versions). Uses the out-of-place columns. `path` names the source in messages.
/// \throws ConfigError naming path:line, the text and what is expected, for a log that is not
/// nccl-tests output, has no data rows, names an unknown collective or has a malformed row
ProbeSeries parse_nccl_tests(const std::string& path, const std::string& text);

/// \brief α-β fit of time = α + bytes/β on the points, weighted by 1/time² (every size counts
/// by its relative error), α and β >= 0.
struct AlphaBeta {
  double alpha_s = 0;      ///< latency
  double algbw = 0;        ///< β: algorithm bandwidth for large messages, B/s
  double busbw = 0;        ///< β·bus_factor
  double max_rel_err = 0;  ///< largest |fit − measured| / measured over the points
};
AlphaBeta fit_alpha_beta(const ProbeSeries& s);

/// \brief What one probe run found, by span.
struct ProbeFinding {
  std::string key;      ///< cluster INI key it sets ("cluster.network_latency_us", …)
  double value = 0;     ///< in the key's file unit
  std::string comment;  ///< what, how, message sizes, source
};

/// \brief Writes the cluster INI: every cluster key of `base_values` (key, value as written)
/// with the findings replacing theirs, each commented. Returns the text.
std::string probe_ini(const std::vector<std::pair<std::string, std::string>>& base_values,
                      const std::vector<ProbeFinding>& findings, const std::string& header);

}  // namespace ppsearch
