// Numeric helpers shared by the randomised unit tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace ppsearch::test {

// Base seed of the randomised tests; PPSEARCH_TEST_SEED overrides it.
inline std::uint32_t base_seed() {
  if (const char* s = std::getenv("PPSEARCH_TEST_SEED")) {
    return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  }
  return 20240601u;
}

// Relative closeness with an absolute floor for values near 0.
inline ::testing::AssertionResult near_rel(double expected, double actual, double rel = 1e-9) {
  const double tol = rel * std::max(1.0, std::max(std::fabs(expected), std::fabs(actual)));
  if (std::fabs(expected - actual) <= tol) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected " << expected << ", got " << actual << " (diff " << actual - expected << ")";
}

}  // namespace ppsearch::test
