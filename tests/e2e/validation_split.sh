#!/usr/bin/env bash
# The split rule of tests/validation/runs-public.csv (docs/validation.md, "The split"): a row with
# a step time gets split = fit when the 32-bit FNV-1a hash of its id is even and held-out when it
# is odd, fixed before any prediction was looked at. The 31 rows of published-runs-public.csv keep
# the split the first calibration was made with (its --fit-ids list); rows without a step time
# (memory only) are not used to fit step-time constants and may state either or none. The rule is
# checked on the file and on a copy with one split flipped, which must fail.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"
LEGACY="$SOURCE_DIR/tests/validation/published-runs-public.csv"

cat >check_split.py <<'PY'
import csv, sys

def fnv1a32(s):
    h = 0x811C9DC5
    for b in s.encode("utf-8"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h

def rule(i):
    return "fit" if fnv1a32(i) % 2 == 0 else "held-out"

runs, legacy = sys.argv[1], sys.argv[2]
legacy_ids = {r["id"] for r in csv.DictReader(open(legacy, newline=""))}
bad = 0
n = 0
for line, r in enumerate(csv.DictReader(open(runs, newline="")), start=2):
    timed = r["measured_step_time_s"].strip() and r["trust"] != "no-time"
    if r["id"] in legacy_ids or not timed:
        continue
    n += 1
    if r["split"] != rule(r["id"]):
        print("%s: id %s: split = %s, the rule (FNV-1a 32 of the id %s) says %s"
              % (runs, r["id"], r["split"], "even" if rule(r["id"]) == "fit" else "odd", rule(r["id"])))
        bad += 1
print("%d rows under the rule, %d violations" % (n, bad))
sys.exit(1 if bad else 0)
PY

# Known hashes (FNV-1a 32-bit test vectors: "" -> 0x811c9dc5, "a" -> 0xe40c292c, "foobar" -> 0xbf9cf968).
"$PY" - <<'PY' && ok "FNV-1a test vectors" || bad "FNV-1a test vectors"
src = open("check_split.py").read().split("runs, legacy =")[0]
ns = {}
exec(src, ns)
assert ns["fnv1a32"]("") == 0x811C9DC5
assert ns["fnv1a32"]("a") == 0xE40C292C
assert ns["fnv1a32"]("foobar") == 0xBF9CF968
PY

expect_rc 0 "$PY" check_split.py "$RUNS" "$LEGACY"
cat out.txt
n=$(sed -n 's/^\([0-9]*\) rows under the rule.*/\1/p' out.txt)
[ -n "$n" ] && [ "$n" -ge 40 ] && ok "$n rows follow the rule" || bad "only '$n' rows under the rule"

# A flipped split must be caught.
"$PY" - "$RUNS" "$LEGACY" flipped.csv <<'PY'
import csv, sys
legacy = {r["id"] for r in csv.DictReader(open(sys.argv[2], newline=""))}
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
for r in rows:
    if r["id"] not in legacy and r["measured_step_time_s"]:
        r["split"] = "held-out" if r["split"] == "fit" else "fit"
        break
with open(sys.argv[3], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
expect_rc 1 "$PY" check_split.py flipped.csv "$LEGACY"
grep -q "the rule (FNV-1a 32 of the id" out.txt && ok "a flipped split is named" || bad "flipped split not caught"
finish
