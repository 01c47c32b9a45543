#!/usr/bin/env bash
# ppsearch-validate on the public published runs (tests/validation/runs-public.csv): it runs, prints
# one row per id, writes /runs (step time and peak memory), keeps the mean |step-time error| under
# a bound, reports the step-time error by the split column and the peak-memory error, and rejects
# bad input with exit 2 and the documented messages (docs/validation.md). The feasibility rule
# (every published configuration fits) is tests/e2e/validation_feasibility.sh.
#
# MAX_MEAN_ABS_ERROR_PCT bounds the mean |error| of the predicted step time over the 31 rows the
# constants were first calibrated around (nar21-*, kor22-*, dgxc-v24.11-*: the rows of
# published-runs-public.csv). It is a regression guard for the cost model and its calibration
# constants (configs/): a change that moves the predictions away from these runs fails here. The
# calibrated presets give 3.44 % (README "Accuracy"); 4.0 leaves half a point for harmless changes.
# MAX_MEAN_ABS_ERROR_ALL_PCT bounds the mean over every modelled row, including the runs added
# later (docs/validation.md, "Sources added for the held-out test"), which the constants were not
# fitted on: 12.57 % when they were added (83 of 95 rows modelled), so 15.0 fails only on a clear
# regression.
# MIN_MODELLED_ROWS keeps the bounds honest: rows that stop being modelled (e.g. judged not to fit
# in memory) would otherwise leave the mean. All can be overridden from the environment.
MAX_MEAN_ABS_ERROR_PCT=${MAX_MEAN_ABS_ERROR_PCT:-4.0}
MAX_MEAN_ABS_ERROR_ALL_PCT=${MAX_MEAN_ABS_ERROR_ALL_PCT:-15.0}
MIN_MODELLED_ROWS=${MIN_MODELLED_ROWS:-83}  # rows with a step time modelled when the runs were added
LEGACY_IDS='nar21-*,kor22-*,dgxc-v24.11-*'  # the 31 rows of published-runs-public.csv
MAX_SECONDS=${MAX_SECONDS:-10}  # the whole public file must stay quick to validate

source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"

# ---- the public file ------------------------------------------------------------------------
start=$(date +%s.%N)
expect_rc 0 "$PPSEARCH_VALIDATE" "$RUNS" --output runs.h5 --overwrite
end=$(date +%s.%N)
cp out.txt report.txt
cat report.txt

if awk -v a="$start" -v b="$end" -v m="$MAX_SECONDS" 'BEGIN { exit !(b - a < m) }'; then
  ok "ran in under $MAX_SECONDS s"
else
  bad "took longer than $MAX_SECONDS s"
fi

