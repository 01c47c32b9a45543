#include "ppsearch/search/enumerate.hpp"

#include <algorithm>
#include <tuple>

namespace ppsearch {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
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
};

}  // namespace

std::vector<int> auto_tp_values(const Problem&, int gpus) { return divisors(gpus); }

std::vector<int> auto_cp_values(const Problem& pb, int gpus) {
  // Context parallelism pays off for long sequences; auto tries powers of two that
  // leave each CP rank at least 2048 tokens (Megatron recommends CP for s ≥ 8k).
  std::vector<int> out;
  for (int c = 1; c <= gpus; c *= 2)
    if (c == 1 || pb.model.seq_length / c >= 2048) out.push_back(c);
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
  std::vector<int> sps = ss.sp.empty() ? std::vector<int>{0, 1} : ss.sp;
  std::vector<int> zeros = ss.zero.empty() ? std::vector<int>{0, 1, 2, 3} : ss.zero;
  const std::vector<int> mbs_values = ss.mbs.empty() ? auto_mbs_values(pb) : ss.mbs;
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
  auto vpps_of = [&](Schedule sch) -> const std::vector<int>& {
    return sch == Schedule::kInterleaved1F1B ? interleaved_vpps : one_chunk;
  };
  // Combinations below one (N, TP, CP, PP, micro-batch) choice: rules on the outer
  // degrees remove all of them at once, counted in bulk (same first-failing-rule
  // accounting as one by one).
  std::int64_t per_mbs = 0;
  for (Schedule sch : schedules)
    per_mbs += static_cast<std::int64_t>(vpps_of(sch).size()) *
               static_cast<std::int64_t>(recomputes.size() * sps.size() * zeros.size());
  const std::int64_t per_pp = per_mbs * static_cast<std::int64_t>(mbs_values.size());
  auto bulk = [&](Rule r, std::int64_t n) {
    removed[r] += n;
    en.considered += n;
  };

  for (int N : pb.gpus) {
    const std::vector<int> tps = ss.tp.empty() ? auto_tp_values(pb, N) : ss.tp;
    const std::vector<int> cps = ss.cp.empty() ? auto_cp_values(pb, N) : ss.cp;
    for (int tp : tps) {
      for (int cp : cps) {
        const std::vector<int> pps =
            ss.pp.empty() ? divisors(std::max(1, N / std::max(1, tp * cp))) : ss.pp;
        for (int pp : pps) {
          if (N % tp != 0) {
            bulk(kTpDividesGpus, per_pp);
            continue;
          }
          if (m.attention_heads % tp != 0 || m.kv_heads % tp != 0) {
            bulk(kTpDividesHeads, per_pp);
            continue;
          }
          if (tp > domain && !pb.cluster.allow_tp_across_domains) {
            bulk(kTpFitsDomain, per_pp);
            continue;
          }
          if ((N / tp) % cp != 0) {
            bulk(kCpDividesGpus, per_pp);
            continue;
          }
          if (cp > 1 && m.seq_length % (2 * cp) != 0) {
            bulk(kCpDividesSequence, per_pp);
            continue;
          }
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
            if (B % (dp * mbs) != 0) {
              bulk(kBatchDivisible, per_mbs);
              continue;
            }
            const int M = B / (dp * mbs);
            for (Schedule sch : schedules) {
              for (int vpp : vpps_of(sch)) {
                for (Recompute rc : recomputes) {
                  for (int sp : sps) {
                    for (int z : zeros) {
                      ++en.considered;
                      auto fail = [&](Rule r) {
                        ++removed[r];
                        return true;
                      };
                      if (sp && tp == 1 && fail(kSpNeedsTp)) continue;
                      if (z > 0 && dp * cp == 1 && fail(kZeroNeedsDp)) continue;
                      if (z >= 2 && pp > 1 && fail(kZeroStage23NoPp)) continue;
                      if (pp == 1 && sch != pp1_schedule && fail(kPp1OneSchedule)) continue;
                      if (sch == Schedule::kInterleaved1F1B) {
                        if ((pp < 2 || vpp < 2) && fail(kInterleavedNeedsPp2)) continue;
                        if (M % pp != 0 && fail(kInterleavedMicrobatches)) continue;
                        if (pp * vpp > m.layers && fail(kVppFitsLayers)) continue;
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
                      c.sp = static_cast<std::uint8_t>(sp);
                      c.zero = static_cast<std::uint8_t>(z);
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

}  // namespace ppsearch
