#!/usr/bin/env bash
# Build the benchmarks in Release (core only: no MPI/HDF5/Boost needed) and print the table.
# Usage: bash bench/run.sh [google-benchmark flags, e.g. --benchmark_filter=Partition]
# Build dir: $BUILD_DIR (default build/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/bench}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DPPSEARCH_CORE_ONLY=ON \
      -DPPSEARCH_BUILD_TESTS=OFF -DPPSEARCH_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target ppsearch_bench
exec "$BUILD_DIR/bin/ppsearch_bench" --benchmark_counters_tabular=true "$@"
