// Context-parallel attention (docs/step-time.md "Long-sequence context parallelism"): hand counts
// of the K/V bytes, the exposed exchanges and the merge traffic of each training.cp_comm_type,
// and that the default (p2p) keeps the ring the layer costs had before the key existed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "../support/builders.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/context_parallel.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/keys.hpp"

namespace ppsearch {
namespace {

using test::llama70b_h200;
using test::make_candidate;

// One NVLink domain at 1 GB/s and no latency: a transfer of B bytes takes B ns.
Links slow_links() {
  Links l;
  l.nvlink_bytes_per_s = 1e9;
  l.network_bytes_per_s = 1e9;
  l.nvlink_latency_s = 0;
  l.network_latency_s = 0;
  l.fabric.nvlink_domain_size = 8;
  return l;
}

CpAttentionInput input(int cp, double att_fwd_s) {
  CpAttentionInput in;
  in.cp = cp;
  in.tokens = 1000;
  in.kv_width = 128;
  in.q_width = 256;
  in.att_fwd_s = att_fwd_s;
  in.att_bwd_s = 2.5 * att_fwd_s;
  in.same_domain = true;
  in.group = group_shape(cp, 1, 8);
  in.mem_bytes_per_s = 1e12;
  return in;
}

TEST(ContextParallel, NoCpCostsNothing) {
  for (CpCommType t : {CpCommType::kP2p, CpCommType::kTorchAllGather, CpCommType::kTorchAllToAll}) {
    const CpAttentionCost c = cp_attention_cost(t, input(1, 1.0), slow_links());
    EXPECT_EQ(c.fwd_exposed_s + c.bwd_exposed_s + c.fwd_total_s + c.bwd_total_s, 0.0);
    EXPECT_EQ(c.merge_fwd_s + c.merge_bwd_s, 0.0);
  }
}

TEST(ContextParallel, P2pRingClosedForm) {
  // K and V: 2 x 2 bytes x 1000 tokens x 128 = 512,000 bytes = 512 us a step at 1 GB/s.
  const double step = 512e-6;
  // Hidden behind a long forward: nothing exposed; (cp-1) steps forward, 2(cp-1) backward.
  CpAttentionCost c = cp_attention_cost(CpCommType::kP2p, input(4, 1.0), slow_links());
  EXPECT_DOUBLE_EQ(c.kv_bytes, 512000.0);
  EXPECT_EQ(c.fwd_exposed_s, 0.0);
  EXPECT_EQ(c.bwd_exposed_s, 0.0);
  EXPECT_NEAR(c.fwd_total_s, 3 * step, 1e-15);
  EXPECT_NEAR(c.bwd_total_s, 6 * step, 1e-15);
  EXPECT_EQ(c.merge_fwd_bytes + c.merge_bwd_bytes, 0.0);  // fused into TE's kernels
  // A forward of 1 ms hides 1 ms of the 1.536 ms; the backward (2.5 ms) all of its 3.072 ms
  // but 0.572 ms.
  c = cp_attention_cost(CpCommType::kP2p, input(4, 1e-3), slow_links());
  EXPECT_NEAR(c.fwd_exposed_s, 3 * step - 1e-3, 1e-15);
  EXPECT_NEAR(c.bwd_exposed_s, 6 * step - 2.5e-3, 1e-15);
}

TEST(ContextParallel, TorchMergeAndAccumulationBytesByHand) {
  // cp 4, 1000 tokens, query width 256 (Eq = 256,000), K/V width 128 (Ek = 128,000).
  const CpAttentionCost c =
      cp_attention_cost(CpCommType::kTorchAllGather, input(4, 1.0), slow_links());
  // Forward: 3 merges of 10 bytes per output element + upcast (6) + final cast (6).
  EXPECT_DOUBLE_EQ(c.merge_fwd_bytes, (3 * 10 + 12) * 256000.0);
  // Backward: 4 steps accumulating dq, dK, dV (10 bytes per element: 4 x 10 x 512,000), 3 more
  // FlashAttention backward calls than one (14 bytes per query element: 3 x 14 x 256,000),
  // accumulators zeroed and cast back (10 bytes per element of dq, dK, dV).
  EXPECT_DOUBLE_EQ(c.merge_bwd_bytes, 4 * 10 * 512000.0 + 3 * 14 * 256000.0 + 10 * 512000.0);
  EXPECT_DOUBLE_EQ(c.merge_fwd_s, c.merge_fwd_bytes / 1e12);
  EXPECT_DOUBLE_EQ(c.merge_bwd_s, c.merge_bwd_bytes / 1e12);
  // dK/dV rotate in fp32: twice the bytes of K/V.
  EXPECT_DOUBLE_EQ(c.dkv_bytes, 2.0 * c.kv_bytes);
  // Held during the backward: 4 gathered K/V chunks (4 x 512,000), the fp32 dq (4 x 256,000),
  // the fp32 dK/dV sent and received (2 x 1,024,000); the all-to-all ring holds 2 chunks.
  EXPECT_DOUBLE_EQ(c.transient_bytes, 4 * 512000.0 + 4 * 256000.0 + 2 * 1024000.0);
  EXPECT_DOUBLE_EQ(
      cp_attention_cost(CpCommType::kTorchAllToAll, input(4, 1.0), slow_links()).transient_bytes,
      2 * 512000.0 + 4 * 256000.0 + 2 * 1024000.0);
  EXPECT_EQ(cp_attention_cost(CpCommType::kP2p, input(4, 1.0), slow_links()).transient_bytes, 0.0);
  // Each ring step adds one merge (10 bytes per output element) and one accumulation step.
  const CpAttentionCost c5 =
      cp_attention_cost(CpCommType::kTorchAllGather, input(5, 1.0), slow_links());
  EXPECT_DOUBLE_EQ(c5.merge_fwd_bytes - c.merge_fwd_bytes, 10 * 256000.0);
  EXPECT_DOUBLE_EQ(c5.merge_bwd_bytes - c.merge_bwd_bytes, 10 * 512000.0 + 14 * 256000.0);
}

TEST(ContextParallel, AllGatherHidesOnlyBehindTheFirstStep) {
  const Links l = slow_links();
  const CpAttentionInput in = input(4, 1e-3);  // a step: 0.25 ms forward, 0.625 ms backward
  const double ag = collective_time(Collective::kAllGather, 4 * 512000.0, in.group, l);
  ASSERT_GT(ag, 0.625e-3);  // longer than one step in both directions
  const CpAttentionCost c = cp_attention_cost(CpCommType::kTorchAllGather, in, l);
  EXPECT_NEAR(c.fwd_exposed_s, ag - 0.25e-3, 1e-15);
  EXPECT_NEAR(c.fwd_total_s, ag, 1e-15);
  // Backward: the K/V all-gather again behind step 0, then 4 fp32 dK/dV permutes of
  // 1,024,000 bytes (1.024 ms each): 3 behind one step each (0.625 ms), the last exposed.
  const double g = 1.024e-3;
  EXPECT_NEAR(c.bwd_exposed_s, (ag - 0.625e-3) + 3 * (g - 0.625e-3) + g, 1e-15);
  EXPECT_NEAR(c.bwd_total_s, ag + 4 * g, 1e-15);
  // A long attention hides all of it but the last dK/dV permute.
  const CpAttentionCost h = cp_attention_cost(CpCommType::kTorchAllGather, input(4, 1.0), l);
  EXPECT_EQ(h.fwd_exposed_s, 0.0);
  EXPECT_NEAR(h.bwd_exposed_s, g, 1e-15);
}

TEST(ContextParallel, AllToAllHidesEachPermuteBehindItsStep) {
  const CpAttentionCost c =
      cp_attention_cost(CpCommType::kTorchAllToAll, input(4, 1e-3), slow_links());
  // K/V: 0.512 ms a permute, 3 of them, each behind a 0.25 ms forward step.
  EXPECT_NEAR(c.fwd_exposed_s, 3 * (0.512e-3 - 0.25e-3), 1e-15);
  EXPECT_NEAR(c.fwd_total_s, 3 * 0.512e-3, 1e-15);
  // Backward step 0.625 ms hides the K/V permutes; dK/dV as with the all-gather.
  EXPECT_NEAR(c.bwd_exposed_s, 3 * (1.024e-3 - 0.625e-3) + 1.024e-3, 1e-15);
}

TEST(ContextParallel, DefaultIsP2pAndKeyParses) {
  Problem p = llama70b_h200();
  EXPECT_EQ(p.training.cp_comm_type, CpCommType::kP2p);
  EXPECT_FALSE(apply_key(p, "training.cp_comm_type", "torch-allgather", "t"));
  EXPECT_EQ(p.training.cp_comm_type, CpCommType::kTorchAllGather);
  EXPECT_EQ(key_value(p, "training.cp_comm_type"), "torch-allgather");
  EXPECT_FALSE(apply_key(p, "training.cp_comm_type", "torch-alltoall", "t"));
  EXPECT_EQ(p.training.cp_comm_type, CpCommType::kTorchAllToAll);
  const auto issue = apply_key(p, "training.cp_comm_type", "ring", "t");
  ASSERT_TRUE(issue);
  EXPECT_EQ(p.training.cp_comm_type, CpCommType::kTorchAllToAll);  // untouched
  EXPECT_EQ(std::string(to_string(CpCommType::kP2p)), "p2p");
}

TEST(ContextParallel, LayerCostsKeepTheP2pRingAndChargeTheTorchRing) {
  Problem p = llama70b_h200();
  p.model.seq_length = 65536;
  p.training.global_batch_size = 16;
  p.gpus = {16};
  const Links l = effective_links(p.cluster);
  const Candidate c = make_candidate(p, 1, 1, 4, 1, Schedule::k1F1B, Recompute::kFull, 0, 3, 1, 4);
  const ItemCost ring = chain_costs(p, c, l).layer;
  // items.cpp's ring before the key existed: (cp−1) K/V steps at the KV width h_kv,
  // hidden behind the forward's attention, twice in the backward, replayed once under full
  // recomputation.
  const double m = 65536.0 / 4, hkv = 8.0 * 128, hq = 64.0 * 128;
  const double att_fwd = 0.5 * 4.0 * m * 65536 * hq / (p.gpu.peak_flop_per_s * 0.5);
  const double step = p2p_time(2.0 * 2.0 * m * hkv, true, l);
  EXPECT_NEAR(ring.cp_comm_s,
              2 * std::max(0.0, 3 * step - att_fwd) + std::max(0.0, 6 * step - 2.5 * att_fwd),
              1e-12);
  EXPECT_NEAR(ring.cp_total_s, 9 * step + 3 * step, 1e-12);

  p.training.cp_comm_type = CpCommType::kTorchAllGather;
  const ItemCost torch = chain_costs(p, c, l).layer;
  // K/V repeated to the query heads: 8x the bytes of the GQA ring's K/V.
  CpAttentionInput in;
  in.cp = 4;
  in.tokens = m;
  in.kv_width = hq;
  in.q_width = hq;
  in.att_fwd_s = att_fwd;
  in.att_bwd_s = 2.5 * att_fwd;
  in.same_domain = true;
  in.group = group_shape(4, 1, p.cluster.nvlink_domain_size);
  in.mem_bytes_per_s = p.gpu.hbm_bytes_per_s * p.gpu.memory_efficiency;
  const CpAttentionCost cc = cp_attention_cost(CpCommType::kTorchAllGather, in, l);
  EXPECT_DOUBLE_EQ(cc.kv_bytes, 8.0 * 2.0 * 2.0 * m * hkv);
  // The merges are compute: twice the forward's (replayed) and the backward's.
  EXPECT_NEAR(torch.compute_s - ring.compute_s, 2 * cc.merge_fwd_s + cc.merge_bwd_s, 1e-12);
  EXPECT_NEAR(torch.cp_comm_s, 2 * cc.fwd_exposed_s + cc.bwd_exposed_s, 1e-12);
  EXPECT_NEAR(torch.transient_bytes - ring.transient_bytes,
              cc.transient_bytes * p.gpu.activation_overhead, 1e-3);
  EXPECT_GT(torch.time_s(), ring.time_s());

  // The whole evaluation: the torch ring is slower, the default answer is the p2p ring's.
  Problem dflt = p;
  dflt.training.cp_comm_type = CpCommType::kP2p;
  const Evaluation e_ring = evaluate(dflt, c), e_torch = evaluate(p, c);
  ASSERT_TRUE(e_ring.feasible);
  ASSERT_TRUE(e_torch.feasible);
  EXPECT_GT(e_torch.iteration_time_s, e_ring.iteration_time_s);
}

}  // namespace
}  // namespace ppsearch
