// α–β communication model (docs/algorithms.md §5). Times in seconds, sizes in bytes.
#pragma once

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll };

// A communication group of `size` ranks whose members are `stride` apart in the
// global rank order. Megatron lays ranks out TP innermost, then CP, then DP, then
// PP, so a TP group has stride 1, CP stride tp, DP stride tp·cp, PP stride tp·cp·dp.
struct GroupShape {
  int size = 1;
  int per_domain = 1;  // k: members that share one NVLink domain
  int domains = 1;     // N = ceil(size / k)
};
GroupShape group_shape(int size, int stride, int nvlink_domain_size);

// Effective (achieved) bandwidths and latencies of a cluster.
struct Links {
  double nvlink_bytes_per_s = 0;   // per GPU per direction, × efficiency
  double network_bytes_per_s = 0;  // per GPU NIC per direction, × efficiency
  double nvlink_latency_s = 0;
  double network_latency_s = 0;
};
Links effective_links(const ClusterSpec&);

// Bus bandwidth of a group (§5.3): one domain → NVLink; several → min(NVLink, k·NIC).
double bus_bandwidth(const GroupShape&, const Links&);

// Time of one collective. `bytes` follows the nccl-tests convention (§5.1): for
// all-reduce the buffer per rank; for reduce-scatter / all-gather / all-to-all the
// total array size (size × per-rank share). Ring and tree latencies per NCCL's tuner
// (§5.3); the lower of the two is taken, as NCCL does.
double collective_time(Collective, double bytes, const GroupShape&, const Links&);

// Point-to-point transfer between two ranks, over NVLink when they share a domain.
double p2p_time(double bytes, bool same_domain, const Links&);

}  // namespace ppsearch
