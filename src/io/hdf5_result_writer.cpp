// HDF5 result file writer (interface.md §3). This is the only translation unit that includes HDF5
// headers; it uses the HDF5 C API and checks every call.
//
// Layout of the file:
//   /candidates  1-D compound, one row per ResultRow, in the order given (ranked order)
//   /stages      1-D compound, one row per StageRow, appended by write_stages
//   /best        1-D compound, same type as /candidates
//   root attributes from ResultMeta
//
// All three datasets are chunked and extendible (unlimited), so they exist with 0 rows when no
// row is ever written, and /stages can grow by appending. The file compound types are packed
// (H5Tpack) and use explicit little-endian types, so the stored bytes depend only on the row
// values: never on struct padding, compiler or host byte order. NaNs are written in one canonical
// bit pattern for the same reason.
//
// Publication: the file is built in memory (HDF5 core driver), its image is written to
// PATH.tmp-<pid> in PATH's folder and synced, then renamed onto PATH by commit(), so PATH never
// names a half-written file. Without overwrite the final step is link()+unlink(), which fails
// instead of replacing a file that appeared in the meantime.
//
// The parallel HDF5 library is not thread-safe: a writer must be used from one thread. No MPI
// driver and no MPI call is used (rank 0 writes alone).
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Enum names, as on the command line (interface.md §1 and §3). Defined here, not taken from the
// other modules' to_string functions, so the file format is fixed in one place. The
// static_asserts tie the numeric values to the C++ enums.
constexpr const char* kScheduleNames[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"};
constexpr const char* kRecomputeNames[] = {"none", "selective", "full"};
constexpr const char* kInfeasibleNames[] = {"none", "memory", "too_few_layers", "schedule"};

template <typename T, std::size_t N>
constexpr int count_of(const T (&)[N]) {
  return static_cast<int>(N);
}

static_assert(count_of(kScheduleNames) == kNumSchedules, "one HDF5 name per Schedule value");
static_assert(count_of(kRecomputeNames) == kNumRecompute, "one HDF5 name per Recompute value");
static_assert(count_of(kInfeasibleNames) == kNumInfeasible, "one HDF5 name per Infeasible value");
static_assert(static_cast<int>(Schedule::kGPipe) == 0 && static_cast<int>(Schedule::k1F1B) == 1 &&
                  static_cast<int>(Schedule::kInterleaved1F1B) == 2 &&
                  static_cast<int>(Schedule::kZBH1) == 3,
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
enum class Kind { kI32, kI64, kU8, kI8, kF64, kSchedule, kRecompute, kInfeasible };

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

constexpr Field kRowFields[] = {
    PPSEARCH_FIELD(ResultRow, gpus, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, tp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, pp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, cp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, dp, Kind::kI32),
    PPSEARCH_FIELD(ResultRow, vpp, Kind::kI32),
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
    PPSEARCH_FIELD(ResultRow, mfu, Kind::kF64),
    PPSEARCH_FIELD(ResultRow, hfu, Kind::kF64),
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
};

constexpr Field kStageFields[] = {
    PPSEARCH_FIELD(StageRow, candidate, Kind::kI64),
    PPSEARCH_FIELD(StageRow, stage, Kind::kI32),
    PPSEARCH_FIELD(StageRow, pipeline_rank, Kind::kI32),
    PPSEARCH_FIELD(StageRow, first_layer, Kind::kI32),
    PPSEARCH_FIELD(StageRow, last_layer, Kind::kI32),
    PPSEARCH_FIELD(StageRow, time_s, Kind::kF64),
    PPSEARCH_FIELD(StageRow, memory_gb, Kind::kF64),
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

// ---------------------------------------------------------------------------------------------
// HDF5 error plumbing.

// Turns off HDF5's own printing of its error stack for the guard's lifetime (HighFive's
// SilenceHDF5); errors are reported through OutputError instead.
class SilenceHdf5 {
 public:
  SilenceHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  SilenceHdf5(const SilenceHdf5&) = delete;
  SilenceHdf5& operator=(const SilenceHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* out) {
  auto* lines = static_cast<std::vector<std::string>*>(out);
  std::string line = err->func_name ? err->func_name : "?";
  if (err->desc && *err->desc) line += std::string(": ") + err->desc;
  lines->push_back(std::move(line));
  return 0;
}

// The current HDF5 error stack, outermost call first, then cleared.
std::string take_hdf5_errors() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  std::string out;
  for (const auto& l : lines) {
    if (!out.empty()) out += "; ";
    out += l;
  }
  return out.empty() ? std::string("no HDF5 error detail") : "HDF5: " + out;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw OutputError("cannot write '" + path + "': " + what + " (" + take_hdf5_errors() + ")");
}

hid_t check_id(hid_t id, const std::string& path, const char* what) {
  if (id < 0) fail(path, what);
  return id;
}

void check_status(herr_t status, const std::string& path, const char* what) {
  if (status < 0) fail(path, what);
}

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports the status (for the file, whose close flushes).
  herr_t close() {
    herr_t status = 0;
    if (id_ >= 0 && closer_) status = closer_(id_);
    id_ = H5I_INVALID_HID;
    return status;
  }
  void reset() { close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

Handle make_type(hid_t id, const std::string& path, const char* what) {
  return Handle(check_id(id, path, what), H5Tclose);
}

// The enum type for one of the name tables, on the given 8-bit integer base.
template <std::size_t N>
Handle make_enum(hid_t base, const char* const (&names)[N], const std::string& path) {
  Handle t = make_type(H5Tenum_create(base), path, "creating an enum type");
  for (std::size_t i = 0; i < N; ++i) {
    const std::uint8_t value = static_cast<std::uint8_t>(i);
    check_status(H5Tenum_insert(t.get(), names[i], &value), path, "defining an enum value");
  }
  return t;
}

// One HDF5 type per Kind: native types for memory, little-endian standard types for the file.
Handle member_type(Kind kind, bool file, const std::string& path) {
  switch (kind) {
    case Kind::kI32:
      return make_type(H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32), path, "int32 type");
    case Kind::kI64:
      return make_type(H5Tcopy(file ? H5T_STD_I64LE : H5T_NATIVE_INT64), path, "int64 type");
    case Kind::kU8:
      return make_type(H5Tcopy(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8), path, "uint8 type");
    case Kind::kI8:
      return make_type(H5Tcopy(file ? H5T_STD_I8LE : H5T_NATIVE_INT8), path, "int8 type");
    case Kind::kF64:
      return make_type(H5Tcopy(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE), path, "float64 type");
    case Kind::kSchedule:
      return make_enum(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8, kScheduleNames, path);
    case Kind::kRecompute:
      return make_enum(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8, kRecomputeNames, path);
    case Kind::kInfeasible:
      return make_enum(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8, kInfeasibleNames, path);
  }
  throw std::logic_error("unknown field kind");
}

// The compound type of a struct described by a field table. The memory type mirrors the C++
// layout; the file type is the same members packed without padding (H5Tpack).
template <std::size_t N>
Handle compound_type(const Field (&fields)[N], std::size_t struct_size, bool file,
                     const std::string& path) {
  Handle t = make_type(H5Tcreate(H5T_COMPOUND, struct_size), path, "creating a compound type");
  for (std::size_t i = 0; i < N; ++i) {
    Handle m = member_type(fields[i].kind, file, path);
    check_status(H5Tinsert(t.get(), fields[i].name, fields[i].offset, m.get()), path,
                 "adding a compound member");
  }
  if (file) {
    check_status(H5Tpack(t.get()), path, "packing a compound type");
    if (H5Tget_size(t.get()) != packed_size(fields)) fail(path, "unexpected packed type size");
  }
  return t;
}

// One canonical NaN bit pattern, so identical results give identical bytes whatever arithmetic
// produced the NaN (x86 0.0/0.0 gives a negative NaN, quiet_NaN() a positive one).
double canonical(double x) { return std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : x; }

std::string row_context(const char* dataset, std::size_t i) {
  return std::string(dataset) + " row " + std::to_string(i);
}

// Enum values outside the name tables would make HDF5's conversion fail or store garbage;
// they are a bug in the caller.
void check_enum(unsigned value, int count, const char* field, const std::string& where) {
  if (value >= static_cast<unsigned>(count)) {
    throw std::logic_error("result writer: " + where + ": " + field + " = " +
                           std::to_string(value) + " has no HDF5 enum name (0.." +
                           std::to_string(count - 1) + " allowed)");
  }
}

std::vector<ResultRow> prepare_rows(const std::vector<ResultRow>& rows, const char* dataset) {
  std::vector<ResultRow> out(rows);
  for (std::size_t i = 0; i < out.size(); ++i) {
    ResultRow& r = out[i];
    check_enum(r.schedule, kNumSchedules, "schedule", row_context(dataset, i));
    check_enum(r.recompute, kNumRecompute, "recompute", row_context(dataset, i));
    check_enum(r.infeasible_reason, kNumInfeasible, "infeasible_reason", row_context(dataset, i));
    for (double* d :
         {&r.iteration_time_s, &r.mfu, &r.hfu, &r.tflops_per_gpu, &r.tokens_per_s,
          &r.bubble_fraction, &r.peak_memory_gb, &r.compute_s, &r.tp_comm_s, &r.cp_comm_s,
          &r.pp_comm_s, &r.dp_comm_s, &r.pipeline_s, &r.optimizer_s, &r.needed_memory_gb}) {
      *d = canonical(*d);
    }
  }
  return out;
}

std::vector<StageRow> prepare_stages(const std::vector<StageRow>& rows) {
  std::vector<StageRow> out(rows);
  for (StageRow& r : out) {
    r.time_s = canonical(r.time_s);
    r.memory_gb = canonical(r.memory_gb);
  }
  return out;
}

// Chunks of about 256 KiB; shuffle + deflate when the library has them (h5py reads both).
constexpr std::size_t kChunkBytes = 256 * 1024;
constexpr unsigned kDeflateLevel = 4;
// Growth step of the in-memory file image.
constexpr std::size_t kCoreIncrement = 8 * 1024 * 1024;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// ---------------------------------------------------------------------------------------------

class Hdf5ResultWriter final : public ResultWriter {
 public:
  Hdf5ResultWriter(std::string path, bool overwrite);
  ~Hdf5ResultWriter() override;

  void write_candidates(const std::vector<ResultRow>& rows) override;
  void write_stages(const std::vector<StageRow>& rows) override;
  void write_best(const std::vector<ResultRow>& rows) override;
  void commit(const ResultMeta& meta) override;

 private:
  // One extendible 1-D table.
  struct Table {
    const char* name = "";
    Handle dataset;
    hsize_t rows = 0;
    bool written = false;
  };

  [[noreturn]] void fail_errno(const std::string& what, int err) const;
  void require_open(const char* op) const;
  void create_table(Table& table, const Handle& file_type);
  void append(Table& table, const Handle& mem_type, const void* data, std::size_t n);
  void write_string_attr(const char* name, const std::string& value);
  template <typename T>
  void write_scalar_attr(const char* name, hid_t file_type, hid_t mem_type, const T& value);
  void write_array_attr(const char* name, const std::vector<double>& values);
  void close_objects() noexcept;
  std::vector<unsigned char> take_image();
  void write_image(const std::vector<unsigned char>& image);
  void publish();
  void discard() noexcept;

  std::string path_;
  std::string tmp_path_;
  int tmp_fd_ = -1;  // the temporary file, open from construction to commit
  bool overwrite_ = false;
  bool committed_ = false;
  bool broken_ = false;  // a commit failed part-way: only destruction is left
  Handle file_;
  Handle row_mem_, row_file_, stage_mem_, stage_file_;
  Table candidates_, stages_, best_;
};

// The HDF5 file is built in memory (core driver, no backing store) and its image is written to
// the temporary file with plain POSIX calls in commit(). So a failing disk (full, quota, I/O
// error) surfaces as one clear errno from write/fsync/close, and HDF5 never holds a file whose
// close failed (the library cannot recover from that and crashes at exit).
Hdf5ResultWriter::Hdf5ResultWriter(std::string path, bool overwrite)
    : path_(std::move(path)), overwrite_(overwrite) {
  candidates_.name = "candidates";
  stages_.name = "stages";
  best_.name = "best";
  if (path_.empty()) throw OutputError("cannot write the results file: the path is empty");

  std::error_code ec;
  const fs::path final_path(path_);
  const fs::file_status st = fs::status(final_path, ec);
  if (fs::is_directory(st)) {
    throw OutputError("cannot write '" + path_ + "': it is a folder, not a file name");
  }
  if (fs::exists(st) && !overwrite_) {
    throw OutputError("cannot write '" + path_ + "': file exists (use --overwrite to replace it)");
  }

  // Missing parent folders are created (results/ is the default output folder).
  const fs::path parent = final_path.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw OutputError("cannot write '" + path_ + "': cannot create folder '" + parent.string() +
                        "': " + ec.message());
    }
  }

  // The temporary file is created now, so a folder we cannot write to is reported before the
  // search runs, and it stays open until commit() fills it.
  tmp_path_ = path_ + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  tmp_fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp_fd_ < 0) {
    const int err = errno;
    const std::string tmp = tmp_path_;
    tmp_path_.clear();  // not ours: nothing to remove
    throw OutputError("cannot write '" + path_ + "': cannot create temporary file '" + tmp +
                      "': " + errno_text(err));
  }

  try {
    SilenceHdf5 quiet;
    Handle fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), path_, "file access properties"), H5Pclose);
    check_status(H5Pset_fapl_core(fapl.get(), kCoreIncrement, 0), path_, "in-memory file driver");
    // The name only labels the in-memory file; nothing is written under it by HDF5.
    file_ = Handle(check_id(H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                            path_, "creating the HDF5 file in memory"),
                   H5Fclose);

    row_mem_ = compound_type(kRowFields, sizeof(ResultRow), false, path_);
    row_file_ = compound_type(kRowFields, sizeof(ResultRow), true, path_);
    stage_mem_ = compound_type(kStageFields, sizeof(StageRow), false, path_);
    stage_file_ = compound_type(kStageFields, sizeof(StageRow), true, path_);

    // All datasets exist from the start, so an empty result still has them (0 rows).
    create_table(candidates_, row_file_);
    create_table(stages_, stage_file_);
    create_table(best_, row_file_);
  } catch (...) {
    discard();
    throw;
  }
}

