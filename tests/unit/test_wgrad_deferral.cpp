// Deferred output-layer wgrad (training.defer_embedding_wgrad, docs/step-time.md "Deferred
// output-layer wgrad"): Megatron-Core's defer_embedding_wgrad_compute moves the output layer's
// weight-gradient GEMMs of the first wgrad_deferral_limit micro-batches (0 = all) out of the
// steady state and runs them after the last pipeline rank's last backward, keeping their inputs
// and output gradients until then. The work is moved, not removed; pp = 1 is untouched (Megatron
// refuses the option there); the runs CSV column reaches the keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../support/builders.hpp"
#include "../support/runs_text.hpp"
#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

void expect_same_item(const ItemCost& a, const ItemCost& b, const char* what) {
  EXPECT_EQ(a.fwd_s, b.fwd_s) << what;
  EXPECT_EQ(a.bwd_s, b.bwd_s) << what;
  EXPECT_EQ(a.wgt_s, b.wgt_s) << what;
  EXPECT_EQ(a.compute_s, b.compute_s) << what;
  EXPECT_EQ(a.act_bytes, b.act_bytes) << what;
  EXPECT_EQ(a.transient_bytes, b.transient_bytes) << what;
  EXPECT_EQ(a.static_bytes, b.static_bytes) << what;
}

Problem deferring(Problem p, int limit) {
  p.training.defer_embedding_wgrad = true;
  p.training.wgrad_deferral_limit = limit;
  return p;
}

TEST(WgradDeferral, ChainCostsMoveTheDeferredGemmsToTheEnd) {
  const Problem off = test::llama70b_h200();
  const Candidate c = test::make_candidate(off, 4, 4, 2, 1, Schedule::k1F1B, Recompute::kNone);
  const double M = c.num_microbatches;
  ASSERT_EQ(M, 128.0);
  const Links l = effective_links(off.cluster);
  const ChainCosts a = chain_costs(off, c, l);
  EXPECT_EQ(a.head_deferred_wgrad_s, 0.0);  // the key is off by default
  const double g = a.head.wgt_s;
  ASSERT_GT(g, 0.0);
  const double one =
      chain_costs(deferring(off, 1), c, l).head.transient_bytes - a.head.transient_bytes;
  // One micro-batch's buffers: the bf16 output-layer input (SP-local) and its output gradient,
  // at the activation overhead.
  const double h = off.model.hidden_size, V = off.model.vocab_size, m = 8192.0;
  EXPECT_NEAR(one, 2.0 * m * (h / 4 + V / 4) * off.gpu.activation_overhead, 1e-6 * one);
  for (int limit : {0, 1, 5, 22, 128, 500}) {
    SCOPED_TRACE(limit);
    const ChainCosts b = chain_costs(deferring(off, limit), c, l);
    const double k = limit == 0 ? M : std::min<double>(limit, M);
    expect_same_item(a.embed, b.embed, "embedding");
    expect_same_item(a.layer, b.layer, "layer");
    EXPECT_EQ(b.head.fwd_s, a.head.fwd_s);
    EXPECT_EQ(b.head.bwd_s, a.head.bwd_s);
    EXPECT_EQ(b.head.compute_s, a.head.compute_s);  // the same GEMMs, run later
    EXPECT_DOUBLE_EQ(b.head_deferred_wgrad_s, k * g);
    // Conservation: what leaves the M steady-state backwards runs once at the end.
    EXPECT_NEAR(M * b.head.wgt_s + b.head_deferred_wgrad_s, M * g, 1e-12 * M * g);
    EXPECT_NEAR(b.head.transient_bytes - a.head.transient_bytes, k * one, 1e-9 * k * one);
  }
  // pp = 1: Megatron refuses the option; nothing changes.
  const Candidate c1 = test::make_candidate(off, 4, 1, 8, 1, Schedule::k1F1B, Recompute::kFull);
  const ChainCosts a1 = chain_costs(off, c1, l);
  const ChainCosts b1 = chain_costs(deferring(off, 0), c1, l);
  expect_same_item(a1.head, b1.head, "head at pp = 1");
  EXPECT_EQ(b1.head_deferred_wgrad_s, 0.0);
}

