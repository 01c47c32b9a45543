// The HDF5 result writer (docs/interface.md §3): values round-trip through the HDF5 C API, the file
// types are the contract types, the bytes depend only on the data, the file appears under its
// final name only on commit, and h5py (tests/e2e/h5check.py) reads every contract field.
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/io/runs_writer.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- the contract, written out independently of the writer --------------------------------

const std::vector<std::string> kScheduleNames = {
    "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe", "zb-h2"};
const std::vector<std::string> kRecomputeNames = {"none", "selective", "full"};
const std::vector<std::string> kReasonNames = {"none", "memory", "too_few_layers", "schedule"};
const std::vector<std::string> kPlacementNames = {"tp-cp-dp-pp", "tp-cp-pp-dp"};  // topology.md

enum class K { kI32, kI64, kU8, kI8, kF64, kSchedule, kRecompute, kReason, kPlacement };
struct Member {
  const char* name;
  std::size_t offset;
  K kind;
};

#define ROW(m, k) \
  Member { #m, offsetof(ResultRow, m), k }
const std::vector<Member> kRowMembers = {
    ROW(gpus, K::kI32), ROW(tp, K::kI32), ROW(pp, K::kI32), ROW(cp, K::kI32), ROW(dp, K::kI32),
    ROW(vpp, K::kI32), ROW(mbs, K::kI32), ROW(num_microbatches, K::kI32),
    ROW(global_batch_size, K::kI32), ROW(schedule, K::kSchedule), ROW(recompute, K::kRecompute),
    ROW(sequence_parallel, K::kU8), ROW(zero_stage, K::kI8), ROW(feasible, K::kU8),
    ROW(infeasible_reason, K::kReason), ROW(iteration_time_s, K::kF64), ROW(mfu, K::kF64),
    ROW(hfu, K::kF64), ROW(tflops_per_gpu, K::kF64), ROW(tokens_per_s, K::kF64),
    ROW(bubble_fraction, K::kF64), ROW(peak_memory_gb, K::kF64), ROW(compute_s, K::kF64),
    ROW(tp_comm_s, K::kF64), ROW(cp_comm_s, K::kF64), ROW(pp_comm_s, K::kF64),
    ROW(dp_comm_s, K::kF64), ROW(pipeline_s, K::kF64), ROW(optimizer_s, K::kF64),
    ROW(needed_memory_gb, K::kF64), ROW(worst_rank, K::kI32), ROW(recompute_num_layers, K::kI32),
    ROW(time_to_train_s, K::kF64), ROW(gpu_hours, K::kF64), ROW(cost, K::kF64),
    ROW(ep, K::kI32),  // mixture of experts (docs/moe.md)
    ROW(etp, K::kI32),
    // Uncertainty of the top rows (docs/uncertainty.md).
    ROW(iteration_time_lo_s, K::kF64), ROW(iteration_time_hi_s, K::kF64),
    ROW(placement, K::kPlacement),  // rank placement (docs/topology.md)
};
#undef ROW
#define STAGE(m, k) \
  Member { #m, offsetof(StageRow, m), k }
const std::vector<Member> kStageMembers = {
    STAGE(candidate, K::kI64),    STAGE(stage, K::kI32),          STAGE(pipeline_rank, K::kI32),
    STAGE(first_layer, K::kI32),  STAGE(last_layer, K::kI32),     STAGE(time_s, K::kF64),
    STAGE(memory_gb, K::kF64),    STAGE(weights_gb, K::kF64),     STAGE(gradients_gb, K::kF64),
    STAGE(optimizer_gb, K::kF64), STAGE(activations_gb, K::kF64), STAGE(wstate_gb, K::kF64),
    STAGE(transient_gb, K::kF64), STAGE(workspace_gb, K::kF64),   STAGE(recomputed_layers, K::kI64),
};
#undef STAGE

std::size_t kind_size(K k) {
  switch (k) {
    case K::kI32:
      return 4;
    case K::kI64:
    case K::kF64:
      return 8;
    default:
      return 1;
  }
}

const std::vector<std::string>* enum_names(K k) {
  switch (k) {
    case K::kSchedule:
      return &kScheduleNames;
    case K::kPlacement:
      return &kPlacementNames;
    case K::kRecompute:
      return &kRecomputeNames;
    case K::kReason:
      return &kReasonNames;
    default:
      return nullptr;
  }
}

// ---- small HDF5 helpers for reading back ---------------------------------------------------

struct H5Id {
  hid_t id;
  herr_t (*closer)(hid_t);
  ~H5Id() {
    if (id >= 0) closer(id);
  }
  operator hid_t() const { return id; }
};

hid_t native_type(K k) {
  switch (k) {
    case K::kI32:
      return H5Tcopy(H5T_NATIVE_INT32);
    case K::kI64:
      return H5Tcopy(H5T_NATIVE_INT64);
    case K::kU8:
      return H5Tcopy(H5T_NATIVE_UINT8);
    case K::kI8:
      return H5Tcopy(H5T_NATIVE_INT8);
    case K::kF64:
      return H5Tcopy(H5T_NATIVE_DOUBLE);
    default: {
      // An enum built from the contract names with values 0..n-1: HDF5 converts by name, so a
      // value read back correctly also proves the name <-> value mapping in the file.
      hid_t t = H5Tenum_create(H5T_NATIVE_UINT8);
      const auto& names = *enum_names(k);
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::uint8_t v = static_cast<std::uint8_t>(i);
        H5Tenum_insert(t, names[i].c_str(), &v);
      }
      return t;
    }
  }
}

hid_t memory_type(const std::vector<Member>& members, std::size_t size) {
  hid_t t = H5Tcreate(H5T_COMPOUND, size);
  for (const Member& m : members) {
    H5Id mt{native_type(m.kind), H5Tclose};
    H5Tinsert(t, m.name, m.offset, mt);
  }
  return t;
}

template <typename Row>
std::vector<Row> read_table(const std::string& file, const char* name,
                            const std::vector<Member>& members) {
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  EXPECT_GE(f.id, 0) << file;
  H5Id d{H5Dopen2(f, name, H5P_DEFAULT), H5Dclose};
  EXPECT_GE(d.id, 0) << name;
  H5Id space{H5Dget_space(d), H5Sclose};
  EXPECT_EQ(H5Sget_simple_extent_ndims(space), 1);
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  std::vector<Row> rows(dims[0]);
  H5Id mt{memory_type(members, sizeof(Row)), H5Tclose};
  if (!rows.empty()) {
    EXPECT_GE(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
  }
  return rows;
}

// The stored (file-type) bytes of a dataset, exactly as h5py/numpy sees them.
std::vector<unsigned char> raw_bytes(const std::string& file, const char* name) {
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5Id d{H5Dopen2(f, name, H5P_DEFAULT), H5Dclose};
  H5Id t{H5Dget_type(d), H5Tclose};
  H5Id space{H5Dget_space(d), H5Sclose};
  const std::size_t n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
  std::vector<unsigned char> bytes(n * H5Tget_size(t));
  if (n) {
    EXPECT_GE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), 0);
  }
  return bytes;
}

