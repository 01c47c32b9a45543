// Reading one row back from an HDF5 result file (docs/results.md): the /candidates row, its
// /stages rows and the resolved_config attribute. Std-only; HDF5 stays in
// src/io/hdf5_result_reader.cpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/io/result_writer.hpp"

namespace ppsearch {

// The file cannot be read as a ppsearch result file, or the row does not exist. The message
// names the file and what is wrong ("PATH: ..."); a usage error (exit 2).
class ResultReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoredRow {
  ResultRow row{};
  std::vector<StageRow> stages;      // this row's /stages rows, in file order (virtual-stage order)
  std::string resolved_config;       // root attribute: the full INI the search ran with
  std::int64_t candidate_count = 0;  // rows in /candidates
};

// Row `index` (0-based, ranked order) of /candidates in `path`. Only a regular file is opened.
StoredRow read_result_row(const std::string& path, std::int64_t index);

}  // namespace ppsearch
