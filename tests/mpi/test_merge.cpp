// The streamed ranking: merge_ranked against one global sort on random rows (fake sources, the
// same on every rank), its checks (non-finite figures, unsorted sources), and run_search at any
// process count (CTest runs this binary at np 1, 2, 3 and 4) against a serial evaluation sorted
// in one piece, including a failing sink that must leave every rank in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/runtime/run.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/util/error.hpp"
#include "support/builders.hpp"

namespace {

using namespace ppsearch;

std::unique_ptr<Communicator> make_test_communicator() {
  static char program[] = "ppsearch_mpi_tests";
  static char* args[] = {program, nullptr};
  int argc = 1;
  char** argv = args;
  return make_communicator(argc, argv);
}

// A row with a unique key (from `id`), feasible or not, with the given mfu.
ResultRow random_row(int id, bool feasible, double mfu, std::mt19937& rng) {
  ResultRow r;
  std::memset(&r, 0, sizeof r);
  r.gpus = 8 << (id % 4);
  r.tp = 1 + id / 4 % 3;
  r.pp = 1 + id / 12 % 5;
  r.cp = 1;
  r.dp = 1 + id / 60;
  r.vpp = 1;
  r.mbs = 1;
  r.schedule = static_cast<std::uint8_t>(id % 4);
  r.feasible = feasible ? 1 : 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double* figures[] = {&r.iteration_time_s, &r.mfu,          &r.hfu,
                       &r.tflops_per_gpu,   &r.tokens_per_s, &r.bubble_fraction,
                       &r.peak_memory_gb,   &r.compute_s,    &r.tp_comm_s,
                       &r.cp_comm_s,        &r.pp_comm_s,    &r.dp_comm_s,
                       &r.pipeline_s,       &r.optimizer_s};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double* f : figures) *f = feasible ? u(rng) : nan;
  if (feasible) {
    r.mfu = mfu;
    r.needed_memory_gb = r.peak_memory_gb;
  } else {
    r.infeasible_reason = static_cast<std::uint8_t>(1 + id % 3);
    // Memory misses share a few values, so "the first among equals" is tested too.
    r.needed_memory_gb = r.infeasible_reason == 1 ? 100.0 + id % 3 : nan;
  }
  return r;
}

struct Source {
  std::vector<ResultRow> rows;  // sorted
  std::vector<std::vector<StageResult>> stages;
  std::size_t next = 0;
};

// n random rows split over `sources` sources at random; mfu from a few values (many ties).
std::vector<Source> random_sources(int n, int sources, std::mt19937& rng) {
  std::vector<Source> src(static_cast<std::size_t>(sources));
  std::uniform_int_distribution<int> pick(0, sources - 1), mfu(0, 5), stages(0, 4);
  std::bernoulli_distribution feasible(0.6);
  for (int id = 0; id < n; ++id) {
    Source& s = src[static_cast<std::size_t>(pick(rng))];
    const bool f = feasible(rng);
    s.rows.push_back(random_row(id, f, 0.1 * mfu(rng), rng));
  }
  for (Source& s : src) {
    std::sort(s.rows.begin(), s.rows.end(), row_before);
    for (const ResultRow& r : s.rows) {
      std::vector<StageResult> st(r.feasible ? static_cast<std::size_t>(stages(rng)) : 0);
      for (std::size_t k = 0; k < st.size(); ++k) {
        st[k].stage = static_cast<int>(k);
        st[k].first_layer = r.gpus + r.tp;  // tied to the row, to catch a mix-up
        st[k].last_layer = r.dp;
        st[k].time_s = r.mfu;
        st[k].memory_gb = r.peak_memory_gb;
      }
      s.stages.push_back(st);
    }
  }
  return src;
}

// Delivers each source's rows in blocks of random length (1..max_block).
BlockFetch fake_fetch(std::vector<Source>& src, int max_block, std::mt19937& rng) {
  return [&src, max_block, &rng](const std::vector<int>& which, std::vector<RowBlock>& blocks) {
    std::uniform_int_distribution<int> len(1, max_block);
    for (int w : which) {
      Source& s = src[static_cast<std::size_t>(w)];
      RowBlock& b = blocks[static_cast<std::size_t>(w)];
      b = RowBlock();
      const std::size_t end = std::min(s.rows.size(), s.next + static_cast<std::size_t>(len(rng)));
      for (; s.next < end; ++s.next) {
        b.rows.push_back(s.rows[s.next]);
        b.stage_count.push_back(static_cast<std::int32_t>(s.stages[s.next].size()));
        b.stages.insert(b.stages.end(), s.stages[s.next].begin(), s.stages[s.next].end());
      }
    }
  };
}

