// The scale-out fabric and the rank placement (docs/topology.md): which ranks share a node,
// an NVLink domain or a leaf switch, and what traffic between leaves gets of the spine.
#pragma once

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct Fabric {
  int gpus_per_node = 8;
  int nvlink_domain_size = 8;
  long long gpus_per_leaf = 0;    // GPUs one leaf tier joins without the spine; 0 = no boundary
  double leaf_ports = 0;          // P: NIC-facing ports of one leaf switch
  double oversubscription = 1.0;  // t: a leaf has P / t uplinks' worth of bandwidth
  bool adaptive_routing = true;
  double nvls_bytes_per_s = 0;  // measured NVLS all-reduce bus bandwidth; 0 = none
  bool sharp = false;
};
Fabric fabric_of(const ClusterSpec&);

// Expected share of its line rate that one of F flows gets when each flow is hashed onto one
// of U equal uplinks at random (static ECMP) and flows on one uplink share it:
// η = U·(1 − (1 − 1/U)^F) / F, the expected number of busy uplinks over the flows
// (docs/topology.md "ECMP collisions"). 1 for F ≤ 1; → 1 − 1/e ≈ 0.63 for F = U large.
double ecmp_efficiency(double flows, double links);

// Share of the NIC line rate left to a flow that leaves its leaf when a fraction
// `crossing` of the leaf's NICs send across the spine at once: adaptive routing gives
// min(1, 1 / (t·crossing)); static ECMP gives ecmp_efficiency(crossing·P, P / t).
double cross_leaf_share(const Fabric&, double crossing);

// A group's members in global-rank order: `inner_size` ranks `inner_stride` apart, repeated
// `outer_size` times `outer_stride` apart (outer_size = 1: one stride). Megatron's DP×CP
// gradient group under tp-cp-pp-dp is CP (stride tp) inside DP (stride tp·cp·pp).
struct GroupLayout {
  int inner_size = 1;
  long long inner_stride = 1;
  int outer_size = 1;
  long long outer_stride = 0;
  int size() const { return inner_size * outer_size; }
};
// Members of the group inside one aligned block of `block` consecutive ranks (≥ 1).
int members_per_block(const GroupLayout&, long long block);

// Strides of each parallel dimension's groups under the candidate's placement.
struct GroupStrides {
  long long tp = 1, cp = 1, dp = 1, pp = 1;
};
GroupStrides group_strides(const Candidate&);
// The DP×CP group (gradient reduction, ZeRO sharding) under the candidate's placement.
GroupLayout dp_cp_layout(const Candidate&);
// The TP×CP×DP group (every rank of one pipeline stage: Megatron-Core's
// _TENSOR_AND_DATA_PARALLEL_GROUP_WITH_CP, the FP8 amax reduction group) under the placement.
GroupLayout tp_cp_dp_layout(const Candidate&);

// How many placements the search tries for this shape: 2 (tp-cp-dp-pp and tp-cp-pp-dp)
// when the job spans leaves of a fabric whose spine costs something (oversubscription > 1
// or no adaptive routing) and both PP and DP are > 1 (otherwise the orders coincide or
// cannot differ in cost); else 1 (Megatron's order only).
int placements_searched(const ClusterSpec&, int gpus, int pp, int dp);

}  // namespace ppsearch
