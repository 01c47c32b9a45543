// HDF5 result file writer (docs/interface.md §3). This is the only translation unit that includes
// HDF5 headers; it uses the HDF5 C API and checks every call.
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
// Rows may be appended in several calls (write_candidates / write_stages, in final order); they
// are written through to disk in fixed blocks of whole chunks, so the writer holds at most one
// block per table, and the same rows give the same file however the caller splits them.
//
// Publication (docs/results.md, "Output safety"): the file is written inside a private folder
// ".<name>.ppsearch-tmp-XXXXXX" (mkdtemp, mode 0700) next to PATH, by a small file driver that
// creates it with O_EXCL | O_NOFOLLOW, never lets HDF5 see a failed write, and syncs the file
// when HDF5 closes it. commit() then moves the file onto PATH: only ever over a regular file
// (checked before the search, and again in the step that places the file: a swap with
// renameat2(RENAME_EXCHANGE) that is undone if what came back is not a regular file), and
// without overwrite with link(), which fails instead of replacing a file that appeared in the
// meantime. A fatal signal removes the temporary folder (install_output_cleanup_handlers).
//
// The parallel HDF5 library is not thread-safe: a writer must be used from one thread. No MPI
// driver and no MPI call is used (rank 0 writes alone).
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
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
#include "result_fields.hpp"
#include "staging.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;

// The enum names and the field tables of the result rows (shared with the CSV/JSON writer).
using namespace io_detail;

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
    case Kind::kPlacement:
      return make_enum(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8, kPlacementNames, path);
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

std::string row_context(const char* dataset, std::uint64_t i) {
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

// Checks every row before any is written (`first` is the dataset index of rows[0], for the
// message), so a bad row leaves the writer as it was.
void check_rows(const std::vector<ResultRow>& rows, const char* dataset, std::uint64_t first) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = rows[i];
    if (r.schedule < kNumSchedules && r.recompute < kNumRecompute &&
        r.infeasible_reason < kNumInfeasible) {
      continue;
    }
    const std::string where = row_context(dataset, first + i);
    check_enum(r.schedule, kNumSchedules, "schedule", where);
    check_enum(r.recompute, kNumRecompute, "recompute", where);
    check_enum(r.infeasible_reason, kNumInfeasible, "infeasible_reason", where);
  }
}

// Canonical copies of n rows (NaNs in one bit pattern), made one block at a time so that no
// copy of a whole table is ever held.
std::vector<ResultRow> prepare_rows(const ResultRow* rows, std::size_t n) {
  std::vector<ResultRow> out(rows, rows + n);
  for (ResultRow& r : out) {
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
      *d = canonical(*d);
    }
  }
  return out;
}

std::vector<StageRow> prepare_rows(const StageRow* rows, std::size_t n) {
  std::vector<StageRow> out(rows, rows + n);
  for (StageRow& r : out) {
    r.time_s = canonical(r.time_s);
    r.memory_gb = canonical(r.memory_gb);
    for (double* x : {&r.weights_gb, &r.gradients_gb, &r.optimizer_gb, &r.activations_gb,
                      &r.wstate_gb, &r.transient_gb, &r.workspace_gb})
      *x = canonical(*x);
  }
  return out;
}

// Chunks of about 256 KiB; shuffle + deflate when the library has them (h5py reads both).
constexpr std::size_t kChunkBytes = 256 * 1024;
constexpr unsigned kDeflateLevel = 4;
// Rows are handed to HDF5 in blocks of this many whole chunks (about 4 MiB), whatever block
// sizes the caller appends in: the sequence of HDF5 calls, and so the file, depends only on the
// rows, and every block but the last covers whole chunks (no chunk is read back to be merged).
constexpr std::size_t kChunksPerWrite = 16;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// ---------------------------------------------------------------------------------------------
// What a path names, in words, for the messages about non-regular output targets.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// The base name of an output path ("" for "dir/", "." and "..": those name folders).
std::string output_base_name(const std::string& path) {
  const std::string base = fs::path(path).filename().string();
  return base == "." || base == ".." ? std::string() : base;
}

// ---------------------------------------------------------------------------------------------
// Removal of the temporary files on a fatal signal. The writers register their private
// temporary folder and the file in it; the handler (async-signal-safe: only atomics, unlink,
// rmdir, raise) removes both and re-raises the signal with its default action, so the exit
// status still says which signal ended the process. Only SIGKILL (and a power cut) can leave a
// temporary folder behind (docs/results.md, "Output safety").
struct CleanupSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled or emptied, 2 armed
  char file[PATH_MAX];
  char dir[PATH_MAX];
};
CleanupSlot g_cleanup[8];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads these atomics");

