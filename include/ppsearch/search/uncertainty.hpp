// How a predicted step time moves when the calibration constants move over their uncertainty
// (docs/uncertainty.md). Each constant of a table is set, one at a time, to the low and to the
// high end of its range; the candidate is evaluated again under each such variation, and the
// one-at-a-time deviations are combined into bounds by root-sum-square (independent errors).
// Pure core: std only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/evaluate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// One calibration constant and its uncertainty.
struct ConstantRange {
  std::string key;        // configuration key, e.g. "gpu.gemm_efficiency"
  double half_width = 0;  // ± this much: a fraction of the value (relative) or in file units
  bool relative = true;   // true: value·(1 ± half_width); false: value ± half_width
  double min_value = 0;   // the varied value is clamped into [min_value, max_value]
  double max_value = 1;   //   (the key's allowed range)
  std::string source;     // where the range comes from (docs/uncertainty.md)
  // When set, the constant is varied only where its value differs from `unset_value` (a
  // fitted derate such as gpu.clock_scale; at its neutral value there is nothing fitted to vary).
  bool only_when_fitted = false;
  double unset_value = 1.0;
  // When set, a boolean key that must be true for the constant to be varied: the constant only
  // acts through that mechanism (gpu.triton_attention_scale and training.triton_attention).
  std::string only_with = {};
};

// The built-in table (docs/uncertainty.md "Ranges"). Every key is a registered key.
const std::vector<ConstantRange>& default_constant_ranges();

// One variation: `key` moved to one end of its range.
struct Variation {
  std::string key;
  int end = 0;       // -1 low end, +1 high end
  double value = 0;  // the constant's value there (file units)
  Problem problem;   // the base problem with that value
};

// Two variations per constant (low end, high end), in table order, with every range scaled by
// `scale` (1 = as tabled, 0 = no variation). Throws std::invalid_argument for an unknown key or
// a value the key refuses after clamping (a bug in the table).
std::vector<Variation> make_variations(const Problem& base, const std::vector<ConstantRange>& table,
                                       double scale = 1.0);

// Bounds from one-at-a-time re-evaluations: lo = time − √Σ dᵢ₋², hi = time + √Σ dᵢ₊², where per
// constant i dᵢ₋ = max(0, time − fastest of its two ends) and dᵢ₊ = max(0, slowest − time).
// `varied` holds two times per constant (low end, high end); NaN entries (infeasible under the
// variation) are left out. lo ≤ time ≤ hi always; lo = hi = time when nothing moves.
struct TimeBounds {
  double lo = 0;
  double hi = 0;
};
TimeBounds combine_bounds(double time, const std::vector<double>& varied);

// Index of the robust choice: the smallest worst case `hi` (first among equals); -1 when no
// entry is finite.
std::int64_t robust_index(const std::vector<double>& hi);
// The same among the entries that run under the most variations: a row that stops fitting when a
// constant moves has "does not run" as its worst case, so it is chosen only if every row stops
// under at least as many variations (`infeasible` = per entry, variations under which it fails).
std::int64_t robust_index(const std::vector<double>& hi, const std::vector<int>& infeasible);

// True when the first and the k-th row (time order) cannot be told apart within the bounds:
// the first's upper bound reaches the k-th's lower bound (intervals overlap). `lo`, `hi` are in
// rank order; false with fewer than k rows.
bool top_within_uncertainty(const std::vector<double>& lo, const std::vector<double>& hi, int k);

// Re-evaluates candidates under every variation. Not thread-safe (one Evaluator per variation).
class UncertaintyEvaluator {
 public:
  UncertaintyEvaluator(const Problem& base, const std::vector<ConstantRange>& table,
                       EvalOptions options, double scale = 1.0);
  struct Result {
    TimeBounds bounds;
    std::vector<double> times;  // per variation, in variations() order; NaN when infeasible
    int infeasible = 0;         // variations under which the candidate does not run
  };
  // `time`: the candidate's step time under the base problem.
  Result evaluate(const Candidate& c, double time);
  const std::vector<Variation>& variations() const { return *variations_; }

 private:
  std::unique_ptr<std::vector<Variation>> variations_;  // stable addresses for the evaluators
  std::vector<Evaluator> evaluators_;
};

}  // namespace ppsearch
