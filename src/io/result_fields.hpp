// The file format of the result rows, shared by the writers in src/io (internal header): the
// enum names as on the command line and one field table per row type (every member of
// ResultRow / StageRow, in declaration order, named as in the files). The HDF5 compound types
// and the CSV/JSON columns are both built from these tables, so a field is added in one place;
// covers() stops the build when a member of a row type is missing from its table.
#pragma once

#include <cstddef>
#include <limits>
#include <type_traits>

#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"

namespace ppsearch::io_detail {

// ---------------------------------------------------------------------------------------------
// Enum names, as on the command line (docs/interface.md §1 and §3). Defined here, not taken from
// the other modules' to_string functions, so the file format is fixed in one place. The
// static_asserts tie the numeric values to the C++ enums.
inline constexpr const char* kScheduleNames[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                                 "zb-v", "dualpipe",
                                                 // ZB-H2 schedule (docs/algorithms.md §2)
                                                 "zb-h2"};
inline constexpr const char* kRecomputeNames[] = {"none", "selective", "full"};
inline constexpr const char* kInfeasibleNames[] = {"none", "memory", "too_few_layers", "schedule"};
// Rank placement (docs/topology.md).
inline constexpr const char* kPlacementNames[] = {"tp-cp-dp-pp", "tp-cp-pp-dp"};

template <typename T, std::size_t N>
constexpr int count_of(const T (&)[N]) {
  return static_cast<int>(N);
}

static_assert(count_of(kScheduleNames) == kNumSchedules, "one HDF5 name per Schedule value");
static_assert(count_of(kRecomputeNames) == kNumRecompute, "one HDF5 name per Recompute value");
static_assert(count_of(kInfeasibleNames) == kNumInfeasible, "one HDF5 name per Infeasible value");
static_assert(count_of(kPlacementNames) == kNumPlacements, "one HDF5 name per Placement value");
static_assert(static_cast<int>(Placement::kTpCpDpPp) == 0 &&
                  static_cast<int>(Placement::kTpCpPpDp) == 1,
              "kPlacementNames follows the Placement values");
static_assert(static_cast<int>(Schedule::kGPipe) == 0 && static_cast<int>(Schedule::k1F1B) == 1 &&
                  static_cast<int>(Schedule::kInterleaved1F1B) == 2 &&
                  static_cast<int>(Schedule::kZBH1) == 3 && static_cast<int>(Schedule::kZBV) == 4 &&
                  static_cast<int>(Schedule::kDualPipe) == 5 &&
                  static_cast<int>(Schedule::kZBH2) == 6,  // ZB-H2 schedule
              "kScheduleNames follows the Schedule values");
static_assert(static_cast<int>(Recompute::kNone) == 0 &&
                  static_cast<int>(Recompute::kSelective) == 1 &&
                  static_cast<int>(Recompute::kFull) == 2,
              "kRecomputeNames follows the Recompute values");
static_assert(static_cast<int>(Infeasible::kNone) == 0 &&
                  static_cast<int>(Infeasible::kMemory) == 1 &&
                  static_cast<int>(Infeasible::kTooFewLayers) == 2 &&
                  static_cast<int>(Infeasible::kSchedule) == 3,
              "kInfeasibleNames follows the Infeasible values");

// ---------------------------------------------------------------------------------------------
// Field tables: every member of ResultRow / StageRow, in declaration order, with the name it
// gets in the file (the member's own name).
enum class Kind { kI32, kI64, kU8, kI8, kF64, kSchedule, kRecompute, kInfeasible, kPlacement };

constexpr std::size_t size_of(Kind k) {
  switch (k) {
    case Kind::kI32:
      return 4;
    case Kind::kI64:
    case Kind::kF64:
      return 8;
    default:
      return 1;
  }
}

struct Field {
  const char* name;
  std::size_t offset;
  Kind kind;
};

static_assert(std::is_standard_layout_v<ResultRow> && std::is_trivially_copyable_v<ResultRow>);
static_assert(std::is_standard_layout_v<StageRow> && std::is_trivially_copyable_v<StageRow>);

#define PPSEARCH_FIELD(type, member, kind) \
  Field { #member, offsetof(type, member), kind }

inline constexpr Field kRowFields[] = {
    PPSEARCH_FIELD(ResultRow, gpus, Kind::kI32), PPSEARCH_FIELD(ResultRow, tp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, pp, Kind::kI32), PPSEARCH_FIELD(ResultRow, cp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, dp, Kind::kI32), PPSEARCH_FIELD(ResultRow, vpp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, mbs, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, num_microbatches, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, global_batch_size, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, schedule, Kind::kSchedule),
    PPSEARCH_FIELD(ResultRow, recompute, Kind::kRecompute),
    PPSEARCH_FIELD(ResultRow, sequence_parallel, Kind::kU8),
    PPSEARCH_FIELD(ResultRow, zero_stage, Kind::kI8),
    PPSEARCH_FIELD(ResultRow, feasible, Kind::kU8),
    PPSEARCH_FIELD(ResultRow, infeasible_reason, Kind::kInfeasible),
    PPSEARCH_FIELD(ResultRow, iteration_time_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, mfu, Kind::kF64), PPSEARCH_FIELD(ResultRow, hfu, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, tflops_per_gpu, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, tokens_per_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, bubble_fraction, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, peak_memory_gb, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, compute_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, tp_comm_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, cp_comm_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, pp_comm_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, dp_comm_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, pipeline_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, optimizer_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, needed_memory_gb, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, worst_rank, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, recompute_num_layers, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, time_to_train_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, gpu_hours, Kind::kF64), PPSEARCH_FIELD(ResultRow, cost, Kind::kF64),
    // Mixture of experts (docs/moe.md).
    PPSEARCH_FIELD(ResultRow, ep, Kind::kI32), PPSEARCH_FIELD(ResultRow, etp, Kind::kI32),
    // Uncertainty of the top rows (docs/uncertainty.md).
    PPSEARCH_FIELD(ResultRow, iteration_time_lo_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, iteration_time_hi_s, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, placement, Kind::kPlacement),  // rank placement (docs/topology.md)
};

inline constexpr Field kStageFields[] = {
    PPSEARCH_FIELD(StageRow, candidate, Kind::kI64),
    PPSEARCH_FIELD(StageRow, stage, Kind::kI32),
    PPSEARCH_FIELD(StageRow, pipeline_rank, Kind::kI32),
    PPSEARCH_FIELD(StageRow, first_layer, Kind::kI32),
    PPSEARCH_FIELD(StageRow, last_layer, Kind::kI32),
    PPSEARCH_FIELD(StageRow, time_s, Kind::kF64),
    PPSEARCH_FIELD(StageRow, memory_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, weights_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, gradients_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, optimizer_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, activations_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, wstate_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, transient_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, workspace_gb, Kind::kF64),
    PPSEARCH_FIELD(StageRow, recomputed_layers, Kind::kI64),
};

#undef PPSEARCH_FIELD

// Compile-time check that a field table covers its struct: each field starts exactly where the
// previous one ends, rounded up to its own alignment, and the struct ends after the last field
// plus tail padding. A member missing from the table leaves a hole and fails this check (unless
// it is a small member hiding in the tail padding; the round-trip test covers the rest).
constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

template <std::size_t N>
constexpr bool covers(const Field (&fields)[N], std::size_t struct_size, std::size_t struct_align) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < N; ++i) {
    if (fields[i].offset != align_up(end, size_of(fields[i].kind))) return false;
    end = fields[i].offset + size_of(fields[i].kind);
  }
  return align_up(end, struct_align) == struct_size;
}