Hdf5ResultWriter::~Hdf5ResultWriter() {
  if (!committed_) discard();
}

void Hdf5ResultWriter::close_objects() noexcept {
  candidates_.dataset.reset();
  stages_.dataset.reset();
  best_.dataset.reset();
  row_mem_.reset();
  row_file_.reset();
  stage_mem_.reset();
  stage_file_.reset();
}

// Closes everything and removes the temporary file; never throws.
void Hdf5ResultWriter::discard() noexcept {
  {
    SilenceHdf5 quiet;
    close_objects();
    file_.reset();
    H5Eclear2(H5E_DEFAULT);
  }
  if (tmp_fd_ >= 0) ::close(tmp_fd_);
  tmp_fd_ = -1;
  if (!tmp_path_.empty()) std::remove(tmp_path_.c_str());
}

[[noreturn]] void Hdf5ResultWriter::fail_errno(const std::string& what, int err) const {
  throw OutputError("cannot write '" + path_ + "': " + what + ": " + errno_text(err));
}

void Hdf5ResultWriter::require_open(const char* op) const {
  if (committed_) throw std::logic_error(std::string("result writer: ") + op + " after commit()");
  if (broken_) {
    throw std::logic_error(std::string("result writer: ") + op + " after a failed commit()");
  }
}