hsize_t row_count(const std::string& file, const char* name) {
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5Id d{H5Dopen2(f, name, H5P_DEFAULT), H5Dclose};
  if (d.id < 0) return static_cast<hsize_t>(-1);
  H5Id space{H5Dget_space(d), H5Sclose};
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  return dims[0];
}

std::string read_string_attr(hid_t file, const char* name) {
  H5Id a{H5Aopen(file, name, H5P_DEFAULT), H5Aclose};
  H5Id ft{H5Aget_type(a), H5Tclose};
  EXPECT_EQ(H5Tget_class(ft), H5T_STRING) << name;
  EXPECT_TRUE(H5Tis_variable_str(ft) > 0) << name << " must be a variable-length string";
  H5Id mt{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(mt, H5T_VARIABLE);
  H5Tset_cset(mt, H5Tget_cset(ft));
  char* text = nullptr;
  EXPECT_GE(H5Aread(a, mt, &text), 0) << name;
  std::string out = text ? text : "";
  H5free_memory(text);
  return out;
}

template <typename T>
T read_scalar_attr(hid_t file, const char* name, hid_t mem_type, H5T_class_t cls,
                   std::size_t size) {
  H5Id a{H5Aopen(file, name, H5P_DEFAULT), H5Aclose};
  EXPECT_GE(a.id, 0) << name;
  H5Id ft{H5Aget_type(a), H5Tclose};
  EXPECT_EQ(H5Tget_class(ft), cls) << name;
  EXPECT_EQ(H5Tget_size(ft), size) << name;
  H5Id space{H5Aget_space(a), H5Sclose};
  EXPECT_EQ(H5Sget_simple_extent_type(space), H5S_SCALAR) << name;
  T value{};
  EXPECT_GE(H5Aread(a, mem_type, &value), 0) << name;
  return value;
}

// ---- fixtures and row builders -------------------------------------------------------------

class ResultWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "ppsearch_io_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

ResultRow feasible_row(int gpus, int tp, int pp, int dp, double mfu) {
  ResultRow r{};
  r.gpus = gpus;
  r.tp = tp;
  r.pp = pp;
  r.cp = 1;
  r.dp = dp;
  r.vpp = 1;
  r.mbs = 1;
  r.global_batch_size = 64;
  r.num_microbatches = 64 / dp;
  r.schedule = 1;
  r.recompute = 0;
  r.sequence_parallel = tp > 1 ? 1 : 0;
  r.zero_stage = 1;
  r.feasible = 1;
  r.infeasible_reason = 0;
  r.mfu = mfu;
  r.hfu = std::min(1.0, mfu * 1.25);
  r.iteration_time_s = 10.0 / mfu;
  r.tflops_per_gpu = mfu * 989.0;
  r.tokens_per_s = 64 * 8192 / r.iteration_time_s;
  r.bubble_fraction = (pp - 1.0) / (r.num_microbatches + pp - 1.0);
  r.peak_memory_gb = 40.0 + 100.0 / (tp * pp);
  r.compute_s = 0.7 * r.iteration_time_s;
  r.tp_comm_s = 0.1 * r.iteration_time_s;
  r.cp_comm_s = 0;
  r.pp_comm_s = 0.05 * r.iteration_time_s;
  r.dp_comm_s = 0.05 * r.iteration_time_s;
  r.pipeline_s = 0.9 * r.iteration_time_s;
  r.optimizer_s = 0.1 * r.iteration_time_s;
  r.needed_memory_gb = r.peak_memory_gb;
  r.worst_rank = 0;
  r.time_to_train_s = kNaN;  // no training.tokens in sample_meta's configuration
  r.gpu_hours = kNaN;
  r.cost = kNaN;
  return r;
}

ResultRow infeasible_row(int gpus, int tp, int pp, int dp, std::uint8_t reason) {
  ResultRow r = feasible_row(gpus, tp, pp, dp, 0.5);
  r.feasible = 0;
  r.infeasible_reason = reason;
  for (double* d :
       {&r.iteration_time_s, &r.mfu, &r.hfu, &r.tflops_per_gpu, &r.tokens_per_s, &r.bubble_fraction,
        &r.compute_s, &r.tp_comm_s, &r.cp_comm_s, &r.pp_comm_s, &r.dp_comm_s, &r.pipeline_s,
        &r.optimizer_s, &r.time_to_train_s, &r.gpu_hours, &r.cost}) {
    *d = kNaN;
  }
  r.peak_memory_gb = kNaN;
  r.needed_memory_gb = 180.5;
  r.worst_rank = pp - 1;
  return r;
}

// Random rows with every field exercised (any values: the writer does not rank or check them).
std::vector<ResultRow> random_rows(std::mt19937_64& rng, int n) {
  std::uniform_int_distribution<int> deg(1, 64);
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  std::vector<ResultRow> rows;
  for (int i = 0; i < n; ++i) {
    ResultRow r{};
    for (std::int32_t* p : {&r.gpus, &r.tp, &r.pp, &r.cp, &r.dp, &r.vpp, &r.mbs,
                            &r.num_microbatches, &r.global_batch_size, &r.worst_rank}) {
      *p = deg(rng) * (rng() % 7 == 0 ? -1 : 1);
    }
    r.gpus = std::numeric_limits<std::int32_t>::max() - i;  // extremes survive too
    r.schedule = static_cast<std::uint8_t>(rng() % kScheduleNames.size());
    r.recompute = static_cast<std::uint8_t>(rng() % kRecomputeNames.size());
    r.sequence_parallel = static_cast<std::uint8_t>(rng() % 2);
    r.zero_stage = static_cast<std::int8_t>(static_cast<int>(rng() % 4) - (i == 0 ? 4 : 0));
    r.feasible = static_cast<std::uint8_t>(rng() % 2);
    r.infeasible_reason = static_cast<std::uint8_t>(rng() % kReasonNames.size());
    for (double* d : {&r.iteration_time_s,
                      &r.mfu,
                      &r.hfu,
                      &r.tflops_per_gpu,
                      &r.tokens_per_s,
                      &r.bubble_fraction,
                      &r.peak_memory_gb,
                      &r.compute_s,
                      &r.tp_comm_s,
                      &r.cp_comm_s,
                      &r.pp_comm_s,
                      &r.dp_comm_s,
                      &r.pipeline_s,
                      &r.optimizer_s,
                      &r.needed_memory_gb,
                      &r.time_to_train_s,
                      &r.gpu_hours,
                      &r.cost,
                      &r.iteration_time_lo_s,
                      &r.iteration_time_hi_s}) {
      const auto pick = rng() % 10;
      *d = pick == 0   ? kNaN
           : pick == 1 ? std::numeric_limits<double>::denorm_min()
           : pick == 2 ? std::numeric_limits<double>::infinity()
                       : real(rng);
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<StageRow> random_stages(std::mt19937_64& rng, int n, std::int64_t first_candidate) {
  std::vector<StageRow> rows;
  for (int i = 0; i < n; ++i) {
    StageRow s{};
    s.candidate = first_candidate + i / 4 + (std::int64_t{1} << 40);
    s.stage = i % 4;
    s.pipeline_rank = static_cast<std::int32_t>(rng() % 1000);
    s.first_layer = static_cast<std::int32_t>(rng() % 100);
    s.last_layer = s.first_layer + static_cast<std::int32_t>(rng() % 5);
    s.time_s = (rng() % 13 == 0) ? kNaN : std::ldexp(static_cast<double>(rng() % 1000003), -10);
    s.memory_gb = static_cast<double>(rng() % 1000) / 7.0;
    rows.push_back(s);
  }
  return rows;
}

bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_rows_equal(const ResultRow& a, const ResultRow& b, std::size_t i) {
  SCOPED_TRACE("row " + std::to_string(i));
  for (const Member& m : kRowMembers) {
    const auto* pa = reinterpret_cast<const unsigned char*>(&a) + m.offset;
    const auto* pb = reinterpret_cast<const unsigned char*>(&b) + m.offset;
    if (m.kind == K::kF64) {
      double x, y;
      std::memcpy(&x, pa, 8);
      std::memcpy(&y, pb, 8);
      EXPECT_TRUE(same_double(x, y)) << m.name << ": " << x << " vs " << y;
    } else {
      EXPECT_EQ(std::memcmp(pa, pb, kind_size(m.kind)), 0) << m.name;
    }
  }
}

ResultMeta sample_meta() {
  ResultMeta m;
  m.ppsearch_version = "0.1.0";
  m.schema_version = 1;
  m.command_line = "ppsearch --gpus 8,16 --output 'x y.h5'";
  m.created_utc = "2025-01-02T03:04:05Z";
  m.resolved_config = "[model]\nname = llama3-70b\nlayers = 80\n# unicode: \xc2\xb5s\n";
  m.mpi_ranks = 3;
  m.threads_per_rank = 2;
  m.candidates_evaluated = 0;
  m.candidates_feasible = 0;
  m.search_wall_s = 1.25;
  m.candidates_enumerated = 1234567890123;
  m.rule_counts = "tp_divides_heads=10;pp_fits_layers=2";
  m.infeasible_counts = "memory=3";
  m.rank_busy_s = {0.5, 0.25, 0.75};
  m.rank_imbalance = 1.5;
  return m;
}

// ---- round trip ----------------------------------------------------------------------------

TEST_F(ResultWriterTest, RandomRowsRoundTripThroughTheHdf5Api) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const auto rows = random_rows(rng, 200 + static_cast<int>(seed));
    const auto best = random_rows(rng, 3);
    const auto s1 = random_stages(rng, 5000, 0);  // more than one chunk
    const auto s2 = random_stages(rng, 3, 5000);
    const std::string file = path("rt" + std::to_string(seed) + ".h5");
    {
      auto w = make_hdf5_result_writer(file, false);
      w->write_candidates(rows);
      w->write_stages(s1);
      w->write_stages({});
      w->write_stages(s2);
      w->write_best(best);
      w->commit(sample_meta());
    }
    const auto got = read_table<ResultRow>(file, "candidates", kRowMembers);
    ASSERT_EQ(got.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) expect_rows_equal(got[i], rows[i], i);
    const auto got_best = read_table<ResultRow>(file, "best", kRowMembers);
    ASSERT_EQ(got_best.size(), best.size());
    for (std::size_t i = 0; i < best.size(); ++i) expect_rows_equal(got_best[i], best[i], i);

    const auto stages = read_table<StageRow>(file, "stages", kStageMembers);
    std::vector<StageRow> want(s1);
    want.insert(want.end(), s2.begin(), s2.end());
    ASSERT_EQ(stages.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("stage row " + std::to_string(i));
      EXPECT_EQ(stages[i].candidate, want[i].candidate);
      EXPECT_EQ(stages[i].stage, want[i].stage);
      EXPECT_EQ(stages[i].pipeline_rank, want[i].pipeline_rank);
      EXPECT_EQ(stages[i].first_layer, want[i].first_layer);
      EXPECT_EQ(stages[i].last_layer, want[i].last_layer);
      EXPECT_TRUE(same_double(stages[i].time_s, want[i].time_s));
      EXPECT_TRUE(same_double(stages[i].memory_gb, want[i].memory_gb));
    }
  }
}

TEST_F(ResultWriterTest, NanTimingsOfInfeasibleRowsSurvive) {
  const std::string file = path("nan.h5");
  const std::vector<ResultRow> rows = {feasible_row(8, 2, 2, 2, 0.4),
                                       infeasible_row(8, 1, 1, 8, 1)};
  {
    auto w = make_hdf5_result_writer(file, false);
    w->write_candidates(rows);
    w->commit(sample_meta());
  }
  const auto got = read_table<ResultRow>(file, "candidates", kRowMembers);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].mfu, 0.4);
  EXPECT_TRUE(std::isnan(got[1].iteration_time_s));
  EXPECT_TRUE(std::isnan(got[1].mfu));
  EXPECT_TRUE(std::isnan(got[1].dp_comm_s));
  EXPECT_TRUE(std::isnan(got[1].peak_memory_gb));
  EXPECT_EQ(got[1].needed_memory_gb, 180.5);
  EXPECT_EQ(got[1].infeasible_reason, 1);
  EXPECT_EQ(got[1].feasible, 0);
}

