// The fabric model and NCCL's algorithm choice (docs/topology.md) against closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/fabric.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"

namespace ppsearch {
namespace {

ClusterSpec plain_cluster() {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nvlink_domain_size = 8;
  c.nvlink_bytes_per_s = 450e9;
  c.nvlink_efficiency = 0.8;
  c.network_bytes_per_s = 50e9;
  c.network_efficiency = 1.0;
  c.nvlink_latency_s = 3e-6;
  c.network_latency_s = 14e-6;
  return c;
}

TEST(Fabric, RingAllReduceClosedFormAcrossNodes) {
  // 8 nodes, one member per node: ring all-reduce 2(n−1)/n·S/B + 2(n−1)α for large S.
  const Links l = effective_links(plain_cluster());
  const GroupShape g = group_shape(8, 8, 8);
  ASSERT_EQ(g.domains, 8);
  const double S = 4e9;
  const CollectiveChoice ch = choose_collective(Collective::kAllReduce, S, g, l);
  EXPECT_EQ(ch.algo, CollectiveAlgo::kRing);
  // NCCL's Simple ring: base latency 8.4 µs and 2(n−1) network hops (tuning.cc).
  EXPECT_NEAR(ch.time_s, 2.0 * 7 / 8 * S / 50e9 + 8.4e-6 + 2.0 * 7 * 14e-6, 1e-12);
}

TEST(Fabric, TreeWinsSmallMessagesAtScaleWithLogLatency) {
  // 512 nodes: ring latency 2·511·α against the tree's 2·log2(512)·α (NCCL tuning.cc).
  const Links l = effective_links(plain_cluster());
  const GroupShape g = group_shape(512, 8, 8);
  // 16 MB (log2(16 MB / 64) = 18): the Simple tree, base 8.4 µs + 2·log2(512)·14 µs, its
  // bandwidth 0.92 × NCCL's size correction 0.7 for that size (tuning.cc treeCorrectionFactor).
  const double S = 16.0 * 1024 * 1024;
  const CollectiveChoice ch = choose_collective(Collective::kAllReduce, S, g, l);
  EXPECT_EQ(ch.algo, CollectiveAlgo::kTree);
  EXPECT_NEAR(ch.time_s, 8.4e-6 + 2.0 * 9 * 14e-6 + 2.0 * S / (0.92 * 0.7 * 50e9), 1e-12);
  // Large messages: the ring's bandwidth term (2(n−1)/n against 2/0.92) wins.
  EXPECT_EQ(choose_collective(Collective::kAllReduce, 8e9, g, l).algo, CollectiveAlgo::kRing);
  // Reduce-scatter has no tree in NCCL: always the ring.
  EXPECT_EQ(choose_collective(Collective::kReduceScatter, 1e6, g, l).algo, CollectiveAlgo::kRing);
}

TEST(Fabric, NvlsOnlyInsideOneDomainAndForLargeMessages) {
  ClusterSpec c = plain_cluster();
  c.nvls_bytes_per_s = 480e9;  // H100 8 GPUs (nccl-tests #212)
  const Links l = effective_links(c);
  const GroupShape g = group_shape(8, 1, 8);
  const double S = 1e9;
  const CollectiveChoice big = choose_collective(Collective::kAllReduce, S, g, l);
  EXPECT_EQ(big.algo, CollectiveAlgo::kNvls);
  EXPECT_NEAR(big.time_s, 25e-6 + 2.0 * 7 / 8 * S / 480e9, 1e-12);
  // Two GPUs, 64 KB: the ring's 2·3 µs latency beats NVLS's 25 µs.
  EXPECT_EQ(choose_collective(Collective::kAllReduce, 64e3, group_shape(2, 1, 8), l).algo,
            CollectiveAlgo::kRing);
  // Without NVLS the same group takes the ring.
  EXPECT_EQ(choose_collective(Collective::kAllReduce, S, g, effective_links(plain_cluster())).algo,
            CollectiveAlgo::kRing);
  // Across domains NVLS is not used (multi-node NVLS needs CollNet in NCCL).
  EXPECT_NE(choose_collective(Collective::kAllReduce, S, group_shape(16, 1, 8), l).algo,
            CollectiveAlgo::kNvls);
}

TEST(Fabric, SharpHalvesTheNetworkTermOfAllReduce) {
  ClusterSpec c = plain_cluster();
  c.sharp = true;
  const Links l = effective_links(c);
  const GroupShape g = group_shape(64, 8, 8);  // one member per node, 64 nodes
  const double S = 4e9;
  const CollectiveChoice ch = choose_collective(Collective::kAllReduce, S, g, l);
  EXPECT_EQ(ch.algo, CollectiveAlgo::kCollNet);
  EXPECT_NEAR(ch.time_s, 31e-6 + S / 50e9 / 0.85, 1e-12);
  const double ring = 2.0 * 63 / 64 * S / 50e9 + 2.0 * 63 * 14e-6;
  EXPECT_LT(ch.time_s, 0.7 * ring);
}

TEST(Fabric, EcmpEfficiencyClosedForm) {
  EXPECT_DOUBLE_EQ(ecmp_efficiency(1, 32), 1.0);
  EXPECT_NEAR(ecmp_efficiency(32, 32), 1.0 - std::pow(31.0 / 32.0, 32), 1e-12);  // ≈ 1 − 1/e
  EXPECT_NEAR(ecmp_efficiency(4, 1), 0.25, 1e-12);              // four flows on one link
  EXPECT_LT(ecmp_efficiency(64, 32), ecmp_efficiency(32, 32));  // falls with more flows
}

TEST(Fabric, LeavesRailOptimisedOrNot) {
  ClusterSpec c = plain_cluster();
  c.leaf_nic_ports = 32;
  EXPECT_EQ(fabric_of(c).gpus_per_leaf, 32 * 8);  // rail-optimised: 32 nodes per leaf tier
  c.rail_optimized = false;
  EXPECT_EQ(fabric_of(c).gpus_per_leaf, 32);  // top of rack: 32 NICs = 4 nodes
  c.nics_per_node = 4;
  EXPECT_EQ(fabric_of(c).gpus_per_leaf, 64);  // 4 NICs a node: 8 nodes
  // Four NICs for eight GPUs: each GPU gets half a NIC.
  EXPECT_DOUBLE_EQ(effective_links(c).network_bytes_per_s, 25e9);
}

TEST(Fabric, TaperIsPaidOnlyByTrafficThatCrossesLeaves) {
  ClusterSpec c = plain_cluster();
  c.leaf_nic_ports = 32;
  c.rail_optimized = false;  // 4 nodes per leaf
  c.oversubscription = 2.0;
  const Links l = effective_links(c);
  const Fabric& f = l.fabric;
  // A group inside one leaf (4 nodes × 1 member) pays nothing.
  GroupLayout in_leaf;
  in_leaf.inner_size = 4;
  in_leaf.inner_stride = 8;
  EXPECT_EQ(group_shape(in_leaf, f).leaves, 1);
  EXPECT_DOUBLE_EQ(group_shape(in_leaf, f).leaf_share, 1.0);
  // Contiguous ring over 16 nodes: one node in four sends across: 1/(2·1/4) ≥ 1, no loss.
  GroupLayout ring16 = in_leaf;
  ring16.inner_size = 16;
  EXPECT_EQ(group_shape(ring16, f).leaves, 4);
  EXPECT_DOUBLE_EQ(group_shape(ring16, f).leaf_share, 1.0);
  // Members one leaf apart: every NIC crosses at once: the 2:1 taper halves the bandwidth.
  GroupLayout strided;
  strided.inner_size = 16;
  strided.inner_stride = 32;
  const GroupShape s = group_shape(strided, f);
  EXPECT_EQ(s.leaves, 16);
  EXPECT_DOUBLE_EQ(s.leaf_share, 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth(s, l), 0.5 * 50e9);
  const double S = 4e9;
  EXPECT_NEAR(collective_time(Collective::kAllGather, S, s, l),
              8.4e-6 + 15.0 * 14e-6 + 15.0 / 16 * S / (0.5 * 50e9), 1e-12);
  // Without adaptive routing the same crossing also suffers ECMP collisions.
  c.adaptive_routing = false;
  const Links e = effective_links(c);
  EXPECT_NEAR(group_shape(strided, e.fabric).leaf_share, ecmp_efficiency(32, 16), 1e-12);
  // Pipeline hops one leaf apart pay the same share; inside a domain they use NVLink.
  EXPECT_NEAR(p2p_time(1e8, 0, 32, 1024, l), 14e-6 + 1e8 / (0.5 * 50e9), 1e-12);
  EXPECT_NEAR(p2p_time(1e8, 0, 1, 1024, l), 3e-6 + 1e8 / (0.8 * 450e9), 1e-12);
}

TEST(Fabric, PlacementStridesAndWhenTheyAreSearched) {
  Candidate c;
  c.gpus = 1024;
  c.tp = 8;
  c.cp = 2;
  c.pp = 4;
  c.dp = 16;
  GroupStrides s = group_strides(c);  // Megatron: TP, CP, DP, PP
  EXPECT_EQ(s.cp, 8);
  EXPECT_EQ(s.dp, 16);
  EXPECT_EQ(s.pp, 256);
  c.placement = Placement::kTpCpPpDp;
  s = group_strides(c);
  EXPECT_EQ(s.pp, 16);
  EXPECT_EQ(s.dp, 64);
  const GroupLayout g = dp_cp_layout(c);  // CP (stride 8) inside DP (stride 64)
  EXPECT_EQ(g.size(), 32);
  EXPECT_EQ(members_per_block(g, 8), 1);
  EXPECT_EQ(members_per_block(g, 64), 2);
  EXPECT_EQ(members_per_block(g, 256), 8);
  ClusterSpec cl = plain_cluster();
  EXPECT_EQ(placements_searched(cl, 1024, 4, 16), 1);  // no leaves
  cl.leaf_nic_ports = 32;
  EXPECT_EQ(placements_searched(cl, 1024, 4, 16), 1);  // leaves, but a free spine
  cl.oversubscription = 2;
  EXPECT_EQ(placements_searched(cl, 1024, 4, 16), 2);
  EXPECT_EQ(placements_searched(cl, 256, 4, 16), 1);   // the job fits one leaf tier
  EXPECT_EQ(placements_searched(cl, 1024, 1, 16), 1);  // no PP: the orders coincide
}

TEST(Fabric, EnumerationTriesBothPlacementsOnlyOnACostlySpineAndCountsThem) {
  Problem p = test::llama70b_h200();
  p.gpus = {512};
  p.cluster.leaf_nic_ports = 4;  // rail groups of 4 nodes = 64 GPUs
  const Enumeration flat = enumerate_candidates(p);
  EXPECT_EQ(count_candidates(p), static_cast<std::int64_t>(flat.candidates.size()));
  for (const Candidate& c : flat.candidates) EXPECT_EQ(c.placement, Placement::kTpCpDpPp);
  p.cluster.oversubscription = 2.0;
  const Enumeration tapered = enumerate_candidates(p);
  EXPECT_EQ(count_candidates(p), static_cast<std::int64_t>(tapered.candidates.size()));
  std::int64_t alt = 0, both_dims = 0;
  for (const Candidate& c : tapered.candidates) {
    alt += c.placement == Placement::kTpCpPpDp;
    both_dims += c.placement == Placement::kTpCpDpPp && c.pp > 1 && c.dp > 1;
  }
  EXPECT_GT(alt, 0);
  EXPECT_EQ(alt, both_dims);  // one alternative per shape with PP > 1 and DP > 1
  EXPECT_EQ(tapered.candidates.size(), flat.candidates.size() + static_cast<std::size_t>(alt));
}

TEST(Fabric, PlacementMovesPipelineHopsAcrossTheTaper) {
  // PP hops of 64 GPUs cross 64-GPU leaves under Megatron's order; under tp-cp-pp-dp they
  // stay 8 GPUs apart. With a 4:1 taper the pipeline time must drop with the second order.
  Problem p = test::llama70b_h200();
  p.gpus = {512};
  p.cluster.leaf_nic_ports = 4;
  p.cluster.oversubscription = 4.0;
  Candidate c = test::make_candidate(p, 8, 8, 8, 1, Schedule::k1F1B, Recompute::kFull, 1, 1, 1);
  const Evaluation meg = evaluate(p, c);
  c.placement = Placement::kTpCpPpDp;
  const Evaluation alt = evaluate(p, c);
  ASSERT_TRUE(meg.feasible && alt.feasible);
  EXPECT_LT(alt.pp_comm_s, meg.pp_comm_s);
}

TEST(Fabric, AllToAllAcrossLeavesPaysTheSpine) {
  ClusterSpec c = plain_cluster();
  c.leaf_nic_ports = 32;
  c.rail_optimized = false;  // 32-GPU leaves
  c.oversubscription = 2.0;
  const Links l = effective_links(c);
  EXPECT_DOUBLE_EQ(all_to_all_leaf_share(32, 1, l), 1.0);  // one leaf
  // 4 leaves: 3/4 of each NIC's traffic crosses at once, the 2:1 spine carries 1/(2·3/4).
  EXPECT_NEAR(all_to_all_leaf_share(128, 1, l), 1.0 / 1.5, 1e-12);
  c.adaptive_routing = false;
  EXPECT_NEAR(all_to_all_leaf_share(128, 1, effective_links(c)), ecmp_efficiency(24, 16), 1e-12);
}

TEST(Fabric, TinyAllReduceTakesNcclLowLatencyProtocol) {
  // A 64-byte all-reduce over 64 nodes of 8 (an FP8 amax reduction): NCCL's LL tree, base
  // 6.8 µs + 2·((8 − 1)·0.6·(3/3.4) + log2(64)·5.0) µs (the NVLink hop scaled by the cluster's
  // 3 µs against NCCL's 3.4), its bandwidth 0.92/3.8 of the bus bandwidth, capped at 20.4 GB/s
  // beyond two nodes (tuning.cc llMaxBws).
  const Links l = effective_links(plain_cluster());
  const GroupShape g = group_shape(512, 1, 8);
  ASSERT_EQ(g.domains, 64);
  const double S = 64;
  const CollectiveChoice ch = choose_collective(Collective::kAllReduce, S, g, l);
  EXPECT_EQ(ch.algo, CollectiveAlgo::kTree);
  const double bus = std::min(0.8 * 450e9, 8 * 50e9);
  const double lat = 6.8e-6 + 2.0 * (7 * 0.6e-6 * 3.0 / 3.4 + 6 * 5.0e-6);
  EXPECT_NEAR(ch.time_s, lat + 2.0 * S / std::min(0.92 * bus / 3.8, 20.4e9), 1e-12);
  // The Simple tree would take 8.4 + 2·(7·4.0·3/3.4 + 6·14) µs: three times as long.
  EXPECT_LT(3.0 * ch.time_s, 8.4e-6 + 2.0 * (7 * 4.0e-6 * 3.0 / 3.4 + 6 * 14e-6));
  // Inside one node a tiny all-reduce takes the LL ring: 6.6 µs + 14 hops of 0.6·3/3.4 µs.
  const GroupShape node = group_shape(8, 1, 8);
  EXPECT_NEAR(collective_time(Collective::kAllReduce, S, node, l),
              6.6e-6 + 14 * 0.6e-6 * 3.0 / 3.4 + S * 14.0 / 8 / (0.5 * 0.8 * 450e9), 1e-12);
}

TEST(Fabric, Ll128InsideOneDomainOnly) {
  // 16 MB over 8 GPUs of one domain: NCCL's LL128 ring, base 14 µs + 14 hops of 1.9·(3/3.4) µs,
  // 0.92 of the bus bandwidth, beats Simple's 8.4 + 14·3 µs at full bandwidth and LL's half.
  const Links l = effective_links(plain_cluster());
  const double S = 16.0 * 1024 * 1024, bw = 0.8 * 450e9;
  const GroupShape node = group_shape(8, 1, 8);
  const double ll128 = 14e-6 + 14 * 1.9e-6 * 3.0 / 3.4 + S * 14.0 / 8 / (0.92 * bw);
  const double simple = 8.4e-6 + 14 * 3e-6 + S * 14.0 / 8 / bw;
  ASSERT_LT(ll128, simple);
  EXPECT_NEAR(collective_time(Collective::kAllReduce, S, node, l), ll128, 1e-12);
  EXPECT_NEAR(collective_time(Collective::kAllGather, S, node, l),
              14e-6 + 7 * 1.9e-6 * 3.0 / 3.4 + S * 7.0 / 8 / (0.92 * bw), 1e-12);
  // Across two domains LL128 is not costed: the Simple ring or tree (tree size correction 0.7
  // at 16 MB), whichever is faster; LL's 39 GB/s cap rules it out at this size.
  const GroupShape two = group_shape(16, 1, 8);
  ASSERT_EQ(two.domains, 2);
  const double bus = std::min(bw, 8 * 50e9);
  const double ring = 8.4e-6 + 28 * 3e-6 + 2 * 14e-6 + S * 30.0 / 16 / bus;
  const double tree =
      8.4e-6 + 2.0 * (7 * 4.0e-6 * 3.0 / 3.4 + 14e-6) + 2.0 * S / (0.92 * 0.7 * bus);
  EXPECT_NEAR(collective_time(Collective::kAllReduce, S, two, l), std::min(ring, tree), 1e-12);
}

TEST(Fabric, CollectiveTimeNeverAboveTheSimpleRingNorBelowTheWire) {
  // Property: NCCL's choice is a minimum over algorithms and protocols that includes the Simple
  // ring, so it never exceeds the Simple ring's closed form, and no protocol beats the wire
  // (bytes × bus factor / bus bandwidth).
  const Links l = effective_links(plain_cluster());
  for (const int nodes : {1, 2, 4, 16, 128}) {
    for (const int stride : {1, 8}) {
      const GroupShape g = group_shape(nodes * (stride == 1 ? 8 : 1), stride, 8);
      if (g.size < 2) continue;
      const int n = g.size, N = g.domains;
      const double bw = bus_bandwidth(g, l);
      for (const Collective op : {Collective::kAllReduce, Collective::kAllGather}) {
        const bool ar = op == Collective::kAllReduce;
        const double steps = ar ? 2.0 * (n - 1) : n - 1.0, inter = ar ? 2.0 * (N - 1) : N - 1.0;
        const double factor = ar ? 2.0 * (n - 1) / n : double(n - 1) / n;
        for (double S = 64; S < 1e10; S *= 1.37) {
          const double simple_ring =
              8.4e-6 + (steps - inter) * 3e-6 + inter * 14e-6 + S * factor / bw;
          const double t = collective_time(op, S, g, l);
          EXPECT_LE(t, simple_ring * (1 + 1e-12)) << n << " ranks, " << S << " B";
          EXPECT_GT(t, S * factor / bw) << n << " ranks, " << S << " B";  // the wire bound
        }
      }
    }
  }
}

}  // namespace
}  // namespace ppsearch
