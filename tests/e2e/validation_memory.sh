#!/usr/bin/env bash
# The memory accuracy target (docs/memory.md "Accuracy against measured peaks"): over the published
# measured peaks of tests/validation/runs-public.csv, each compared in the metric it was measured in
# (allocated, reserved or device level), the mean |error| stays at or under MAX_MEAN_ABS_PCT and
# every |error| at or under MAX_ABS_PCT, over at least MIN_POINTS rows. It fails when the memory
# model regresses. Nothing here was fitted on these rows: the memory terms come from framework code
# and papers (docs/memory.md), and every memory row is held out (split column).
#
# Rows whose measurement contradicts another measurement of the same configuration are listed in
# EXCLUDED with the reason, reported, and left out of the target (not out of the report):
#  - torchao-8b-fsdp8-b200: the same configuration as torchao-8b-fsdp8-h100 (Llama 3 8B, FSDP 8,
#    batch 1, seq 8192, per-op SAC, torch.compile) measured 30 % lower with another torch and
#    torchtitan version; no model of the configuration can be within 15 % of both.
#  - vocabpar-4b-pp8-s2k-v256k: higher than the 4096-token run of the same model and vocabulary
#    although every term grows with the sequence (tests/validation/runs-README.md "Measured peak
#    memory" caveats).
MAX_MEAN_ABS_PCT=${MAX_MEAN_ABS_PCT:-8.0}
MAX_ABS_PCT=${MAX_ABS_PCT:-15.0}
MIN_POINTS=${MIN_POINTS:-15}
EXCLUDED=${EXCLUDED:-torchao-8b-fsdp8-b200,vocabpar-4b-pp8-s2k-v256k}
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"

expect_rc 0 "$PPSEARCH_VALIDATE" "$RUNS" --output runs.h5 --overwrite
grep '^Peak-memory error' out.txt || true

"$PY" - runs.h5 "$EXCLUDED" "$MAX_MEAN_ABS_PCT" "$MAX_ABS_PCT" "$MIN_POINTS" <<'PY' &&
import math, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    runs = f["runs"][...]
excluded = set(x for x in sys.argv[2].split(",") if x)
max_mean, max_abs, min_points = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def text(x):
    return x.decode() if isinstance(x, bytes) else x
errs, seen = [], set()
for r in runs:
    rid = text(r["id"])
    if math.isnan(r["measured_peak_memory_gb"]):
        continue
    seen.add(rid)
    e = r["memory_error_pct"]
    assert not math.isnan(e), "%s: no memory prediction" % rid
    if rid in excluded:
        print("excluded: %s %+.2f%% (%s)" % (rid, e, text(r["memory_metric"])))
        continue
    errs.append((abs(e), rid, e, text(r["memory_metric"])))
missing = excluded - seen
assert not missing, "excluded ids that are not memory rows: %s" % sorted(missing)
for a, rid, e, metric in sorted(errs, reverse=True):
    print("%-34s %+7.2f%% %s" % (rid, e, metric))
mean = sum(a for a, *_ in errs) / len(errs)
worst = max(errs)
print("memory target: %d points, mean |error| %.2f%% (<= %.1f), max |error| %.2f%% %s (<= %.1f)"
      % (len(errs), mean, max_mean, worst[0], worst[1], max_abs))
assert len(errs) >= min_points, "only %d points" % len(errs)
assert mean <= max_mean, "mean |error| %.2f%% > %.1f%%" % (mean, max_mean)
assert worst[0] <= max_abs, "%s: |error| %.2f%% > %.1f%%" % (worst[1], worst[0], max_abs)
PY
  ok "memory accuracy target" || bad "memory accuracy target"
finish
