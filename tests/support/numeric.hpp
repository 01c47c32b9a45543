// Numeric helpers shared by the randomised unit tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

namespace ppsearch::test {

// A randomised test's seed: PPSEARCH_TEST_SEED when set, else the test's own `fallback`.
inline std::uint64_t seed_or(std::uint64_t fallback) {
  if (const char* s = std::getenv("PPSEARCH_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return fallback;
}

// Base seed of the randomised tests; PPSEARCH_TEST_SEED overrides it.
inline std::uint32_t base_seed() { return static_cast<std::uint32_t>(seed_or(20240601u)); }

// Uniform in [lo, hi) from 53 random bits of a 64-bit engine, independent of the standard
// library's distributions (the same sequence on every platform).
inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

// Uniform integer in [lo, hi] (inclusive), as uniform().
inline int uniform_int(std::mt19937_64& rng, int lo, int hi) {
  return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
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
