#include "ppsearch/cost/comm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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

// NCCL's protocols for ring and tree (docs/algorithms.md §5.3, tuning.cc @5067397c): LL (8-byte
// stores that carry a flag: the lowest latency, half the bandwidth or less), LL128 (128-byte
// lines, 120 bytes of them payload) and Simple. Per protocol: the base latency of the ring and of
// the tree, and the per-hop hardware latency of an NVLink and of a network hop in each, in µs
// (tuning.cc baseLatencies, hwLatencies). The cluster's nvlink_latency_us and network_latency_us
// are the Simple ring's hop latencies (3.4 and 14 in the presets); the other protocols' hops
// scale with them by NCCL's ratios. LL128 is costed inside one NVLink domain only: NCCL enables
// it over NVLink on every generation, but across nodes only where the NIC shares the GPU's PCIe
// switch (or through PXN on Hopper and later), which the engine does not know, and costed there
// it moves the 512-GPU FSDP rows further from their measurements (docs/topology.md "NCCL's
// protocols").
enum class Proto { kLL, kLL128, kSimple };
struct ProtoLatency {
  double base_ring_us, base_tree_us;
  double nvl_ring_us, nvl_tree_us;
  double net_ring_us, net_tree_us;
};
constexpr ProtoLatency kProtoLatency[3] = {
    {6.6, 6.8, 0.6, 0.6, 2.7, 5.0},     // LL
    {14.0, 14.0, 1.9, 1.25, 4.0, 8.5},  // LL128
    {8.4, 8.4, 3.4, 4.0, 14.0, 14.0},   // Simple
};
constexpr double kSimpleNvlRingUs = 3.4, kSimpleNetRingUs = 14.0;
// Inter-node rings pay at least the network proxy's overhead per step: 1 µs (x86 Intel and
// other hosts; 2 on AMD), three times that with Simple (tuning.cc getNetOverhead).
constexpr double kNetOverheadUs = 1.0;
// LL's bandwidth cap across nodes is set by the host CPU (tuning.cc llMaxBws, Intel and Arm
// hosts): 39 GB/s on two nodes, 20.4 on more. One node's cap depends on the GPU generation
// (87.7 Ampere, 141 Hopper, 282 Blackwell); it is not applied, as LL's half bandwidth is near it.
constexpr double kLLMaxBwTwoNodes = 39.0e9, kLLMaxBwManyNodes = 20.4e9;
// Tree all-reduce bandwidth corrections by message size (tuning.cc treeCorrectionFactor,
// powers of two from 64 B to 256 MB, index log2(bytes / 64)), per protocol (LL128's row unused:
// the tree runs across domains, where LL128 is not costed).
// clang-format off
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0,  .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9,  .9,  .9, 1.0, 1.0},
    { .9,  .9,  .9,  .9,  .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7,  .7,  .8,  .9,  .9},
};
// clang-format on

double tree_correction(Proto p, double bytes) {
  // tuning.cc ncclTopoGetAlgoTime: logSize = log2i(nBytes >> 6), applied for 0 <= logSize < 23.
  const double units = std::floor(bytes / 64.0);
  if (units < 1.0) return 1.0;
  const int log_size = int(std::floor(std::log2(units)));
  return log_size < 23 ? kTreeCorrection[static_cast<int>(p)][log_size] : 1.0;
}

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
  const double nvl_scale = l.nvlink_latency_s / (kSimpleNvlRingUs * 1e-6);
  const double net_scale = l.network_latency_s / (kSimpleNetRingUs * 1e-6);
  const double ll_max = N <= 1 ? 0.0 : (N == 2 ? kLLMaxBwTwoNodes : kLLMaxBwManyNodes);
  auto consider = [&](CollectiveAlgo a, double t) {
    if (t < best.time_s) {
      best.algo = a;
      best.time_s = t;
    }
  };
  // Ring, each protocol (tuning.cc): latency base + (nsteps − nInter)·intraLat +
  // nInter·interLat, where an inter-node ring's intra steps pay at least the proxy overhead;
  // bus bandwidth × 0.5 (LL, capped), × 0.92 (LL128, one domain only) or × 1 (Simple).
  best.time_s = std::numeric_limits<double>::infinity();
  for (const Proto p : {Proto::kLL, Proto::kLL128, Proto::kSimple}) {
    if (p == Proto::kLL128 && N > 1) continue;
    const ProtoLatency& c = kProtoLatency[static_cast<int>(p)];
    double intra = c.nvl_ring_us * 1e-6 * nvl_scale;
    if (N > 1) intra = std::max(intra, kNetOverheadUs * (p == Proto::kSimple ? 3.0 : 1.0) * 1e-6);
    const double inter = c.net_ring_us * 1e-6 * net_scale;
    const double lat = c.base_ring_us * 1e-6 + (nsteps - ninter) * intra + ninter * inter;
    double pbw = bw;
    if (p == Proto::kLL) pbw = ll_max > 0 ? std::min(ll_max, 0.5 * bw) : 0.5 * bw;
    if (p == Proto::kLL128) pbw = 0.92 * bw;
    consider(CollectiveAlgo::kRing, lat + bytes * factor / pbw);
  }
  if (op != Collective::kAllReduce) return best;
  if (N > 1) {
    // Double binary tree (tuning.cc), each protocol: latency base + 2·((n/N − 1)·intraLat +
    // log2(N)·interLat); bus bandwidth 0.92 × the graph's, /3.8 more for LL (capped), then
    // NCCL's size correction; algorithm bandwidth half the bus bandwidth, i.e. time 2·S / busbw.
    for (const Proto p : {Proto::kLL, Proto::kSimple}) {
      const ProtoLatency& c = kProtoLatency[static_cast<int>(p)];
      const double lat =
          c.base_tree_us * 1e-6 + 2.0 * ((double(n) / N - 1.0) * c.nvl_tree_us * 1e-6 * nvl_scale +
                                         std::log2(double(N)) * c.net_tree_us * 1e-6 * net_scale);
      double tbw = kTreeBwFactor * bw;
      if (p == Proto::kLL) tbw = std::min(tbw / 3.8, ll_max);
      tbw *= tree_correction(p, bytes);
      consider(CollectiveAlgo::kTree, lat + 2.0 * bytes / tbw);
    }
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
