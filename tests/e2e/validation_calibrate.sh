#!/usr/bin/env bash
# tools/ppsearch-calibrate (docs/validation.md, "Calibration"): on synthetic rows whose "measured"
# step times are the engine's own predictions at a known gpu.gemm_efficiency, the fit recovers
# that value from the split = fit rows alone. The held-out rows are generated at another value,
# so a calibration that also fitted on them (or ignored the key) lands elsewhere and fails.
# Then: the report-only mode, and bad input (exit 2, the message).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
CAL="$SOURCE_DIR/tools/ppsearch-calibrate"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"
TRUE_FIT=0.6
TRUE_HELD=0.8

# ---- synthetic rows: the dgxc-v24.11 H100 rows (every knob stated), alternately fit / held-out ----
"$PY" - "$RUNS" base.csv <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["id"].startswith("dgxc-v24.11-")]
assert len(rows) >= 10, len(rows)
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    for k, r in enumerate(rows):
        r["split"] = "fit" if k % 2 == 0 else "held-out"
        w.writerow(r)
PY
expect_rc 0 "$PPSEARCH_VALIDATE" base.csv --set gpu.gemm_efficiency=$TRUE_FIT
cp out.txt pred_fit.txt
expect_rc 0 "$PPSEARCH_VALIDATE" base.csv --set gpu.gemm_efficiency=$TRUE_HELD
cp out.txt pred_held.txt
"$PY" - base.csv pred_fit.txt pred_held.txt synth.csv <<'PY'
import csv, sys
def preds(path):
    out = {}
    for line in open(path):
        t = line.split()
        if line[:1].strip() and len(t) > 3 and t[1] != "-":
            out[t[0]] = t[1]
    return out
fit, held = preds(sys.argv[2]), preds(sys.argv[3])
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[4], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    for r in rows:
        src = fit if r["split"] == "fit" else held
        r["measured_step_time_s"] = src[r["id"]]  # every row is modelled at both values
        r["measured_mfu_pct"] = ""
        w.writerow(r)
PY

expect_rc 0 "$CAL" --validate "$PPSEARCH_VALIDATE" gpu.gemm_efficiency=0.4:0.95 synth.csv
cp out.txt cal.txt
cat cal.txt
fitted=$(sed -n 's/^  gpu.gemm_efficiency = \([0-9.e+-]*\) .*/\1/p' cal.txt)
if [ -z "$fitted" ]; then
  bad "no fitted value in the output"
elif awk -v x="$fitted" -v t="$TRUE_FIT" 'BEGIN { d = x - t; if (d < 0) d = -d; exit !(d < 0.005) }'; then
  ok "fitted gpu.gemm_efficiency = $fitted (generated at $TRUE_FIT)"
else
  bad "fitted gpu.gemm_efficiency = $fitted, want $TRUE_FIT +- 0.005 (held-out rows were made at $TRUE_HELD)"
fi
# The fit rows are reproduced (4-digit printed times: well under 0.1 %), the held-out rows are not.
fitline=$(grep '^  fit ' cal.txt || true)
after=$(sed -n 's/.*->  n=[0-9]* mean |error| \([0-9.]*\)%.*/\1/p' <<<"$fitline")
[ -n "$after" ] && awk -v x="$after" 'BEGIN { exit !(x < 0.1) }' &&
  ok "fit rows after the fit: mean |error| $after%" || bad "fit rows after the fit: '$fitline'"
heldline=$(grep '^  held-out ' cal.txt || true)
hafter=$(sed -n 's/.*->  n=[0-9]* mean |error| \([0-9.]*\)%.*/\1/p' <<<"$heldline")
[ -n "$hafter" ] && awk -v x="$hafter" 'BEGIN { exit !(x > 1) }' &&
  ok "held-out rows keep their error ($hafter%)" || bad "held-out rows after the fit: '$heldline'"