void Hdf5ResultWriter::create_table(Table& table, const Handle& file_type) {
  const hsize_t dims[1] = {0};
  const hsize_t maxdims[1] = {H5S_UNLIMITED};
  Handle space(check_id(H5Screate_simple(1, dims, maxdims), path_, "creating a dataspace"),
               H5Sclose);
  Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), path_, "dataset properties"), H5Pclose);
  const std::size_t row_bytes = H5Tget_size(file_type.get());
  const hsize_t chunk[1] = {
      static_cast<hsize_t>(std::max<std::size_t>(1, kChunkBytes / row_bytes))};
  check_status(H5Pset_chunk(dcpl.get(), 1, chunk), path_, "setting the chunk size");
  if (H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
    check_status(H5Pset_shuffle(dcpl.get()), path_, "setting the shuffle filter");
    check_status(H5Pset_deflate(dcpl.get(), kDeflateLevel), path_, "setting the deflate filter");
  }
  // No modification times in the object headers: the same results give the same file content.
  check_status(H5Pset_obj_track_times(dcpl.get(), 0), path_, "dataset time tracking");
  const std::string what = std::string("creating dataset /") + table.name;
  table.dataset = Handle(check_id(H5Dcreate2(file_.get(), table.name, file_type.get(), space.get(),
                                             H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                                  path_, what.c_str()),
                         H5Dclose);
  table.rows = 0;
}