extern "C" void remove_temporaries_and_reraise(int sig) {
  const int saved = errno;
  for (CleanupSlot& slot : g_cleanup) {
    if (slot.state.load(std::memory_order_acquire) == 2) {
      ::unlink(slot.file);
      ::rmdir(slot.dir);
    }
  }
  errno = saved;
  // SA_RESETHAND restored the default action; the signal is blocked until we return.
  ::raise(sig);
}

// Arms a slot; returns its index, or -1 when none is free or a path is too long (the files are
// then still removed on every normal exit path, only not on a signal).
int arm_cleanup(const std::string& file, const std::string& dir) {
  if (file.size() >= PATH_MAX || dir.size() >= PATH_MAX) return -1;
  for (int i = 0; i < static_cast<int>(std::size(g_cleanup)); ++i) {
    int expected = 0;
    if (g_cleanup[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      std::memcpy(g_cleanup[i].file, file.c_str(), file.size() + 1);
      std::memcpy(g_cleanup[i].dir, dir.c_str(), dir.size() + 1);
      g_cleanup[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void disarm_cleanup(int slot) {
  if (slot >= 0) g_cleanup[slot].state.store(0, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// The private temporary folder of one output file: ".<name>.ppsearch-tmp-XXXXXX" (mkdtemp:
// random name, created exclusively, mode 0700) in the folder of the final name, holding the file
// under the final base name. Nobody else can create, replace or plant a link at a name inside
// it, so HDF5 may create the file there by name. publish() renames the file onto the final name
// and removes the folder; destruction without publish() removes both.
class Staging {
 public:
  Staging(const std::string& path, const char* what);
  ~Staging() { remove(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  const std::string& file() const { return file_; }
  // Moves the finished file onto `path`: never over anything but a regular file, and without
  // `overwrite` never over anything at all. Syncs the folder afterwards.
  void publish(const std::string& path, bool overwrite);
  void remove() noexcept;

 private:
  void place_new(const std::string& path);
  void replace_regular(const std::string& path);
  [[noreturn]] void fail_rename(const std::string& path, int err) const;

  std::string dir_;
  std::string file_;
  int slot_ = -1;
};

Staging::Staging(const std::string& path, const char* what) {
  const fs::path final_path(path);
  const fs::path parent = final_path.parent_path();
  std::string base = output_base_name(path);
  // Keep the folder name within NAME_MAX (255) whatever the file name's length.
  std::string dir_name = "." + base.substr(0, 200) + ".ppsearch-tmp-XXXXXX";
  std::string tmpl = parent.empty() ? dir_name : (parent / dir_name).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    const int err = errno;
    throw OutputError("cannot write '" + path + "': cannot create the temporary folder '" + tmpl +
                      "' for the " + what + ": " + errno_text(err));
  }
  dir_ = buf.data();
  file_ = dir_ + "/" + base;
  slot_ = arm_cleanup(file_, dir_);
}

void Staging::remove() noexcept {
  if (dir_.empty()) return;
  ::unlink(file_.c_str());
  ::rmdir(dir_.c_str());
  disarm_cleanup(std::exchange(slot_, -1));
  dir_.clear();
}

[[noreturn]] void refuse_changed(const std::string& path, mode_t mode) {
  throw OutputTargetError("cannot write '" + path + "': it became " + file_kind(mode) +
                          " while the results were computed; it was left as it is (only a "
                          "regular file is ever replaced, even with --overwrite)");
}

// Something is at `path` and overwrite was not given (or it is not a regular file).
[[noreturn]] void refuse_existing(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse_changed(path, st.st_mode);
  throw OutputTargetError("cannot write '" + path +
                          "': a file of that name appeared while the results were computed; it "
                          "was left as it is (use --overwrite to replace it)");
}

// The file system does not offer the operation (hard links, renameat2 flags).
bool unsupported(int err) {
  return err == EINVAL || err == ENOSYS || err == ENOTSUP || err == EOPNOTSUPP || err == EPERM;
}

void Staging::fail_rename(const std::string& path, int err) const {
  throw OutputError("cannot write '" + path + "': cannot rename '" + file_ +
                    "' onto it: " + errno_text(err));
}

// Without overwrite nothing may be at `path`: link() and renameat2(RENAME_NOREPLACE) fail, in
// one step, when something is.
void Staging::place_new(const std::string& path) {
  if (::link(file_.c_str(), path.c_str()) == 0) return;  // remove() drops the temporary name
  if (errno == EEXIST) refuse_existing(path);
  if (::renameat2(AT_FDCWD, file_.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST) refuse_existing(path);
  if (!unsupported(errno)) fail_rename(path, errno);
  // Neither is supported by this file system: check, then rename (a small window remains).
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) refuse_existing(path);
  if (std::rename(file_.c_str(), path.c_str()) != 0) fail_rename(path, errno);
}

// With overwrite `path` may be missing or a regular file. The new file is swapped with whatever
// is there in one step (renameat2 RENAME_EXCHANGE), and what came back is looked at (lstat): a
// regular file is the old results and is removed with the folder; anything else (a device, FIFO,
// socket, folder or link that appeared during the run) is swapped back at once, so it is never
// destroyed, and the run is refused.
void Staging::replace_regular(const std::string& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::renameat2(AT_FDCWD, file_.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
      struct stat st {};
      if (::lstat(file_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return;
      if (::renameat2(AT_FDCWD, file_.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
        const int err = errno;
        const std::string where = file_;
        disarm_cleanup(std::exchange(slot_, -1));
        dir_.clear();  // keep the folder: it holds what was at `path`
        throw OutputError("cannot write '" + path + "': it became " + file_kind(st.st_mode) +
                          " while the results were computed, and putting it back failed (" +
                          errno_text(err) + "); it is now at '" + where + "'");
      }
      refuse_changed(path, st.st_mode);
    }
    if (errno == ENOENT) {  // nothing there: create the name, never replacing what appears
      if (::renameat2(AT_FDCWD, file_.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) {
        return;
      }
      if (errno == EEXIST) continue;  // appeared just now: swap with it and look
    }
    if (!unsupported(errno)) fail_rename(path, errno);
    break;
  }
  // renameat2 is not supported by this file system: check, then rename (a small window remains).
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse_changed(path, st.st_mode);
  if (std::rename(file_.c_str(), path.c_str()) != 0) fail_rename(path, errno);
}

void Staging::publish(const std::string& path, bool overwrite) {
  // The final name may have changed since the check before the search: it is checked again in
  // the same step that places the file (a symbolic link counts as what it is, not its target).
  if (overwrite) {
    replace_regular(path);
  } else {
    place_new(path);
  }
  // Make the new name durable too (best effort: some file systems refuse to sync folders).
  const fs::path parent = fs::path(path).parent_path();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  remove();  // the temporary name (a second link, or the old file swapped out) and the folder
}

// Creates missing parent folders (results/ is the default output folder).
void create_parent_folders(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw OutputError("cannot write '" + path + "': cannot create folder '" + parent.string() +
                      "': " + ec.message());
  }
}

// Refuses what output_target_problem() finds (exit 2 in the programs).
void check_output_target(const std::string& path, bool overwrite, const char* what) {
  if (path.empty()) throw OutputError(std::string("cannot write the ") + what + ": no file name");
  const std::string problem = output_target_problem(path, overwrite);
  if (!problem.empty()) throw OutputTargetError("cannot write '" + path + "': " + problem);
}

// ---------------------------------------------------------------------------------------------
// "ppsearch-sink": a minimal HDF5 file driver (modelled on the library's sec2 driver) that writes
// with pwrite() to a file it creates with O_EXCL | O_NOFOLLOW, and never reports a failed write
// to HDF5. The first failure (disk full, quota, I/O error) is remembered in a SinkState, and
// every later write is dropped; the writer checks the state after each step and reports that
// errno. HDF5 1.10 cannot close a file whose writes failed (H5Fclose fails and the process
// crashes at exit), so the library must only ever see successful writes.
struct SinkState {
  int err = 0;         // first errno, 0 = none
  std::string during;  // what failed: "writing", "syncing", ...
  void record(int e, const char* what) {
    if (err == 0) {
      err = e != 0 ? e : EIO;
      during = what;
    }
  }
};

struct SinkFapl {
  SinkState* state;
};

struct SinkFile {
  H5FD_t pub;  // first member: HDF5 fills it and hands it back to every callback
  int fd = -1;
  haddr_t eoa = 0;
  haddr_t eof = 0;
  dev_t device = 0;
  ino_t inode = 0;
  SinkState* state = nullptr;
};
static_assert(std::is_standard_layout_v<SinkFile>);

// The largest address: the largest off_t (as sec2).
constexpr haddr_t kSinkMaxAddr = (static_cast<haddr_t>(1) << (8 * sizeof(off_t) - 1)) - 1;

SinkFile* as_sink(H5FD_t* f) { return reinterpret_cast<SinkFile*>(f); }
const SinkFile* as_sink(const H5FD_t* f) { return reinterpret_cast<const SinkFile*>(f); }

H5FD_t* sink_open(const char* name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  if (name == nullptr || maxaddr == 0 || (maxaddr != HADDR_UNDEF && maxaddr > kSinkMaxAddr)) {
    return nullptr;
  }
  const auto* info = static_cast<const SinkFapl*>(H5Pget_driver_info(fapl));
  if (info == nullptr || info->state == nullptr) return nullptr;
  // Create only a new file, never through a link: the caller's folder is private anyway.
  int oflags = O_CLOEXEC | O_NOFOLLOW | ((flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY);
  if (flags & H5F_ACC_CREAT) oflags |= O_CREAT | O_EXCL;
  const int fd = ::open(name, oflags, 0644);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  auto* f = new (std::nothrow) SinkFile();
  if (f == nullptr) {
    ::close(fd);
    return nullptr;
  }
  f->fd = fd;
  f->eof = static_cast<haddr_t>(st.st_size);
  f->device = st.st_dev;
  f->inode = st.st_ino;
  f->state = info->state;
  return &f->pub;
}

// Syncs the data before closing, so a crash right after the rename cannot leave an empty or
// partial file under the final name.
herr_t sink_close(H5FD_t* file) {
  SinkFile* f = as_sink(file);
  if (f->state->err == 0 && ::fsync(f->fd) != 0 && errno != EINVAL && errno != EROFS) {
    f->state->record(errno, "syncing");
  }
  if (::close(f->fd) != 0 && errno != EINTR) f->state->record(errno, "closing");  // NFS
  delete f;
  return 0;
}

int sink_cmp(const H5FD_t* a, const H5FD_t* b) {
  const SinkFile* x = as_sink(a);
  const SinkFile* y = as_sink(b);
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->inode != y->inode) return x->inode < y->inode ? -1 : 1;
  return 0;
}

herr_t sink_query(const H5FD_t*, unsigned long* flags) {
  if (flags) {
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA;
  }
  return 0;
}

haddr_t sink_get_eoa(const H5FD_t* file, H5FD_mem_t) { return as_sink(file)->eoa; }

herr_t sink_set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  as_sink(file)->eoa = addr;
  return 0;
}

haddr_t sink_get_eof(const H5FD_t* file, H5FD_mem_t) { return as_sink(file)->eof; }

herr_t sink_get_handle(H5FD_t* file, hid_t, void** handle) {
  if (handle == nullptr) return -1;
  *handle = &as_sink(file)->fd;
  return 0;
}

// Reads what was written; bytes past the end of the file (or lost to a failed write) read as 0.
herr_t sink_read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  SinkFile* f = as_sink(file);
  auto* out = static_cast<unsigned char*>(buf);
  while (size > 0) {
    const ssize_t n = ::pread(f->fd, out, size, static_cast<off_t>(addr));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) f->state->record(errno, "reading back");
    if (n <= 0) break;
    out += n;
    addr += static_cast<haddr_t>(n);
    size -= static_cast<size_t>(n);
  }
  if (size > 0) std::memset(out, 0, size);
  return 0;
}

herr_t sink_write(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, const void* buf) {
  SinkFile* f = as_sink(file);
  if (f->state->err != 0) return 0;  // dropped: the writer reports the first failure
  const auto* in = static_cast<const unsigned char*>(buf);
  while (size > 0) {
    const ssize_t n = ::pwrite(f->fd, in, size, static_cast<off_t>(addr));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      f->state->record(n < 0 ? errno : EIO, "writing");
      return 0;
    }
    in += n;
    addr += static_cast<haddr_t>(n);
    size -= static_cast<size_t>(n);
  }
  f->eof = std::max(f->eof, addr);
  return 0;
}

herr_t sink_truncate(H5FD_t* file, hid_t, hbool_t) {
  SinkFile* f = as_sink(file);
  if (f->eoa == f->eof || f->state->err != 0) return 0;
  if (::ftruncate(f->fd, static_cast<off_t>(f->eoa)) != 0) {
    f->state->record(errno, "sizing");
  } else {
    f->eof = f->eoa;
  }
  return 0;
}

hid_t sink_driver() {
  static const hid_t id = [] {
    static H5FD_class_t cls{};
    cls.name = "ppsearch-sink";
    cls.maxaddr = kSinkMaxAddr;
    cls.fc_degree = H5F_CLOSE_WEAK;
    cls.fapl_size = sizeof(SinkFapl);
    cls.open = sink_open;
    cls.close = sink_close;
    cls.cmp = sink_cmp;
    cls.query = sink_query;
    cls.get_eoa = sink_get_eoa;
    cls.set_eoa = sink_set_eoa;
    cls.get_eof = sink_get_eof;
    cls.get_handle = sink_get_handle;
    cls.read = sink_read;
    cls.write = sink_write;
    cls.truncate = sink_truncate;
    const H5FD_mem_t map[] = H5FD_FLMAP_DICHOTOMY;
    static_assert(std::size(map) == std::size(cls.fl_map));
    std::copy(std::begin(map), std::end(map), std::begin(cls.fl_map));
#if H5_VERSION_GE(1, 13, 0)
    cls.version = H5FD_CLASS_VERSION;
    cls.value = static_cast<H5FD_class_value_t>(600);  // not tested: the project builds on 1.10
#endif
    return H5FDregister(&cls);
  }();
  return id;
}

// File access properties that create `file` through the sink driver, reporting into `state`.
Handle sink_fapl(SinkState* state, const std::string& path) {
  const hid_t driver = check_id(sink_driver(), path, "registering the file driver");
  Handle fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), path, "file access properties"), H5Pclose);
  const SinkFapl info{state};
  check_status(H5Pset_driver(fapl.get(), driver, &info), path, "selecting the file driver");
  return fapl;
}

// ---------------------------------------------------------------------------------------------

// ---- /regret, /uncertainty, /robust (docs/uncertainty.md) ------------------------------------
// Small tables with text columns, written once at commit: every column gets an 8-byte slot in
// memory (strings as char*, variable-length UTF-8 in the file); the file type is packed.
Handle small_member_type(SmallKind kind, bool file, const std::string& path) {
  switch (kind) {
    case SmallKind::kStr: {
      Handle t = make_type(H5Tcopy(H5T_C_S1), path, "string type");
      check_status(H5Tset_size(t.get(), H5T_VARIABLE), path, "string type size");
      check_status(H5Tset_cset(t.get(), H5T_CSET_UTF8), path, "string type character set");
      return t;
    }
    case SmallKind::kU8:
      return make_type(H5Tcopy(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8), path, "uint8 type");
    case SmallKind::kI8:
      return make_type(H5Tcopy(file ? H5T_STD_I8LE : H5T_NATIVE_INT8), path, "int8 type");
    case SmallKind::kI32:
      return make_type(H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32), path, "int32 type");
    case SmallKind::kI64:
      return make_type(H5Tcopy(file ? H5T_STD_I64LE : H5T_NATIVE_INT64), path, "int64 type");
    case SmallKind::kF64:
      return make_type(H5Tcopy(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE), path, "float64 type");
  }
  throw std::logic_error("unknown small-table column kind");
}

template <std::size_t N, typename Row>
void write_small_table(hid_t file, const char* name, const SmallColumn (&cols)[N],
                       const std::vector<Row>& rows, const std::string& path) {
  constexpr std::size_t kSlot = 8;
  static_assert(sizeof(const char*) <= kSlot);
  const std::string what = std::string("writing /") + name;
  Handle mem_type = make_type(H5Tcreate(H5T_COMPOUND, kSlot * N), path, what.c_str());
  Handle file_type = make_type(H5Tcreate(H5T_COMPOUND, kSlot * N), path, what.c_str());
  for (std::size_t c = 0; c < N; ++c) {
    Handle m = small_member_type(cols[c].kind, false, path);
    Handle f = small_member_type(cols[c].kind, true, path);
    check_status(H5Tinsert(mem_type.get(), cols[c].name, kSlot * c, m.get()), path, what.c_str());
    check_status(H5Tinsert(file_type.get(), cols[c].name, kSlot * c, f.get()), path, what.c_str());
  }
  check_status(H5Tpack(file_type.get()), path, what.c_str());
  std::vector<std::vector<SmallValue>> values;
  values.reserve(rows.size());
  for (const Row& r : rows) values.push_back(small_values(r));
  std::vector<unsigned char> buf(kSlot * N * rows.size(), 0);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t c = 0; c < N; ++c) {
      unsigned char* p = buf.data() + kSlot * (N * i + c);
      const SmallValue& v = values[i][c];
      switch (cols[c].kind) {
        case SmallKind::kStr: {
          const char* text = v.s.c_str();
          std::memcpy(p, &text, sizeof text);
          break;
        }
        case SmallKind::kU8: {
          const auto x = static_cast<std::uint8_t>(v.i);
          std::memcpy(p, &x, sizeof x);
          break;
        }
        case SmallKind::kI8: {
          const auto x = static_cast<std::int8_t>(v.i);
          std::memcpy(p, &x, sizeof x);
          break;
        }
        case SmallKind::kI32: {
          const auto x = static_cast<std::int32_t>(v.i);
          std::memcpy(p, &x, sizeof x);
          break;
        }
        case SmallKind::kI64: {
          const std::int64_t x = v.i;
          std::memcpy(p, &x, sizeof x);
          break;
        }
        case SmallKind::kF64: {
          const double x = canonical(v.f);
          std::memcpy(p, &x, sizeof x);
          break;
        }
      }
    }
  const hsize_t dims[1] = {static_cast<hsize_t>(rows.size())};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), path, what.c_str()), H5Sclose);
  Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), path, what.c_str()), H5Pclose);
  check_status(H5Pset_obj_track_times(dcpl.get(), 0), path, what.c_str());
  Handle dset(check_id(H5Dcreate2(file, name, file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                                  H5P_DEFAULT),
                       path, what.c_str()),
              H5Dclose);
  if (!rows.empty())
    check_status(H5Dwrite(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
                 path, what.c_str());
}

