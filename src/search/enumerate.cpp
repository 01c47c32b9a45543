#include "ppsearch/search/enumerate.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

namespace ppsearch {
namespace {

// The divisors of n ≥ 1, ascending, in O(sqrt n) steps. The counter is 64-bit, so
// i·i cannot overflow for any int n.
std::vector<int> divisors(int n) {
  std::vector<int> low;
  std::vector<int> high;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    low.push_back(static_cast<int>(i));
    if (i * i != n) high.push_back(static_cast<int>(n / i));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Number of divisors of every n in [0, max_n] (entry 0 unused), by a sieve in
// O(max_n log max_n) steps: d[n] = the size of divisors(n).
std::vector<std::int32_t> divisor_counts(int max_n) {
  std::vector<std::int32_t> d(static_cast<std::size_t>(std::max(max_n, 0)) + 1, 0);
  for (std::int64_t i = 1; i <= max_n; ++i)
    for (std::int64_t j = i; j <= max_n; j += i) ++d[static_cast<std::size_t>(j)];
  return d;
}

// The auto PP list for one (N, TP, CP): every divisor of N / (TP·CP), at least of 1.
int pp_base(int N, int tp, int cp) {
  const std::int64_t tc = static_cast<std::int64_t>(tp) * cp;  // 64-bit: no overflow
  return static_cast<int>(std::max<std::int64_t>(1, N / std::max<std::int64_t>(1, tc)));
}

// Rule indices (order = the order in which they are checked and reported).
enum Rule {
  kTpDividesGpus,
  kTpDividesHeads,
  kTpFitsDomain,
  kCpDividesGpus,
  kCpDividesSequence,
  kPpDividesGpus,
  kPpFitsLayers,
  kBatchDivisible,
  kSpNeedsTp,
  kZeroNeedsDp,
  kZeroStage23NoPp,
  kPp1OneSchedule,
  kInterleavedNeedsPp2,
  kInterleavedMicrobatches,
  kVppFitsLayers,
  // Mixture of experts (docs/moe.md).
  kEpNeedsMoe,
  kEpDividesExperts,
  kEpFitsRanks,
  kMoeTpNeedsSp,
  // ZB-V and DualPipe (docs/algorithms.md §2.1, §2.4)
  kZbvFitsLayers,
  kDualPipeEvenPp,
  kDualPipeMicrobatches,
  kNumRules
};

const char* kRuleNames[kNumRules][2] = {
    {"tp_divides_gpus", "TP must divide the GPU count"},
    {"tp_divides_heads", "TP must divide the attention heads and the KV heads"},
    {"tp_fits_nvlink_domain", "TP must fit in one NVLink domain (cluster.allow_tp_across_domains)"},
    {"cp_divides_gpus", "TP·CP must divide the GPU count"},
    {"cp_divides_sequence", "load-balanced CP splits the sequence into 2·CP equal chunks"},
    {"pp_divides_gpus", "TP·CP·PP must divide the GPU count"},
    {"pp_fits_layers", "PP must not exceed the number of transformer layers"},
    {"batch_divisible", "global batch must be divisible by DP × micro-batch size"},
    {"sp_needs_tp", "sequence parallelism needs TP > 1"},
    {"zero_needs_dp", "ZeRO sharding needs DP·CP > 1"},
    {"zero23_needs_pp1",
     "ZeRO-2/3 are not combined with pipeline parallelism (DeepSpeed, Megatron)"},
    {"pp1_one_schedule", "with PP = 1 all schedules coincide: only one is kept"},
    {"interleaved_needs_pp2", "interleaving needs PP ≥ 2 and VPP ≥ 2"},
    {"interleaved_microbatches", "interleaving needs the micro-batch count divisible by PP"},
    {"vpp_fits_layers",
     "interleaving needs at least one layer per model chunk (PP × VPP ≤ layers)"},
    // Mixture of experts (docs/moe.md).
    {"ep_needs_moe", "EP and ETP above 1 need a mixture-of-experts model"},
    {"ep_divides_experts", "EP must divide the routed experts"},
    {"ep_etp_divide_ranks",
     "EP × ETP must divide TP × CP × DP (Megatron-Core MoE parallel folding)"},
    {"moe_tp_needs_sp", "a MoE model with TP > 1 needs sequence parallelism (Megatron-Core)"},
    {"zbv_fits_layers", "ZB-V places 2 model chunks per rank: needs 2 × PP ≤ layers"},
    {"dualpipe_even_pp", "DualPipe needs an even PP (deepseek-ai/DualPipe: num_ranks % 2 == 0)"},
    {"dualpipe_microbatches",
     "DualPipe needs an even micro-batch count of at least 2 × PP (deepseek-ai/DualPipe)"},
};

// Auto expert-parallel degrees (docs/moe.md): 1 for a dense model; for a MoE model the
// divisors of the expert count. Auto ETP = 1.
std::vector<int> ep_values(const Problem& pb) {
  if (!pb.search.ep.empty()) return pb.search.ep;
  if (pb.model.moe_experts <= 0) return {1};
  return divisors(pb.model.moe_experts);
}
std::vector<int> etp_values(const Problem& pb) {
  return pb.search.etp.empty() ? std::vector<int>{1} : pb.search.etp;
}

// The first MoE rule an (ep, etp) choice fails, or kNumRules.
Rule ep_rule(const Problem& pb, int ep, int etp, std::int64_t ranks) {
  const int experts = pb.model.moe_experts;
  if (experts <= 0) return ep > 1 || etp > 1 ? kEpNeedsMoe : kNumRules;
  if (experts % ep != 0) return kEpDividesExperts;
  if (ranks % (static_cast<std::int64_t>(ep) * etp) != 0) return kEpFitsRanks;
  return kNumRules;
}

}  // namespace

std::vector<int> auto_tp_values(const Problem&, int gpus) { return divisors(gpus); }

std::vector<int> auto_cp_values(const Problem& pb, int gpus) {
  // Context parallelism pays off for long sequences; auto tries powers of two that
  // leave each CP rank at least 2048 tokens (Megatron recommends CP for s ≥ 8k).
  std::vector<int> out;
  for (std::int64_t c = 1; c <= gpus; c *= 2)  // 64-bit: doubling past INT_MAX cannot wrap
    if (c == 1 || pb.model.seq_length / c >= 2048) out.push_back(static_cast<int>(c));
  return out;
}

std::vector<int> auto_mbs_values(const Problem&) { return {1, 2, 4, 8, 16}; }

std::vector<int> auto_vpp_values() { return {2, 3, 4, 5, 6, 7, 8}; }

Enumeration enumerate_candidates(const Problem& pb) {
  Enumeration en;
  std::int64_t removed[kNumRules] = {};
  const ModelSpec& m = pb.model;
  const SearchSpec& ss = pb.search;
  const int B = pb.training.global_batch_size;
  const int domain = pb.cluster.nvlink_domain_size;

  std::vector<Schedule> schedules = ss.schedule;
  if (schedules.empty())
    schedules = {Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved1F1B, Schedule::kZBH1};
  std::vector<Recompute> recomputes = ss.recompute;
  if (recomputes.empty()) recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  // Recomputation variants: full recompute once per value of search.recompute_num_layers (auto
  // = −1, the fewest per stage) when not interleaved; the other modes once.
  std::vector<std::pair<Recompute, int>> rc_one, rc_many;
  for (Recompute rc : recomputes) {
    if (rc != Recompute::kFull) {
      rc_one.emplace_back(rc, 0);
      rc_many.emplace_back(rc, 0);
      continue;
    }
    rc_one.emplace_back(rc, 0);
    if (ss.recompute_num_layers.empty()) rc_many.emplace_back(rc, -1);
    for (int n : ss.recompute_num_layers) rc_many.emplace_back(rc, n);
  }
  auto rcs_of = [&](int vpp) -> const std::vector<std::pair<Recompute, int>>& {
    return vpp == 1 ? rc_many : rc_one;
  };
  std::vector<int> sps = ss.sp.empty() ? std::vector<int>{0, 1} : ss.sp;
  std::vector<int> zeros = ss.zero.empty() ? std::vector<int>{0, 1, 2, 3} : ss.zero;
  const std::vector<int> mbs_values = ss.mbs.empty() ? auto_mbs_values(pb) : ss.mbs;
  const std::vector<int> eps = ep_values(pb), etps = etp_values(pb);  // MoE (docs/moe.md)
  const bool moe = m.moe_experts > 0;
  // The schedule kept when PP = 1: 1F1B if listed, else the first listed.
  const Schedule pp1_schedule =
      std::find(schedules.begin(), schedules.end(), Schedule::k1F1B) != schedules.end()
          ? Schedule::k1F1B
          : schedules.front();

  // VPP values per schedule: interleaving takes the listed (or auto) values, the other
  // schedules have one chunk per rank. Chunks need not be equal: the partition is
  // printed as a Megatron --pipeline-model-parallel-layout, which takes any split
  // (Llama 3 405B ran 126 layers on PP 16 interleaved). auto = 2..8.
  const std::vector<int> one_chunk{1};
  const std::vector<int> interleaved_vpps = ss.vpp.empty() ? auto_vpp_values() : ss.vpp;
  // ZB-V always holds 2 chunks per rank (its V); DualPipe's two parameter copies are not chunks
  // of one pipeline: it keeps vpp 1 and the simulator mirrors the stages (evaluate.cpp).
  const std::vector<int> two_chunks{2};
  auto vpps_of = [&](Schedule sch) -> const std::vector<int>& {
    if (sch == Schedule::kZBV) return two_chunks;
    return sch == Schedule::kInterleaved1F1B ? interleaved_vpps : one_chunk;
  };
  // Combinations below one (N, TP, CP, PP, micro-batch) choice: rules on the outer
  // degrees remove all of them at once, counted in bulk (same first-failing-rule
  // accounting as one by one).
  std::int64_t per_mbs = 0;
  for (Schedule sch : schedules)
    for (int vpp : vpps_of(sch))
      per_mbs += static_cast<std::int64_t>(rcs_of(vpp).size() * sps.size() * zeros.size() *
                                           eps.size() * etps.size());
  const std::int64_t per_pp = per_mbs * static_cast<std::int64_t>(mbs_values.size());
  auto bulk = [&](Rule r, std::int64_t n) {
    removed[r] += n;
    en.considered += n;
  };

  const int max_n = pb.gpus.empty() ? 1 : *std::max_element(pb.gpus.begin(), pb.gpus.end());
  const std::vector<std::int32_t> dcount =
      ss.pp.empty() ? divisor_counts(std::max(max_n, 1)) : std::vector<std::int32_t>{};
  for (int N : pb.gpus) {
    const std::vector<int> tps = ss.tp.empty() ? auto_tp_values(pb, N) : ss.tp;
    const std::vector<int> cps = ss.cp.empty() ? auto_cp_values(pb, N) : ss.cp;
    // PP values of one (TP, CP) and how many there are; rules that fail before PP is
    // looked at remove all of them in bulk, without building the list.
    auto pp_count = [&](int tp, int cp) -> std::int64_t {
      return ss.pp.empty() ? dcount[static_cast<std::size_t>(pp_base(N, tp, cp))]
                           : static_cast<std::int64_t>(ss.pp.size());
    };
    auto bulk_all_cp = [&](Rule r, int tp) {
      for (int cp : cps) bulk(r, per_pp * pp_count(tp, cp));
    };
    for (int tp : tps) {
      if (N % tp != 0) {
        bulk_all_cp(kTpDividesGpus, tp);
        continue;
      }
      if (m.attention_heads % tp != 0 || m.kv_heads % tp != 0) {
        bulk_all_cp(kTpDividesHeads, tp);
        continue;
      }
      if (tp > domain && !pb.cluster.allow_tp_across_domains) {
        bulk_all_cp(kTpFitsDomain, tp);
        continue;
      }
      for (int cp : cps) {
        if ((N / tp) % cp != 0) {
          bulk(kCpDividesGpus, per_pp * pp_count(tp, cp));
          continue;
        }
        if (cp > 1 && m.seq_length % (2LL * cp) != 0) {
          bulk(kCpDividesSequence, per_pp * pp_count(tp, cp));
          continue;
        }
        const std::vector<int> pps = ss.pp.empty() ? divisors(pp_base(N, tp, cp)) : ss.pp;
        for (int pp : pps) {
          if ((N / tp / cp) % pp != 0) {
            bulk(kPpDividesGpus, per_pp);
            continue;
          }
          if (pp > m.layers) {
            bulk(kPpFitsLayers, per_pp);
            continue;
          }
          const int dp = N / tp / cp / pp;
          for (int mbs : mbs_values) {
            // 64-bit: dp ≤ 131072 and mbs ≤ 2^24 at parse time, any int in code.
            const std::int64_t dp_mbs = static_cast<std::int64_t>(dp) * mbs;
            if (B % dp_mbs != 0) {
              bulk(kBatchDivisible, per_mbs);
              continue;
            }
            const int M = static_cast<int>(B / dp_mbs);
            for (Schedule sch : schedules) {
              for (int vpp : vpps_of(sch)) {
                for (const auto& [rc, rnl] : rcs_of(vpp)) {
                  for (int sp : sps) {
                    for (int z : zeros) {
                      for (int ep : eps) {
                        for (int etp : etps) {
                          ++en.considered;
                          auto fail = [&](Rule r) {
                            ++removed[r];
                            return true;
                          };
                          if (sp && tp == 1 && fail(kSpNeedsTp)) continue;
                          if (z > 0 && dp == 1 && cp == 1 && fail(kZeroNeedsDp)) continue;
                          if (z >= 2 && pp > 1 && !ss.fsdp_with_pp && fail(kZeroStage23NoPp))
                            continue;
                          if (pp == 1 && sch != pp1_schedule && fail(kPp1OneSchedule)) continue;
                          if (sch == Schedule::kInterleaved1F1B) {
                            if ((pp < 2 || vpp < 2) && fail(kInterleavedNeedsPp2)) continue;
                            if (M % pp != 0 && fail(kInterleavedMicrobatches)) continue;
                            if (static_cast<std::int64_t>(pp) * vpp > m.layers &&
                                fail(kVppFitsLayers))
                              continue;
                          }
                          if (const Rule r = ep_rule(pb, ep, etp, 1LL * tp * cp * dp);
                              r != kNumRules && fail(r))
                            continue;
                          if (moe && tp > 1 && !sp && fail(kMoeTpNeedsSp)) continue;
                          if (sch == Schedule::kZBV && 2LL * pp > m.layers && fail(kZbvFitsLayers))
                            continue;
                          if (sch == Schedule::kDualPipe && pp > 1) {
                            if (pp % 2 != 0 && fail(kDualPipeEvenPp)) continue;
                            if ((M % 2 != 0 || M < 2 * pp) && fail(kDualPipeMicrobatches)) continue;
                          }
                          Candidate c;
                          c.gpus = N;
                          c.tp = tp;
                          c.pp = pp;
                          c.cp = cp;
                          c.dp = dp;
                          c.vpp = vpp;
                          c.mbs = mbs;
                          c.num_microbatches = M;
                          c.global_batch_size = B;
                          c.schedule = sch;
                          c.recompute = rc;
                          c.recompute_num_layers = rnl;
                          c.sp = static_cast<std::uint8_t>(sp);
                          c.zero = static_cast<std::uint8_t>(z);
                          c.ep = ep;
                          c.etp = etp;
                          en.candidates.push_back(c);
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // Group candidates that share a pipeline shape (schedule, PP, VPP, micro-batch count)
  // so that each thread's compiled-schedule cache stays warm; the ranking does not
  // depend on this order (it is a total order on the results).
  std::stable_sort(
      en.candidates.begin(), en.candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::make_tuple(static_cast<int>(a.schedule), a.pp, a.vpp, a.num_microbatches) <
               std::make_tuple(static_cast<int>(b.schedule), b.pp, b.vpp, b.num_microbatches);
      });
  for (int r = 0; r < kNumRules; ++r)
    en.rules.push_back(RuleCount{kRuleNames[r][0], kRuleNames[r][1], removed[r]});
  return en;
}

SweepSize sweep_size(const Problem& pb) {
  // The loops of enumerate_candidates, visiting only the outer choices that pass every
  // rule; below one (N, TP, CP, PP, micro-batch) choice the rules are independent
  // conditions on (sp), (zero), (schedule, vpp), so the survivors are a product.
  const ModelSpec& m = pb.model;
  const SearchSpec& ss = pb.search;
  const std::int64_t B = pb.training.global_batch_size;
  const int domain = pb.cluster.nvlink_domain_size;
  std::vector<Schedule> schedules = ss.schedule;
  if (schedules.empty())
    schedules = {Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved1F1B, Schedule::kZBH1};
  const std::int64_t n_recompute = ss.recompute.empty() ? 3 : ss.recompute.size();
  const std::vector<int> sps = ss.sp.empty() ? std::vector<int>{0, 1} : ss.sp;
  const std::vector<int> zeros = ss.zero.empty() ? std::vector<int>{0, 1, 2, 3} : ss.zero;
  const std::vector<int> mbs_values = ss.mbs.empty() ? auto_mbs_values(pb) : ss.mbs;
  const std::vector<int> interleaved_vpps = ss.vpp.empty() ? auto_vpp_values() : ss.vpp;
  const Schedule pp1_schedule =
      std::find(schedules.begin(), schedules.end(), Schedule::k1F1B) != schedules.end()
          ? Schedule::k1F1B
          : schedules.front();
  const std::vector<int> eps = ep_values(pb), etps = etp_values(pb);  // MoE (docs/moe.md)
  const bool moe = m.moe_experts > 0;
  auto dividing = [](const std::vector<int>& listed, std::int64_t n) {
    std::vector<int> out;
    for (int v : listed)
      if (v >= 1 && n % v == 0) out.push_back(v);
    return out;
  };

  SweepSize total;
  for (int N : pb.gpus) {
    if (N < 1) continue;
    const std::vector<int> tps = ss.tp.empty() ? auto_tp_values(pb, N) : dividing(ss.tp, N);
    for (int tp : tps) {
      if (m.attention_heads % tp != 0 || m.kv_heads % tp != 0) continue;
      if (tp > domain && !pb.cluster.allow_tp_across_domains) continue;
      const std::vector<int> cps = dividing(ss.cp.empty() ? auto_cp_values(pb, N) : ss.cp, N / tp);
      for (int cp : cps) {
        if (cp > 1 && m.seq_length % (2LL * cp) != 0) continue;
        const int rest = N / tp / cp;
        const std::vector<int> pps = ss.pp.empty() ? divisors(rest) : dividing(ss.pp, rest);
        for (int pp : pps) {
          if (pp > m.layers) continue;
          const int dp = rest / pp;
          std::int64_t n_sp = 0;
          for (int sp : sps) n_sp += (sp && tp == 1) || (moe && tp > 1 && !sp) ? 0 : 1;
          std::int64_t n_zero = 0;
          for (int z : zeros)
            n_zero +=
                (z > 0 && dp == 1 && cp == 1) || (z >= 2 && pp > 1 && !ss.fsdp_with_pp) ? 0 : 1;
          std::int64_t n_ep = 0;
          for (int ep : eps)
            for (int etp : etps) n_ep += ep_rule(pb, ep, etp, 1LL * tp * cp * dp) == kNumRules;
          for (int mbs : mbs_values) {
            const std::int64_t dp_mbs = static_cast<std::int64_t>(dp) * mbs;
            if (mbs < 1 || B % dp_mbs != 0) continue;
            const std::int64_t M = B / dp_mbs;
            std::int64_t n_sched = 0;
            std::int64_t stages = 0;  // Σ pp·vpp over the (schedule, vpp) choices
            for (Schedule sch : schedules) {
              if (pp == 1 && sch != pp1_schedule) continue;
              if (sch == Schedule::kZBV) {  // 2 chunks per rank
                if (2LL * pp <= m.layers) {
                  ++n_sched;
                  stages += 2LL * pp;
                }
                continue;
              }
              if (sch == Schedule::kDualPipe && pp > 1 &&
                  (pp % 2 != 0 || M % 2 != 0 || M < 2LL * pp)) {
                continue;
              }
              if (sch != Schedule::kInterleaved1F1B) {
                ++n_sched;
                stages += pp;
                continue;
              }
              if (pp < 2 || M % pp != 0) continue;
              for (int vpp : interleaved_vpps) {
                if (vpp >= 2 && static_cast<std::int64_t>(pp) * vpp <= m.layers) {
                  ++n_sched;
                  stages += static_cast<std::int64_t>(pp) * vpp;
                }
              }
            }
            const std::int64_t others = n_recompute * n_sp * n_zero * n_ep;
            total.candidates += others * n_sched;
            total.stages += others * stages;
          }
        }
      }
    }
  }
  return total;
}

std::int64_t count_candidates(const Problem& pb) { return sweep_size(pb).candidates; }

}  // namespace ppsearch