// The evaluator: on a fixed split, every rank's busy time is unchanged (the last rank's up to
// rounding: the GEMMs moved, not dropped), the last rank's gradients end after the deferred
// GEMMs and no later than that shift on its undeferred schedule, and its memory grows by the
// buffers.
TEST(WgradDeferral, EvaluatorRunsTheDeferredGemmsAfterTheLastBackward) {
  Problem p = test::llama70b_h200();
  p.search.pp_layout = "Et*20|t*20|t*20|t*20L";
  p.search.vpp = {1};
  const Candidate c = test::make_candidate(p, 4, 4, 2, 1, Schedule::k1F1B, Recompute::kNone);
  const Links l = effective_links(p.cluster);
  EvalOptions o;
  o.want_breakdown = true;
  Evaluator off_ev(p, o);
  Evaluation off;
  off_ev.evaluate(c, &off);
  ASSERT_TRUE(off.feasible) << explain(off);
  const EvalBreakdown bo = off_ev.breakdown();
  for (int limit : {8, 22}) {
    SCOPED_TRACE(limit);
    const Problem q = deferring(p, limit);
    const ChainCosts cq = chain_costs(q, c, l);
    const double deferred = cq.head_deferred_wgrad_s;
    ASSERT_GT(deferred, 0.0);
    Evaluator on_ev(q, o);
    Evaluation on;
    on_ev.evaluate(c, &on);
    ASSERT_TRUE(on.feasible) << explain(on);
    const EvalBreakdown& bn = on_ev.breakdown();
    const int last = 3;
    for (int d = 0; d < last; ++d) {
      EXPECT_EQ(bn.busy_s[d], bo.busy_s[d]) << d;
      EXPECT_EQ(bn.memory_bytes[d], bo.memory_bytes[d]) << d;
    }
    EXPECT_NEAR(bn.busy_s[last], bo.busy_s[last], 1e-9 * bo.busy_s[last]);
    EXPECT_LE(bn.grad_end_s[last] - deferred, bo.grad_end_s[last] * (1 + 1e-12));
    EXPECT_GT(bn.grad_end_s[last], bo.grad_end_s[last] - deferred);
    const double buffers = cq.head.transient_bytes - chain_costs(p, c, l).head.transient_bytes;
    EXPECT_NEAR(bn.transient_bytes[last] - bo.transient_bytes[last], buffers, 1e-6 * buffers);
    EXPECT_GT(bn.memory_bytes[last], bo.memory_bytes[last]);
    // The step cannot end later than the undeferred one by more than the moved GEMMs.
    EXPECT_LE(on.iteration_time_s, off.iteration_time_s + deferred);
  }
  // Without a limit all 128 micro-batches' buffers (77 GB here) stay until the flush: the last
  // rank no longer fits, which is what the recipes' limits avoid.
  Evaluation all;
  Evaluator(deferring(p, 0), o).evaluate(c, &all);
  EXPECT_FALSE(all.feasible);
  EXPECT_EQ(all.reason, Infeasible::kMemory);
}

// The runs CSV column: the dgxc-benchmarking v25.01 Llama 3.1 70B and Nemotron-4 340B rows state
// their YAMLs' limit 22, the 405B rows with pp > 1 the limit 50 (the 32-GPU pp = 1 run switches
// it off in configure.sh), the v25.05 405B rows the NeMo 2.0 recipe's 50; every other row leaves
// it empty; the value reaches the keys; a bad cell is an issue naming the column and what is
// allowed.
TEST(WgradDeferral, RunsCsvColumnReachesTheKeys) {
  const std::string text = test::validation_text("runs-public.csv");
  const std::vector<RunRecord> runs = parse_runs_csv(text, "runs-public.csv");
  int stated = 0;
  for (const RunRecord& r : runs) {
    const bool v2501 = r.id.rfind("dgxc-v25.01-", 0) == 0;
    const bool v2505 = r.id.rfind("dgxc-v25.05-llama31-405b-", 0) == 0;
    const bool mid = v2501 && (r.id.find("llama31-70b") != std::string::npos ||
                               r.id.find("nemotron4-340b") != std::string::npos);
    const bool big = (v2501 || v2505) && r.id.find("llama31-405b") != std::string::npos && r.pp > 1;
    if (mid || big) {
      ASSERT_TRUE(r.wgrad_deferral_limit.has_value()) << r.id;
      EXPECT_EQ(*r.wgrad_deferral_limit, mid ? 22 : 50) << r.id;
      ++stated;
      if (r.precision != "bf16") continue;  // the builders' H200 has no FP8 peak
      Problem p = test::llama70b_h200();
      std::string why;
      ASSERT_TRUE(apply_run_to_problem(r, map_gpu(r.gpu), &p, &why)) << r.id << ": " << why;
      EXPECT_TRUE(p.training.defer_embedding_wgrad) << r.id;
      EXPECT_EQ(p.training.wgrad_deferral_limit, *r.wgrad_deferral_limit) << r.id;
    } else {
      EXPECT_FALSE(r.wgrad_deferral_limit.has_value()) << r.id;
    }
  }
  EXPECT_EQ(stated, 40);
  // A negative cell in the first row that states one.
  std::string bad = text, was;
  ASSERT_TRUE(test::replace_cell(&bad, "dgxc-v25.01-llama31-70b-bf16-64", "wgrad_deferral_limit",
                                 "-1", &was));
  ASSERT_EQ(was, "22");
  try {
    parse_runs_csv(bad, "t.csv");
    ADD_FAILURE() << "no issue for wgrad_deferral_limit = -1";
  } catch (const ConfigError& e) {
    bool found = false;
    for (const auto& i : e.issues())
      found |= i.message().find("wgrad_deferral_limit = -1: an integer in [0, 1000000]") !=
               std::string::npos;
    EXPECT_TRUE(found) << e.what();
  }
}

}  // namespace
}  // namespace ppsearch