class Hdf5ResultWriter final : public ResultWriter {
 public:
  Hdf5ResultWriter(std::string path, bool overwrite);
  ~Hdf5ResultWriter() override;

  void write_candidates(const std::vector<ResultRow>& rows) override;
  void write_stages(const std::vector<StageRow>& rows) override;
  void write_best(const std::vector<ResultRow>& rows) override;
  void write_regret(const std::vector<RegretRow>& rows) override { regret_ = rows; }
  void write_uncertainty(const std::vector<UncertaintyRow>& rows,
                         const std::vector<RobustRow>& robust) override {
    uncertainty_ = rows;
    robust_ = robust;
  }
  void commit(const ResultMeta& meta) override;

 private:
  // One extendible 1-D table, with the rows not yet handed to HDF5.
  struct Table {
    const char* name = "";
    Handle dataset;
    const Handle* mem_type = nullptr;
    std::size_t row_size = 0;    // bytes of one row in memory (sizeof the struct)
    std::size_t block_rows = 1;  // rows per HDF5 write: kChunksPerWrite whole chunks
    hsize_t rows = 0;            // rows in the dataset
    std::uint64_t appended = 0;  // rows received (rows + pending)
    std::vector<unsigned char> pending;
    bool written = false;
  };

  [[noreturn]] void fail_errno(const std::string& what, int err) const;
  void check_sink();
  void require_open(const char* op) const;
  void create_table(Table& table, const Handle& file_type, const Handle& mem_type,
                    std::size_t row_size);
  void add_rows(Table& table, const void* data, std::size_t n);
  void flush_rows(Table& table, const unsigned char* data, std::size_t n);
  template <typename Row>
  void add_all(Table& table, const std::vector<Row>& rows);
  void write_string_attr(const char* name, const std::string& value);
  template <typename T>
  void write_scalar_attr(const char* name, hid_t file_type, hid_t mem_type, const T& value);
  void write_array_attr(const char* name, const std::vector<double>& values);
  void close_objects() noexcept;
  void discard() noexcept;

