// Reads one /candidates row, its /stages rows and the resolved_config attribute back from a
// result file (result_reader.hpp). Fields are matched by name (HDF5 compound conversion), so
// the reader takes the members it needs whatever else the file holds.
#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "ppsearch/io/result_reader.hpp"

namespace ppsearch {
namespace {

struct Closer {
  herr_t (*close)(hid_t);
  void operator()(hid_t* id) const {
    if (*id >= 0) close(*id);
    delete id;
  }
};
using Id = std::unique_ptr<hid_t, Closer>;
Id own(hid_t id, herr_t (*close)(hid_t)) { return Id(new hid_t(id), Closer{close}); }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ResultReadError(path + ": " + what);
}

// Member `name` of the file's compound type, as a native type (an enum keeps its names, so
// enum values convert by name to the same numbers the writer used).
Id member_native(hid_t file_type, const char* name, const std::string& path, const char* dataset) {
  const int idx = H5Tget_member_index(file_type, name);
  if (idx < 0) fail(path, std::string(dataset) + " has no field " + name);
  Id t = own(H5Tget_member_type(file_type, static_cast<unsigned>(idx)), H5Tclose);
  Id n = own(H5Tget_native_type(*t, H5T_DIR_ASCEND), H5Tclose);
  if (*n < 0) fail(path, std::string("cannot read field ") + name + " of " + dataset);
  return n;
}

struct Member {
  const char* name;
  std::size_t offset;
  std::size_t size;
};

#define PPSEARCH_MEMBER(type, m) \
  Member { #m, offsetof(type, m), sizeof(type::m) }

// Compound memory type of `size` bytes holding `members`, each of the file's own kind (checked
// to have the size of the struct member).
Id memory_type(hid_t file_type, std::size_t size, const std::vector<Member>& members,
               const std::string& path, const char* dataset) {
  Id mem = own(H5Tcreate(H5T_COMPOUND, size), H5Tclose);
  for (const Member& m : members) {
    Id t = member_native(file_type, m.name, path, dataset);
    if (H5Tget_size(*t) != m.size)
      fail(path, std::string(dataset) + " field " + m.name + " has an unexpected size");
    if (H5Tinsert(*mem, m.name, m.offset, *t) < 0)
      fail(path, std::string("cannot read field ") + m.name + " of " + dataset);
  }
  return mem;
}

std::int64_t rows_of(hid_t dset) {
  Id space = own(H5Dget_space(dset), H5Sclose);
  hsize_t n = 0;
  if (*space < 0 || H5Sget_simple_extent_ndims(*space) != 1 ||
      H5Sget_simple_extent_dims(*space, &n, nullptr) != 1)
    return -1;
  return static_cast<std::int64_t>(n);
}

// Reads rows [first, first + n) of `dset` into `out` through `mem`.
bool read_rows(hid_t dset, hid_t mem, hsize_t first, hsize_t n, void* out) {
  Id fspace = own(H5Dget_space(dset), H5Sclose);
  if (*fspace < 0 || H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, &first, nullptr, &n, nullptr) < 0)
    return false;
  Id mspace = own(H5Screate_simple(1, &n, nullptr), H5Sclose);
  return H5Dread(dset, mem, *mspace, *fspace, H5P_DEFAULT, out) >= 0;
}

std::string read_string_attr(hid_t file, const char* name, const std::string& path) {
  if (H5Aexists(file, name) <= 0) fail(path, std::string("no root attribute ") + name);
  Id attr = own(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  Id ftype = own(H5Aget_type(*attr), H5Tclose);
  if (*attr < 0 || H5Tget_class(*ftype) != H5T_STRING)
    fail(path, std::string("root attribute ") + name + " is not a string");
  Id mtype = own(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(*mtype, H5Tget_cset(*ftype));  // HDF5 does not convert between character sets
  if (H5Tis_variable_str(*ftype) > 0) {
    H5Tset_size(*mtype, H5T_VARIABLE);
    char* text = nullptr;
    if (H5Aread(*attr, *mtype, &text) < 0 || text == nullptr)
      fail(path, std::string("cannot read root attribute ") + name);
    std::string out(text);
    H5free_memory(text);
    return out;
  }
  const std::size_t size = H5Tget_size(*ftype);
  H5Tset_size(*mtype, size + 1);
  std::string buf(size + 1, '\0');
  if (H5Aread(*attr, *mtype, buf.data()) < 0)
    fail(path, std::string("cannot read root attribute ") + name);
  return buf.substr(0, buf.find('\0'));
}

}  // namespace

StoredRow read_result_row(const std::string& path, std::int64_t index) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) fail(path, "no such file");
  if (!std::filesystem::is_regular_file(st)) fail(path, "not a regular file");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the messages below say what failed
  if (H5Fis_hdf5(path.c_str()) <= 0)
    fail(path, "not an HDF5 file (expected a ppsearch result file)");
  Id file = own(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (*file < 0) fail(path, "cannot open the HDF5 file");
  if (H5Lexists(*file, "candidates", H5P_DEFAULT) <= 0 ||
      H5Lexists(*file, "stages", H5P_DEFAULT) <= 0)
    fail(path, "not a ppsearch result file (no /candidates or /stages dataset)");

  StoredRow out;
  out.resolved_config = read_string_attr(*file, "resolved_config", path);

  Id cand = own(H5Dopen2(*file, "candidates", H5P_DEFAULT), H5Dclose);
  Id ctype = own(H5Dget_type(*cand), H5Tclose);
  if (*cand < 0 || H5Tget_class(*ctype) != H5T_COMPOUND)
    fail(path, "/candidates is not a table of rows");
  out.candidate_count = rows_of(*cand);
  if (out.candidate_count < 0) fail(path, "/candidates is not one-dimensional");
  if (index < 0 || index >= out.candidate_count)
    fail(path, "row " + std::to_string(index) + " does not exist (/candidates has " +
                   std::to_string(out.candidate_count) + " rows: 0.." +
                   std::to_string(out.candidate_count - 1) + ")");
  std::vector<Member> row_members = {
      PPSEARCH_MEMBER(ResultRow, gpus),
      PPSEARCH_MEMBER(ResultRow, tp),
      PPSEARCH_MEMBER(ResultRow, pp),
      PPSEARCH_MEMBER(ResultRow, cp),
      PPSEARCH_MEMBER(ResultRow, dp),
      PPSEARCH_MEMBER(ResultRow, vpp),
      PPSEARCH_MEMBER(ResultRow, mbs),
      PPSEARCH_MEMBER(ResultRow, num_microbatches),
      PPSEARCH_MEMBER(ResultRow, global_batch_size),
      PPSEARCH_MEMBER(ResultRow, schedule),
      PPSEARCH_MEMBER(ResultRow, recompute),
      PPSEARCH_MEMBER(ResultRow, sequence_parallel),
      PPSEARCH_MEMBER(ResultRow, zero_stage),
      PPSEARCH_MEMBER(ResultRow, feasible),
      PPSEARCH_MEMBER(ResultRow, infeasible_reason),
      PPSEARCH_MEMBER(ResultRow, iteration_time_s),
      PPSEARCH_MEMBER(ResultRow, mfu),
      PPSEARCH_MEMBER(ResultRow, hfu),
      PPSEARCH_MEMBER(ResultRow, tflops_per_gpu),
      PPSEARCH_MEMBER(ResultRow, tokens_per_s),
      PPSEARCH_MEMBER(ResultRow, bubble_fraction),
      PPSEARCH_MEMBER(ResultRow, peak_memory_gb),
      PPSEARCH_MEMBER(ResultRow, compute_s),
      PPSEARCH_MEMBER(ResultRow, tp_comm_s),
      PPSEARCH_MEMBER(ResultRow, cp_comm_s),
      PPSEARCH_MEMBER(ResultRow, pp_comm_s),
      PPSEARCH_MEMBER(ResultRow, dp_comm_s),
      PPSEARCH_MEMBER(ResultRow, pipeline_s),
      PPSEARCH_MEMBER(ResultRow, optimizer_s),
      PPSEARCH_MEMBER(ResultRow, needed_memory_gb),
      PPSEARCH_MEMBER(ResultRow, worst_rank),
      PPSEARCH_MEMBER(ResultRow, recompute_num_layers),
  };
  // Mixture of experts (docs/moe.md): ep and etp when the file has them (older files: dense).
  if (H5Tget_member_index(*ctype, "ep") >= 0 && H5Tget_member_index(*ctype, "etp") >= 0) {
    row_members.push_back(PPSEARCH_MEMBER(ResultRow, ep));
    row_members.push_back(PPSEARCH_MEMBER(ResultRow, etp));
  }
  // Rank placement (docs/topology.md): files written before it have no such field.
  if (H5Tget_member_index(*ctype, "placement") >= 0)
    row_members.push_back(PPSEARCH_MEMBER(ResultRow, placement));
  Id rmem = memory_type(*ctype, sizeof(ResultRow), row_members, path, "/candidates");
  if (!read_rows(*cand, *rmem, static_cast<hsize_t>(index), 1, &out.row))
    fail(path, "cannot read row " + std::to_string(index) + " of /candidates");

  Id stg = own(H5Dopen2(*file, "stages", H5P_DEFAULT), H5Dclose);
  Id stype = own(H5Dget_type(*stg), H5Tclose);
  if (*stg < 0 || H5Tget_class(*stype) != H5T_COMPOUND)
    fail(path, "/stages is not a table of rows");
  const std::int64_t nst = rows_of(*stg);
  if (nst < 0) fail(path, "/stages is not one-dimensional");
  // The candidate column first (rows are grouped by candidate), then the matching rows.
  Id key = memory_type(*stype, sizeof(std::int64_t), {Member{"candidate", 0, 8}}, path, "/stages");
  const std::vector<Member> stage_members = {
      PPSEARCH_MEMBER(StageRow, candidate),     PPSEARCH_MEMBER(StageRow, stage),
      PPSEARCH_MEMBER(StageRow, pipeline_rank), PPSEARCH_MEMBER(StageRow, first_layer),
      PPSEARCH_MEMBER(StageRow, last_layer),    PPSEARCH_MEMBER(StageRow, time_s),
      PPSEARCH_MEMBER(StageRow, memory_gb),
  };
  Id smem = memory_type(*stype, sizeof(StageRow), stage_members, path, "/stages");
  constexpr hsize_t kBlock = 65536;
  std::vector<std::int64_t> ids;
  for (hsize_t first = 0; first < static_cast<hsize_t>(nst); first += kBlock) {
    const hsize_t n = std::min<hsize_t>(kBlock, static_cast<hsize_t>(nst) - first);
    ids.resize(n);
    if (!read_rows(*stg, *key, first, n, ids.data())) fail(path, "cannot read /stages");
    for (hsize_t i = 0; i < n; ++i) {
      if (ids[i] != index) continue;
      StageRow s{};
      if (!read_rows(*stg, *smem, first + i, 1, &s)) fail(path, "cannot read /stages");
      out.stages.push_back(s);
    }
  }
  return out;
}

}  // namespace ppsearch