// ---- the file types ------------------------------------------------------------------------

void expect_member_types(hid_t file, const char* dataset, const std::vector<Member>& members) {
  SCOPED_TRACE(dataset);
  H5Id d{H5Dopen2(file, dataset, H5P_DEFAULT), H5Dclose};
  ASSERT_GE(d.id, 0);
  H5Id t{H5Dget_type(d), H5Tclose};
  ASSERT_EQ(H5Tget_class(t), H5T_COMPOUND);
  ASSERT_EQ(H5Tget_nmembers(t), static_cast<int>(members.size()));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    SCOPED_TRACE(m.name);
    char* name = H5Tget_member_name(t, static_cast<unsigned>(i));
    EXPECT_STREQ(name, m.name);  // same names, in declaration order
    H5free_memory(name);
    // Packed: each member starts where the previous one ends, no padding anywhere.
    EXPECT_EQ(H5Tget_member_offset(t, static_cast<unsigned>(i)), offset);
    H5Id mt{H5Tget_member_type(t, static_cast<unsigned>(i)), H5Tclose};
    EXPECT_EQ(H5Tget_size(mt), kind_size(m.kind));
    offset += kind_size(m.kind);
    switch (m.kind) {
      case K::kF64:
        EXPECT_EQ(H5Tget_class(mt), H5T_FLOAT);
        EXPECT_TRUE(H5Tequal(mt, H5T_IEEE_F64LE) > 0);
        break;
      case K::kI32:
      case K::kI64:
      case K::kI8:
        EXPECT_EQ(H5Tget_class(mt), H5T_INTEGER);
        EXPECT_EQ(H5Tget_sign(mt), H5T_SGN_2);
        EXPECT_EQ(H5Tget_order(mt), H5T_ORDER_LE);
        break;
      case K::kU8:
        EXPECT_EQ(H5Tget_class(mt), H5T_INTEGER);
        EXPECT_EQ(H5Tget_sign(mt), H5T_SGN_NONE);
        break;
      default: {
        ASSERT_EQ(H5Tget_class(mt), H5T_ENUM);
        const auto& names = *enum_names(m.kind);
        ASSERT_EQ(H5Tget_nmembers(mt), static_cast<int>(names.size()));
        H5Id base{H5Tget_super(mt), H5Tclose};
        EXPECT_EQ(H5Tget_sign(base), H5T_SGN_NONE);
        for (std::size_t v = 0; v < names.size(); ++v) {
          char* en = H5Tget_member_name(mt, static_cast<unsigned>(v));
          std::uint8_t value = 255;
          H5Tget_member_value(mt, static_cast<unsigned>(v), &value);
          EXPECT_EQ(en, names[value]) << "enum value " << int(value);
          H5free_memory(en);
        }
      }
    }
  }
  EXPECT_EQ(H5Tget_size(t), offset);
}

