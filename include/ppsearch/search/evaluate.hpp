// evaluate(): one candidate → predicted step time, MFU, memory per pipeline rank,
// exposed communication and the layer partition, or the reason it cannot run
// (algorithms.md §7 "Engine flow").
#pragma once

#include <memory>
#include <string>

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

struct EvalOptions {
  bool reference_partitioner = false;  // O(L²·S) DP instead of the fast exact one
  bool full_simulation = false;        // simulate every micro-batch (no periodic fast path)
  bool want_stages = true;             // fill Evaluation::stages
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

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Convenience for tests and one-off calls.
Evaluation evaluate(const Problem& problem, const Candidate& c, EvalOptions options = {});

// "pipeline rank 0 needs 152.3 GB, the GPU has 141 GB" (empty when feasible).
std::string explain(const Evaluation& e);

}  // namespace ppsearch
