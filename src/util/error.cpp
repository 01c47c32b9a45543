#include "ppsearch/util/error.hpp"

namespace ppsearch {

std::string ConfigIssue::message() const {
  std::string m = source.empty() ? std::string() : source + ": ";
  m += key;
  if (!value.empty() || !key.empty()) m += " = " + value;
  if (!allowed.empty()) m += ": " + allowed;
  return m;
}

static std::string join_messages(const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const auto& i : issues) {
    if (!out.empty()) out += "\n";
    out += i.message();
  }
  return out;
}

ConfigError::ConfigError(std::vector<ConfigIssue> issues)
    : std::runtime_error(join_messages(issues)), issues_(std::move(issues)) {}

ConfigError::ConfigError(ConfigIssue issue) : ConfigError(std::vector<ConfigIssue>{std::move(issue)}) {}

}  // namespace ppsearch
