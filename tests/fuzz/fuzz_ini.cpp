// libFuzzer target: the INI reader (src/io/config_file.cpp) on arbitrary bytes.
// problem_from_ini_text runs the whole file path of a --config/--model/--cluster file: the line
// scanner, Boost.Program_options' INI parser, the key registry (unknown keys, did-you-mean, value
// parsing) and the cross-field checks, then resolves the derived defaults. A ConfigError is the
// normal answer to bad input (exit 2); any other exception, a crash or a sanitizer report is a
// finding. On success the resolved INI must parse again to an equal text (what MPI ranks do).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ppsearch/io/config_file.hpp"
#include "ppsearch/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string resolved;
  try {
    resolved = ppsearch::resolved_ini(ppsearch::problem_from_ini_text(text, "fuzz.ini"));
  } catch (const ppsearch::ConfigError& e) {
    if (e.issues().empty()) std::abort();  // an error must say what is wrong
    return 0;
  }
  // Round trip: rank 0 broadcasts resolved_ini() and the other ranks rebuild from it, so a
  // resolved text that does not load again (or loads to something else) is a bug.
  const std::string again =
      ppsearch::resolved_ini(ppsearch::problem_from_ini_text(resolved, "resolved.ini"));
  if (again != resolved) std::abort();
  return 0;
}
