#include "ppsearch/cost/fabric.hpp"

#include <algorithm>
#include <cmath>

namespace ppsearch {

const char* to_string(Placement p) {
  switch (p) {
    case Placement::kTpCpDpPp:
      return "tp-cp-dp-pp";
    case Placement::kTpCpPpDp:
      return "tp-cp-pp-dp";
  }
  return "?";
}

Fabric fabric_of(const ClusterSpec& c) {
  Fabric f;
  f.gpus_per_node = std::max(1, c.gpus_per_node);
  f.nvlink_domain_size = c.nvlink_domain_size > 0 ? c.nvlink_domain_size : f.gpus_per_node;
  f.oversubscription = std::max(1.0, c.oversubscription);
  f.adaptive_routing = c.adaptive_routing;
  f.nvls_bytes_per_s = c.nvls_bytes_per_s;
  f.sharp = c.sharp;
  if (c.leaf_nic_ports > 0) {
    f.leaf_ports = c.leaf_nic_ports;
    const long long nics = c.nics_per_node > 0 ? c.nics_per_node : f.gpus_per_node;
    // Rail-optimised (NVIDIA DGX SuperPOD reference architecture): the leaf of rail i takes
    // NIC i of P nodes, so a scalable unit of P nodes is one hop apart on every rail. A
    // top-of-rack leaf takes all NICs of P / nics nodes.
    const long long nodes =
        c.rail_optimized ? c.leaf_nic_ports : std::max(1LL, c.leaf_nic_ports / nics);
    f.gpus_per_leaf = nodes * f.gpus_per_node;
  }
  return f;
}

double ecmp_efficiency(double flows, double links) {
  if (flows <= 1.0 || links <= 0.0) return 1.0;
  // Balls into bins: F flows hashed uniformly onto U uplinks leave U·(1 − 1/U)^F of them
  // idle; the busy ones are shared by the flows on them.
  const double busy = links * (1.0 - std::pow(1.0 - 1.0 / std::max(1.0, links), flows));
  return std::min(1.0, busy / flows);
}

double cross_leaf_share(const Fabric& f, double crossing) {
  if (crossing <= 0.0 || f.gpus_per_leaf <= 0) return 1.0;
  const double t = f.oversubscription;
  if (f.adaptive_routing) return std::min(1.0, 1.0 / (t * crossing));
  return ecmp_efficiency(crossing * f.leaf_ports, f.leaf_ports / t);
}

int members_per_block(const GroupLayout& g, long long block) {
  auto fit = [&](int n, long long stride) -> int {
    if (stride <= 0 || block < stride) return 1;
    return static_cast<int>(std::min<long long>(n, block / stride));
  };
  const int in = fit(g.inner_size, g.inner_stride);
  if (in < g.inner_size || g.outer_size <= 1) return std::max(1, in);
  return g.inner_size * fit(g.outer_size, g.outer_stride);
}

GroupStrides group_strides(const Candidate& c) {
  GroupStrides s;
  s.tp = 1;
  s.cp = c.tp;
  if (c.placement == Placement::kTpCpPpDp) {
    s.pp = 1LL * c.tp * c.cp;
    s.dp = 1LL * c.tp * c.cp * c.pp;
  } else {
    s.dp = 1LL * c.tp * c.cp;
    s.pp = 1LL * c.tp * c.cp * c.dp;
  }
  return s;
}

GroupLayout dp_cp_layout(const Candidate& c) {
  const GroupStrides s = group_strides(c);
  GroupLayout g;
  if (c.placement == Placement::kTpCpDpPp) {  // CP inside DP: one stride tp
    g.inner_size = c.cp * c.dp;
    g.inner_stride = s.cp;
    return g;
  }
  g.inner_size = c.cp;
  g.inner_stride = s.cp;
  g.outer_size = c.dp;
  g.outer_stride = s.dp;
  return g;
}

GroupLayout tp_cp_dp_layout(const Candidate& c) {
  const GroupStrides s = group_strides(c);
  GroupLayout g;
  if (c.placement == Placement::kTpCpDpPp) {  // TP, CP, DP innermost: consecutive ranks
    g.inner_size = c.tp * c.cp * c.dp;
    return g;
  }
  g.inner_size = c.tp * c.cp;  // TP, CP consecutive; DP outside PP
  g.outer_size = c.dp;
  g.outer_stride = s.dp;
  return g;
}

int placements_searched(const ClusterSpec& c, int gpus, int pp, int dp) {
  if (pp <= 1 || dp <= 1) return 1;
  const Fabric f = fabric_of(c);
  if (f.gpus_per_leaf <= 0 || gpus <= f.gpus_per_leaf) return 1;
  return (f.oversubscription > 1.0 || !f.adaptive_routing) ? 2 : 1;
}

}  // namespace ppsearch
