// Input limits (issue #8): the sweep count equals the enumeration, the enumeration keeps
// its rule accounting with 64-bit arithmetic on extreme values, the ranking check counts
// pairs in O(n log n) exactly as the pairwise definition, and a malformed CSV gives a
// bounded list of issues. Expected values come from independent reference code written
// here (the pairwise definitions), never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"
#include "support/builders.hpp"

namespace ppsearch {
namespace {

// ---- reference enumeration: every combination visited one by one --------------------
// The rules of enumerate.cpp written as plain nested loops over every value (O(n)
// divisors, no bulk counting), giving the considered count, the removed count per rule
// (in rule order) and the surviving candidates' keys.
struct Reference {
  std::int64_t considered = 0;
  std::vector<std::int64_t> removed;
  std::vector<decltype(candidate_key(Candidate{}))> keys;
  std::int64_t stages = 0;
};

std::vector<int> slow_divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

Reference reference_enumeration(const Problem& pb) {
  Reference r;
  r.removed.assign(22, 0);
  const ModelSpec& m = pb.model;
  const SearchSpec& ss = pb.search;
  const std::int64_t B = pb.training.global_batch_size;
  std::vector<Schedule> schedules = ss.schedule;
  if (schedules.empty())
    schedules = {Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved1F1B, Schedule::kZBH1};
  std::vector<Recompute> recomputes = ss.recompute;
  if (recomputes.empty()) recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  const std::vector<int> sps = ss.sp.empty() ? std::vector<int>{0, 1} : ss.sp;
  const std::vector<int> zeros = ss.zero.empty() ? std::vector<int>{0, 1, 2, 3} : ss.zero;
  const std::vector<int> mbss = ss.mbs.empty() ? std::vector<int>{1, 2, 4, 8, 16} : ss.mbs;
  // MoE (docs/moe.md): auto EP = the divisors of the expert count (1 for a dense model).
  const std::vector<int> eps =
      !ss.ep.empty() ? ss.ep
                     : (m.moe_experts > 0 ? slow_divisors(m.moe_experts) : std::vector<int>{1});
  const std::vector<int> etps = ss.etp.empty() ? std::vector<int>{1} : ss.etp;
  const std::vector<int> ivpps = ss.vpp.empty() ? std::vector<int>{2, 3, 4, 5, 6, 7, 8} : ss.vpp;
  const Schedule pp1 = std::count(schedules.begin(), schedules.end(), Schedule::k1F1B)
                           ? Schedule::k1F1B
                           : schedules.front();
  for (int N : pb.gpus) {
    const std::vector<int> tps = ss.tp.empty() ? slow_divisors(N) : ss.tp;
    std::vector<int> cps = ss.cp;
    if (cps.empty())
      for (long long c = 1; c <= N; c *= 2)
        if (c == 1 || m.seq_length / c >= 2048) cps.push_back(static_cast<int>(c));
    for (int tp : tps)
      for (int cp : cps) {
        const long long tc = 1LL * tp * cp;
        const std::vector<int> pps =
            ss.pp.empty() ? slow_divisors(static_cast<int>(std::max(1LL, N / tc))) : ss.pp;
        for (int pp : pps)
          for (int mbs : mbss)
            for (Schedule sch : schedules) {
              const std::vector<int> vpps = sch == Schedule::kInterleaved1F1B
                                                ? ivpps
                                                : std::vector<int>{sch == Schedule::kZBV ? 2 : 1};
              for (int vpp : vpps)
                for (Recompute rc : recomputes)
                  for (int sp : sps)
                    for (int z : zeros)
                      for (int ep : eps)
                        for (int etp : etps) {
                          ++r.considered;
                          int rule = -1;
                          const long long dp = N / tc / pp;
                          if (N % tp != 0)
                            rule = 0;
                          else if (m.attention_heads % tp != 0 || m.kv_heads % tp != 0)
                            rule = 1;
                          else if (tp > pb.cluster.nvlink_domain_size &&
                                   !pb.cluster.allow_tp_across_domains)
                            rule = 2;
                          else if ((N / tp) % cp != 0)
                            rule = 3;
                          else if (cp > 1 && m.seq_length % (2LL * cp) != 0)
                            rule = 4;
                          else if ((N / tp / cp) % pp != 0)
                            rule = 5;
                          else if (pp > m.layers)
                            rule = 6;
                          else if (B % (dp * mbs) != 0)
                            rule = 7;
                          else if (sp && tp == 1)
                            rule = 8;
                          else if (z > 0 && dp * cp == 1)
                            rule = 9;
                          else if (z >= 2 && pp > 1 && !ss.fsdp_with_pp)
                            rule = 10;
                          else if (pp == 1 && sch != pp1)
                            rule = 11;
                          else if (sch == Schedule::kInterleaved1F1B && (pp < 2 || vpp < 2))
                            rule = 12;
                          else if (sch == Schedule::kInterleaved1F1B && (B / (dp * mbs)) % pp != 0)
                            rule = 13;
                          else if (sch == Schedule::kInterleaved1F1B && 1LL * pp * vpp > m.layers)
                            rule = 14;
                          else if (m.moe_experts == 0 && (ep > 1 || etp > 1))
                            rule = 15;
                          else if (m.moe_experts > 0 && m.moe_experts % ep != 0)
                            rule = 16;
                          else if (m.moe_experts > 0 &&
                                   (1LL * tp * cp * dp) % (1LL * ep * etp) != 0)
                            rule = 17;
                          else if (m.moe_experts > 0 && tp > 1 && !sp)
                            rule = 18;
                          else if (sch == Schedule::kZBV && 2LL * pp > m.layers)
                            rule = 19;
                          else if (sch == Schedule::kDualPipe && pp > 1 && pp % 2 != 0)
                            rule = 20;
                          else if (sch == Schedule::kDualPipe && pp > 1 &&
                                   ((B / (dp * mbs)) % 2 != 0 || B / (dp * mbs) < 2LL * pp))
                            rule = 21;
                          if (rule >= 0) {
                            ++r.removed[static_cast<std::size_t>(rule)];
                            continue;
                          }
                          Candidate c;
                          c.gpus = N;
                          c.tp = tp;
                          c.pp = pp;
                          c.cp = cp;
                          c.dp = static_cast<int>(dp);
                          c.vpp = vpp;
                          c.mbs = mbs;
                          c.schedule = sch;
                          c.recompute = rc;
                          c.sp = static_cast<std::uint8_t>(sp);
                          c.zero = static_cast<std::uint8_t>(z);
                          c.ep = ep;
                          c.etp = etp;
                          r.keys.push_back(candidate_key(c));
                          r.stages += 1LL * pp * vpp;
                        }
            }
      }
  }
  std::sort(r.keys.begin(), r.keys.end());
  return r;
}

template <typename T>
std::vector<T> pick(std::mt19937_64& rng, const std::vector<T>& from) {
  std::vector<T> out;
  for (const T& v : from)
    if (rng() % 2) out.push_back(v);
  return out;  // may be empty = auto
}

// Small random problems that reach every rule: odd GPU counts, lists with values that
// divide nothing, few layers, short sequences, TP across domains.
Problem random_problem(std::mt19937_64& rng) {
  Problem p = test::llama70b_h200();
  const std::vector<int> gpu_choices{1, 2, 6, 8, 12, 16, 24, 32, 48, 64, 96};
  p.gpus = pick(rng, gpu_choices);
  if (p.gpus.empty()) p.gpus = {16};
  p.model.layers = std::vector<int>{1, 3, 6, 12, 80}[rng() % 5];
  p.model.attention_heads = std::vector<int>{8, 12, 64}[rng() % 3];
  p.model.kv_heads = std::vector<int>{4, 8}[rng() % 2];
  p.model.seq_length = std::vector<int>{2048, 4096, 8192, 6000}[rng() % 4];
  p.training.global_batch_size = std::vector<int>{1, 24, 64, 256}[rng() % 4];
  p.cluster.nvlink_domain_size = std::vector<int>{4, 8}[rng() % 2];
  p.cluster.allow_tp_across_domains = rng() % 2;
  p.search.tp = pick(rng, std::vector<int>{1, 2, 3, 4, 8, 16});
  p.search.pp = pick(rng, std::vector<int>{1, 2, 3, 4, 5, 8});
  p.search.cp = pick(rng, std::vector<int>{1, 2, 3, 4});
  p.search.mbs = pick(rng, std::vector<int>{1, 2, 3, 4, 8});
  p.search.vpp = pick(rng, std::vector<int>{1, 2, 3, 5});
  p.search.schedule =
      pick(rng, std::vector<Schedule>{Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved1F1B,
                                      Schedule::kZBH1, Schedule::kZBV, Schedule::kDualPipe});
  p.search.recompute = pick(rng, std::vector<Recompute>{Recompute::kNone, Recompute::kFull});
  p.search.sp = pick(rng, std::vector<int>{0, 1});
  p.search.zero = pick(rng, std::vector<int>{0, 1, 2, 3});
  // Mixture of experts and FSDP with PP (docs/moe.md).
  p.model.moe_experts = std::vector<int>{0, 0, 8, 6}[rng() % 4];
  p.model.moe_top_k = p.model.moe_experts > 0 ? 2 : 0;
  p.search.ep = pick(rng, std::vector<int>{1, 2, 3, 4, 8});
  p.search.etp = pick(rng, std::vector<int>{1, 2});
  p.search.fsdp_with_pp = rng() % 2;
  return p;
}

TEST(SweepCount, EqualsTheEnumerationAndTheOneByOneReference) {
  std::mt19937_64 rng(8);
  std::int64_t total = 0;
  for (int k = 0; k < 300; ++k) {
    SCOPED_TRACE("problem " + std::to_string(k));
    const Problem p = random_problem(rng);
    const Enumeration en = enumerate_candidates(p);
    const Reference ref = reference_enumeration(p);
    ASSERT_EQ(en.rules.size(), ref.removed.size());
    for (std::size_t r = 0; r < ref.removed.size(); ++r)
      EXPECT_EQ(en.rules[r].removed, ref.removed[r]) << en.rules[r].name;
    EXPECT_EQ(en.considered, ref.considered);
    std::vector<decltype(candidate_key(Candidate{}))> keys;
    for (const Candidate& c : en.candidates) keys.push_back(candidate_key(c));
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, ref.keys);
    const SweepSize size = sweep_size(p);
    EXPECT_EQ(size.candidates, static_cast<std::int64_t>(en.candidates.size()));
    EXPECT_EQ(count_candidates(p), size.candidates);
    EXPECT_EQ(size.stages, ref.stages);
    total += size.candidates;
  }
  EXPECT_GT(total, 1000);  // the random problems are not all empty
}

TEST(SweepCount, AGpuRangeOnTheSeedModel) {
  Problem p = test::llama70b_h200();
  p.gpus.clear();
  for (int n = 16; n <= 1024; n += 16) p.gpus.push_back(n);
  const Enumeration en = enumerate_candidates(p);
  EXPECT_EQ(count_candidates(p), static_cast<std::int64_t>(en.candidates.size()));
  EXPECT_GT(en.candidates.size(), 10000u);
}

// ---- extreme values: no overflow (the asan preset runs these under UBSan) -----------------
TEST(EnumerationLimits, AutoValuesAtIntMaxDoNotOverflow) {
  Problem p = test::llama70b_h200();
  p.model.seq_length = 1 << 24;
  // c doubles up to 2^30 and then past INT_MAX: powers of two while s / c ≥ 2048.
  std::vector<int> want;
  for (int c = 1; c <= (1 << 24) / 2048; c *= 2) want.push_back(c);
  EXPECT_EQ(auto_cp_values(p, INT_MAX), want);
  EXPECT_EQ(auto_cp_values(p, 1 << 30), want);
  EXPECT_EQ(auto_tp_values(p, INT_MAX), (std::vector<int>{1, INT_MAX}));  // a prime
  EXPECT_EQ(auto_tp_values(p, 1 << 30).size(), 31u);
  EXPECT_EQ(auto_tp_values(p, 131072 - 32).back(), 131072 - 32);
}

TEST(EnumerationLimits, HugeDegreesAndBatchesAreCountedNotOverflowed) {
  Problem p = test::llama70b_h200();
  p.gpus = {1 << 30};
  p.training.global_batch_size = INT_MAX;
  p.model.attention_heads = 1 << 14;
  p.model.kv_heads = 1 << 14;
  p.cluster.allow_tp_across_domains = true;
  p.search.tp = {1, 1 << 14, INT_MAX};
  p.search.pp = {1};
  p.search.cp = {1};
  p.search.mbs = {1 << 30, INT_MAX};
  // dp·mbs ≥ 2^46 never divides INT_MAX: every combination is removed by the batch rule,
  // except TP = INT_MAX, which does not divide 2^30.
  const Enumeration en = enumerate_candidates(p);
  EXPECT_TRUE(en.candidates.empty());
  EXPECT_EQ(count_candidates(p), 0);
  std::int64_t removed = 0;
  for (const RuleCount& r : en.rules) removed += r.removed;
  EXPECT_EQ(removed, en.considered);
  EXPECT_GT(en.considered, 0);
}

TEST(EnumerationLimits, VppAndLayersAtTheirLimits) {
  Problem p = test::llama70b_h200();
  p.gpus = {64};
  p.model.layers = kMaxLayers;
  p.search.vpp = {kMaxVpp, INT_MAX};  // INT_MAX only in code: pp·vpp in 64 bits
  p.search.schedule = {Schedule::kInterleaved1F1B};
  const Enumeration en = enumerate_candidates(p);
  EXPECT_EQ(count_candidates(p), static_cast<std::int64_t>(en.candidates.size()));
  for (const Candidate& c : en.candidates) EXPECT_EQ(c.vpp, kMaxVpp);
  EXPECT_FALSE(en.candidates.empty());
}

TEST(CheckLimits, DegreeProductIsComputedIn64Bits) {
  Problem p = test::llama70b_h200();
  p.gpus = {65536};
  p.search.tp = {65536};
  p.search.pp = {65536};
  p.search.cp = {65536};
  const std::vector<ConfigIssue> issues = check(p);
  const bool product = std::any_of(issues.begin(), issues.end(), [](const ConfigIssue& i) {
    return i.allowed.find("281474976710656") != std::string::npos;  // 2^48
  });
  EXPECT_TRUE(product);
}

// ---- ranges: every numeric key is bounded on both sides ----------------------------------
TEST(KeyRanges, EveryNumberAndCountHasAnUpperBound) {
  for (const KeyInfo& k : key_infos()) {
    if (k.type == KeyType::kInt) {
      EXPECT_EQ(k.allowed.rfind("an integer in [", 0), 0u) << k.name << ": " << k.allowed;
    } else if (k.type == KeyType::kFloat) {
      EXPECT_EQ(k.allowed.rfind("a number in [", 0), 0u) << k.name << ": " << k.allowed;
    } else if (k.type == KeyType::kIntList) {
      EXPECT_NE(k.allowed.find(" in ["), std::string::npos) << k.name << ": " << k.allowed;
    }
  }
}

std::optional<ConfigIssue> set(const std::string& key, const std::string& value) {
  Problem p;
  return apply_key(p, key, value, "--set");
}

TEST(KeyRanges, TheAuditedValuesAreRejectedAndTheLimitsAccepted) {
  // Rejected: each audit reproducer, and one step past each documented bound.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"gpu.activation_overhead", "1e308"},
           {"gpu.peak_tflops", "1e-300"},
           {"gpu.peak_tflops", "100001"},
           {"gpu.memory_gb", "0.5"},
           {"cluster.network_bandwidth_gbit_per_s", "1e-300"},
           {"cluster.nvlink_bandwidth_gb_per_s", "1e-300"},
           {"cluster.network_latency_us", "1e300"},
           {"cluster.nvlink_latency_us", "1000.5"},
           {"gpu.gemm_efficiency", "0.001"},
           {"model.layers", "2147483647"},
           {"model.layers", "100000000"},
           {"model.layers", "4097"},
           {"model.seq_length", "16777217"},
           {"training.global_batch_size", "2147483647"},
           {"search.vpp", "2147483647"},
           {"search.vpp", "65"},
           {"search.tp", "1,2147483647"},
           {"search.mbs", "1073741824"},
           {"search.gpus", "131073"},
           {"search.max_candidates", "0"},
       }) {
    const auto issue = set(key, value);
    ASSERT_TRUE(issue.has_value()) << key << " = " << value;
    EXPECT_EQ(issue->source, "--set");
    EXPECT_EQ(issue->value, value);
    EXPECT_NE(issue->allowed.find(" in "), std::string::npos) << issue->allowed;
  }
  // Accepted: the bounds themselves.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"gpu.peak_tflops", "1"},
           {"gpu.peak_tflops", "100000"},
           {"gpu.activation_overhead", "10"},
           {"gpu.gemm_efficiency", "0.01"},
           {"model.layers", "4096"},
           {"model.seq_length", "16777216"},
           {"search.vpp", "64"},
           {"search.gpus", "131072"},
           {"search.max_candidates", "1000000000"},
       }) {
    EXPECT_FALSE(set(key, value).has_value()) << key << " = " << value;
  }
}