# The uncertainty band contains the fitted value and is narrower than the searched range.
band=$(grep '^  gpu.gemm_efficiency = ' cal.txt | sed -n 's/.*within +0.5 pp: \[\([0-9.e+-]*\)[^,]*, \([0-9.e+-]*\).*/\1 \2/p')
read -r lo hi <<<"$band"
[ -n "${hi:-}" ] && awk -v a="$lo" -v b="$hi" -v x="$fitted" 'BEGIN { exit !(a <= x && x <= b && b - a < 0.2) }' &&
  ok "band [$lo, $hi] around $fitted" || bad "band '$band'"
# One residual line per row with a step time, naming its split.
n=$(grep -c '^dgxc-v24.11-.* \(fit\|held-out\) ' cal.txt || true)
[ "$n" = "$(($(wc -l <synth.csv) - 1))" ] && ok "$n residual rows" || bad "$n residual rows"
# Deterministic: the same command prints the same text.
expect_rc 0 "$CAL" --validate "$PPSEARCH_VALIDATE" gpu.gemm_efficiency=0.4:0.95 synth.csv
cmp -s out.txt cal.txt && ok "deterministic output" || bad "a second run printed something else"

# Leave-one-out: every refit on consistent synthetic rows returns the generated value.
expect_rc 0 "$CAL" --validate "$PPSEARCH_VALIDATE" --loo --no-rows gpu.gemm_efficiency=0.4:0.95 synth.csv
loo=$(sed -n 's/^    gpu.gemm_efficiency: \[\([0-9.e+-]*\) (without [^)]*), \([0-9.e+-]*\) (without .*/\1 \2/p' out.txt)
read -r llo lhi <<<"$loo"
[ -n "${lhi:-}" ] && awk -v a="$llo" -v b="$lhi" -v t="$TRUE_FIT" 'BEGIN { exit !(a > t - 0.005 && b < t + 0.005) }' &&
  grep -q "^  leave-one-out (7 refits" out.txt && ok "leave-one-out range [$llo, $lhi]" || bad "leave-one-out: '$loo'"

# ---- report only: no key, the presets' residuals and the per-source table -------------------
expect_rc 0 "$CAL" --validate "$PPSEARCH_VALIDATE" "$RUNS"
grep -q '^Per source' out.txt && grep -q '^  kor22 ' out.txt && ok "per-source table" ||
  bad "no per-source table"
grep -q '^Fitted' out.txt && bad "fitted without a key" || ok "nothing fitted without a key"

# ---- bad input -------------------------------------------------------------------------------
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" gpu.gemm_efficiency=0.9:0.4 synth.csv
expect_stderr "ppsearch-calibrate: error: gpu.gemm_efficiency=0.9:0.4: LO < HI, both finite"
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" gemm=0.4:0.9 synth.csv
expect_stderr "ppsearch-calibrate: error: gemm=0.4:0.9: SECTION.KEY=LO:HI, e.g. gpu.gemm_efficiency=0.5:0.8"
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" gpu.no_such_key=0.4:0.9 synth.csv
grep -q "^ppsearch-calibrate: error: ppsearch-validate rejected the input:" err.txt &&
  grep -q "no_such_key" err.txt && ok "an unknown key is named" || bad "unknown key: $(cat err.txt)"
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" gpu.gemm_efficiency=0.4:0.9 missing.csv
grep -q "^ppsearch-calibrate: error: missing.csv: a readable runs CSV file" err.txt &&
  ok "a missing file is named" || bad "missing file: $(cat err.txt)"
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" --ids nosuch-run gpu.gemm_efficiency=0.4:0.9 synth.csv
expect_stderr "ppsearch-calibrate: error: --ids: nosuch-run: matches no id of synth.csv"
expect_rc 2 "$CAL" --validate "$PPSEARCH_VALIDATE" --grid 2 gpu.gemm_efficiency=0.4:0.9 synth.csv
expect_stderr "ppsearch-calibrate: error: --grid = 2: an integer in [3, 1000]"
finish