struct Collected {
  std::vector<ResultRow> rows;
  std::vector<StageRow> stages;
  int calls = 0;
  std::size_t largest = 0;
};

RowSink collect_into(Collected& c) {
  return [&c](const std::vector<ResultRow>& rows, const std::vector<StageRow>& stages) {
    EXPECT_FALSE(rows.empty());
    ++c.calls;
    c.largest = std::max(c.largest, rows.size());
    c.rows.insert(c.rows.end(), rows.begin(), rows.end());
    c.stages.insert(c.stages.end(), stages.begin(), stages.end());
  };
}

bool same_bytes(const ResultRow& a, const ResultRow& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(MergeRanked, EqualsOneGlobalSortOnRandomRows) {
  std::mt19937 rng(12345);
  for (int sources : {1, 2, 3, 5, 8}) {
    for (int max_block : {1, 3, 64}) {
      for (std::int64_t sink_rows : {1, 7, 1000}) {
        SCOPED_TRACE("sources=" + std::to_string(sources) + " block=" + std::to_string(max_block) +
                     " sink_rows=" + std::to_string(sink_rows));
        const int n = 300;
        std::vector<Source> src = random_sources(n, sources, rng);
        // The reference: every row sorted in one piece, with its stages.
        std::vector<std::pair<ResultRow, std::vector<StageResult>>> all;
        for (const Source& s : src)
          for (std::size_t i = 0; i < s.rows.size(); ++i) all.emplace_back(s.rows[i], s.stages[i]);
        std::sort(all.begin(), all.end(),
                  [](const auto& a, const auto& b) { return row_before(a.first, b.first); });

        Collected got;
        const std::int64_t keep_top = 10;
        const SearchOutput out = merge_ranked(sources, fake_fetch(src, max_block, rng),
                                              collect_into(got), keep_top, sink_rows);
        ASSERT_EQ(got.rows.size(), all.size());
        EXPECT_LE(got.largest, static_cast<std::size_t>(sink_rows));
        std::vector<StageRow> want_stages;
        std::int64_t feasible = 0;
        std::array<std::int64_t, kNumInfeasible> by_reason{};
        std::map<int, ResultRow> best;
        const ResultRow* closest = nullptr;
        for (std::size_t i = 0; i < all.size(); ++i) {
          const ResultRow& r = all[i].first;
          EXPECT_TRUE(same_bytes(got.rows[i], r)) << "row " << i;
          best.emplace(r.gpus, r);
          if (r.feasible) {
            ++feasible;
            for (const StageResult& st : all[i].second)
              want_stages.push_back(
                  StageRow{static_cast<std::int64_t>(i), st.stage, st.pipeline_rank, st.first_layer,
                           st.last_layer, st.time_s, st.memory_gb, st.weights_gb, st.gradients_gb,
                           st.optimizer_gb, st.activations_gb, st.wstate_gb, st.transient_gb,
                           st.workspace_gb, st.recomputed_layers});
          } else {
            ++by_reason[r.infeasible_reason];
            if (r.infeasible_reason == 1 &&
                (!closest || r.needed_memory_gb < closest->needed_memory_gb))
              closest = &r;
          }
        }
        ASSERT_EQ(got.stages.size(), want_stages.size());
        for (std::size_t k = 0; k < want_stages.size(); ++k)
          EXPECT_EQ(std::memcmp(&got.stages[k], &want_stages[k], sizeof(StageRow)), 0)
              << "stage row " << k;
        EXPECT_EQ(out.evaluated, n);
        EXPECT_EQ(out.feasible, feasible);
        EXPECT_EQ(out.by_reason, by_reason);
        ASSERT_EQ(out.top.size(), static_cast<std::size_t>(keep_top));
        for (std::size_t i = 0; i < out.top.size(); ++i)
          EXPECT_TRUE(same_bytes(out.top[i], all[i].first));
        ASSERT_EQ(out.best.size(), best.size());
        std::size_t k = 0;
        for (const auto& kv : best) EXPECT_TRUE(same_bytes(out.best[k++], kv.second));
        ASSERT_EQ(out.has_closest_miss, closest != nullptr);
        if (closest) {
          EXPECT_TRUE(same_bytes(out.closest_miss, *closest));
        }
        std::vector<StageRow> first;
        for (const StageRow& s : want_stages)
          if (s.candidate == 0) first.push_back(s);
        ASSERT_EQ(out.first_stages.size(), first.size());
        for (std::size_t i = 0; i < first.size(); ++i)
          EXPECT_EQ(std::memcmp(&out.first_stages[i], &first[i], sizeof(StageRow)), 0);
      }
    }
  }
}

TEST(MergeRanked, NoSourcesAndEmptySourcesGiveNothing) {
  Collected got;
  SearchOutput out = merge_ranked(0, BlockFetch(), collect_into(got), 5);
  EXPECT_EQ(out.evaluated, 0);
  std::vector<Source> src(3);
  std::mt19937 rng(1);
  out = merge_ranked(3, fake_fetch(src, 4, rng), collect_into(got), 5);
  EXPECT_EQ(out.evaluated, 0);
  EXPECT_EQ(got.calls, 0);
  EXPECT_TRUE(out.top.empty());
  EXPECT_TRUE(out.best.empty());
}

// A feasible row with a NaN or infinite figure is a bug report: the merge stops before the row
// (or its block) reaches the sink. Infeasible rows carry NaN by contract and pass.
TEST(MergeRanked, NonFiniteFeasibleRowNeverReachesTheSink) {
  for (int field = 0; field < 3; ++field) {
    std::mt19937 rng(7);
    std::vector<Source> src = random_sources(200, 3, rng);
    // Spoil the third feasible row of source 1 (after sorting, so it keeps its place).
    Source& s = src[1];
    int seen = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < s.rows.size(); ++i)
      if (s.rows[i].feasible && ++seen == 3) at = i;
    ASSERT_EQ(seen >= 3, true);
    ResultRow& bad = s.rows[at];
    if (field == 0) bad.iteration_time_s = std::numeric_limits<double>::quiet_NaN();
    if (field == 1) bad.peak_memory_gb = std::numeric_limits<double>::infinity();
    if (field == 2) bad.tokens_per_s = -std::numeric_limits<double>::infinity();
    const std::string key = row_key_text(bad);
    EXPECT_FALSE(row_is_finite(bad));
    Collected got;
    try {
      merge_ranked(3, fake_fetch(src, 5, rng), collect_into(got), 10, 1);
      ADD_FAILURE() << "no SearchFailed";
    } catch (const SearchFailed& e) {
      EXPECT_EQ(e.exit_code(), static_cast<int>(ExitCode::kInternal));
      EXPECT_EQ(std::string(e.what()),
                "internal error: non-finite result for candidate " + key + "; please report");
    }
    for (const ResultRow& r : got.rows) EXPECT_TRUE(row_is_finite(r));
    EXPECT_LT(got.rows.size(), 200u);
  }
  // A NaN stage of a feasible row is caught too.
  std::mt19937 rng(8);
  std::vector<Source> src = random_sources(100, 2, rng);
  bool spoiled = false;
  for (auto& st : src[0].stages)
    if (!st.empty() && !spoiled) {
      st[0].time_s = std::numeric_limits<double>::quiet_NaN();
      spoiled = true;
    }
  ASSERT_TRUE(spoiled);
  Collected got;
  EXPECT_THROW(merge_ranked(2, fake_fetch(src, 5, rng), collect_into(got), 10, 1), SearchFailed);
  for (const StageRow& s : got.stages) EXPECT_TRUE(std::isfinite(s.time_s));
}

