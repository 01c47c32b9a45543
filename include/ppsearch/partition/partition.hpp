#pragma once
/// \file
/// \brief Contiguous min-max partitioning of a chain of items (layers) into pipeline stages
///        under per-stage memory limits (design: docs/algorithms.md §1.1 and §1.3).
///
/// A chain of L items 0..L-1 is split into S contiguous, non-empty stages. Stage σ covering the
/// items [i, j) has time
///
///     T(σ, i, j) = (Σ_{l∈[i,j)} time_s[l]) + comm_s[σ]
///
/// and memory
///
///     Mem(σ, i, j) = Σ static_bytes + in_flight[σ]·Σ act_bytes
///                    + max transient_bytes + extra_bytes[σ]
///
/// (sums and max over l ∈ [i, j)). A partition is feasible when Mem ≤ capacity_bytes on every
/// stage. The objective is the bottleneck max_σ T(σ, ·, ·) (docs/algorithms.md §1.1, "Objective").
///
/// Exactness and arithmetic. Interval sums are differences of prefix sums accumulated from item
/// 0 upwards, and every function in this header (including stage_time() and stage_memory())
/// evaluates T and Mem with the same floating-point expression. All partitioners therefore
/// compare identical doubles: the reference DP, the fast DP and the bisection return bit-for-bit
/// the same feasibility, bottleneck and bounds.
///
/// Assumptions. All per-item and per-stage inputs are finite and non-negative (checked;
/// std::invalid_argument otherwise). Then Mem is monotone under interval inclusion on a fixed
/// stage index, which is all the exact algorithms need. In particular in_flight[σ] need NOT be
/// non-increasing in σ (it is for 1F1B, k_σ = min(P−σ, M), and constant for GPipe); the fast
/// methods stay exact for any non-negative k_σ, E_σ and c_σ.
///
/// Ties. Among all partitions that reach the optimal bottleneck, every solver returns the one
/// whose cut points are latest, compared from the last cut backwards: the largest bounds[S−1],
/// then the largest bounds[S−2] among those, and so on. This leaves any slack on the early
/// stages, where a bottleneck costs less under 1F1B (docs/algorithms.md §2.3).
#include <limits>
#include <memory>
#include <vector>

namespace ppsearch {

/// Input of the partitioners. Items are per micro-batch; stages are 0-based stage indices.
struct PartitionProblem {
  std::vector<double> time_s;           ///< per item, per micro-batch (forward + backward)
  std::vector<double> static_bytes;     ///< per item: parameters, gradients, optimizer state
  std::vector<double> act_bytes;        ///< per item, per in-flight micro-batch
  std::vector<double> transient_bytes;  ///< per item: peak transient while the item runs
  std::vector<double> in_flight;        ///< per stage: k_σ (may be fractional), size = stages
  std::vector<double> extra_bytes;      ///< per stage: E_σ, size = stages
  std::vector<double> comm_s;           ///< per stage: c_σ added to that stage's time
  double capacity_bytes = 0;            ///< usable bytes per device; +infinity = no limit
  int stages = 1;                       ///< S ≥ 1
};

/// Result of a partitioner. An infeasible result has bottleneck_s = +inf and empty bounds.
struct Partition {
  bool feasible = false;
  double bottleneck_s = std::numeric_limits<double>::infinity();  ///< max over stages of T + c
  std::vector<int> bounds;  ///< size stages+1; stage σ = items [bounds[σ], bounds[σ+1])
};

namespace detail {
struct PartitionKernels;
}  // namespace detail

/// Reusable buffers for the allocation-free overloads. After the first call with the largest
/// (items, stages) seen, further calls do not allocate. Not thread-safe: use one per thread.
class PartitionWorkspace {
 public:
  PartitionWorkspace() = default;