TEST_F(ResultWriterTest, FileTypesArePackedContractTypes) {
  const std::string file = path("types.h5");
  {
    auto w = make_hdf5_result_writer(file, false);
    w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
    w->commit(sample_meta());
  }
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  ASSERT_GE(f.id, 0);
  expect_member_types(f, "candidates", kRowMembers);
  expect_member_types(f, "best", kRowMembers);
  expect_member_types(f, "stages", kStageMembers);
}

TEST_F(ResultWriterTest, IdenticalRowsGiveIdenticalBytes) {
  // Same values, different garbage in the struct padding and NaNs of different sign/payload:
  // the stored bytes must not differ.
  std::mt19937_64 rng(7);
  const auto clean = random_rows(rng, 50);
  std::vector<ResultRow> dirty(clean.size());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    std::memset(static_cast<void*>(&dirty[i]), 0xA5, sizeof(ResultRow));
    for (const Member& m : kRowMembers) {
      std::memcpy(reinterpret_cast<unsigned char*>(&dirty[i]) + m.offset,
                  reinterpret_cast<const unsigned char*>(&clean[i]) + m.offset, kind_size(m.kind));
    }
    if (std::isnan(dirty[i].mfu)) dirty[i].mfu = -std::numeric_limits<double>::quiet_NaN();
    if (std::isnan(dirty[i].hfu)) dirty[i].hfu = std::nan("42");
  }
  ResultMeta other = sample_meta();
  other.created_utc = "2030-12-31T23:59:59Z";
  other.search_wall_s = 99;
  const std::string a = path("a.h5"), b = path("b.h5");
  {
    auto w = make_hdf5_result_writer(a, false);
    w->write_candidates(clean);
    w->write_best(clean);
    w->commit(sample_meta());
  }
  {
    auto w = make_hdf5_result_writer(b, false);
    w->write_candidates(dirty);
    w->write_best(dirty);
    w->commit(other);
  }
  const auto ba = raw_bytes(a, "candidates");
  // 9*4 + 6*1 + 15*8 + 2*4 + 3*8 + 2*4 (ep, etp) + 2*8 (lo, hi) + 1 (placement) bytes per packed
  // row
  ASSERT_EQ(ba.size(), clean.size() * 219u);
  EXPECT_TRUE(ba == raw_bytes(b, "candidates"));
  EXPECT_TRUE(raw_bytes(a, "best") == raw_bytes(b, "best"));
  EXPECT_FALSE(raw_bytes(a, "candidates") == raw_bytes(a, "stages"));  // the helper can differ
}