TEST(MergeRanked, InfeasibleRowsWithNanFiguresAreRows) {
  std::mt19937 rng(3);
  ResultRow r = random_row(5, false, 0, rng);
  EXPECT_TRUE(std::isnan(r.mfu));
  EXPECT_TRUE(row_is_finite(r));
}

TEST(MergeRanked, UnsortedSourceIsABug) {
  std::mt19937 rng(9);
  std::vector<Source> src = random_sources(50, 2, rng);
  ASSERT_GE(src[0].rows.size(), 5u);
  std::swap(src[0].rows[1], src[0].rows[4]);
  std::swap(src[0].stages[1], src[0].stages[4]);
  Collected got;
  EXPECT_THROW(merge_ranked(2, fake_fetch(src, 2, rng), collect_into(got), 10, 4),
               std::logic_error);
}

TEST(MergeRanked, RowKeyText) {
  std::mt19937 rng(3);
  ResultRow r = random_row(0, true, 0.5, rng);
  r.tp = 8;
  r.pp = 4;
  r.dp = 2;
  r.gpus = 64;
  r.schedule = 1;
  r.recompute = 0;
  r.sequence_parallel = 1;
  r.zero_stage = 1;
  EXPECT_EQ(row_key_text(r),
            "gpus=64 tp=8 pp=4 cp=1 dp=2 vpp=1 mbs=1 schedule=1f1b recompute=none sp=on zero=1");
  r.schedule = 9;
  EXPECT_NE(row_key_text(r).find("schedule=9"), std::string::npos);
}