TEST(KeyRanges, ListsHoldAtMost256Values) {
  std::string list;
  for (int i = 1; i <= 257; ++i) list += (i > 1 ? "," : "") + std::to_string(i);
  const auto issue = set("search.tp", list);
  ASSERT_TRUE(issue.has_value());
  EXPECT_EQ(issue->allowed, "a comma list of at most 256 integers in [1, 131072], or auto");
  EXPECT_FALSE(set("search.tp", list.substr(0, list.rfind(','))).has_value());  // 256 values
}

// ---- ranking fidelity: O(n log n) counts equal the pairwise definition ------------------
struct PairCounts {
  std::int64_t pairs = 0, concordant = 0, ties = 0;
  std::vector<std::string> first_discordant_ids;
};

PairCounts brute_force(const std::vector<RankItem>& g) {
  PairCounts c;
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (std::size_t j = i + 1; j < g.size(); ++j) {
      const RankItem* a = &g[i];
      const RankItem* b = &g[j];
      if (a->measured_s == b->measured_s) {
        ++c.ties;
        continue;
      }
      if (b->measured_s < a->measured_s) std::swap(a, b);
      ++c.pairs;
      if (a->predicted_s < b->predicted_s) {
        ++c.concordant;
      } else if (c.first_discordant_ids.size() < kMaxDiscordantShown) {
        c.first_discordant_ids.push_back(a->id + "<" + b->id);
      }
    }
  }
  return c;
}

