#include "ppsearch/util/error.hpp"

#include "ppsearch/util/text.hpp"

namespace ppsearch {

std::string ConfigIssue::message() const {
  // "source: key = value: allowed"; without a key, "source: value: allowed". The key and
  // value are echoed from the input, so each is clipped: a 1 MB key gives a short line.
  std::string m = source.empty() ? std::string() : source + ": ";
  if (!key.empty()) {
    m += clip_for_message(key) + " = " + clip_for_message(value, kMessageValueBytes);
  } else {
    m += clip_for_message(value, kMessageValueBytes);
  }
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

ConfigError::ConfigError(ConfigIssue issue)
    : ConfigError(std::vector<ConfigIssue>{std::move(issue)}) {}

}  // namespace ppsearch