// ---- run_search over the real communicator --------------------------------------------------

Problem small_problem() {
  // Two GPU counts, feasible and infeasible rows, a few thousand candidates.
  Problem p = test::llama70b_h200();
  p.gpus = {64, 128};
  p.search.mbs = {1, 2};
  p.search.zero = {0, 1};
  p.search.recompute = {Recompute::kSelective, Recompute::kFull};
  return p;
}

// candidate_of undoes to_row's candidate part for every candidate of a real enumeration (with
// partial recompute in it): a knob added to one of them and not the other fails here.
TEST(CandidateOf, InvertsToRowOnAnEnumeration) {
  Problem p = small_problem();
  p.search.recompute_num_layers = {0, 2, -1};
  const std::vector<Candidate> cands = enumerate_candidates(p).candidates;
  ASSERT_FALSE(cands.empty());
  Evaluation e;
  int partial = 0;
  for (const Candidate& c : cands) {
    const Candidate back = candidate_of(to_row(c, e));
    EXPECT_EQ(candidate_key(back), candidate_key(c));
    EXPECT_EQ(back.num_microbatches, c.num_microbatches);
    EXPECT_EQ(back.global_batch_size, c.global_batch_size);
    partial += c.recompute_num_layers != 0;
  }
  EXPECT_GT(partial, 0);
}

// Every candidate evaluated here, sorted in one piece: the order run_search must reproduce.
void serial_reference(const Problem& p, const std::vector<Candidate>& cands,
                      std::vector<ResultRow>* rows, std::vector<StageRow>* stages) {
  Evaluator ev(p);
  std::vector<std::pair<ResultRow, std::vector<StageResult>>> all;
  for (const Candidate& c : cands) {
    const Evaluation e = ev.evaluate(c);
    all.emplace_back(to_row(c, e), e.feasible ? e.stages : std::vector<StageResult>());
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return row_before(a.first, b.first); });
  for (std::size_t i = 0; i < all.size(); ++i) {
    rows->push_back(all[i].first);
    for (const StageResult& s : all[i].second)
      stages->push_back(StageRow{static_cast<std::int64_t>(i), s.stage, s.pipeline_rank,
                                 s.first_layer, s.last_layer, s.time_s, s.memory_gb, s.weights_gb,
                                 s.gradients_gb, s.optimizer_gb, s.activations_gb, s.wstate_gb,
                                 s.transient_gb, s.workspace_gb, s.recomputed_layers});
  }
}

