#!/usr/bin/env bash
# Build the benchmarks in Release (core only: no MPI/HDF5/Boost needed), run them all and print
# one compact table: per benchmark the median wall and CPU time over the repetitions, the CPU
# time's coefficient of variation and the counters (see bench/README.md).
#
# Usage (from anywhere, e.g. the repo root):  bash bench/run.sh [google-benchmark flags]
#   e.g. bash bench/run.sh --benchmark_filter='Evaluate|Sweep'
# Environment:
#   BUILD_DIR  build directory (default build/bench)
#   MIN_TIME   --benchmark_min_time per repetition, seconds (default 0.1)
#   REPS       --benchmark_repetitions (default 3; the table shows medians)
#   RAW=1      also stream Google Benchmark's own console output
# The raw results are kept in $BUILD_DIR/bench.json (and the console output in bench.log).
# Without python3 the console output is printed instead of the compact table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/bench}
MIN_TIME=${MIN_TIME:-0.1}
REPS=${REPS:-3}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DPPSEARCH_CORE_ONLY=ON \
      -DPPSEARCH_BUILD_TESTS=OFF -DPPSEARCH_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target ppsearch_bench >/dev/null

json="$BUILD_DIR/bench.json"
log="$BUILD_DIR/bench.log"
echo "ppsearch_bench: min_time ${MIN_TIME}s x ${REPS} repetitions; raw results in $json" >&2
run=("$BUILD_DIR/bin/ppsearch_bench" --benchmark_counters_tabular=true
     "--benchmark_min_time=$MIN_TIME" "--benchmark_repetitions=$REPS"
     --benchmark_out="$json" --benchmark_out_format=json "$@")
if ! command -v python3 >/dev/null; then
  exec "${run[@]}"
fi
if [[ "${RAW:-0}" == 1 ]]; then
  "${run[@]}" 2>&1 | tee "$log"
else
  "${run[@]}" >"$log" 2>&1 || { cat "$log"; exit 1; }
fi

python3 - "$json" <<'PY'
import json, sys

doc = json.load(open(sys.argv[1]))
ctx = doc["context"]
std = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
       "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
       "time_unit", "aggregate_name", "aggregate_unit", "error_occurred", "error_message",
       "label"}
to_ns = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"

def fmt_num(name, v):
    if name.startswith("t/"):  # seconds (inverted rate)
        return fmt_time(v * 1e9)
    if v != 0 and (abs(v) >= 1e4 or abs(v) < 1e-3):
        for p, s in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(v) >= s:
                return f"{v / s:.4g}{p}"
        return f"{v:.3g}"
    return f"{v:.4g}"

runs = {}  # run_name -> {"median": entry, "cv": entry, "first": entry, "error": str}
order = []
for b in doc["benchmarks"]:
    name = b.get("run_name", b["name"])
    if name not in runs:
        runs[name] = {}
        order.append(name)
    r = runs[name]
    if b.get("error_occurred"):
        r["error"] = b.get("error_message", "error")
    if b.get("run_type") == "aggregate":
        r[b["aggregate_name"]] = b
    else:
        r.setdefault("first", b)

print(f"# host {ctx.get('host_name')}: {ctx.get('num_cpus')} CPUs @ {ctx.get('mhz_per_cpu')} MHz,"
      f" load {', '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))},"
      f" {ctx.get('date')}")
rows = [("benchmark", "time", "CPU", "cv", "iters", "counters")]
for name in order:
    r = runs[name]
    if "error" in r:
        rows.append((name, "-", "-", "-", "-", "ERROR: " + r["error"]))
        continue
    m = r.get("median", r.get("first"))
    scale = to_ns[m["time_unit"]]
    cv = f"{100 * r['cv']['cpu_time']:.1f}%" if "cv" in r else "-"
    counters = "  ".join(f"{k}={fmt_num(k, v)}" for k, v in m.items()
                         if k not in std and isinstance(v, (int, float)))
    iters = r.get("first", m)["iterations"]
    rows.append((name, fmt_time(m["real_time"] * scale), fmt_time(m["cpu_time"] * scale), cv,
                 str(iters), counters))
w = [max(len(row[i]) for row in rows) for i in range(5)]
for i, row in enumerate(rows):
    print(f"{row[0]:<{w[0]}}  {row[1]:>{w[1]}}  {row[2]:>{w[2]}}  {row[3]:>{w[3]}}  "
          f"{row[4]:>{w[4]}}  {row[5]}".rstrip())
    if i == 0:
        print("-" * (sum(w) + 8 + 2 + len("counters")))
PY