TEST(RankingFidelity, CountsEqualThePairwiseDefinitionWithTiesAndNaN) {
  std::mt19937_64 rng(42);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int k = 0; k < 200; ++k) {
    SCOPED_TRACE("family " + std::to_string(k));
    const int n = 2 + static_cast<int>(rng() % 60);
    std::vector<RankItem> items;
    for (int i = 0; i < n; ++i) {
      const double m = rng() % 10 == 0 ? nan : static_cast<double>(rng() % 7);
      const double p = rng() % 12 == 0 ? nan : static_cast<double>(rng() % 7);
      items.push_back(RankItem{"fam", "r" + std::to_string(i), p, m});
    }
    const PairCounts want = brute_force(items);
    const std::vector<FamilyRanking> got = ranking_fidelity(items);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].pairs, want.pairs);
    EXPECT_EQ(got[0].concordant, want.concordant);
    EXPECT_EQ(got[0].measured_ties, want.ties);
    ASSERT_EQ(got[0].discordant.size(), want.first_discordant_ids.size());
    for (std::size_t d = 0; d < want.first_discordant_ids.size(); ++d) {
      const std::string& line = got[0].discordant[d];
      const std::string& ids = want.first_discordant_ids[d];
      const std::string a = ids.substr(0, ids.find('<'));
      const std::string b = ids.substr(ids.find('<') + 1);
      EXPECT_EQ(line.rfind(a + " < " + b + " ", 0), 0u) << line << " vs " << ids;
    }
  }
}