void Hdf5ResultWriter::append(Table& table, const Handle& mem_type, const void* data,
                              std::size_t n) {
  if (n == 0) return;
  const std::string what = std::string("writing ") + std::to_string(n) + " rows to /" + table.name;
  const hsize_t start[1] = {table.rows};
  const hsize_t count[1] = {static_cast<hsize_t>(n)};
  const hsize_t new_size[1] = {table.rows + count[0]};
  check_status(H5Dset_extent(table.dataset.get(), new_size), path_, what.c_str());
  Handle file_space(check_id(H5Dget_space(table.dataset.get()), path_, what.c_str()), H5Sclose);
  check_status(
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), path_,
      what.c_str());
  Handle mem_space(check_id(H5Screate_simple(1, count, nullptr), path_, what.c_str()), H5Sclose);
  check_status(H5Dwrite(table.dataset.get(), mem_type.get(), mem_space.get(), file_space.get(),
                        H5P_DEFAULT, data),
               path_, what.c_str());
  table.rows = new_size[0];
}

void Hdf5ResultWriter::write_candidates(const std::vector<ResultRow>& rows) {
  require_open("write_candidates");
  if (candidates_.written) throw std::logic_error("result writer: write_candidates called twice");
  const std::vector<ResultRow> prepared = prepare_rows(rows, "/candidates");
  SilenceHdf5 quiet;
  append(candidates_, row_mem_, prepared.data(), prepared.size());
  candidates_.written = true;
}

void Hdf5ResultWriter::write_stages(const std::vector<StageRow>& rows) {
  require_open("write_stages");
  const std::vector<StageRow> prepared = prepare_stages(rows);
  SilenceHdf5 quiet;
  append(stages_, stage_mem_, prepared.data(), prepared.size());
  stages_.written = true;
}

void Hdf5ResultWriter::write_best(const std::vector<ResultRow>& rows) {
  require_open("write_best");
  if (best_.written) throw std::logic_error("result writer: write_best called twice");
  const std::vector<ResultRow> prepared = prepare_rows(rows, "/best");
  SilenceHdf5 quiet;
  append(best_, row_mem_, prepared.data(), prepared.size());
  best_.written = true;
}

