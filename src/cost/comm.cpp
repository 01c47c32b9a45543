#include "ppsearch/cost/comm.hpp"

#include <algorithm>
#include <cmath>

namespace ppsearch {

GroupShape group_shape(int size, int stride, int nvlink_domain_size) {
  GroupShape g;
  g.size = std::max(1, size);
  // Members i·stride: a domain of n_dom consecutive ranks holds n_dom/stride of them.
  const int k =
      stride >= nvlink_domain_size ? 1 : std::max(1, nvlink_domain_size / std::max(1, stride));
  g.per_domain = std::min(g.size, k);
  g.domains = (g.size + g.per_domain - 1) / g.per_domain;
  return g;
}

Links effective_links(const ClusterSpec& c) {
  Links l;
  l.nvlink_bytes_per_s = c.nvlink_bytes_per_s * c.nvlink_efficiency;
  l.network_bytes_per_s = c.network_bytes_per_s * c.network_efficiency;
  l.nvlink_latency_s = c.nvlink_latency_s;
  l.network_latency_s = c.network_latency_s;
  return l;
}

double bus_bandwidth(const GroupShape& g, const Links& l) {
  // docs/algorithms.md §5.3: k rings cross the domain boundary, each on its own NIC;
  // DGX-A100 8×200G all-reduce busbw 192 GB/s = 8 × 24 (nccl #1576).
  if (g.domains <= 1) return l.nvlink_bytes_per_s;
  return std::min(l.nvlink_bytes_per_s, g.per_domain * l.network_bytes_per_s);
}

double collective_time(Collective op, double bytes, const GroupShape& g, const Links& l) {
  const int n = g.size;
  if (n <= 1 || bytes <= 0) return 0.0;
  const int N = g.domains;
  // nccl-tests PERFORMANCE.md bus-bandwidth factors (§5.1).
  double factor = 0, nsteps = 0, ninter = 0;
  switch (op) {
    case Collective::kAllReduce:
      factor = 2.0 * (n - 1) / n;
      nsteps = 2.0 * (n - 1);
      ninter = 2.0 * (N - 1);
      break;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      factor = double(n - 1) / n;
      nsteps = n - 1;
      ninter = N - 1;
      break;
  }
  if (op == Collective::kAllToAll) {
    // All-to-all cannot aggregate NICs: one NIC's bandwidth (nccl-tests #267).
    const double bw = N > 1 ? l.network_bytes_per_s : l.nvlink_bytes_per_s;
    const double lat = N > 1 ? l.network_latency_s : l.nvlink_latency_s;
    return lat * (n - 1) + bytes * factor / bw;
  }
  const double bw = bus_bandwidth(g, l);
  // Ring latency (NCCL tuning.cc): (nsteps − nInter)·intraLat + nInter·interLat.
  const double ring_lat = (nsteps - ninter) * l.nvlink_latency_s + ninter * l.network_latency_s;
  double lat = ring_lat;
  if (op == Collective::kAllReduce) {
    // Tree all-reduce: 2·((n/N − 1)·intraLat + log2(N)·interLat).
    const double tree_lat = 2.0 * ((double(n) / N - 1.0) * l.nvlink_latency_s +
                                   std::log2(double(N)) * l.network_latency_s);
    lat = std::min(ring_lat, tree_lat);
  }
  return lat + bytes * factor / bw;
}

double p2p_time(double bytes, bool same_domain, const Links& l) {
  if (bytes <= 0) return 0.0;
  return same_domain ? l.nvlink_latency_s + bytes / l.nvlink_bytes_per_s
                     : l.network_latency_s + bytes / l.network_bytes_per_s;
}

}  // namespace ppsearch
