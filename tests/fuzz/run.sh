#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake --preset fuzz: clang, ASan/UBSan, build/fuzz) and fuzzes each
# for a bounded time, starting from the seed corpus of tests/fuzz/corpus/<target> and first
# replaying every regression input of tests/fuzz/regressions/<target>. Exit status: non-zero on
# any crash, sanitizer report, leak, timeout or out-of-memory (libFuzzer's own exit codes).
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]      default: 25 s, all three targets
#
# New inputs go to build/fuzz/work/<target> (kept between runs, never committed); a crashing input
# is saved as build/fuzz/artifacts/<target>/crash-*. Long local runs: see tests/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=${1:-25}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(ini cli runs_csv)
JOBS=${JOBS:-2}
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

cmake --preset fuzz "${LAUNCHER[@]}" >/dev/null
cmake --build build/fuzz -j"$JOBS" --target $(printf 'fuzz_%s ' "${TARGETS[@]}") >/dev/null

# fuzz_cli makes its private folder under $TMPDIR; libFuzzer exits without cleaning up.
export TMPDIR=$PWD/build/fuzz/tmp
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"
trap 'rm -rf "$TMPDIR"' EXIT

status=0
for t in "${TARGETS[@]}"; do
  bin=build/fuzz/bin/fuzz_$t
  work=build/fuzz/work/$t
  art=build/fuzz/artifacts/$t/
  mkdir -p "$work" "$art"
  # Replay the regression inputs (each once), then fuzz for the time given.
  if ls tests/fuzz/regressions/$t/* >/dev/null 2>&1; then
    if ! "$bin" -runs=0 tests/fuzz/regressions/$t/* >"build/fuzz/regressions-$t.log" 2>&1; then
      echo "fuzz $t: a regression input fails again:" >&2
      tail -n 40 "build/fuzz/regressions-$t.log" >&2
      status=1
      continue
    fi
  fi
  if "$bin" -dict=tests/fuzz/$t.dict -max_total_time="$SECONDS_PER_TARGET" -timeout=10 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" \
       "$work" tests/fuzz/corpus/$t >"build/fuzz/run-$t.log" 2>&1; then
    echo "fuzz $t: $(grep -E '^stat::number_of_executed_units' "build/fuzz/run-$t.log" |
                       awk '{print $2}') inputs in ${SECONDS_PER_TARGET} s, no crash"
  else
    echo "fuzz $t: FAILED (input saved under $art):" >&2
    grep -E -A 30 '==ERROR|SUMMARY|deadly signal|uncaught|Test unit written' \
      "build/fuzz/run-$t.log" | head -n 60 >&2 || tail -n 60 "build/fuzz/run-$t.log" >&2
    status=1
  fi
done
exit $status
