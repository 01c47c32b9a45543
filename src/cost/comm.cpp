#include "ppsearch/cost/comm.hpp"

#include <algorithm>
#include <cmath>

namespace ppsearch {
namespace {

// NCCL tuner constants (NVIDIA/nccl src/graph/tuning.cc @5067397c, Simple protocol):
// tree all-reduce bus bandwidth is 0.92 of the graph's; NVLS hardware latency 25 µs on
// NVLink; CollNet Direct 31 µs network latency (ring: 14 µs), 0.4 µs arity serialisation
// per local rank, and its bus bandwidth × 0.85 on Hopper and later.
constexpr double kTreeBwFactor = 0.92;
constexpr double kNvlsLatencyS = 25e-6;
constexpr double kCollNetExtraNetLatencyS = 31e-6 - 14e-6;
constexpr double kCollNetArityLatencyS = 0.4e-6;
constexpr double kCollNetBwFactor = 0.85;

}  // namespace

const char* to_string(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::kRing:
      return "ring";
    case CollectiveAlgo::kTree:
      return "tree";
    case CollectiveAlgo::kNvls:
      return "nvls";
    case CollectiveAlgo::kCollNet:
      return "collnet";
  }
  return "?";
}

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

GroupShape group_shape(const GroupLayout& layout, const Fabric& f) {
  GroupShape g;
  g.size = std::max(1, layout.size());
  g.per_domain = std::min(g.size, members_per_block(layout, f.nvlink_domain_size));
  g.domains = (g.size + g.per_domain - 1) / g.per_domain;
  if (f.gpus_per_leaf > 0) {
    const int per_leaf = std::min(g.size, members_per_block(layout, f.gpus_per_leaf));
    g.leaves = (g.size + per_leaf - 1) / per_leaf;
    if (g.leaves > 1) {
      // A ring in rank order leaves each leaf once: of the group's nodes in one leaf, one
      // sends across the spine, so that share of the leaf's NICs crosses at once (every
      // group of this kind runs at the same time and tiles the leaf the same way).
      const int per_node = std::min(per_leaf, members_per_block(layout, f.gpus_per_node));
      const double crossing = double(per_node) / per_leaf;
      g.leaf_share = cross_leaf_share(f, crossing);
    }
  }
  return g;
}

Links effective_links(const ClusterSpec& c) {
  Links l;
  l.nvlink_bytes_per_s = c.nvlink_bytes_per_s * c.nvlink_efficiency;
  // cluster.nics_per_node: the node's NICs are shared by its GPUs (0 = one per GPU).
  const double nic_share =
      c.nics_per_node > 0 ? double(c.nics_per_node) / std::max(1, c.gpus_per_node) : 1.0;
  l.network_bytes_per_s = c.network_bytes_per_s * c.network_efficiency * nic_share;
  l.nvlink_latency_s = c.nvlink_latency_s;
  l.network_latency_s = c.network_latency_s;
  l.fabric = fabric_of(c);
  return l;
}

double bus_bandwidth(const GroupShape& g, const Links& l) {
  // docs/algorithms.md §5.3: k rings cross the domain boundary, each on its own NIC;
  // DGX-A100 8×200G all-reduce busbw 192 GB/s = 8 × 24 (nccl #1576).
  if (g.domains <= 1) return l.nvlink_bytes_per_s;
  return std::min(l.nvlink_bytes_per_s, g.per_domain * l.network_bytes_per_s * g.leaf_share);
}