template <std::size_t N>
constexpr std::size_t packed_size(const Field (&fields)[N]) {
  std::size_t s = 0;
  for (std::size_t i = 0; i < N; ++i) s += size_of(fields[i].kind);
  return s;
}

static_assert(covers(kRowFields, sizeof(ResultRow), alignof(ResultRow)),
              "kRowFields must list every ResultRow member, in order");
static_assert(covers(kStageFields, sizeof(StageRow), alignof(StageRow)),
              "kStageFields must list every StageRow member, in order");
static_assert(sizeof(double) == 8 && std::numeric_limits<double>::is_iec559);

}  // namespace ppsearch::io_detail

// ---------------------------------------------------------------------------------------------
// /regret, /uncertainty, /robust (docs/uncertainty.md): small tables written once at commit,
// with text columns. Each row becomes a list of values, one per column, in column order; the
// HDF5 writer gives each column an 8-byte slot (strings as variable-length UTF-8), the text
// writers print them.
namespace ppsearch::io_detail {

enum class SmallKind { kStr, kU8, kI8, kI32, kI64, kF64 };
struct SmallColumn {
  const char* name;
  SmallKind kind;
};
struct SmallValue {
  std::string s;
  std::int64_t i = 0;
  double f = 0;
};

inline constexpr SmallColumn kRegretColumns[] = {
    {"gpus", SmallKind::kI32},
    {"tuned_on", SmallKind::kStr},
    {"run_on", SmallKind::kStr},
    {"tp", SmallKind::kI32},
    {"pp", SmallKind::kI32},
    {"cp", SmallKind::kI32},
    {"dp", SmallKind::kI32},
    {"vpp", SmallKind::kI32},
    {"mbs", SmallKind::kI32},
    {"num_microbatches", SmallKind::kI32},
    {"schedule", SmallKind::kStr},
    {"recompute", SmallKind::kStr},
    {"sequence_parallel", SmallKind::kI8},
    {"zero_stage", SmallKind::kI8},
    {"recompute_num_layers", SmallKind::kI32},
    {"ep", SmallKind::kI32},
    {"etp", SmallKind::kI32},
    {"feasible", SmallKind::kU8},
    {"infeasible_reason", SmallKind::kStr},
    {"in_search_space", SmallKind::kU8},
    {"iteration_time_s", SmallKind::kF64},
    {"best_time_s", SmallKind::kF64},
    {"regret_pct", SmallKind::kF64},
    {"worst_regret_pct", SmallKind::kF64},
    {"robust", SmallKind::kU8},
};

inline std::vector<SmallValue> small_values(const RegretRow& r) {
  auto i = [](std::int64_t v) { return SmallValue{"", v, 0}; };
  auto f = [](double v) { return SmallValue{"", 0, v}; };
  auto s = [](const std::string& v) { return SmallValue{v, 0, 0}; };
  return {i(r.gpus),
          s(r.tuned_on),
          s(r.run_on),
          i(r.tp),
          i(r.pp),
          i(r.cp),
          i(r.dp),
          i(r.vpp),
          i(r.mbs),
          i(r.num_microbatches),
          s(r.schedule),
          s(r.recompute),
          i(r.sequence_parallel),
          i(r.zero_stage),
          i(r.recompute_num_layers),
          i(r.ep),
          i(r.etp),
          i(r.feasible),
          s(r.infeasible_reason),
          i(r.in_search_space),
          f(r.iteration_time_s),
          f(r.best_time_s),
          f(r.regret_pct),
          f(r.worst_regret_pct),
          i(r.robust)};
}

inline constexpr SmallColumn kUncertaintyColumns[] = {
    {"candidate", SmallKind::kI64}, {"gpus", SmallKind::kI32},
    {"constant", SmallKind::kStr},  {"end", SmallKind::kStr},
    {"value", SmallKind::kF64},     {"iteration_time_s", SmallKind::kF64},
    {"rank", SmallKind::kI32},
};

inline std::vector<SmallValue> small_values(const UncertaintyRow& r) {
  return {SmallValue{"", r.candidate, 0}, SmallValue{"", r.gpus, 0},
          SmallValue{r.constant, 0, 0},   SmallValue{r.end, 0, 0},
          SmallValue{"", 0, r.value},     SmallValue{"", 0, r.iteration_time_s},
          SmallValue{"", r.rank, 0}};
}

inline constexpr SmallColumn kRobustColumns[] = {
    {"gpus", SmallKind::kI32},
    {"candidate", SmallKind::kI64},
    {"best_candidate", SmallKind::kI64},
    {"iteration_time_s", SmallKind::kF64},
    {"iteration_time_lo_s", SmallKind::kF64},
    {"iteration_time_hi_s", SmallKind::kF64},
    {"rows_compared", SmallKind::kI32},
};

inline std::vector<SmallValue> small_values(const RobustRow& r) {
  return {SmallValue{"", r.gpus, 0},
          SmallValue{"", r.candidate, 0},
          SmallValue{"", r.best_candidate, 0},
          SmallValue{"", 0, r.iteration_time_s},
          SmallValue{"", 0, r.iteration_time_lo_s},
          SmallValue{"", 0, r.iteration_time_hi_s},
          SmallValue{"", r.rows_compared, 0}};
}

}  // namespace ppsearch::io_detail
