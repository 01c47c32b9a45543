// evaluate(): one candidate → predicted step time, MFU, memory per pipeline rank,
// exposed communication and the layer partition, or the reason it cannot run
// (docs/algorithms.md §7 "Engine flow").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct EvalOptions {
  bool reference_partitioner = false;  // O(L²·S) DP instead of the fast exact one
  bool full_simulation = false;        // simulate every micro-batch (no periodic fast path)
  bool want_stages = true;             // fill Evaluation::stages
  bool want_breakdown = false;         // fill Evaluator::breakdown() (explain, trace); the
                                       // search leaves it off
  bool memo = true;  // answer a candidate from recent simulations and memory-free partitions
                     // of identical inputs (docs/performance.md; the same result bit for bit);
                     // off: every candidate is computed in full (benchmarks)
  bool memory_repair = true;  // interleaved / V-shaped: when no candidate chunk chain fits, also
                              // repair the first one item by item (docs/algorithms.md §1.3
                              // "Memory repair"); off: only the per-chunk-budget fallbacks
  bool memory_polish = true;  // interleaved / V-shaped: when the first candidate chunk chain
                              // does not fit, walk from the chosen chain by single-item moves
                              // that stay within the capacity and shorten the step
                              // (docs/algorithms.md §1.3 "Memory polish"); off: keep it
  bool memory_first = true;   // once a layout of the candidate was over the memory capacity (or
                              // is by its bound), simulate the next ones' memory before their
                              // times (simulate_memory(), docs/performance.md "Memory before
                              // time"; the same result bit for bit); off: always in full
  // Interleaved / V-shaped: also simulate the splits Megatron-Core builds with
  // account_for_embedding/loss_in_pipeline_split (megatron_layouts(), docs/algorithms.md §1.3
  // "Megatron's layouts"); off: of Megatron's splits only the even one.
  bool megatron_layouts = true;
};

// What lies behind one feasible evaluation, per pipeline rank (index = rank): the schedule
// that was simulated, the memory terms and the per-kind communication, hidden and exposed.
// Filled by Evaluator::evaluate() only with EvalOptions::want_breakdown (docs/explain.md).
struct EvalBreakdown {
  bool valid = false;      // false after an infeasible candidate or without want_breakdown
  ScheduleInput schedule;  // the simulated input (final partition)
  int critical_rank = 0;   // the rank whose step ends last (before the optimizer)
  double capacity_bytes = 0;
  double reserve_bytes = 0;              // per-GPU reserve (CUDA context, NCCL buffers)
  std::vector<double> static_bytes;      // weights + gradients + optimizer state (ZeRO-sharded)
  std::vector<double> activation_bytes;  // simulated peak of stored activations
  std::vector<double> transient_bytes;   // largest transient of one item
  std::vector<double> memory_bytes;      // sum of the above + reserve
  // Per micro-batch, fwd + bwd, summed over the rank's chunks:
  std::vector<double> compute_s;
  std::vector<double> tp_exposed_s, tp_total_s, cp_exposed_s, cp_total_s;
  std::vector<double> p2p_s;  // transfer time of the rank's outgoing activations and gradients
  // FSDP's gradient passes (training.fsdp_impl), inside compute_s; 0 where not charged.
  std::vector<double> fsdp_passes_s;
  // FP8 delayed scaling's amax all-reduces (docs/precision.md "Amax reductions"), outside
  // compute_s; 0 where not charged.
  std::vector<double> amax_s;
  // Per step:
  std::vector<double> busy_s;         // schedule busy time
  std::vector<double> grad_end_s;     // end of the rank's last backward op
  std::vector<double> dp_total_s;     // gradient reduction (+ ZeRO gathers), hidden + exposed
  std::vector<double> dp_exposed_s;   // the part after grad_end_s
  double param_gather_exposed_s = 0;  // ZeRO-1/2 parameter all-gather, waited for
  double tied_embedding_s = 0;        // embedding-gradient all-reduce (tied embeddings)
  double grad_norm_s = 0;             // gradient-norm all-reduce
  // Step-time mechanisms (docs/step-time.md): optimizer, clipping and buffer zeroing; the fixed
  // per-step overhead; the straggler wait of the blocking collectives.
  double optimizer_s = 0, step_overhead_s = 0, straggler_s = 0;
  // training.defer_embedding_wgrad (docs/step-time.md "Deferred output-layer wgrad"): the
  // output layer's deferred weight-gradient GEMMs, run by deferred_wgrad_rank after its last
  // backward (already inside grad_end_s of that rank); 0 and -1 without deferral.
  double deferred_wgrad_s = 0;
  int deferred_wgrad_rank = -1;
};

// Holds per-thread workspaces so that the hot loop does not allocate. Not
// thread-safe: one Evaluator per thread. The Problem must outlive it.
class Evaluator {
 public:
  explicit Evaluator(const Problem& problem, EvalOptions options = {});
  ~Evaluator();
  Evaluator(Evaluator&&) noexcept;
  Evaluator& operator=(Evaluator&&) = delete;
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Never throws for a well-formed candidate; an infeasible one is a value.
  void evaluate(const Candidate& c, Evaluation* out);
  Evaluation evaluate(const Candidate& c) {
    Evaluation e;
    evaluate(c, &e);
    return e;
  }

  // The breakdown of the last evaluate() (valid only with EvalOptions::want_breakdown and a
  // feasible candidate).
  const EvalBreakdown& breakdown() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Extra time that `comm_s` of communication adds when it runs beside `compute_s` of compute,
// which loses the share `contention` of its throughput while both run (docs/step-time.md
// "Overlap charge"): max(comm − compute, contention·comm), 0 without communication.
double overlap_charge(double comm_s, double compute_s, double contention);

// Convenience for tests and one-off calls.
Evaluation evaluate(const Problem& problem, const Candidate& c, EvalOptions options = {});

// "pipeline rank 0 needs 152.3 GB, the GPU has 141 GB" (empty when feasible).
std::string explain(const Evaluation& e);

}  // namespace ppsearch