TEST_F(ResultWriterTest, SameInputGivesTheSameFile) {
  // No timestamps in the file: identical rows and metadata give identical files.
  std::mt19937_64 rng(5);
  const auto rows = random_rows(rng, 300);
  const auto stages = random_stages(rng, 100, 0);
  std::vector<std::vector<char>> images;
  for (const char* name : {"one.h5", "two.h5"}) {
    {
      auto w = make_hdf5_result_writer(path(name), false);
      w->write_candidates(rows);
      w->write_stages(stages);
      w->write_best({rows[0]});
      w->commit(sample_meta());
    }
    std::ifstream in(path(name), std::ios::binary);
    images.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(images[0].size(), 1000u);
  EXPECT_TRUE(images[0] == images[1]);
}

TEST_F(ResultWriterTest, EmptyDatasetsExistWithZeroRows) {
  const std::string file = path("empty.h5");
  {
    auto w = make_hdf5_result_writer(file, false);
    w->write_stages({});
    w->commit(sample_meta());
  }
  EXPECT_EQ(row_count(file, "candidates"), 0u);
  EXPECT_EQ(row_count(file, "stages"), 0u);
  EXPECT_EQ(row_count(file, "best"), 0u);
}

TEST_F(ResultWriterTest, RootAttributes) {
  const std::string file = path("attrs.h5");
  const ResultMeta meta = sample_meta();
  {
    auto w = make_hdf5_result_writer(file, false);
    w->commit(meta);
  }
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  ASSERT_GE(f.id, 0);
  EXPECT_EQ(read_string_attr(f, "ppsearch_version"), meta.ppsearch_version);
  EXPECT_EQ(read_string_attr(f, "command_line"), meta.command_line);
  EXPECT_EQ(read_string_attr(f, "created_utc"), meta.created_utc);
  EXPECT_EQ(read_string_attr(f, "resolved_config"), meta.resolved_config);
  EXPECT_EQ(read_string_attr(f, "rule_counts"), meta.rule_counts);
  EXPECT_EQ(read_string_attr(f, "infeasible_counts"), meta.infeasible_counts);
  using I32 = std::int32_t;
  using I64 = std::int64_t;
  EXPECT_EQ(read_scalar_attr<I32>(f, "schema_version", H5T_NATIVE_INT32, H5T_INTEGER, 4), 1);
  EXPECT_EQ(read_scalar_attr<I32>(f, "mpi_ranks", H5T_NATIVE_INT32, H5T_INTEGER, 4), 3);
  EXPECT_EQ(read_scalar_attr<I32>(f, "threads_per_rank", H5T_NATIVE_INT32, H5T_INTEGER, 4), 2);
  EXPECT_EQ(read_scalar_attr<I64>(f, "candidates_evaluated", H5T_NATIVE_INT64, H5T_INTEGER, 8), 0);
  EXPECT_EQ(read_scalar_attr<I64>(f, "candidates_feasible", H5T_NATIVE_INT64, H5T_INTEGER, 8), 0);
  EXPECT_EQ(read_scalar_attr<I64>(f, "candidates_enumerated", H5T_NATIVE_INT64, H5T_INTEGER, 8),
            1234567890123);
  EXPECT_EQ(read_scalar_attr<double>(f, "search_wall_s", H5T_NATIVE_DOUBLE, H5T_FLOAT, 8), 1.25);
  EXPECT_EQ(read_scalar_attr<double>(f, "rank_imbalance", H5T_NATIVE_DOUBLE, H5T_FLOAT, 8), 1.5);

  H5Id a{H5Aopen(f, "rank_busy_s", H5P_DEFAULT), H5Aclose};
  ASSERT_GE(a.id, 0);
  H5Id space{H5Aget_space(a), H5Sclose};
  ASSERT_EQ(H5Sget_simple_extent_ndims(space), 1);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  ASSERT_EQ(n, 3u);
  std::vector<double> busy(3);
  ASSERT_GE(H5Aread(a, H5T_NATIVE_DOUBLE, busy.data()), 0);
  EXPECT_EQ(busy, meta.rank_busy_s);
}

TEST_F(ResultWriterTest, EmptyRankBusyIsAZeroLengthArray) {
  const std::string file = path("busy.h5");
  ResultMeta meta = sample_meta();
  meta.rank_busy_s.clear();
  {
    auto w = make_hdf5_result_writer(file, false);
    w->commit(meta);
  }
  H5Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5Id a{H5Aopen(f, "rank_busy_s", H5P_DEFAULT), H5Aclose};
  ASSERT_GE(a.id, 0);
  H5Id space{H5Aget_space(a), H5Sclose};
  EXPECT_EQ(H5Sget_simple_extent_npoints(space), 0);
}

// ---- publication: temp file, commit, overwrite ---------------------------------------------

TEST_F(ResultWriterTest, FileAppearsOnlyOnCommit) {
  const std::string file = path("out.h5");
  auto w = make_hdf5_result_writer(file, false);
  w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
  EXPECT_FALSE(fs::exists(file));
  // Until commit: one private folder ".out.h5.ppsearch-tmp-XXXXXX" (random, mode 0700) holding
  // the file being written, under the final base name.
  const auto before = listing();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_TRUE(std::regex_match(before[0], std::regex(R"(\.out\.h5\.ppsearch-tmp-[A-Za-z0-9]{6})")))
      << before[0];
  struct stat st {};
  ASSERT_EQ(lstat(path(before[0]).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_TRUE(fs::is_regular_file(dir_ / before[0] / "out.h5"));
  w->commit(sample_meta());
  EXPECT_EQ(listing(), std::vector<std::string>{"out.h5"});
  w.reset();  // destroying a committed writer keeps the file
  EXPECT_EQ(row_count(file, "candidates"), 1u);
}

// The temporary name does not depend on the process id: two writers of one process (as two
// processes with the same pid in different containers) never share it.
TEST_F(ResultWriterTest, TemporaryNamesAreUniquePerWriter) {
  const std::string file = path("same.h5");
  auto a = make_hdf5_result_writer(file, true);
  auto b = make_hdf5_result_writer(file, true);
  ASSERT_EQ(listing().size(), 2u);
  std::mt19937_64 rng(3);
  const auto rows_a = random_rows(rng, 10);
  const auto rows_b = random_rows(rng, 20);
  a->write_candidates(rows_a);
  b->write_candidates(rows_b);
  b->commit(sample_meta());
  EXPECT_EQ(row_count(file, "candidates"), 20u);
  a->commit(sample_meta());  // the later commit wins, with its own rows
  EXPECT_EQ(row_count(file, "candidates"), 10u);
  EXPECT_EQ(listing(), std::vector<std::string>{"same.h5"});
}

// A symbolic link planted where the old scheme put its temporary file (PATH.tmp-<pid>) is not
// followed: the file it points to and the link itself stay as they are.
TEST_F(ResultWriterTest, PlantedLinkAtAnOldTemporaryNameIsNotFollowed) {
  const std::string file = path("out.h5");
  const std::string victim = path("victim.txt");
  { std::ofstream(victim) << "precious"; }
  const std::string planted = file + ".tmp-" + std::to_string(getpid());
  fs::create_symlink(victim, planted);
  {
    auto w = make_hdf5_result_writer(file, false);
    w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
    w->commit(sample_meta());
  }
  EXPECT_EQ(row_count(file, "candidates"), 1u);
  EXPECT_TRUE(fs::is_symlink(planted));
  EXPECT_EQ(fs::read_symlink(planted), fs::path(victim));
  std::ifstream in(victim);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "precious");
  EXPECT_FALSE(fs::is_symlink(file));
  EXPECT_EQ(listing(),
            (std::vector<std::string>{"out.h5", fs::path(planted).filename(), "victim.txt"}));
}

// Streaming: rows appended in blocks of any size give the same file as one call (the writer
// hands HDF5 fixed blocks of whole chunks), and more rows than one block are all kept.
TEST_F(ResultWriterTest, RowsAppendedInBlocksGiveTheSameFile) {
  std::mt19937_64 rng(13);
  const auto rows = random_rows(rng, 60000);  // > 2 write blocks of 16 chunks of 1579 rows
  const auto stages = random_stages(rng, 70000, 0);
  const std::vector<std::size_t> cuts = {1, 7, 1578, 1579, 25263, 25264, 25265, 40000, 60000};
  const std::string one = path("one.h5"), many = path("many.h5");
  {
    auto w = make_hdf5_result_writer(one, false);
    w->write_candidates(rows);
    w->write_stages(stages);
    w->write_best({rows[5]});
    w->commit(sample_meta());
  }
  {
    auto w = make_hdf5_result_writer(many, false);
    std::size_t from = 0;
    for (std::size_t cut : cuts) {
      w->write_candidates(std::vector<ResultRow>(rows.begin() + from, rows.begin() + cut));
      w->write_stages({});
      from = cut;
    }
    w->write_stages(std::vector<StageRow>(stages.begin(), stages.begin() + 33333));
    w->write_stages(std::vector<StageRow>(stages.begin() + 33333, stages.end()));
    w->write_best({rows[5]});
    w->commit(sample_meta());
  }
  EXPECT_EQ(row_count(many, "candidates"), rows.size());
  EXPECT_EQ(row_count(many, "stages"), stages.size());
  EXPECT_TRUE(raw_bytes(one, "candidates") == raw_bytes(many, "candidates"));
  EXPECT_TRUE(raw_bytes(one, "stages") == raw_bytes(many, "stages"));
  std::vector<std::vector<char>> images;
  for (const std::string& f : {one, many}) {
    std::ifstream in(f, std::ios::binary);
    images.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_TRUE(images[0] == images[1]);
}

TEST_F(ResultWriterTest, DestroyedWithoutCommitLeavesNothing) {
  const std::string file = path("out.h5");
  {
    auto w = make_hdf5_result_writer(file, false);
    w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
    w->write_stages({StageRow{0, 0, 0, 0, 81, 1.0, 50.0, 0, 0, 0, 0, 0, 0, 50.0, 0}});
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(ResultWriterTest, RefusesToOverwriteWithoutPermission) {
  const std::string file = path("exists.h5");
  { std::ofstream(file) << "precious"; }
  try {
    make_hdf5_result_writer(file, false);
    FAIL() << "expected OutputError";
  } catch (const OutputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file), std::string::npos) << msg;
    EXPECT_NE(msg.find("exists"), std::string::npos) << msg;
  }
  std::ifstream in(file);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "precious");
  EXPECT_EQ(listing(), std::vector<std::string>{"exists.h5"});
}

TEST_F(ResultWriterTest, OverwriteReplacesTheFile) {
  const std::string file = path("exists.h5");
  { std::ofstream(file) << "old"; }
  {
    auto w = make_hdf5_result_writer(file, true);
    w->write_candidates({feasible_row(8, 2, 2, 2, 0.4), feasible_row(8, 1, 2, 4, 0.3)});
    w->commit(sample_meta());
  }
  EXPECT_EQ(row_count(file, "candidates"), 2u);
  EXPECT_EQ(listing(), std::vector<std::string>{"exists.h5"});
}

TEST_F(ResultWriterTest, FileCreatedMeanwhileIsNotClobbered) {
  const std::string file = path("race.h5");
  auto w = make_hdf5_result_writer(file, false);
  w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
  { std::ofstream(file) << "someone else's"; }
  EXPECT_THROW(w->commit(sample_meta()), OutputError);
  w.reset();
  std::ifstream in(file);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "someone else's");
  EXPECT_EQ(listing(), std::vector<std::string>{"race.h5"});  // temporary removed
}

TEST_F(ResultWriterTest, CreatesMissingParentFolders) {
  const std::string file = path("results/a/b/out.h5");
  {
    auto w = make_hdf5_result_writer(file, false);
    w->commit(sample_meta());
  }
  EXPECT_TRUE(fs::is_regular_file(file));
}

TEST_F(ResultWriterTest, UnwritablePathsThrowOutputErrorNamingThePath) {
  { std::ofstream(path("plainfile")) << "x"; }
  const std::vector<std::pair<std::string, bool>> cases = {
      {path("plainfile/out.h5"), false},      // parent is a file
      {path("plainfile/sub/out.h5"), false},  // cannot create the folder
      {dir_.string(), true},                  // a folder, even with overwrite
      {"", false},                            // no name at all
      {"/proc/ppsearch_no_such_dir/out.h5", false},
  };
  for (const auto& [p, overwrite] : cases) {
    SCOPED_TRACE(p);
    try {
      auto w = make_hdf5_result_writer(p, overwrite);
      FAIL() << "expected OutputError";
    } catch (const OutputError& e) {
      const std::string msg = e.what();
      if (!p.empty()) {
        EXPECT_NE(msg.find("'" + p + "'"), std::string::npos) << msg;
      }
    }
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"plainfile"});
}