TEST(RankingFidelity, ALargeFamilyOfEqualRowsIsAllTies) {
  const int n = 20000;  // 2e8 pairs: the pairwise loop would visit every one
  std::vector<RankItem> items(static_cast<std::size_t>(n), RankItem{"fam", "r", 1.0, 2.0});
  const std::vector<FamilyRanking> got = ranking_fidelity(items);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].pairs, 0);
  EXPECT_EQ(got[0].measured_ties, std::int64_t{n} * (n - 1) / 2);
  EXPECT_TRUE(got[0].discordant.empty());
}

// ---- a malformed CSV: at most 20 issues, then their number ------------------------------
std::string header() {
  std::string h;
  for (const char* c : kRunsColumns) h += (h.empty() ? "" : ",") + std::string(c);
  return h + "\n";
}

TEST(CsvIssues, AMillionBadRowsGiveTwentyIssuesAndACount) {
  std::string text = header();
  const int bad = 1000000;
  text.reserve(text.size() + 4u * bad);
  for (int i = 0; i < bad; ++i) text += "a,b\n";
  try {
    (void)parse_runs_csv(text, "t.csv");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 21u);
    EXPECT_EQ(e.issues()[0].message(), "t.csv:2: 2 fields: 29 fields, as many as the header has");
    EXPECT_EQ(e.issues()[19].source, "t.csv:21");
    EXPECT_EQ(e.issues()[20].message(),
              "t.csv: ... and 999980 more issues: the first 20 are shown");
  }
}

