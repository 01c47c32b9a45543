// Benchmarks of the search's hot path: Evaluator::evaluate() for one candidate, and the whole
// enumeration + evaluation loop of a search (single thread, pure core, no MPI).
//
// Evaluate405B/<schedule>/<path>: Llama-3-405B-shaped candidates (126 layers, GQA, SwiGLU,
//   s = 8192, global batch 2048) on 1024 H200 in 16-GPU nodes with 8-GPU NVLink domains,
//   TP 8 · PP 16 · DP 8, micro-batch 1 (M = 256 micro-batches), sequence parallelism and the
//   distributed optimizer (ZeRO-1). One Evaluator is reused across iterations, as each search
//   thread does, so its workspaces and compiled-schedule cache are warm (the enumeration groups
//   candidates of equal pipeline shape for exactly this reason). Each iteration evaluates the
//   next of three candidates that differ only in recompute (none, selective, full), so nothing
//   memoised from the previous candidate applies; the counters are the selective one's.
//   path = fast:      EvalOptions{} (O(L·S) partitioner, periodic fast simulation).
//   path = reference: EvalOptions{reference_partitioner, full_simulation} (O(L²·S) DP, every
//                     micro-batch simulated), i.e. `--partitioner reference --simulation full`.
//   path = fast-same: EvalOptions{}, the selective candidate every time (the cost of
//                     re-evaluating an unchanged candidate, e.g. a memo hit).
//
// EvaluateRepair405B/<on|off>: the interleaved Evaluate405B candidate on a GPU 1 % short of its
//   memory, with and without the interleaved memory repair (EvalOptions::memory_repair).
// Enumerate/<problem>: enumerate_candidates() alone on the default (all-auto) search.
// Sweep/<problem>/<path>: enumerate_candidates() and then one evaluate() per candidate with a
//   fresh Evaluator per sweep (cold caches, as in a real run). Counters: cand/s (per CPU
//   second), t/cand (CPU time per candidate), the candidate count and how many are feasible.
//   <problem> = llama3-70b-h200x128: Llama-3-70B on 128 H200 in 16-GPU nodes (the default
//               cluster, configs/clusters/h200-16gpu-ib.ini), global batch 256;
//               gpt3-13b-a100x128:   GPT-3 13B on 128 A100 80GB in 8-GPU DGX nodes
//               (configs/models/gpt3-13b.ini, configs/clusters/a100-8gpu-hdr.ini), batch 1024.
//
// Hardware and model constants are those of the presets under configs/ (their sources are
// cited there); the problems are built by hand because the core has no config loader.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/specs.hpp"
#include "support/builders.hpp"