TEST_F(ResultWriterTest, ReadOnlyFolderThrowsOutputError) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  const fs::path ro = dir_ / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(make_hdf5_result_writer((ro / "out.h5").string(), false), OutputError);
  fs::permissions(ro, fs::perms::owner_all);
}

// A write that fails at the disk (here: the file size limit, as a full disk would) is an
// OutputError with the system's reason, and leaves neither the final nor the temporary file.
TEST_F(ResultWriterTest, DiskWriteFailureIsAnOutputError) {
  std::mt19937_64 rng(11);
  const auto rows = random_rows(rng, 2000);  // random doubles do not compress: > 100 KB
  const std::string file = path("full.h5");
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of the signal
  rlimit small = old;
  small.rlim_cur = 16 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    auto w = make_hdf5_result_writer(file, false);
    w->write_candidates(rows);
    w->commit(sample_meta());
  } catch (const OutputError& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("'" + file + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
  EXPECT_TRUE(listing().empty());
}

TEST_F(ResultWriterTest, MisuseIsALogicError) {
  const std::string file = path("misuse.h5");
  auto w = make_hdf5_result_writer(file, false);
  ResultRow bad = feasible_row(8, 2, 2, 2, 0.4);
  bad.schedule = 7;  // no such schedule name
  EXPECT_THROW(w->write_candidates({bad}), std::logic_error);
  bad = feasible_row(8, 2, 2, 2, 0.4);
  bad.infeasible_reason = 9;
  EXPECT_THROW(w->write_best({bad}), std::logic_error);
  w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
  w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});  // appends
  w->write_best({feasible_row(8, 2, 2, 2, 0.4)});
  EXPECT_THROW(w->write_best({feasible_row(8, 2, 2, 2, 0.4)}), std::logic_error);
  w->commit(sample_meta());
  EXPECT_THROW(w->commit(sample_meta()), std::logic_error);
  EXPECT_THROW(w->write_stages({}), std::logic_error);
  EXPECT_THROW(w->write_candidates({}), std::logic_error);
  EXPECT_EQ(row_count(file, "candidates"), 2u);
  EXPECT_EQ(row_count(file, "best"), 1u);
}

// ---- output safety: never anything but a regular file (docs/results.md, "Output safety") ------

// What a name is, as lstat sees it: type, device numbers, inode, link target.
struct NodeId {
  mode_t type = 0;
  dev_t rdev = 0;
  ino_t ino = 0;
  std::string link;
  bool operator==(const NodeId& o) const {
    return type == o.type && rdev == o.rdev && ino == o.ino && link == o.link;
  }
};

NodeId node_id(const std::string& p) {
  struct stat st {};
  NodeId id;
  if (lstat(p.c_str(), &st) != 0) return id;
  id.type = st.st_mode & S_IFMT;
  id.rdev = st.st_rdev;
  id.ino = st.st_ino;
  if (S_ISLNK(st.st_mode)) id.link = fs::read_symlink(p).string();
  return id;
}

// Makes every kind of non-regular target in `dir`, named after its kind. Device nodes are
// private copies (mknod, c 1 3 and c 1 7 as /dev/null and /dev/full), only where mknod is
// allowed. The socket is bound and closed (the name stays).
std::vector<std::string> make_special_targets(const fs::path& dir) {
  std::vector<std::string> names;
  if (mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) names.push_back("null");
  if (mknod((dir / "full").c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) names.push_back("full");
  if (mkfifo((dir / "fifo").c_str(), 0644) == 0) names.push_back("fifo");
  const std::string sock = (dir / "sock").string();
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd >= 0 && sock.size() < sizeof addr.sun_path) {
    std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) names.push_back("sock");
  }
  if (fd >= 0) close(fd);
  fs::create_directory(dir / "folder");
  names.push_back("folder");
  { std::ofstream(dir / "regular.h5") << "precious"; }
  fs::create_symlink(dir / "regular.h5", dir / "link");  // even to a regular file
  names.push_back("link");
  fs::create_symlink(dir / "nowhere.h5", dir / "dangling");
  names.push_back("dangling");
  return names;
}