TEST(RunSearch, StreamsTheSameOrderAsOneGlobalSort) {
  auto comm = make_test_communicator();
  const Problem p = small_problem();
  const std::vector<Candidate> cands = enumerate_candidates(p).candidates;
  ASSERT_GT(cands.size(), 500u);
  ASSERT_LT(cands.size(), 20000u);  // many merge rounds at small block sizes: keep it quick
  std::vector<ResultRow> want_rows;
  std::vector<StageRow> want_stages;
  if (comm->rank() == 0) serial_reference(p, cands, &want_rows, &want_stages);
  struct Variant {
    int threads;
    std::int64_t send_rows, sink_rows;
  };
  for (const Variant v :
       {Variant{1, 0, 0}, Variant{2, 4, 3}, Variant{2, 17, 100}, Variant{1, 100000, 1}}) {
    SCOPED_TRACE("threads=" + std::to_string(v.threads) + " send_rows=" +
                 std::to_string(v.send_rows) + " sink_rows=" + std::to_string(v.sink_rows));
    RunConfig rc;
    rc.threads = v.threads;
    rc.chunk = 7;  // many units, so every rank gets some
    rc.send_rows = v.send_rows;
    rc.sink_rows = v.sink_rows;
    rc.keep_top = 5;
    Collected got;
    if (comm->rank() == 0) rc.sink = collect_into(got);
    const SearchOutput out = run_search(p, cands, *comm, rc);
    if (comm->rank() != 0) {
      EXPECT_EQ(out.evaluated, 0);
      EXPECT_TRUE(out.top.empty());
      continue;
    }
    // No ASSERT on rank 0 alone in this loop: returning early would leave the other ranks
    // waiting in the next run_search.
    EXPECT_EQ(got.rows.size(), want_rows.size());
    std::size_t bad_row = want_rows.size();
    for (std::size_t i = 0;
         i < std::min(got.rows.size(), want_rows.size()) && bad_row == want_rows.size(); ++i)
      if (!same_bytes(got.rows[i], want_rows[i])) bad_row = i;
    EXPECT_EQ(bad_row, want_rows.size()) << "first differing row";
    EXPECT_EQ(got.stages.size(), want_stages.size());
    std::size_t bad_stage = want_stages.size();
    for (std::size_t k = 0;
         k < std::min(got.stages.size(), want_stages.size()) && bad_stage == want_stages.size();
         ++k)
      if (std::memcmp(&got.stages[k], &want_stages[k], sizeof(StageRow)) != 0) bad_stage = k;
    EXPECT_EQ(bad_stage, want_stages.size()) << "first differing stage row";
    EXPECT_EQ(out.evaluated, static_cast<std::int64_t>(cands.size()));
    EXPECT_GT(out.feasible, 0);
    EXPECT_LT(out.feasible, out.evaluated);
    EXPECT_EQ(out.feasible, std::count_if(want_rows.begin(), want_rows.end(),
                                          [](const ResultRow& r) { return r.feasible != 0; }));
    EXPECT_EQ(out.top.size(), 5u);
    for (std::size_t i = 0; i < std::min(out.top.size(), want_rows.size()); ++i)
      EXPECT_TRUE(same_bytes(out.top[i], want_rows[i]));
    EXPECT_EQ(out.rank_busy_s.size(), static_cast<std::size_t>(comm->size()));
    EXPECT_EQ(out.best.size(), 2u);
    if (out.best.size() == 2) {
      EXPECT_EQ(out.best[0].gpus, 64);
      EXPECT_EQ(out.best[1].gpus, 128);
    }
  }
  comm->barrier();
}

// A sink that fails (disk full, out of memory) ends the merge on rank 0 with its exception
// (std::bad_alloc as SearchFailed(2)); the other ranks return, and all of them stay in step.
TEST(RunSearch, FailingSinkReleasesEveryRank) {
  auto comm = make_test_communicator();
  const Problem p = small_problem();
  const std::vector<Candidate> cands = enumerate_candidates(p).candidates;
  for (int kind = 0; kind < 2; ++kind) {
    RunConfig rc;
    rc.threads = 1;
    rc.send_rows = 5;
    rc.sink_rows = 10;
    int calls = 0;
    if (comm->rank() == 0)
      rc.sink = [&](const std::vector<ResultRow>&, const std::vector<StageRow>&) {
        if (++calls == 3) {
          if (kind == 0) throw std::runtime_error("disk full");
          throw std::bad_alloc();
        }
      };
    if (comm->rank() != 0) {
      EXPECT_EQ(run_search(p, cands, *comm, rc).evaluated, 0);
    } else if (kind == 0) {
      EXPECT_THROW(run_search(p, cands, *comm, rc), std::runtime_error);
    } else {
      try {
        run_search(p, cands, *comm, rc);
        ADD_FAILURE() << "no SearchFailed";
      } catch (const SearchFailed& e) {
        EXPECT_EQ(e.exit_code(), static_cast<int>(ExitCode::kUsage));
        EXPECT_NE(std::string(e.what()).find("out of memory while"), std::string::npos);
      }
    }
    // Every rank is at the same point: a collective completes with everyone's value.
    EXPECT_EQ(comm->allreduce_max(comm->rank()), comm->size() - 1);
  }
}

}  // namespace