  std::string path_;
  bool overwrite_ = false;
  bool committed_ = false;
  bool broken_ = false;  // a step failed: only destruction is left
  SinkState sink_;
  std::unique_ptr<Staging> staging_;
  Handle file_;
  Handle row_mem_, row_file_, stage_mem_, stage_file_;
  Table candidates_, stages_, best_;
  std::vector<RegretRow> regret_;  // written by commit() (docs/uncertainty.md)
  std::vector<UncertaintyRow> uncertainty_;
  std::vector<RobustRow> robust_;
};

// The HDF5 file is written through to the temporary file as rows arrive (nothing but the current
// block of each table is held in memory), by the sink driver, which never lets HDF5 see a failed
// write: a failing disk (full, quota, I/O error) surfaces as one clear errno.
Hdf5ResultWriter::Hdf5ResultWriter(std::string path, bool overwrite)
    : path_(std::move(path)), overwrite_(overwrite) {
  candidates_.name = "candidates";
  stages_.name = "stages";
  best_.name = "best";
  check_output_target(path_, overwrite_, "results file");
  create_parent_folders(path_);
  // The temporary file is created now, so a folder we cannot write to is reported before the
  // search runs.
  staging_ = std::make_unique<Staging>(path_, "results file");
  try {
    SilenceHdf5 quiet;
    Handle fapl = sink_fapl(&sink_, path_);
    file_ =
        Handle(check_id(H5Fcreate(staging_->file().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                        path_, ("creating the temporary file '" + staging_->file() + "'").c_str()),
               H5Fclose);

    row_mem_ = compound_type(kRowFields, sizeof(ResultRow), false, path_);
    row_file_ = compound_type(kRowFields, sizeof(ResultRow), true, path_);
    stage_mem_ = compound_type(kStageFields, sizeof(StageRow), false, path_);
    stage_file_ = compound_type(kStageFields, sizeof(StageRow), true, path_);

    // All datasets exist from the start, so an empty result still has them (0 rows).
    create_table(candidates_, row_file_, row_mem_, sizeof(ResultRow));
    create_table(stages_, stage_file_, stage_mem_, sizeof(StageRow));
    create_table(best_, row_file_, row_mem_, sizeof(ResultRow));
    check_sink();
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

// Closes everything and removes the temporary file and folder; never throws.
void Hdf5ResultWriter::discard() noexcept {
  {
    SilenceHdf5 quiet;
    close_objects();
    file_.reset();
    H5Eclear2(H5E_DEFAULT);
  }
  if (staging_) staging_->remove();
}

[[noreturn]] void Hdf5ResultWriter::fail_errno(const std::string& what, int err) const {
  throw OutputError("cannot write '" + path_ + "': " + what + ": " + errno_text(err));
}

// Reports the first failed write/sync of the sink driver.
void Hdf5ResultWriter::check_sink() {
  if (sink_.err != 0) {
    broken_ = true;
    fail_errno(sink_.during + " the temporary file '" + staging_->file() + "'", sink_.err);
  }
}

void Hdf5ResultWriter::require_open(const char* op) const {
  if (committed_) throw std::logic_error(std::string("result writer: ") + op + " after commit()");
  if (broken_) {
    throw std::logic_error(std::string("result writer: ") + op + " after a failed write");
  }
}

void Hdf5ResultWriter::create_table(Table& table, const Handle& file_type, const Handle& mem_type,
                                    std::size_t row_size) {
  const hsize_t dims[1] = {0};
  const hsize_t maxdims[1] = {H5S_UNLIMITED};
  Handle space(check_id(H5Screate_simple(1, dims, maxdims), path_, "creating a dataspace"),
               H5Sclose);
  Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), path_, "dataset properties"), H5Pclose);
  const std::size_t row_bytes = H5Tget_size(file_type.get());
  const std::size_t chunk_rows = std::max<std::size_t>(1, kChunkBytes / row_bytes);
  const hsize_t chunk[1] = {static_cast<hsize_t>(chunk_rows)};
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
  table.mem_type = &mem_type;
  table.row_size = row_size;
  table.block_rows = chunk_rows * kChunksPerWrite;
  table.rows = 0;
  table.appended = 0;
  table.pending.clear();
}