TEST_F(ResultWriterTest, NonRegularTargetsAreRefusedAndLeftAsTheyAre) {
  const auto names = make_special_targets(dir_);
  const auto before_listing = listing();
  for (const std::string& name : names) {
    for (const bool overwrite : {false, true}) {
      SCOPED_TRACE(name + (overwrite ? " with overwrite" : ""));
      const std::string target = path(name);
      const NodeId before = node_id(target);
      const std::string problem = output_target_problem(target, overwrite);
      EXPECT_NE(problem.find(name == "folder" ? "directory" : "not a regular file"),
                std::string::npos)
          << problem;
      try {
        auto w = make_hdf5_result_writer(target, overwrite);
        ADD_FAILURE() << "expected OutputTargetError";
      } catch (const OutputTargetError& e) {
        EXPECT_NE(std::string(e.what()).find("'" + target + "'"), std::string::npos) << e.what();
      }
      try {
        write_runs_table(target, {}, "ppsearch-validate x.csv", overwrite);
        ADD_FAILURE() << "expected OutputTargetError from the runs writer";
      } catch (const OutputTargetError& e) {
        EXPECT_NE(std::string(e.what()).find("'" + target + "'"), std::string::npos) << e.what();
      }
      EXPECT_TRUE(node_id(target) == before);
    }
  }
  EXPECT_EQ(listing(), before_listing);  // no temporary leftovers
  std::ifstream in(path("regular.h5"));
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "precious");
}

TEST_F(ResultWriterTest, DeviceNodesAreRefused) {
  // The case of the report (--output /dev/null --overwrite as root), on a private node.
  if (mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod not allowed here: " << std::strerror(errno);
  }
  const NodeId before = node_id(path("null"));
  EXPECT_THROW(make_hdf5_result_writer(path("null"), true), OutputTargetError);
  const NodeId after = node_id(path("null"));
  EXPECT_EQ(after.type, static_cast<mode_t>(S_IFCHR));
  EXPECT_EQ(after.rdev, makedev(1, 3));
  EXPECT_TRUE(after == before);
  EXPECT_EQ(listing(), std::vector<std::string>{"null"});
}

// The final name turns into something else while the results are computed: commit() refuses to
// rename over it, with or without overwrite, and removes its temporary folder.
TEST_F(ResultWriterTest, TargetThatChangesDuringTheRunIsNotReplaced) {
  using Make = void (*)(const std::string&);
  const std::vector<std::pair<std::string, Make>> changes = {
      {"fifo", [](const std::string& p) { ASSERT_EQ(mkfifo(p.c_str(), 0644), 0); }},
      {"folder", [](const std::string& p) { fs::create_directory(p); }},
      {"link", [](const std::string& p) { fs::create_symlink("elsewhere.h5", p); }},
      {"file", [](const std::string& p) { std::ofstream(p) << "someone else's"; }},
  };
  for (const auto& [kind, make] : changes) {
    for (const bool overwrite : {false, true}) {
      if (kind == "file" && overwrite) continue;  // replacing a regular file is what it asks
      SCOPED_TRACE(kind + (overwrite ? " with overwrite" : ""));
      const std::string target = path("out-" + kind + (overwrite ? "-o" : "") + ".h5");
      auto w = make_hdf5_result_writer(target, overwrite);
      w->write_candidates({feasible_row(8, 2, 2, 2, 0.4)});
      make(target);
      const NodeId before = node_id(target);
      try {
        w->commit(sample_meta());
        ADD_FAILURE() << "expected OutputTargetError";
      } catch (const OutputTargetError& e) {
        EXPECT_NE(std::string(e.what()).find("'" + target + "'"), std::string::npos) << e.what();
      }
      w.reset();
      EXPECT_TRUE(node_id(target) == before);
      for (const auto& n : listing()) EXPECT_EQ(n.find("ppsearch-tmp"), std::string::npos) << n;
    }
  }
}

// A fatal signal removes the temporary folder and still ends the process with that signal.
TEST_F(ResultWriterTest, FatalSignalRemovesTheTemporaryFiles) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(sig);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::signal(sig, SIG_DFL);
      install_output_cleanup_handlers();
      auto w = make_hdf5_result_writer(path("out.h5"), false);
      std::mt19937_64 rng(1);
      w->write_candidates(random_rows(rng, 30000));  // some rows on disk already
      bool seen = false;
      for (const auto& e : fs::directory_iterator(dir_))
        seen = seen || e.path().filename().string().find("ppsearch-tmp") != std::string::npos;
      if (!seen) _exit(10);
      kill(getpid(), sig);
      _exit(11);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_TRUE(listing().empty());
  }
}

// ---- h5py reads every contract field (tests/e2e/h5check.py) ---------------------------------