TEST(CsvIssues, SplittingIssuesAreCappedToo) {
  std::string text = header();
  for (int i = 0; i < 100; ++i) text += "a\"b\n";
  try {
    (void)split_csv(text, "q.csv");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 21u);
    EXPECT_EQ(e.issues()[0].source, "q.csv:2");
    EXPECT_EQ(e.issues()[20].value, "... and 80 more issues");
  }
}

TEST(CsvIssues, ColumnsShareTheKeyRanges) {
  // The reproducer: layers = 999999999 used to reach the engine as an internal error.
  const std::vector<std::string> cols(kRunsColumns.begin(), kRunsColumns.end());
  std::vector<std::string> row(cols.size(), "");
  auto setc = [&](const std::string& name, const std::string& v) {
    row[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin())] = v;
  };
  setc("id", "r1");
  setc("layers", "999999999");
  setc("hidden_size", "4096");
  setc("attention_heads", "32");
  setc("seq_length", "2048");
  setc("mlp", "gelu");
  setc("gpu", "h100");
  setc("gpus", "8");
  setc("network_gbit_per_s", "1e-300");
  setc("tp", "1");
  setc("pp", "1");
  setc("cp", "1");
  setc("dp", "8");
  setc("vpp", "65");
  setc("global_batch_size", "64");
  std::string line;
  for (const std::string& f : row) line += (line.empty() ? "" : ",") + f;
  try {
    (void)parse_runs_csv(header() + line + "\n", "t.csv");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::vector<std::string> got;
    for (const ConfigIssue& i : e.issues()) got.push_back(i.message());
    EXPECT_EQ(got, (std::vector<std::string>{
                       "t.csv:2: layers = 999999999: an integer in [1, 4096]",
                       "t.csv:2: network_gbit_per_s = 1e-300: a number in [1, 100000] (Gbit/s "
                       "per GPU), or empty",
                       "t.csv:2: vpp = 65: an integer in [1, 64], or empty (searched)"}));
  }
}

}  // namespace
}  // namespace ppsearch