 private:
  friend struct detail::PartitionKernels;
  std::vector<double> m_prefix_time;      // L+1 prefix sums of time_s
  std::vector<double> m_prefix_static;    // L+1 prefix sums of static_bytes
  std::vector<double> m_prefix_act;       // L+1 prefix sums of act_bytes
  std::vector<double> m_transient_table;  // sparse table for range-max of transient_bytes
  std::vector<double> m_best;             // (S+1)·(L+1) DP table
  std::vector<int> m_band_lo;             // per DP row: first index a bounded partition can use
  std::vector<int> m_band_hi;             // per DP row: last such index
  std::vector<int> m_queue;               // monotone queue of split candidates
  std::vector<int> m_last_reach[2];       // probe: largest reachable index ≤ x, per row
  std::vector<int> m_pred;                // probe: predecessor of each reachable (stage, end)
  std::vector<double> m_device_load;      // balance: per device, sum of its stage times
  std::vector<double> m_trial_load;       // balance: the same after a tried move
  double m_tie_limit = 0;                 // robust: the limit B*·(1 + tau) chosen within
  PartitionProblem m_mirror;              // interleaved: the mirrored problem (earliest cuts)
  std::unique_ptr<PartitionWorkspace> m_mirror_ws;  // ... and its own workspace
  std::vector<int> m_chain;                         // more candidates: the chain being balanced
  Partition m_result;
  double m_heaviest_item_s = 0;  // max of time_s
  int m_transient_mode = 0;      // 0: all zero, 1: a single non-zero item, 2: sparse table
  int m_transient_item = -1;
  // The per-item vectors the prefix sums and the transient structure above were built from
  // (copies, compared bit for bit): a later call with the same items skips rebuilding them
  // (docs/performance.md "Partition workspace").
  bool m_prepared = false;
  bool m_table_ready = false;  // the transient table is built (prepare() with a finite capacity)
  std::vector<double> m_items_time, m_items_static, m_items_act, m_items_transient;
};

/// O(L²·S) PipeDream-style DP (docs/algorithms.md §1.1). The test oracle: it checks every split
/// point and relies on no monotonicity.
Partition partition_reference(const PartitionProblem& problem);

/// Exact fast partitioner used in the search; same result as partition_reference().
/// A DP over (stage, end item) like §1.1, with two speed-ups:
///  - the best split point of each cell comes from a monotone queue over the sliding window of
///    memory-feasible split points (amortised O(1) per cell, like the monotone split-point DP of
///    docs/algorithms.md §1.3b, but it needs neither D monotone in the split index nor k_σ
///    non-increasing);
///  - only cells that a partition with bottleneck <= a limit can use are visited (a band from
///    greedy forward/backward reaches, which bound every such partition). The first limit is a
///    lower-bound estimate; a pass whose result exceeds its limit is repeated with a larger one.
/// Worst case O(L·S) per pass and O(log) passes; typically one or two narrow passes
/// (≈3 µs for L = 128, S = 16).
Partition partition_fast(const PartitionProblem& problem);

/// Allocation-free variant of partition_fast(); the result lives in the workspace and stays
/// valid until the next call that uses the same workspace.
const Partition& partition_fast(const PartitionProblem& problem, PartitionWorkspace& workspace);

/// Same as above, starting the passes at max(first_limit, the lower-bound estimate). The result
/// does not depend on first_limit (any value, +infinity included); a value at or above the
/// optimum, such as the bottleneck of any feasible partition of this problem, finishes in one
/// pass (docs/performance.md "Partition first limit").
const Partition& partition_fast(const PartitionProblem& problem, PartitionWorkspace& workspace,
                                double first_limit);

/// Exact reachability probe, O(L·S) (docs/algorithms.md §1.3a), plus bisection on the bottleneck.
/// Midpoints are taken in value, falling back to the ordered bit patterns of doubles when that
/// makes no progress, so the search ends on the exact optimum (a double). Both ends snap to
/// candidate values: a feasible probe lowers the upper end to the bottleneck of the partition
/// it found, an infeasible one raises the lower end to the smallest stage time that could have
/// changed its answer. Slower than partition_fast(); kept as an independent exact method.
Partition partition_bisect_reachability(const PartitionProblem& problem);

/// Allocation-free variant of partition_bisect_reachability().
const Partition& partition_bisect_reachability(const PartitionProblem& problem,
                                               PartitionWorkspace& workspace);

/// The classical greedy max-reach probe (docs/algorithms.md §1.3): each stage takes as many items
/// as the bottleneck and memory allow while leaving one item for every later stage. NOT exact when
/// memory limits depend on the stage index (it can answer false although a partition exists);
/// kept only to document that failure. A true answer is always correct.
bool greedy_probe_feasible(const PartitionProblem& problem, double bottleneck_s);

/// Mem(σ, i, j) for stage `stage` holding items [first_item, end_item), computed exactly as the
/// partitioners do. O(L). Throws std::out_of_range on an empty or out-of-range interval.
double stage_memory(const PartitionProblem& problem, int stage, int first_item, int end_item);

/// T(σ, i, j) + c_σ for stage `stage` holding items [first_item, end_item), computed exactly as
/// the partitioners do. O(L). Throws std::out_of_range on an empty or out-of-range interval.
double stage_time(const PartitionProblem& problem, int stage, int first_item, int end_item);

/// Evaluates given bounds. If they are not a partition into `stages` contiguous non-empty
/// stages (size stages+1, bounds[0] = 0, bounds[S] = L, strictly increasing) the result is
/// infeasible with bottleneck +inf. Otherwise bottleneck_s is the max stage time and feasible
/// says whether every stage fits in memory. The bounds are copied into the result.
Partition evaluate_partition(const PartitionProblem& problem, const std::vector<int>& bounds);

/// Same as evaluate_partition() above, with the workspace's buffers (no allocation once they are
/// warm; the prefix sums are kept for a following partition_fast() of the same items). The
/// result lives in the workspace and stays valid until the next call that uses it.
const Partition& evaluate_partition(const PartitionProblem& problem, const std::vector<int>& bounds,
                                    PartitionWorkspace& workspace);

/// Relative tolerance of the noise-robust choices below: partitions whose bottlenecks lie within
/// this factor of the optimum count as tied (docs/performance.md "Noise-robust partition choice").
/// Far above the last-bit noise of the item times (about 1e-16 relative per operation, summed over
/// a few hundred operations) and far below any difference in time that matters (1e-9 of a step).
inline constexpr double kPartitionTieTolerance = 1e-9;

/// Noise-robust partition. The exact optimum B* (partition_fast(), or partition_reference() with
/// `reference`) is one double, and uniform items make many partitions reach it to the last bit or
/// within a few ulps of it, so which one the exact solvers return ("Ties" above) follows the
/// rounding of the item times. This returns the latest-cut partition (same order as "Ties") among
/// the memory-feasible partitions whose bottleneck is at most B*·(1 + tau) (the fast DP's or the
/// reference DP's backtrack at that limit; the reachability probe's witness there,
/// docs/algorithms.md §1.3a, is the same partition). A change of the item times by a relative ε ≪
/// tau moves B* and every partition's bottleneck by about ε, so the answer changes only if some
/// partition's bottleneck lies within about ε of the limit itself. bottleneck_s is the returned
/// partition's own bottleneck, ≤ B*·(1 + tau). Same result with and without `reference`; tau = 0
/// gives the exact solvers' own answer. Throws std::invalid_argument unless 0 ≤ tau < 1.
/// first_limit: as for partition_fast() (any value gives the same result).
const Partition& partition_robust(const PartitionProblem& problem, PartitionWorkspace& workspace,
                                  bool reference = false, double first_limit = 0.0,
                                  double tau = kPartitionTieTolerance);

/// Allocating variant of partition_robust().
Partition partition_robust(const PartitionProblem& problem, bool reference = false,
                           double tau = kPartitionTieTolerance);

/// Partition of the chunk chain of an interleaved or V-shaped schedule: stage σ runs on device
/// stage_device[σ] (a device runs several stages). Starts from partition_robust() (limit
/// X = B*·(1 + tau) on every stage) and then lowers the largest device load, the sum of a device's
/// stage times, which sets the steady-state time per micro-batch of such a schedule (Narayanan et
/// al., SC'21 §2.2; docs/algorithms.md §1.3 "Interleaved / V-shaped schedules"): a deterministic
/// first-improvement local search whose move takes one item from a stage of a device at the
/// maximum and passes it along the chain to a later (or earlier) stage, every stage in between
/// shifting by one item; a move is kept when every stage it touches stays non-empty, within X and
/// within memory, no device ends above max·(1 + tau) and fewer devices lie within tau of the
/// maximum than before. Never a larger stage bottleneck than X; loads within tau count as equal, so
/// the answer does not follow last-bit noise. With one stage per device it is partition_robust().
/// `earliest`: start instead from the earliest-cut chain within X (the latest-cut chain of the
/// mirrored problem, mirrored back): the slack on the last stages. `balanced` = false: no local
/// search (the starting chain itself). The evaluator simulates these chains and keeps the fastest
/// (docs/performance.md "Noise-robust partition choice").
/// Throws std::invalid_argument unless stage_device has one entry ≥ 0 per stage.
const Partition& partition_interleaved(const PartitionProblem& problem,
                                       const std::vector<int>& stage_device,
                                       PartitionWorkspace& workspace, bool reference = false,
                                       double first_limit = 0.0,
                                       double tau = kPartitionTieTolerance, bool earliest = false,
                                       bool balanced = true);

/// Allocating variant of partition_interleaved().
Partition partition_interleaved(const PartitionProblem& problem,
                                const std::vector<int>& stage_device, bool reference = false,
                                double tau = kPartitionTieTolerance, bool earliest = false,
                                bool balanced = true);

/// Three chains of partition_interleaved(), concatenated into `chains` (3·(stages + 1) cuts):
/// latest-cut, latest-cut balanced, earliest-cut (not balanced: on the Llama-3-70B sweep its
/// balanced form won 182 of 12,772 interleaved evaluations, by at most 3.8 %, for one more
/// simulation each); each starting chain is computed once. False (and `chains` empty) if no
/// partition fits.
bool interleaved_candidates(const PartitionProblem& problem, const std::vector<int>& stage_device,
                            PartitionWorkspace& workspace, std::vector<int>& chains,
                            bool reference = false, double first_limit = 0.0,
                            double tau = kPartitionTieTolerance);

/// interleaved_candidates() in two steps, for a caller that may need only the first chain
/// (docs/performance.md "Candidates on demand"): interleaved_first_candidate() puts the
/// latest-cut chain into `chains` (stages + 1 cuts) and its limit X = B*·(1 + tau) into
/// *tie_limit; interleaved_more_candidates(), given that chain in `chains` and X, appends the
/// other two (balanced, earliest-cut), so that the two calls give interleaved_candidates()'s
/// answer bit for bit. `workspace` may have served other problems in between. False (and
/// `chains` empty) if no partition fits; std::invalid_argument if `chains` does not hold one
/// chain of the problem's stage count.
bool interleaved_first_candidate(const PartitionProblem& problem,
                                 const std::vector<int>& stage_device,
                                 PartitionWorkspace& workspace, std::vector<int>& chains,
                                 double* tie_limit, bool reference = false,
                                 double first_limit = 0.0, double tau = kPartitionTieTolerance);
bool interleaved_more_candidates(const PartitionProblem& problem,
                                 const std::vector<int>& stage_device,
                                 PartitionWorkspace& workspace, std::vector<int>& chains,
                                 double tie_limit, bool reference = false,
                                 double tau = kPartitionTieTolerance);

/// Largest device load of `bounds` (sum over each device's stages of T + c, in stage order), with
/// stage σ on device stage_device[σ]; +infinity if the bounds are not a partition.
double max_device_load(const PartitionProblem& problem, const std::vector<int>& stage_device,
                       const std::vector<int>& bounds);

/// Megatron-Core's own splits of a chain of `layers` transformer layers between the embedding
/// (item 0) and the output layer with its loss (item layers + 1) over `stages` virtual stages
/// (NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/transformer_block.py
/// get_num_layers_to_build; docs/algorithms.md §1.3 "Megatron's layouts"):
///   - even: layers/stages per stage, the embedding on the first, the output layer on the last;
///   - account_for_embedding_in_pipeline_split: the embedding counts as a layer of the first
///     stage, (layers + 1)/stages per stage;
///   - account_for_loss_in_pipeline_split: the loss counts as a layer of the last stage;
///   - both options: (layers + 2)/stages per stage, one layer fewer on the first and the last.
/// Appends the stages + 1 bounds of each layout whose division is exact (in this order) to `out`
/// and returns how many it appended (0 to 3; at most one of the last three exists unless
/// stages ≤ 2). Every stage holds at least one item.
int megatron_layouts(int layers, int stages, std::vector<int>& out);

/// Partial recomputation chosen per stage (Megatron-LM's --recompute-granularity full
/// --recompute-method block --recompute-num-layers N, which recomputes the first N layers of
/// each stage; with a per-stage count as in AdaPipe, Sun et al., ASPLOS'24). The items flagged
/// `recomputable` are stored without recomputation in the problem's arrays; recomputing one of
/// them saves `save_bytes` per in-flight micro-batch, costs `extra_time_s` per micro-batch, and
/// needs `transient_bytes` while it runs its backward.
struct PartialRecompute {
  std::vector<unsigned char> recomputable;  ///< per item
  double save_bytes = 0;
  double extra_time_s = 0;
  double transient_bytes = 0;
  int per_stage = -1;  ///< N ≥ 0: exactly min(N, recomputable items) per stage; −1: as few as fit
};

/// Result of partition_partial_recompute(): the partition and the recomputed items per stage.
struct PartialRecomputePartition {
  Partition partition;
  std::vector<int> recomputed;  ///< per stage
};

/// Exact O(L²·S) DP (as partition_reference) in which stage σ holding items [i, j) with n
/// recomputable items recomputes r of them: r = min(N, n) for a fixed N, or the smallest r ≤ n
/// for which Mem(σ, i, j) − r·k_σ·save + (r > 0 ? the transient raised to transient_bytes : 0)
/// fits; its time is T(σ, i, j) + r·extra_time_s. Ties go to the latest start of each stage.
PartialRecomputePartition partition_partial_recompute(const PartitionProblem& problem,
                                                      const PartialRecompute& recompute);

/// Throws std::invalid_argument unless the problem is well formed: stages ≥ 1, per-item vectors
/// of equal length, per-stage vectors of length `stages`, every entry finite and ≥ 0, and
/// capacity_bytes ≥ 0 (+infinity allowed). The partitioners call it themselves.
void validate_partition_problem(const PartitionProblem& problem);

}  // namespace ppsearch