struct ScriptRun {
  int status;
  std::string out;
  std::string err;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string h5check_script() {
  if (const char* env = std::getenv("PPSEARCH_H5CHECK")) return env;
#ifdef PPSEARCH_SOURCE_DIR
  return std::string(PPSEARCH_SOURCE_DIR) + "/tests/e2e/h5check.py";
#else
  return (fs::path(__FILE__).parent_path().parent_path() / "e2e" / "h5check.py").string();
#endif
}

bool have_h5py() { return std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") == 0; }

class H5CheckTest : public ResultWriterTest {
 protected:
  void SetUp() override {
    ResultWriterTest::SetUp();
    if (!have_h5py()) GTEST_SKIP() << "/usr/bin/python3 has no h5py";
    ASSERT_TRUE(fs::exists(h5check_script())) << h5check_script();
  }

  ScriptRun check(const std::string& file, const std::string& args) {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = "/usr/bin/python3 " + shell_quote(h5check_script()) + " " +
                            shell_quote(file) + " " + args + " >" + shell_quote(out) + " 2>" +
                            shell_quote(err);
    const int raw = std::system(cmd.c_str());
    ScriptRun r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  static std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

// A self-consistent result: every (tp, pp, dp) of 8 and 16 GPUs, 1F1B, global batch 64,
// L = 6 layers (items 0..7); small tp*pp runs out of memory. Ranked by this test's own sort.
struct Synthetic {
  std::vector<ResultRow> rows;
  std::vector<StageRow> stages;
  std::vector<ResultRow> best;
  ResultMeta meta;
};

Synthetic synthetic_result() {
  constexpr int kItems = 8;  // embedding, 6 layers, head
  Synthetic s;
  for (int gpus : {8, 16}) {
    for (int tp = 1; tp <= gpus; tp *= 2) {
      for (int pp = 1; tp * pp <= gpus; pp *= 2) {
        const int dp = gpus / (tp * pp);
        if (64 % dp != 0 || pp > kItems) continue;
        if (tp * pp < 2) {
          s.rows.push_back(infeasible_row(gpus, tp, pp, dp, 1));
        } else {
          // mfu falls with tp and with the pipeline bubble; exact ties on purpose for tp*pp = 8.
          const double mfu = 0.6 / (1.0 + 0.05 * tp) / (1.0 + 0.02 * pp);
          s.rows.push_back(feasible_row(gpus, tp, pp, dp, tp * pp == 8 ? 0.3 : mfu));
        }
      }
    }
  }
  auto key = [](const ResultRow& r) {
    return std::make_tuple(r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, r.schedule, r.recompute,
                           r.sequence_parallel, r.zero_stage);
  };
  std::sort(s.rows.begin(), s.rows.end(), [&](const ResultRow& a, const ResultRow& b) {
    if (a.feasible != b.feasible) return a.feasible > b.feasible;
    if (a.feasible && a.mfu != b.mfu) return a.mfu > b.mfu;
    return key(a) < key(b);
  });
  std::map<int, bool> seen;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    ResultRow& r = s.rows[i];
    if (!r.feasible) continue;
    double peak = 0;
    for (int st = 0; st < r.pp; ++st) {
      const int first = st * kItems / r.pp, last = (st + 1) * kItems / r.pp - 1;
      const double mem = 30.0 + st + (last - first);
      peak = std::max(peak, mem);
      s.stages.push_back(StageRow{static_cast<std::int64_t>(i), st, st, first, last, 0.1, mem, 0, 0,
                                  0, 0, 0, 0, mem, 0});
    }
    r.peak_memory_gb = peak;
    r.needed_memory_gb = peak;
    if (!seen[r.gpus]) {
      seen[r.gpus] = true;
      s.best.push_back(r);
    }
  }
  s.meta = sample_meta();
  s.meta.mpi_ranks = 1;
  s.meta.rank_busy_s = {2.0};
  s.meta.candidates_evaluated = static_cast<std::int64_t>(s.rows.size());
  s.meta.candidates_feasible =
      std::count_if(s.rows.begin(), s.rows.end(), [](const ResultRow& r) { return r.feasible; });
  return s;
}

void write_file(const std::string& file, const Synthetic& s) {
  auto w = make_hdf5_result_writer(file, true);
  w->write_candidates(s.rows);
  // Stages in two chunks, as the driver appends them.
  const std::size_t half = s.stages.size() / 2;
  w->write_stages(std::vector<StageRow>(s.stages.begin(), s.stages.begin() + half));
  w->write_stages(std::vector<StageRow>(s.stages.begin() + half, s.stages.end()));
  w->write_best(s.best);
  w->commit(s.meta);
}

TEST_F(H5CheckTest, AcceptsAWellFormedFileAndAnswersQueries) {
  const Synthetic s = synthetic_result();
  ASSERT_GT(s.rows.size(), 10u);
  const std::string file = path("good.h5");
  write_file(file, s);
  const std::string n = std::to_string(s.rows.size());

  ScriptRun r = check(file, "--expect-rows " + n + " --expect-feasible-min 5");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(check(file, "--expect-rows " + std::to_string(s.rows.size() + 1)).status, 1);
  EXPECT_EQ(check(file, "--expect-feasible-min 1000").status, 1);

  // --find reports the 1-based rank, the row index and the mfu of the first match.
  const auto it = std::find_if(s.rows.begin(), s.rows.end(), [](const ResultRow& x) {
    return x.gpus == 16 && x.tp == 4 && x.pp == 2;
  });
  ASSERT_NE(it, s.rows.end());
  const std::size_t idx = static_cast<std::size_t>(it - s.rows.begin());
  r = check(file, "--find gpus=16,tp=4,pp=2,schedule=1f1b");
  ASSERT_EQ(r.status, 0) << r.err;
  char expected[128];
  std::snprintf(expected, sizeof expected, "rank=%zu row=%zu mfu=%.17g\n", idx + 1, idx, it->mfu);
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(check(file, "--find tp=3").status, 1);
  EXPECT_EQ(check(file, "--find schedule=gpipe").status, 1);
  EXPECT_EQ(check(file, "--find nosuchfield=1").status, 2);

  r = check(file, "--print-top 3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // header + 3 rows
  EXPECT_NE(r.out.find("1f1b"), std::string::npos) << r.out;
}

TEST_F(H5CheckTest, CandidatesHashDependsOnlyOnTheRows) {
  const Synthetic s = synthetic_result();
  Synthetic other_meta = s;
  other_meta.meta.created_utc = "1999-01-01T00:00:00Z";
  other_meta.meta.mpi_ranks = 4;
  other_meta.meta.rank_busy_s = {1, 2, 3, 4};
  other_meta.meta.threads_per_rank = 8;
  Synthetic changed = s;
  changed.rows.back().needed_memory_gb += 1e-9;
  write_file(path("a.h5"), s);
  write_file(path("b.h5"), other_meta);
  write_file(path("c.h5"), changed);
  const ScriptRun a = check(path("a.h5"), "--dump-candidates-hash");
  const ScriptRun b = check(path("b.h5"), "--dump-candidates-hash");
  const ScriptRun c = check(path("c.h5"), "--dump-candidates-hash");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(a.out.size(), 65u) << a.out;  // 64 hex digits and a newline
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST_F(H5CheckTest, RejectsFilesThatBreakTheContract) {
  const Synthetic good = synthetic_result();
  std::vector<std::pair<std::string, Synthetic>> cases;
  {
    Synthetic s = good;  // two feasible rows swapped: not by mfu descending
    std::swap(s.rows[0], s.rows[2]);
    cases.emplace_back("unsorted", s);
  }
  {
    Synthetic s = good;  // an infeasible row with a finite timing
    s.rows.back().iteration_time_s = 1.0;
    cases.emplace_back("infeasible timing", s);
  }
  {
    Synthetic s = good;  // a stage row pointing at an infeasible candidate
    s.stages.push_back(StageRow{static_cast<std::int64_t>(s.rows.size() - 1), 0, 0, 0, 7, 1, 1, 0,
                                0, 0, 0, 0, 0, 1, 0});
    cases.emplace_back("stage of infeasible", s);
  }
  {
    Synthetic s = good;  // /best misses a GPU count
    s.best.pop_back();
    cases.emplace_back("best incomplete", s);
  }
  {
    Synthetic s = good;  // /best holds a worse row than the first of its GPU count
    for (const ResultRow& r : s.rows) {
      if (r.feasible && r.gpus == s.best[0].gpus && r.mfu < s.best[0].mfu) {
        s.best[0] = r;
        break;
      }
    }
    cases.emplace_back("best not best", s);
  }
  {
    Synthetic s = good;  // a gap in a layer partition
    s.stages[1].first_layer += 1;
    cases.emplace_back("layer gap", s);
  }
  {
    Synthetic s = good;  // attribute disagrees with the table
    s.meta.candidates_feasible += 1;
    cases.emplace_back("feasible count", s);
  }
  {
    Synthetic s = good;  // the same candidate twice
    s.rows.push_back(s.rows.back());
    s.meta.candidates_evaluated += 1;
    cases.emplace_back("duplicate key", s);
  }
  for (const auto& [name, s] : cases) {
    SCOPED_TRACE(name);
    const std::string file = path("bad.h5");
    write_file(file, s);
    const ScriptRun r = check(file, "");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("FAIL"), std::string::npos) << r.err;
  }
  EXPECT_EQ(check(path("no_such_file.h5"), "").status, 2);
}

}  // namespace
}  // namespace ppsearch
