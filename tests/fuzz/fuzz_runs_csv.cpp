// libFuzzer target: the runs CSV reader of ppsearch-validate (src/search/validate_csv.cpp):
// RFC 4180 splitting, the header check and the check of every column of every row.
// A ConfigError is the normal answer to bad input (exit 2); any other exception, a crash or a
// sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto runs = ppsearch::parse_runs_csv(text, "runs.csv");
    for (const auto& run : runs) {
      if (run.line < 1 || run.id.empty()) std::abort();  // a checked row has a line and an id
    }
  } catch (const ppsearch::ConfigError& e) {
    if (e.issues().empty()) std::abort();
  }
  return 0;
}