void Hdf5ResultWriter::write_string_attr(const char* name, const std::string& value) {
  const std::string what = std::string("writing attribute ") + name;
  Handle type = make_type(H5Tcopy(H5T_C_S1), path_, what.c_str());
  // Variable-length UTF-8: h5py returns str (a fixed-length string would come back as bytes).
  check_status(H5Tset_size(type.get(), H5T_VARIABLE), path_, what.c_str());
  check_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), path_, what.c_str());
  Handle space(check_id(H5Screate(H5S_SCALAR), path_, what.c_str()), H5Sclose);
  Handle attr(
      check_id(H5Acreate2(file_.get(), name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
               path_, what.c_str()),
      H5Aclose);
  const char* text = value.c_str();
  check_status(H5Awrite(attr.get(), type.get(), &text), path_, what.c_str());
}

template <typename T>
void Hdf5ResultWriter::write_scalar_attr(const char* name, hid_t file_type, hid_t mem_type,
                                         const T& value) {
  const std::string what = std::string("writing attribute ") + name;
  Handle space(check_id(H5Screate(H5S_SCALAR), path_, what.c_str()), H5Sclose);
  Handle attr(
      check_id(H5Acreate2(file_.get(), name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               path_, what.c_str()),
      H5Aclose);
  check_status(H5Awrite(attr.get(), mem_type, &value), path_, what.c_str());
}

void Hdf5ResultWriter::write_array_attr(const char* name, const std::vector<double>& values) {
  const std::string what = std::string("writing attribute ") + name;
  const hsize_t dims[1] = {static_cast<hsize_t>(values.size())};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), path_, what.c_str()), H5Sclose);
  Handle attr(
      check_id(H5Acreate2(file_.get(), name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               path_, what.c_str()),
      H5Aclose);
  if (!values.empty()) {
    std::vector<double> canon(values);
    for (double& v : canon) v = canonical(v);
    check_status(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, canon.data()), path_, what.c_str());
  }
}

void Hdf5ResultWriter::commit(const ResultMeta& meta) {
  require_open("commit");
  broken_ = true;  // cleared on success; a failure below leaves only destruction (temp removed)
  std::vector<unsigned char> image;
  {
    SilenceHdf5 quiet;
    // Root attributes (interface.md §3), then the additions of ResultMeta.
    write_string_attr("ppsearch_version", meta.ppsearch_version);
    write_scalar_attr("schema_version", H5T_STD_I32LE, H5T_NATIVE_INT32, meta.schema_version);
    write_string_attr("command_line", meta.command_line);
    write_string_attr("created_utc", meta.created_utc);
    write_string_attr("resolved_config", meta.resolved_config);
    write_scalar_attr("mpi_ranks", H5T_STD_I32LE, H5T_NATIVE_INT32, meta.mpi_ranks);
    write_scalar_attr("threads_per_rank", H5T_STD_I32LE, H5T_NATIVE_INT32, meta.threads_per_rank);
    write_scalar_attr("candidates_evaluated", H5T_STD_I64LE, H5T_NATIVE_INT64,
                      meta.candidates_evaluated);
    write_scalar_attr("candidates_feasible", H5T_STD_I64LE, H5T_NATIVE_INT64,
                      meta.candidates_feasible);
    write_scalar_attr("search_wall_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                      canonical(meta.search_wall_s));
    write_scalar_attr("candidates_enumerated", H5T_STD_I64LE, H5T_NATIVE_INT64,
                      meta.candidates_enumerated);
    write_string_attr("rule_counts", meta.rule_counts);
    write_string_attr("infeasible_counts", meta.infeasible_counts);
    write_array_attr("rank_busy_s", meta.rank_busy_s);
    write_scalar_attr("rank_imbalance", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                      canonical(meta.rank_imbalance));
    image = take_image();
  }
  write_image(image);
  publish();
  broken_ = false;
  committed_ = true;
}

// Closes the datasets, flushes the in-memory file and returns its bytes; the file is closed.
std::vector<unsigned char> Hdf5ResultWriter::take_image() {
  close_objects();
  check_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), path_, "flushing the file");
  const ssize_t size = H5Fget_file_image(file_.get(), nullptr, 0);
  if (size < 0) fail(path_, "sizing the file image");
  std::vector<unsigned char> image(static_cast<std::size_t>(size));
  if (H5Fget_file_image(file_.get(), image.data(), image.size()) != size) {
    fail(path_, "copying the file image");
  }
  check_status(file_.close(), path_, "closing the file");
  return image;
}