// Appends n rows to the dataset with one HDF5 write.
void Hdf5ResultWriter::flush_rows(Table& table, const unsigned char* data, std::size_t n) {
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
  check_status(H5Dwrite(table.dataset.get(), table.mem_type->get(), mem_space.get(),
                        file_space.get(), H5P_DEFAULT, data),
               path_, what.c_str());
  table.rows = new_size[0];
  check_sink();
}

// Queues rows and hands every full block to HDF5; the rest waits for more rows or commit().
void Hdf5ResultWriter::add_rows(Table& table, const void* data, std::size_t n) {
  const auto* in = static_cast<const unsigned char*>(data);
  const std::size_t block_bytes = table.block_rows * table.row_size;
  std::size_t left = n * table.row_size;
  while (left > 0) {
    if (table.pending.empty() && left >= block_bytes) {  // a whole block: straight from the input
      flush_rows(table, in, table.block_rows);
      in += block_bytes;
      left -= block_bytes;
      continue;
    }
    const std::size_t take = std::min(left, block_bytes - table.pending.size());
    table.pending.insert(table.pending.end(), in, in + take);
    in += take;
    left -= take;
    if (table.pending.size() == block_bytes) {
      flush_rows(table, table.pending.data(), table.block_rows);
      table.pending.clear();
    }
  }
  table.appended += n;
}