namespace ppsearch {
namespace {

// ---- Hardware (configs/gpus/*.ini, configs/clusters/*.ini) --------------------------------

GpuSpec h200() {  // configs/gpus/h200.ini
  GpuSpec g;
  g.name = "h200";
  g.peak_flop_per_s = 989e12;
  g.memory_bytes = 141e9;
  g.hbm_bytes_per_s = 4.8e12;
  g.sm_count = 132;
  g.gemm_efficiency = 0.66;
  g.attention_efficiency = 0.5;
  g.memory_efficiency = 0.8;
  return g;
}

ClusterSpec h200_16gpu_ib() {  // configs/clusters/h200-16gpu-ib.ini
  ClusterSpec k;
  k.name = "h200-16gpu-ib";
  k.gpu_preset = "h200";
  k.gpus_per_node = 16;
  k.nvlink_domain_size = 8;
  k.nvlink_bytes_per_s = 450e9;
  k.nvlink_efficiency = 0.82;
  k.nvlink_latency_s = 3.4e-6;
  k.network_bytes_per_s = 50e9;  // 400 Gb/s NDR per GPU
  k.network_efficiency = 0.95;
  k.network_latency_s = 14e-6;
  return k;
}

GpuSpec a100_80gb() {  // configs/gpus/a100-80gb.ini
  GpuSpec g;
  g.name = "a100-80gb";
  g.peak_flop_per_s = 312e12;
  g.memory_bytes = 80e9;
  g.hbm_bytes_per_s = 2.039e12;
  g.sm_count = 108;
  g.gemm_efficiency = 0.80;
  g.attention_efficiency = 0.08;
  g.memory_efficiency = 0.42;
  return g;
}

ClusterSpec a100_8gpu_hdr() {  // configs/clusters/a100-8gpu-hdr.ini
  ClusterSpec k;
  k.name = "a100-8gpu-hdr";
  k.gpu_preset = "a100-80gb";
  k.gpus_per_node = 8;
  k.nvlink_domain_size = 8;
  k.nvlink_bytes_per_s = 300e9;
  k.nvlink_efficiency = 0.8;
  k.nvlink_latency_s = 3.4e-6;
  k.network_bytes_per_s = 25e9;  // 200 Gb/s HDR per GPU
  k.network_efficiency = 0.96;
  k.network_latency_s = 14e-6;
  return k;
}

// ---- Problems ------------------------------------------------------------------------------

// Aborts with the issues when a hand-built problem is not a valid one (a benchmark of an
// invalid problem would time the wrong thing).
Problem checked(Problem p) {
  resolve_defaults(p);
  const std::vector<ConfigIssue> issues = check(p);
  if (!issues.empty()) {
    for (const ConfigIssue& i : issues) std::fprintf(stderr, "%s\n", i.message().c_str());
    std::abort();
  }
  return p;
}

// configs/models/llama3-405b.ini (arXiv 2407.21783 Table 3) on 1024 H200.
Problem llama405b_h200x1024() {
  Problem p;
  p.model.name = "llama3-405b";
  p.model.layers = 126;
  p.model.hidden_size = 16384;
  p.model.ffn_hidden_size = 53248;
  p.model.attention_heads = 128;
  p.model.kv_heads = 8;
  p.model.head_dim = 128;
  p.model.vocab_size = 128256;
  p.model.seq_length = 8192;
  p.model.mlp = MlpKind::kSwiGLU;
  p.model.tied_embeddings = false;
  p.training.global_batch_size = 2048;
  p.gpu = h200();
  p.cluster = h200_16gpu_ib();
  p.gpus = {1024};
  return checked(p);
}

// configs/models/llama3-70b.ini on 128 H200 (tests/support/builders.hpp's shape with the
// calibrated H200 preset constants), every search knob on auto.
Problem llama70b_h200x128() {
  Problem p = test::llama70b_h200();
  p.gpu = h200();
  p.cluster = h200_16gpu_ib();
  p.gpus = {128};
  p.search = SearchSpec{};
  return checked(p);
}

// configs/models/gpt3-13b.ini (arXiv 2005.14165 Table 2.1, Megatron-LM form) on 128 A100 80GB,
// every search knob on auto.
Problem gpt13b_a100x128() {
  Problem p;
  p.model.name = "gpt3-13b";
  p.model.layers = 40;
  p.model.hidden_size = 5120;
  p.model.ffn_hidden_size = 20480;
  p.model.attention_heads = 40;
  p.model.kv_heads = 40;
  p.model.head_dim = 128;
  p.model.vocab_size = 51200;
  p.model.seq_length = 2048;
  p.model.mlp = MlpKind::kGeLU;
  p.model.tied_embeddings = true;  // Megatron-LM GPT default, as in the preset
  p.training.global_batch_size = 1024;
  p.gpu = a100_80gb();
  p.cluster = a100_8gpu_hdr();
  p.gpus = {128};
  p.search = SearchSpec{};
  return checked(p);
}

EvalOptions eval_options(bool reference) {
  EvalOptions o;
  o.reference_partitioner = reference;
  o.full_simulation = reference;
  return o;
}

const char* path_name(bool reference) { return reference ? "reference" : "fast"; }

// ---- Evaluate405B ---------------------------------------------------------------------------

// `rotate`: cycle through three candidates of the same pipeline shape that differ only in
// recompute (none, selective, full), with the Evaluator's memos of recent simulations and
// partitions off (EvalOptions::memo, docs/performance.md; they would hold all three): the time
// is that of a full evaluation. Otherwise the selective candidate is evaluated over and over,
// memos on (what a memo hit costs, where there is one).
void BM_Evaluate405B(benchmark::State& state, Schedule schedule, bool reference, bool rotate) {
  static const Problem pb = llama405b_h200x1024();
  const int vpp = schedule == Schedule::kInterleaved1F1B ? 2 : 1;
  std::vector<Candidate> cands;
  for (Recompute r : {Recompute::kSelective, Recompute::kNone, Recompute::kFull}) {
    cands.push_back(test::make_candidate(pb, /*tp=*/8, /*pp=*/16, /*dp=*/8, /*mbs=*/1, schedule, r,
                                         /*sp=*/1, /*zero=*/1, vpp));
    if (!rotate) break;
  }
  EvalOptions options = eval_options(reference);
  options.memo = !rotate;
  Evaluator ev(pb, options);
  Evaluation e;
  int feasible = 0;
  for (const Candidate& c : cands) {  // warm the workspaces and the compiled-schedule cache
    ev.evaluate(c, &e);
    feasible += e.feasible ? 1 : 0;
  }
  std::size_t i = 0;
  for (auto _ : state) {
    ev.evaluate(cands[i], &e);
    if (++i == cands.size()) i = 0;
    // DoNotOptimize on a copy: with g++ 12 and Google Benchmark 1.7.1 its "+m,r" asm on the
    // member itself was seen to leave garbage in e.iteration_time_s.
    double t = e.iteration_time_s;
    benchmark::DoNotOptimize(t);
  }
  ev.evaluate(cands[0], &e);  // the selective-recompute candidate's figures
  state.counters["feasible"] = feasible;
  state.counters["step_s"] = e.iteration_time_s;
  state.counters["mfu"] = e.mfu;
  state.counters["bubble"] = e.bubble_fraction;
}

// ---- EvaluateRepair405B ----------------------------------------------------------------------

// The interleaved memory repair (docs/algorithms.md §1.3 "Memory repair") on its own: the
// interleaved Evaluate405B candidate (selective recompute, VPP 2) on an H200 whose capacity is
// 1 % below what that candidate needs with room to spare, so that no candidate chunk chain fits
// and the evaluator walks (`repair` = on) or goes straight to the budgeted fallbacks (off). Memos
// off, so every iteration evaluates in full. Counters: feasible and the step time.
void BM_EvaluateRepair405B(benchmark::State& state, bool repair) {
  static const Problem tight = [] {
    Problem p = llama405b_h200x1024();
    const Candidate c = test::make_candidate(p, 8, 16, 8, 1, Schedule::kInterleaved1F1B,
                                             Recompute::kSelective, 1, 1, 2);
    const Evaluation roomy = evaluate(p, c);
    p.gpu.memory_bytes =
        roomy.needed_bytes * 0.99 / p.gpu.memory_usable_factor + p.gpu.memory_headroom_bytes;
    return p;
  }();
  const Candidate c = test::make_candidate(tight, 8, 16, 8, 1, Schedule::kInterleaved1F1B,
                                           Recompute::kSelective, 1, 1, 2);
  EvalOptions options = eval_options(false);
  options.memo = false;
  options.memory_repair = repair;
  Evaluator ev(tight, options);
  Evaluation e;
  ev.evaluate(c, &e);  // warm the workspaces and the compiled-schedule cache
  for (auto _ : state) {
    ev.evaluate(c, &e);
    double t = e.iteration_time_s;
    benchmark::DoNotOptimize(t);
  }
  state.counters["feasible"] = e.feasible ? 1 : 0;
  state.counters["step_s"] = e.feasible ? e.iteration_time_s : 0.0;
}

// ---- Enumerate / Sweep ----------------------------------------------------------------------

struct NamedProblem {
  const char* name;
  Problem (*make)();
};

const NamedProblem kSweepProblems[] = {
    {"llama3-70b-h200x128", llama70b_h200x128},
    {"gpt3-13b-a100x128", gpt13b_a100x128},
};

void BM_Enumerate(benchmark::State& state, Problem (*make)()) {
  const Problem pb = make();
  std::size_t n = 0;
  for (auto _ : state) {
    Enumeration en = enumerate_candidates(pb);
    n = en.candidates.size();
    benchmark::DoNotOptimize(en.candidates.data());
  }
  state.counters["candidates"] = static_cast<double>(n);
  state.counters["cand/s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_Sweep(benchmark::State& state, Problem (*make)(), bool reference) {
  const Problem pb = make();
  std::size_t n = 0;
  std::int64_t feasible = 0;
  for (auto _ : state) {
    const Enumeration en = enumerate_candidates(pb);
    Evaluator ev(pb, eval_options(reference));
    Evaluation e;
    feasible = 0;
    for (const Candidate& c : en.candidates) {
      ev.evaluate(c, &e);
      feasible += e.feasible ? 1 : 0;
      double t = e.iteration_time_s;
      benchmark::DoNotOptimize(t);
    }
    n = en.candidates.size();
  }
  const double evaluated = static_cast<double>(n) * static_cast<double>(state.iterations());
  state.counters["candidates"] = static_cast<double>(n);
  state.counters["feasible"] = static_cast<double>(feasible);
  state.counters["cand/s"] = benchmark::Counter(evaluated, benchmark::Counter::kIsRate);
  state.counters["t/cand"] =
      benchmark::Counter(evaluated, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---- Registration ---------------------------------------------------------------------------

[[maybe_unused]] const bool kRegistered = [] {
  const Schedule schedules[] = {Schedule::k1F1B, Schedule::kInterleaved1F1B, Schedule::kZBH1};
  struct Variant {
    const char* name;
    bool reference, rotate;
  };
  const Variant variants[] = {
      {"fast", false, true}, {"reference", true, true}, {"fast-same", false, false}};
  for (Schedule s : schedules) {
    for (const Variant& va : variants) {
      const std::string name = std::string("Evaluate405B/") + to_string(s) + "/" + va.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_Evaluate405B, s, va.reference, va.rotate)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (bool repair : {true, false}) {
    benchmark::RegisterBenchmark(repair ? "EvaluateRepair405B/on" : "EvaluateRepair405B/off",
                                 BM_EvaluateRepair405B, repair)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const NamedProblem& np : kSweepProblems) {
    benchmark::RegisterBenchmark((std::string("Enumerate/") + np.name).c_str(), BM_Enumerate,
                                 np.make)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const NamedProblem& np : kSweepProblems) {
    for (bool reference : {false, true}) {
      const std::string name = std::string("Sweep/") + np.name + "/" + path_name(reference);
      // A sweep takes 0.1-10 s: a few iterations at most, timed in milliseconds.
      benchmark::RegisterBenchmark(name.c_str(), BM_Sweep, np.make, reference)
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace ppsearch