CollectiveChoice choose_collective(Collective op, double bytes, const GroupShape& g,
                                   const Links& l) {
  CollectiveChoice best;
  const int n = g.size;
  if (n <= 1 || bytes <= 0) return best;
  const int N = g.domains;
  const int k = g.per_domain;
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
    // All-to-all cannot aggregate NICs: one NIC's bandwidth (nccl-tests #267). Between
    // leaves, (L − 1)/L of every rank's traffic crosses the spine at once.
    double share = 1.0;
    if (g.leaves > 1) share = cross_leaf_share(l.fabric, double(g.leaves - 1) / g.leaves);
    const double bw = N > 1 ? l.network_bytes_per_s * share : l.nvlink_bytes_per_s;
    const double lat = N > 1 ? l.network_latency_s : l.nvlink_latency_s;
    best.time_s = lat * (n - 1) + bytes * factor / bw;
    return best;
  }
  const double bw = bus_bandwidth(g, l);
  // Ring latency (NCCL tuning.cc): (nsteps − nInter)·intraLat + nInter·interLat.
  const double ring_lat = (nsteps - ninter) * l.nvlink_latency_s + ninter * l.network_latency_s;
  best.algo = CollectiveAlgo::kRing;
  best.time_s = ring_lat + bytes * factor / bw;
  if (op != Collective::kAllReduce) return best;
  auto consider = [&](CollectiveAlgo a, double t) {
    if (t < best.time_s) {
      best.algo = a;
      best.time_s = t;
    }
  };
  if (N > 1) {
    // Double binary tree (tuning.cc): latency 2·((n/N − 1)·intraLat + log2(N)·interLat);
    // algorithm bandwidth 0.5 × 0.92 × bus bandwidth, i.e. time 2·S / (0.92·busbw).
    const double tree_lat = 2.0 * ((double(n) / N - 1.0) * l.nvlink_latency_s +
                                   std::log2(double(N)) * l.network_latency_s);
    consider(CollectiveAlgo::kTree, tree_lat + 2.0 * bytes / (kTreeBwFactor * bw));
    if (l.fabric.sharp) {
      // CollNet Direct (tuning.cc): the k GPUs of a domain reduce-scatter over NVLink, each
      // sends its S/k shard into the switches once and gets the reduced shard back, then
      // all-gather; the phases pipeline. The switches reduce, so the spine carries one
      // stream per leaf and no taper is paid. Latency 2·(min(1, k−1)·intraLat +
      // (k−1)·0.4 µs) + interLat (31 µs for the network, 17 µs above the ring's 14).
      const double net = bytes / (k * l.network_bytes_per_s);
      const double intra = k > 1 ? 2.0 * (k - 1) / k * bytes / l.nvlink_bytes_per_s : 0.0;
      const double lat =
          2.0 * (std::min(1, k - 1) * l.nvlink_latency_s + (k - 1) * kCollNetArityLatencyS) +
          l.network_latency_s + kCollNetExtraNetLatencyS;
      consider(CollectiveAlgo::kCollNet, lat + std::max(net, intra) / kCollNetBwFactor);
    }
  } else if (l.fabric.nvls_bytes_per_s > 0) {
    // NVLink SHARP inside one NVSwitch domain: the switch reduces, so the bus bandwidth
    // exceeds the ring's (H100 8 GPUs: ~480 GB/s against ~370, nccl-tests #212; H200 475,
    // nccl-tests #272). Latency: NVLS hwLat 25 µs on NVLink (tuning.cc).
    consider(CollectiveAlgo::kNvls, kNvlsLatencyS + bytes * factor / l.fabric.nvls_bytes_per_s);
  }
  return best;
}

double all_to_all_leaf_share(int size, long long stride, const Links& l) {
  if (size <= 1 || l.fabric.gpus_per_leaf <= 0) return 1.0;
  GroupLayout layout;
  layout.inner_size = size;
  layout.inner_stride = stride;
  const int per_leaf = std::min(size, members_per_block(layout, l.fabric.gpus_per_leaf));
  const int leaves = (size + per_leaf - 1) / per_leaf;
  return leaves > 1 ? cross_leaf_share(l.fabric, double(leaves - 1) / leaves) : 1.0;
}

double collective_time(Collective op, double bytes, const GroupShape& g, const Links& l) {
  return choose_collective(op, bytes, g, l).time_s;
}

double p2p_time(double bytes, bool same_domain, const Links& l) {
  if (bytes <= 0) return 0.0;
  return same_domain ? l.nvlink_latency_s + bytes / l.nvlink_bytes_per_s
                     : l.network_latency_s + bytes / l.network_bytes_per_s;
}

double p2p_time(double bytes, long long a, long long b, long long gpus, const Links& l) {
  if (bytes <= 0 || a == b) return 0.0;
  const Fabric& f = l.fabric;
  const long long ndom = std::max(1, f.nvlink_domain_size);
  if (a / ndom == b / ndom) return p2p_time(bytes, true, l);
  double share = 1.0;
  const long long leaf = f.gpus_per_leaf;
  if (leaf > 0 && gpus > leaf) {
    // Every rank sends to its counterpart d = |b − a| away at the same time: a share
    // min(1, d / leaf) of each leaf's NICs sends across the spine.
    const long long d = a > b ? a - b : b - a;
    share = cross_leaf_share(f, std::min(1.0, double(d) / double(leaf)));
  }
  return l.network_latency_s + bytes / (l.network_bytes_per_s * share);
}

}  // namespace ppsearch
