// The --stack help names every software-stack profile the loader accepts (cli/options.cpp,
// spec/stacks.cpp; docs/step-time.md "Software stacks", "Optimizer step by implementation").
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "ppsearch/cli/options.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

// `name` occurs in `text` as a whole word: not followed by a letter, digit, '-' or '.'
// ("torchtitan-2025" inside "torchtitan-2025-compile" does not count).
bool names(const std::string& text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    const bool before_ok =
        at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '-');
    const bool after_ok =
        end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) ||
                                text[end] == '-' || text[end] == '.');
    if (before_ok && after_ok) return true;
  }
  return false;
}

TEST(CliStackHelp, NamesEveryProfile) {
  const CliOutcome out = parse_command_line({"--help"});
  ASSERT_EQ(out.exit_code, 0);
  const std::size_t at = out.text.find("--stack NAME");
  ASSERT_NE(at, std::string::npos);
  const std::string stack_help = out.text.substr(at, out.text.find("\n  --", at + 1) - at);
  for (const std::string& n : stack_names()) EXPECT_TRUE(names(stack_help, n)) << n;
  EXPECT_FALSE(names(stack_help, "torchtitan-2026"));
}

}  // namespace
}  // namespace ppsearch