# One table row per id of the CSV.
mapfile -t ids < <("$PY" -c 'import csv, sys
for row in csv.DictReader(open(sys.argv[1], newline="")): print(row["id"])' "$RUNS")
[ "${#ids[@]}" -ge 115 ] && ok "${#ids[@]} ids in the public file" || bad "expected >= 115 ids, got ${#ids[@]}"
missing=0
for id in "${ids[@]}"; do
  if ! awk -v id="$id" '$1 == id { found = 1 } END { exit !found }' report.txt; then
    bad "no row for $id"
    missing=$((missing + 1))
  fi
done
[ "$missing" -eq 0 ] && ok "a row per id"

# The error bound.
line=$(grep '^Step-time error (all rows, ' report.txt || true)
mean=$(sed -n 's/.*mean |error| \([0-9.]*\)%.*/\1/p' <<<"$line")
modelled=$(sed -n 's/^Step-time error (all rows, \([0-9]*\) of .*/\1/p' <<<"$line")
if [ -z "$mean" ]; then
  bad "no mean |error| in the report: '$line'"
elif awk -v x="$mean" -v m="$MAX_MEAN_ABS_ERROR_ALL_PCT" 'BEGIN { exit !(x < m) }'; then
  ok "mean |error| (all rows) $mean% < $MAX_MEAN_ABS_ERROR_ALL_PCT%"
else
  bad "mean |error| (all rows) $mean% >= $MAX_MEAN_ABS_ERROR_ALL_PCT%"
fi
# The 31 rows of the first calibration, through --fit-ids.
"$PPSEARCH_VALIDATE" "$RUNS" --fit-ids "$LEGACY_IDS" >legacy.txt
lline=$(grep '^Step-time error (fit rows (--fit-ids), ' legacy.txt || true)
lmean=$(sed -n 's/.*mean |error| \([0-9.]*\)%.*/\1/p' <<<"$lline")
lmodelled=$(sed -n 's/^Step-time error (fit rows (--fit-ids), \([0-9]*\) of 31 modelled).*/\1/p' <<<"$lline")
if [ "$lmodelled" = 31 ] && awk -v x="$lmean" -v m="$MAX_MEAN_ABS_ERROR_PCT" 'BEGIN { exit !(x < m) }'; then
  ok "mean |error| (the 31 first-calibration rows) $lmean% < $MAX_MEAN_ABS_ERROR_PCT%"
else
  bad "the 31 first-calibration rows: '$lline' (want 31 of 31 modelled, mean < $MAX_MEAN_ABS_ERROR_PCT%)"
fi
if [ -n "$modelled" ] && [ "$modelled" -ge "$MIN_MODELLED_ROWS" ]; then
  ok "$modelled rows modelled (>= $MIN_MODELLED_ROWS)"
else
  bad "only '${modelled}' rows modelled (want >= $MIN_MODELLED_ROWS)"
fi
grep -q '^Step-time error (Korthikanti Table 5 rows kor22-\*, ' report.txt &&
  ok "Korthikanti statistics" || bad "no Korthikanti statistics line"
grep -q '^Ranking fidelity' report.txt && ok "ranking fidelity" || bad "no ranking fidelity"
# The step-time error by the CSV's split column, over the rows with a step time of each split
# (docs/validation.md, "The split").
read -r nfit nheld ntimed < <("$PY" -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline=""))
        if r["measured_step_time_s"] and r["trust"] != "no-time"]
print(sum(r["split"] == "fit" for r in rows), sum(r["split"] == "held-out" for r in rows), len(rows))' "$RUNS")
grep -q "^Step-time error (split = fit, [0-9]* of $nfit modelled)" report.txt &&
  ok "split = fit statistics ($nfit rows)" || bad "no split = fit statistics over $nfit rows"
grep -q "^Step-time error (split = held-out, [0-9]* of $nheld modelled)" report.txt &&
  ok "split = held-out statistics ($nheld rows)" || bad "no split = held-out statistics over $nheld rows"