// Hands rows to add_rows() one block of canonical copies at a time.
template <typename Row>
void Hdf5ResultWriter::add_all(Table& table, const std::vector<Row>& rows) {
  SilenceHdf5 quiet;
  try {
    for (std::size_t from = 0; from < rows.size(); from += table.block_rows) {
      const std::size_t n = std::min(table.block_rows, rows.size() - from);
      const std::vector<Row> prepared = prepare_rows(rows.data() + from, n);
      add_rows(table, prepared.data(), n);
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
  table.written = true;
}

void Hdf5ResultWriter::write_candidates(const std::vector<ResultRow>& rows) {
  require_open("write_candidates");
  check_rows(rows, "/candidates", candidates_.appended);
  add_all(candidates_, rows);
}

void Hdf5ResultWriter::write_stages(const std::vector<StageRow>& rows) {
  require_open("write_stages");
  add_all(stages_, rows);
}

void Hdf5ResultWriter::write_best(const std::vector<ResultRow>& rows) {
  require_open("write_best");
  if (best_.written) throw std::logic_error("result writer: write_best called twice");
  check_rows(rows, "/best", 0);
  add_all(best_, rows);
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
  {
    SilenceHdf5 quiet;
    for (Table* t : {&candidates_, &stages_, &best_}) {
      flush_rows(*t, t->pending.data(), t->pending.size() / t->row_size);
      t->pending.clear();
      t->pending.shrink_to_fit();
    }
    write_small_table(file_.get(), "regret", kRegretColumns, regret_, path_);
    write_small_table(file_.get(), "uncertainty", kUncertaintyColumns, uncertainty_, path_);
    write_small_table(file_.get(), "robust", kRobustColumns, robust_, path_);
    // Root attributes (docs/interface.md §3), then the additions of ResultMeta.
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
    write_string_attr("mfu_basis", meta.mfu_basis);
    close_objects();
    // The close writes the last metadata, syncs and closes the temporary file (sink_close).
    check_status(file_.close(), path_, "closing the file");
  }
  check_sink();
  staging_->publish(path_, overwrite_);
  broken_ = false;
  committed_ = true;
}

}  // namespace

std::string output_target_problem(const std::string& path, bool overwrite) {
  if (path.empty()) return "the file name is empty";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    // Missing: fine, unless the name can only be a folder ("out/"). Other errors (a parent that
    // is a file, no permission) are reported when the file is created.
    if (errno == ENOENT && output_base_name(path).empty()) {
      return "names a directory, not a file; give a file name, e.g. " +
             (fs::path(path) / "results.h5").lexically_normal().string();
    }
    return "";
  }
  if (S_ISREG(st.st_mode)) {
    return overwrite ? "" : "the file exists; pass --overwrite to replace it";
  }
  if (S_ISDIR(st.st_mode)) {
    return "is a directory, not a file; give a file name, e.g. " +
           (fs::path(path) / "results.h5").lexically_normal().string();
  }
  std::string kind = file_kind(st.st_mode);
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(path, ec);
    if (!ec) kind += " (to '" + target.string() + "')";
  }
  return "is " + kind +
         ", not a regular file; only a regular file is ever written or replaced, even with "
         "--overwrite";
}

