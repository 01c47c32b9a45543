#!/usr/bin/env bash
# The feasibility rule (docs/validation.md "Peak memory and the feasibility rule"): every published
# run in tests/validation/runs-public.csv ran, so the configuration it states must fit in the
# memory model. The test evaluates every row with ppsearch-validate and fails when the model judges
# that no configuration a row allows fits, naming the row and the memory it predicts. It is the
# guard against a memory model that over-predicts: it must not be weakened to pass; fix the model.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"

expect_rc 0 "$PPSEARCH_VALIDATE" "$RUNS" --output runs.h5 --overwrite
cp out.txt report.txt

# Every row of the file is in /runs, and every one fits.
"$PY" - runs.h5 "$RUNS" <<'PY' && ok "every published configuration fits" || bad "published configurations that do not fit (above)"
import csv, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    runs = f["runs"][...]
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
assert len(runs) == len(rows), (len(runs), len(rows))
failed = []
for r, c in zip(runs, rows):
    rid = r["id"].decode() if isinstance(r["id"], bytes) else r["id"]
    assert rid == c["id"], (rid, c["id"])
    if not r["fits_memory"]:
        note = r["note"].decode() if isinstance(r["note"], bytes) else r["note"]
        meas = c["measured_peak_memory_gb"]
        failed.append("%s: predicted %.1f GB on %s (measured %s); %s" % (
            rid, r["predicted_peak_memory_gb"], c["gpu"],
            (meas + " GB " + c["memory_metric"]) if meas else "no measured peak", note))
for line in failed:
    print("does not fit:", line)
print("%d of %d published configurations do not fit" % (len(failed), len(rows)))
sys.exit(1 if failed else 0)
PY

# The report says the same.
line=$(grep '^Published configurations the model judges not to fit in memory: ' report.txt || true)
if [ -z "$line" ]; then
  bad "no feasibility line in the report"
elif [[ "$line" == *": 0 of "* ]]; then
  ok "report: $line"
else
  bad "report: $line"
  sed -n '/^Published configurations the model judges not to fit/,/^Not modelled/p' report.txt
fi
finish