# The peak-memory error over every row with a measured peak, with the over/under counts.
nmem=$("$PY" -c 'import csv, sys
print(sum(1 for r in csv.DictReader(open(sys.argv[1], newline="")) if r["measured_peak_memory_gb"]))' "$RUNS")
grep -q "^Peak-memory error (all rows with a peak memory, [0-9]* of $nmem measured): mean |error| [0-9.]*%.*over-predicted [0-9]*, under-predicted [0-9]*\$" report.txt &&
  ok "peak-memory statistics over $nmem rows" || bad "no peak-memory statistics over $nmem rows"

# The HDF5 table agrees with the CSV and with its own definitions.
"$PY" - runs.h5 "$RUNS" <<'PY' && ok "/runs table" || bad "/runs table"
import csv, math, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    runs = f["runs"][...]
    for a in ("ppsearch_version", "command_line", "created_utc", "runs_schema_version"):
        assert a in f.attrs, a
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
names = runs.dtype.names
for field in ("id", "predicted_step_time_s", "measured_step_time_s", "error_pct", "predicted_mfu",
              "measured_mfu", "modelled", "note", "tp", "pp", "vpp", "mbs", "recompute",
              "sequence_parallel", "zero_stage", "searched", "measured_peak_memory_gb",
              "predicted_peak_memory_gb", "memory_error_pct", "memory_metric", "split",
              "fits_memory"):
    assert field in names, field
assert [r["id"].decode() for r in runs] == [r["id"] for r in rows]
def text(x):
    return x.decode() if isinstance(x, bytes) else x
for r, c in zip(runs, rows):
    assert text(r["split"]) == c["split"] and text(r["memory_metric"]) == c["memory_metric"], r["id"]
    if c["measured_peak_memory_gb"]:
        mm = float(c["measured_peak_memory_gb"])
        assert r["measured_peak_memory_gb"] == mm, r["id"]
        pm = r["predicted_peak_memory_gb"]
        if r["modelled"] or not r["fits_memory"]:
            assert pm > 0 and abs(r["memory_error_pct"] - 100 * (pm - mm) / mm) < 1e-9, r["id"]
    else:
        assert math.isnan(r["measured_peak_memory_gb"]) and math.isnan(r["memory_error_pct"]), r["id"]
    if not c["measured_step_time_s"]:  # a memory-only row
        assert math.isnan(r["measured_step_time_s"]) and math.isnan(r["error_pct"]), r["id"]
        continue
    meas = float(c["measured_step_time_s"])
    assert r["measured_step_time_s"] == meas, (r["id"], r["measured_step_time_s"], meas)
    if r["modelled"]:
        p = r["predicted_step_time_s"]
        assert p > 0 and abs(r["error_pct"] - 100 * (p - meas) / meas) < 1e-9, r["id"]
        assert int(r["tp"]) == int(c["tp"]) and int(r["pp"]) == int(c["pp"]), r["id"]
        assert r["dp"] * r["mbs"] * r["num_microbatches"] == int(c["global_batch_size"]), r["id"]
        if c["vpp"]:
            assert int(r["vpp"]) == int(c["vpp"]), r["id"]
        if c["measured_mfu_pct"]:
            assert abs(r["measured_mfu"] - float(c["measured_mfu_pct"]) / 100) < 1e-12, r["id"]
    else:
        assert math.isnan(r["predicted_step_time_s"]) and r["note"], r["id"]
PY

# ---- --fit-ids splits the statistics ----------------------------------------------------------
expect_rc 0 "$PPSEARCH_VALIDATE" "$RUNS" --fit-ids 'kor22-*,nar21-t1-1.7b'
grep -q '^Step-time error (fit rows (--fit-ids), [0-9]* of 9 modelled)' out.txt &&
  ok "fit-row statistics" || bad "no fit-row statistics"
grep -q "^Step-time error (held-out rows, [0-9]* of $((ntimed - 9)) modelled)" out.txt &&
  ok "held-out statistics" || bad "no held-out statistics"
expect_rc 0 "$PPSEARCH_VALIDATE" "$RUNS" --quiet
[ ! -s out.txt ] && ok "--quiet prints nothing" || bad "--quiet printed something"

# ---- errors: exit 2, the documented messages, nothing written ----------------------------------
"$PY" - "$RUNS" bad.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
header = rows[0]
rows[1][header.index("tp")] = "x"
rows[3][header.index("mlp")] = "relu"
with open(sys.argv[2], "w", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows(rows[:5])
PY
expect_rc 2 "$PPSEARCH_VALIDATE" bad.csv --output bad.h5
expect_stderr "ppsearch-validate: error: bad.csv:2: tp = x: an integer in [1, 131072]"
expect_stderr "ppsearch-validate: error: bad.csv:4: mlp = relu: swiglu or gelu"
[ ! -e bad.h5 ] && ok "nothing written for a malformed file" || bad "bad.h5 was written"

printf 'id,source\n"r1,unterminated\n' >quote.csv
expect_rc 2 "$PPSEARCH_VALIDATE" quote.csv
expect_stderr 'ppsearch-validate: error: quote.csv:2: "r1,unterminated: a quoted field closed by a double quote (RFC 4180)'

expect_rc 2 "$PPSEARCH_VALIDATE" "$RUNS" --output runs.h5
expect_stderr "ppsearch-validate: error: --output: output = runs.h5: the file exists; pass --overwrite to replace it"
expect_rc 2 "$PPSEARCH_VALIDATE" "$RUNS" --fit-ids nosuch-run
expect_stderr "ppsearch-validate: error: --fit-ids: nosuch-run: matches no id of $RUNS"
expect_rc 2 "$PPSEARCH_VALIDATE" missing.csv
expect_stderr "ppsearch-validate: error: missing.csv: a readable runs CSV file (no such file)"
expect_rc 2 "$PPSEARCH_VALIDATE" "$RUNS" --bogus
expect_stderr "ppsearch-validate: error: --bogus: unknown option (see --help)"
# A folder that is a regular file (a private one: tests never name real device paths).
: >notafolder
expect_rc 4 "$PPSEARCH_VALIDATE" "$RUNS" --output notafolder/runs.h5 --quiet
expect_stderr "ppsearch-validate: cannot write 'notafolder/runs.h5': cannot create folder 'notafolder': Not a directory"
expect_rc 0 "$PPSEARCH_VALIDATE" --help
finish