// Writes the image to the temporary file and syncs it, so a crash right after the rename cannot
// leave an empty or partial file under the final name.
void Hdf5ResultWriter::write_image(const std::vector<unsigned char>& image) {
  const std::string what = "writing '" + tmp_path_ + "'";
  std::size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = ::write(tmp_fd_, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno(what, n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(tmp_fd_) != 0 && errno != EINVAL && errno != EROFS) fail_errno(what, errno);
  const int fd = std::exchange(tmp_fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) fail_errno(what, errno);  // NFS reports errors here
}

// Moves the finished temporary file onto the final name.
void Hdf5ResultWriter::publish() {
  const std::string exists =
      "cannot write '" + path_ + "': file exists (use --overwrite to replace it)";
  bool placed = false;
  if (!overwrite_) {
    // link() never replaces an existing file: a file that appeared since the writer was made is
    // reported, not clobbered.
    if (::link(tmp_path_.c_str(), path_.c_str()) == 0) {
      std::remove(tmp_path_.c_str());
      placed = true;
    } else {
      if (errno == EEXIST) throw OutputError(exists);
      // File systems without hard links: check, then rename.
      std::error_code ec;
      if (fs::exists(fs::path(path_), ec)) throw OutputError(exists);
    }
  }
  if (!placed && std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    fail_errno("cannot rename '" + tmp_path_ + "' onto it", errno);
  }
  // Make the new name durable too (best effort: some file systems refuse to sync folders).
  const fs::path parent = fs::path(path_).parent_path();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace

std::unique_ptr<ResultWriter> make_hdf5_result_writer(const std::string& path, bool overwrite) {
  return std::make_unique<Hdf5ResultWriter>(path, overwrite);
}

}  // namespace ppsearch

// =============================================================================================
// ppsearch-validate: the table /runs (include/ppsearch/io/runs_writer.hpp, docs/validation.md).
// A separate block appended to this file, the only HDF5 user. It reuses the helpers above
// (Handle, check_id, check_status, fail, make_type, SilenceHdf5, canonical, errno_text) and the
// same publication discipline as the results file: the file is built in memory, its image is
// written to PATH.tmp-<pid> and synced, then moved onto PATH (link() without --overwrite, so an
// existing file is never replaced).
// =============================================================================================
#include <ctime>

#include "ppsearch/build_info.hpp"
#include "ppsearch/io/runs_writer.hpp"

namespace ppsearch {
namespace {

// One /runs row in memory: strings as char* (HDF5 variable-length strings).
struct RunRowMem {
  const char* id;
  std::uint8_t modelled;
  const char* note;
  std::uint8_t fit;
  double predicted_step_time_s, measured_step_time_s, error_pct, predicted_mfu, measured_mfu,
      measured_mfu_recomputed, engine_mfu, peak_memory_gb;
  const char* mfu_convention;
  std::int32_t gpus, tp, pp, cp, dp, vpp, mbs, num_microbatches, global_batch_size;
  const char* schedule;
  const char* recompute;
  std::int8_t sequence_parallel, zero_stage;
  const char* searched;
  std::int32_t candidates_evaluated, candidates_feasible;
  double measured_peak_memory_gb, predicted_peak_memory_gb, memory_error_pct;
  const char* memory_metric;
  const char* split;
  std::uint8_t fits_memory;
};
static_assert(std::is_standard_layout_v<RunRowMem>);

enum class RunKind { kStr, kU8, kI8, kI32, kF64 };
struct RunField {
  const char* name;
  std::size_t offset;
  RunKind kind;
};

#define PPSEARCH_RUN_FIELD(member, kind) \
  RunField { #member, offsetof(RunRowMem, member), RunKind::kind }
constexpr RunField kRunFields[] = {
    PPSEARCH_RUN_FIELD(id, kStr),
    PPSEARCH_RUN_FIELD(modelled, kU8),
    PPSEARCH_RUN_FIELD(note, kStr),
    PPSEARCH_RUN_FIELD(fit, kU8),
    PPSEARCH_RUN_FIELD(predicted_step_time_s, kF64),
    PPSEARCH_RUN_FIELD(measured_step_time_s, kF64),
    PPSEARCH_RUN_FIELD(error_pct, kF64),
    PPSEARCH_RUN_FIELD(predicted_mfu, kF64),
    PPSEARCH_RUN_FIELD(measured_mfu, kF64),
    PPSEARCH_RUN_FIELD(measured_mfu_recomputed, kF64),
    PPSEARCH_RUN_FIELD(engine_mfu, kF64),
    PPSEARCH_RUN_FIELD(peak_memory_gb, kF64),
    PPSEARCH_RUN_FIELD(mfu_convention, kStr),
    PPSEARCH_RUN_FIELD(gpus, kI32),
    PPSEARCH_RUN_FIELD(tp, kI32),
    PPSEARCH_RUN_FIELD(pp, kI32),
    PPSEARCH_RUN_FIELD(cp, kI32),
    PPSEARCH_RUN_FIELD(dp, kI32),
    PPSEARCH_RUN_FIELD(vpp, kI32),
    PPSEARCH_RUN_FIELD(mbs, kI32),
    PPSEARCH_RUN_FIELD(num_microbatches, kI32),
    PPSEARCH_RUN_FIELD(global_batch_size, kI32),
    PPSEARCH_RUN_FIELD(schedule, kStr),
    PPSEARCH_RUN_FIELD(recompute, kStr),
    PPSEARCH_RUN_FIELD(sequence_parallel, kI8),
    PPSEARCH_RUN_FIELD(zero_stage, kI8),
    PPSEARCH_RUN_FIELD(searched, kStr),
    PPSEARCH_RUN_FIELD(candidates_evaluated, kI32),
    PPSEARCH_RUN_FIELD(candidates_feasible, kI32),
    PPSEARCH_RUN_FIELD(measured_peak_memory_gb, kF64),
    PPSEARCH_RUN_FIELD(predicted_peak_memory_gb, kF64),
    PPSEARCH_RUN_FIELD(memory_error_pct, kF64),
    PPSEARCH_RUN_FIELD(memory_metric, kStr),
    PPSEARCH_RUN_FIELD(split, kStr),
    PPSEARCH_RUN_FIELD(fits_memory, kU8),
};
#undef PPSEARCH_RUN_FIELD

Handle runs_string_type(const std::string& path) {
  Handle t = make_type(H5Tcopy(H5T_C_S1), path, "string type");
  // Variable-length UTF-8: h5py returns str (a fixed-length string would come back as bytes).
  check_status(H5Tset_size(t.get(), H5T_VARIABLE), path, "string type size");
  check_status(H5Tset_cset(t.get(), H5T_CSET_UTF8), path, "string type character set");
  return t;
}

Handle runs_member_type(RunKind kind, bool file, const std::string& path) {
  switch (kind) {
    case RunKind::kStr:
      return runs_string_type(path);
    case RunKind::kU8:
      return make_type(H5Tcopy(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8), path, "uint8 type");
    case RunKind::kI8:
      return make_type(H5Tcopy(file ? H5T_STD_I8LE : H5T_NATIVE_INT8), path, "int8 type");
    case RunKind::kI32:
      return make_type(H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32), path, "int32 type");
    case RunKind::kF64:
      return make_type(H5Tcopy(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE), path, "float64 type");
  }
  throw std::logic_error("unknown /runs field kind");
}

// Memory type at the struct's offsets; the file type is the same members packed.
Handle runs_compound_type(bool file, const std::string& path) {
  Handle t = make_type(H5Tcreate(H5T_COMPOUND, sizeof(RunRowMem)), path, "compound type");
  for (const RunField& f : kRunFields) {
    Handle m = runs_member_type(f.kind, file, path);
    check_status(H5Tinsert(t.get(), f.name, f.offset, m.get()), path, "adding a compound member");
  }
  if (file) check_status(H5Tpack(t.get()), path, "packing a compound type");
  return t;
}

void runs_string_attr(hid_t file, const char* name, const std::string& value,
                      const std::string& path) {
  const std::string what = std::string("writing attribute ") + name;
  Handle type = runs_string_type(path);
  Handle space(check_id(H5Screate(H5S_SCALAR), path, what.c_str()), H5Sclose);
  Handle attr(check_id(H5Acreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       path, what.c_str()),
              H5Aclose);
  const char* text = value.c_str();
  check_status(H5Awrite(attr.get(), type.get(), &text), path, what.c_str());
}

// The whole file as bytes, built with the in-memory (core) driver.
std::vector<unsigned char> runs_file_image(const std::string& path, const std::string& name,
                                           const std::vector<RunRow>& rows,
                                           const std::string& command_line) {
  SilenceHdf5 quiet;
  Handle fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), path, "file access properties"), H5Pclose);
  check_status(H5Pset_fapl_core(fapl.get(), 1024 * 1024, 0), path, "in-memory file driver");
  Handle file(check_id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), path,
                       "creating the HDF5 file in memory"),
              H5Fclose);
  {
    Handle mem_type = runs_compound_type(false, path);
    Handle file_type = runs_compound_type(true, path);
    std::vector<RunRowMem> mem(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const RunRow& r = rows[i];
      mem[i] = RunRowMem{r.id.c_str(),
                         r.modelled,
                         r.note.c_str(),
                         r.fit,
                         canonical(r.predicted_step_time_s),
                         canonical(r.measured_step_time_s),
                         canonical(r.error_pct),
                         canonical(r.predicted_mfu),
                         canonical(r.measured_mfu),
                         canonical(r.measured_mfu_recomputed),
                         canonical(r.engine_mfu),
                         canonical(r.peak_memory_gb),
                         r.mfu_convention.c_str(),
                         r.gpus,
                         r.tp,
                         r.pp,
                         r.cp,
                         r.dp,
                         r.vpp,
                         r.mbs,
                         r.num_microbatches,
                         r.global_batch_size,
                         r.schedule.c_str(),
                         r.recompute.c_str(),
                         r.sequence_parallel,
                         r.zero_stage,
                         r.searched.c_str(),
                         r.candidates_evaluated,
                         r.candidates_feasible,
                         canonical(r.measured_peak_memory_gb),
                         canonical(r.predicted_peak_memory_gb),
                         canonical(r.memory_error_pct),
                         r.memory_metric.c_str(),
                         r.split.c_str(),
                         r.fits_memory};
    }
    const hsize_t dims[1] = {static_cast<hsize_t>(rows.size())};
    const hsize_t maxdims[1] = {H5S_UNLIMITED};
    Handle space(check_id(H5Screate_simple(1, dims, maxdims), path, "creating a dataspace"),
                 H5Sclose);
    Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), path, "dataset properties"), H5Pclose);
    const hsize_t chunk[1] = {std::max<hsize_t>(1, std::min<hsize_t>(dims[0], 1024))};
    check_status(H5Pset_chunk(dcpl.get(), 1, chunk), path, "setting the chunk size");
    check_status(H5Pset_obj_track_times(dcpl.get(), 0), path, "dataset time tracking");
    Handle dset(check_id(H5Dcreate2(file.get(), "runs", file_type.get(), space.get(), H5P_DEFAULT,
                                    dcpl.get(), H5P_DEFAULT),
                         path, "creating dataset /runs"),
                H5Dclose);
    if (!mem.empty()) {
      check_status(H5Dwrite(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, mem.data()),
                   path, "writing /runs");
    }
  }
  std::time_t t = std::time(nullptr);
  char utc[32];
  std::strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  runs_string_attr(file.get(), "ppsearch_version", PPSEARCH_VERSION, path);
  runs_string_attr(file.get(), "command_line", command_line, path);
  runs_string_attr(file.get(), "created_utc", utc, path);
  {
    const std::int32_t version = 1;
    Handle space(check_id(H5Screate(H5S_SCALAR), path, "attribute space"), H5Sclose);
    Handle attr(check_id(H5Acreate2(file.get(), "runs_schema_version", H5T_STD_I32LE, space.get(),
                                    H5P_DEFAULT, H5P_DEFAULT),
                         path, "writing attribute runs_schema_version"),
                H5Aclose);
    check_status(H5Awrite(attr.get(), H5T_NATIVE_INT32, &version), path,
                 "writing attribute runs_schema_version");
  }
  check_status(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), path, "flushing the file");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) fail(path, "sizing the file image");
  std::vector<unsigned char> image(static_cast<std::size_t>(size));
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size) {
    fail(path, "copying the file image");
  }
  check_status(file.close(), path, "closing the file");
  return image;
}