void install_output_cleanup_handlers() {
  for (const int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU, SIGXFSZ}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // Only default actions are replaced: an ignored signal (nohup) stays ignored, and a handler
    // someone else installed (the MPI library) stays theirs.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction act {};
    act.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &act, nullptr);
  }
}

std::unique_ptr<ResultWriter> make_hdf5_result_writer(const std::string& path, bool overwrite) {
  return std::make_unique<Hdf5ResultWriter>(path, overwrite);
}

}  // namespace ppsearch

// =============================================================================================
// ppsearch-validate: the table /runs (include/ppsearch/io/runs_writer.hpp, docs/validation.md).
// A separate block appended to this file, the only HDF5 user. It reuses the helpers above
// (Handle, check_id, check_status, make_type, SilenceHdf5, canonical, errno_text) and the same
// publication as the results file: written by the sink driver into a private temporary folder,
// synced, then moved onto PATH (only over a regular file; link() without --overwrite, so an
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

// Writes the whole runs file to `name` through the sink driver and closes it.
void write_runs_file(const std::string& path, const std::string& name,
                     const std::vector<RunRow>& rows, const std::string& command_line,
                     SinkState* sink) {
  SilenceHdf5 quiet;
  Handle fapl = sink_fapl(sink, path);
  Handle file(check_id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), path,
                       ("creating the temporary file '" + name + "'").c_str()),
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
  // The close writes the last metadata, syncs and closes the file (sink_close).
  check_status(file.close(), path, "closing the file");
}

}  // namespace

