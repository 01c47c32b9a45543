// α–β communication model (docs/algorithms.md §5, docs/topology.md). Times in seconds, sizes
// in bytes.
#pragma once

#include "ppsearch/cost/fabric.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll };

// A communication group of `size` ranks whose members are `stride` apart in the
// global rank order. Megatron lays ranks out TP innermost, then CP, then DP, then
// PP, so a TP group has stride 1, CP stride tp, DP stride tp·cp, PP stride tp·cp·dp
// (other placements: fabric.hpp).
struct GroupShape {
  int size = 1;
  int per_domain = 1;  // k: members that share one NVLink domain
  int domains = 1;     // N = ceil(size / k)
  // Leaves (docs/topology.md): the group spans `leaves` leaf switches, and a flow that
  // leaves its leaf gets `leaf_share` of the NIC line rate (taper, ECMP collisions).
  int leaves = 1;
  double leaf_share = 1.0;
};
// No leaf boundary (one non-blocking tier).
GroupShape group_shape(int size, int stride, int nvlink_domain_size);
// With the fabric's leaves: which members share a node, a domain, a leaf; what crossing
// the spine costs when all groups of this kind communicate at once.
GroupShape group_shape(const GroupLayout&, const Fabric&);

// Effective (achieved) bandwidths and latencies of a cluster.
struct Links {
  double nvlink_bytes_per_s = 0;   // per GPU per direction, × efficiency
  double network_bytes_per_s = 0;  // per GPU share of the NICs per direction, × efficiency
  double nvlink_latency_s = 0;
  double network_latency_s = 0;
  Fabric fabric;
};
Links effective_links(const ClusterSpec&);

// Bus bandwidth of a ring over the group (§5.3): one domain → NVLink; several →
// min(NVLink, k·NIC·leaf_share).
double bus_bandwidth(const GroupShape&, const Links&);

// NCCL's algorithms (NVIDIA/nccl src/graph/tuning.cc): ring, double binary tree, NVLink
// SHARP inside one domain, CollNet (SHARP in the switches) across nodes.
enum class CollectiveAlgo { kRing, kTree, kNvls, kCollNet };
const char* to_string(CollectiveAlgo);
struct CollectiveChoice {
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  double time_s = 0;
};
// The fastest algorithm available for this collective, size and group, as NCCL's tuner
// picks it (lowest modelled time). `bytes` follows the nccl-tests convention (§5.1): for
// all-reduce the buffer per rank; for reduce-scatter / all-gather / all-to-all the total
// array size (size × per-rank share).
CollectiveChoice choose_collective(Collective, double bytes, const GroupShape&, const Links&);
// Its time.
double collective_time(Collective, double bytes, const GroupShape&, const Links&);

// Share of the NIC line rate left to the cross-leaf part of an all-to-all over `size` ranks
// `stride` apart: over L leaves, (L − 1)/L of every rank's traffic crosses the spine at once
// (docs/topology.md); 1 inside one leaf.
double all_to_all_leaf_share(int size, long long stride, const Links&);

// Point-to-point transfer between two ranks, over NVLink when they share a domain.
double p2p_time(double bytes, bool same_domain, const Links&);
// Between global ranks a and b of a job of `gpus` ranks, when every rank sends to its
// counterpart |b − a| away at once (pipeline hops): NVLink inside a domain, else the
// network, paying the spine when such pairs straddle leaves.
double p2p_time(double bytes, long long a, long long b, long long gpus, const Links&);

}  // namespace ppsearch