[[noreturn]] void runs_fail_errno(const std::string& path, const std::string& what, int err) {
  throw OutputError("cannot write '" + path + "': " + what + ": " + errno_text(err));
}

}  // namespace

void write_runs_table(const std::string& path, const std::vector<RunRow>& rows,
                      const std::string& command_line, bool overwrite) {
  if (path.empty()) throw OutputError("cannot write the runs file: the path is empty");
  const std::string exists = "cannot write '" + path + "': file exists (use --overwrite)";
  std::error_code ec;
  const fs::path final_path(path);
  const fs::file_status st = fs::status(final_path, ec);
  if (fs::is_directory(st)) {
    throw OutputError("cannot write '" + path + "': it is a folder, not a file name");
  }
  if (fs::exists(st) && !overwrite) throw OutputError(exists);
  const fs::path parent = final_path.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw OutputError("cannot write '" + path + "': cannot create folder '" + parent.string() +
                        "': " + ec.message());
    }
  }
  const std::string tmp = path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  const std::vector<unsigned char> image = runs_file_image(path, tmp, rows, command_line);

  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) runs_fail_errno(path, "cannot create temporary file '" + tmp + "'", errno);
  try {
    std::size_t done = 0;
    while (done < image.size()) {
      const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) runs_fail_errno(path, "writing '" + tmp + "'", n < 0 ? errno : EIO);
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
      runs_fail_errno(path, "writing '" + tmp + "'", errno);
    }
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    std::remove(tmp.c_str());
    runs_fail_errno(path, "writing '" + tmp + "'", err);
  }
  bool placed = false;
  if (!overwrite) {
    // link() never replaces a file that appeared meanwhile.
    if (::link(tmp.c_str(), path.c_str()) == 0) {
      std::remove(tmp.c_str());
      placed = true;
    } else if (errno == EEXIST || fs::exists(final_path, ec)) {
      std::remove(tmp.c_str());
      throw OutputError(exists);
    }
  }
  if (!placed && std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    runs_fail_errno(path, "cannot rename '" + tmp + "' onto it", err);
  }
}

}  // namespace ppsearch