void write_runs_table(const std::string& path, const std::vector<RunRow>& rows,
                      const std::string& command_line, bool overwrite) {
  check_output_target(path, overwrite, "runs file");
  create_parent_folders(path);
  Staging staging(path, "runs file");  // removed on every way out but publish()
  SinkState sink;
  write_runs_file(path, staging.file(), rows, command_line, &sink);
  if (sink.err != 0) {
    throw OutputError("cannot write '" + path + "': " + sink.during + " the temporary file '" +
                      staging.file() + "': " + errno_text(sink.err));
  }
  staging.publish(path, overwrite);
}

}  // namespace ppsearch

// ---- Text outputs (--trace): the same output safety as the result file ----------------------
namespace ppsearch {

void write_text_output(const std::string& path, bool overwrite, const std::string& text,
                       const char* what) {
  check_output_target(path, overwrite, what);
  create_parent_folders(path);
  Staging staging(path, what);  // removed on every way out but publish()
  const int fd = ::open(staging.file().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw OutputError("cannot write '" + path + "': cannot create the temporary file '" +
                      staging.file() + "': " + errno_text(err));
  }
  std::size_t done = 0;
  int err = 0;
  while (done < text.size() && err == 0) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    throw OutputError("cannot write '" + path + "': writing the temporary file '" + staging.file() +
                      "': " + errno_text(err));
  }
  staging.publish(path, overwrite);
}

}  // namespace ppsearch

// ---------------------------------------------------------------------------------------------
// The staging of the other result writers (src/io/staging.hpp): the same checks, folder and
// rename as the HDF5 file.
namespace ppsearch::io_detail {

struct StagedFile::Impl {
  std::string path;
  bool overwrite = false;
  std::unique_ptr<Staging> staging;
};

StagedFile::StagedFile(const std::string& path, bool overwrite, const char* what)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->overwrite = overwrite;
  check_output_target(path, overwrite, what);
  create_parent_folders(path);
  impl_->staging = std::make_unique<Staging>(path, what);
}

StagedFile::~StagedFile() = default;  // ~Staging removes what was not published

const std::string& StagedFile::path() const { return impl_->path; }
const std::string& StagedFile::temp_file() const { return impl_->staging->file(); }
void StagedFile::publish() { impl_->staging->publish(impl_->path, impl_->overwrite); }
void StagedFile::discard() noexcept { impl_->staging->remove(); }

}  // namespace ppsearch::io_detail
