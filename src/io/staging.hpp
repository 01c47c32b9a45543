// The output safety of every result writer, for the writers in src/io (internal header): a
// result file is written in a private temporary folder next to its final name and renamed onto
// it when complete (docs/results.md "Output safety"). Implemented in hdf5_result_writer.cpp,
// next to the HDF5 writer that uses the same code.
#pragma once

#include <memory>
#include <string>

namespace ppsearch::io_detail {

class StagedFile {
 public:
  // Refuses a target that is not missing or (with overwrite) a regular file (OutputTargetError),
  // creates missing parent folders and the private temporary folder ".NAME.ppsearch-tmp-XXXXXX"
  // (OutputError when that fails). `what` names the file in messages ("results file").
  StagedFile(const std::string& path, bool overwrite, const char* what);
  ~StagedFile();  // without publish(): removes the temporary file and folder
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  const std::string& path() const;       // the final name
  const std::string& temp_file() const;  // where to create the file (not created yet)
  // Moves the temporary file onto the final name (only over a regular file, and only with
  // overwrite), then removes the folder.
  void publish();
  void discard() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ppsearch::io_detail
