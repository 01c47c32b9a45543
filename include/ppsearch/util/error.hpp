// Error kinds and exit codes (docs/interface.md §4). Three failure kinds never mix:
// a user mistake is a ConfigError (exit 2), an infeasible candidate is a value
// (search/evaluation.hpp), and a bug is an internal error (exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace ppsearch {

enum class ExitCode : int {
  kOk = 0,          // at least one feasible configuration
  kInternal = 1,    // a bug
  kUsage = 2,       // usage or configuration error; nothing written
  kInfeasible = 3,  // no feasible configuration; results still written
  kOutput = 4,      // cannot create or write the results file
};

// One problem with the user's input: "source: key = value: what is allowed".
struct ConfigIssue {
  std::string source;   // option ("--tp") or "file:line" or a preset name
  std::string key;      // "model.hidden_size"
  std::string value;    // the offending value as written
  std::string allowed;  // what is allowed, in words
  std::string message() const;
};

// Thrown only by the edges (CLI, config loading) and by spec validation; never
// from inside the per-candidate evaluation.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<ConfigIssue> issues);
  explicit ConfigError(ConfigIssue issue);
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::vector<ConfigIssue> issues_;
};

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ppsearch
