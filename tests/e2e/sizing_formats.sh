#!/usr/bin/env bash
# Sizing (training.tokens, cluster.price_per_gpu_hour → time_to_train_s, gpu_hours, cost and the
# fastest/cheapest summary), the CSV and JSON result formats (read back and compared field by
# field with the HDF5 rows of the same run), the folded top table and the plain progress lines
# (docs/results.md).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf run && mkdir run && cd run  # a fresh folder: the checks below expect no earlier files
common=(--gpus 64,128 --tp 1,2,4 --pp 1,2 --threads 2)

# ---- sizing ---------------------------------------------------------------------------------
expect_rc 0 "$PPSEARCH" "${common[@]}" --tokens 15T --price-per-gpu-hour 2.5 --output r.h5
cp out.txt sized.txt
expect_rc 0 "$PY" "$H5CHECK" r.h5 --expect-feasible-min 2
"$PY" - r.h5 sized.txt <<'PY' && ok "sizing fields and the fastest/cheapest lines" || bad "sizing"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    best = f["best"][...]
    cand = f["candidates"][...]
feas = best[best["feasible"] == 1]
assert len(feas) == 2, best
for r in feas:
    t = 15e12 / r["tokens_per_s"]
    assert abs(r["time_to_train_s"] - t) <= 1e-12 * t, r
    assert abs(r["gpu_hours"] - r["gpus"] * t / 3600) <= 1e-9 * r["gpu_hours"], r
    assert abs(r["cost"] - 2.5 * r["gpu_hours"]) <= 1e-9 * r["cost"], r
assert np.all(np.isnan(cand["cost"][cand["feasible"] == 0]))
text = open(sys.argv[2]).read()
fast = feas[np.argmin(feas["time_to_train_s"])]
cheap = feas[np.argmin(feas["cost"])]
want_fast = "fastest for 15T tokens: %d GPUs, %.1f days" % (fast["gpus"], fast["time_to_train_s"] / 86400)
want_cheap = "cheapest for 15T tokens: %d GPUs, %.1f days" % (cheap["gpus"], cheap["time_to_train_s"] / 86400)
assert want_fast in text, (want_fast, text)
assert want_cheap in text, (want_cheap, text)
PY
# Without a token count the fields are NaN and the summary is absent (h5check checks NaN).
expect_rc 0 "$PPSEARCH" "${common[@]}" --output plain.h5
expect_rc 0 "$PY" "$H5CHECK" plain.h5
if grep -q "fastest for" out.txt; then bad "summary without --tokens"; else ok "no summary without --tokens"; fi
# Token counts: suffixes and range, named by the option.
expect_rc 0 "$PPSEARCH" "${common[@]}" --set training.tokens=2.5e12 --print-config
"$PY" -c "import sys; v=[l.split('=')[1] for l in open('out.txt') if l.startswith('tokens =')]; sys.exit(float(v[0]) != 2.5e12)" \
  && ok "2.5e12 resolved" || { bad "2.5e12 not resolved"; grep tokens out.txt >&2; }
expect_rc 2 "$PPSEARCH" "${common[@]}" --tokens 15X --output never.h5
grep -q "^ppsearch: error: --tokens: training.tokens = 15X: a number in \[0, 1e18\]" err.txt \
  && ok "bad --tokens named" || { bad "bad --tokens message"; cat err.txt >&2; }
expect_rc 2 "$PPSEARCH" "${common[@]}" --price-per-gpu-hour -1 --output never.h5
[ ! -e never.h5 ] && ok "nothing written on a usage error" || bad "never.h5 written"

# ---- formats --------------------------------------------------------------------------------
expect_rc 0 "$PPSEARCH" "${common[@]}" --tokens 15T --price-per-gpu-hour 2.5 --output r.csv
for f in r.csv r_stages.csv r_best.csv; do
  [ -f "$f" ] && ok "$f written" || bad "$f missing"
done
expect_rc 0 "$PPSEARCH" "${common[@]}" --tokens 15T --price-per-gpu-hour 2.5 --output r.json
"$PY" - r.h5 r.csv r_stages.csv r_best.csv r.json <<'PY' && ok "CSV and JSON rows equal the HDF5 rows" || bad "CSV/JSON differ from HDF5"
import csv, json, math, sys, h5py, numpy as np
h5, ccsv, scsv, bcsv, js = sys.argv[1:]
def h5rows(f, name):
    d = f[name]
    rows = d[...]
    enums = {}
    for field in rows.dtype.names:
        m = h5py.check_enum_dtype(d.dtype.fields[field][0])
        if m is not None:
            enums[field] = {v: k for k, v in m.items()}
    out = []
    for r in rows:
        row = {}
        for field in rows.dtype.names:
            v = r[field]
            if field in enums:
                row[field] = enums[field][int(v)]
            elif np.issubdtype(type(v), np.floating):
                row[field] = None if math.isnan(v) else float(v)
            else:
                row[field] = int(v)
        out.append(row)
    return list(rows.dtype.names), out
def csvrows(path, kinds):
    with open(path, newline="") as fh:
        rd = csv.DictReader(fh)
        names = rd.fieldnames
        out = []
        for r in rd:
            row = {}
            for k in names:
                v = r[k]
                if kinds[k] == "enum":
                    row[k] = v
                elif kinds[k] == "float":
                    row[k] = None if v == "" else float(v)
                else:
                    row[k] = int(v)
            out.append(row)
    return names, out
with h5py.File(h5, "r") as f:
    tables = {n: h5rows(f, n) for n in ("candidates", "stages", "best")}
    attrs = dict(f.attrs)
def kinds(rows):
    k = {}
    for name, v in rows[0].items():
        k[name] = "enum" if isinstance(v, str) else "float" if isinstance(v, float) or v is None else "int"
    # a float field may be None in row 0: find a row where it is set
    for name in k:
        if rows[0][name] is None:
            k[name] = "float"
    return k
for name, path in (("candidates", ccsv), ("stages", scsv), ("best", bcsv)):
    names, rows = tables[name]
    cnames, crows = csvrows(path, kinds(rows))
    assert cnames == names, (name, cnames, names)
    assert len(crows) == len(rows), (name, len(crows), len(rows))
    for i, (a, b) in enumerate(zip(crows, rows)):
        assert a == b, (name, i, a, b)
with open(js) as fh:
    doc = json.load(fh)
for name in ("candidates", "stages", "best"):
    names, rows = tables[name]
    jrows = doc[name]
    assert len(jrows) == len(rows), (name, len(jrows), len(rows))
    assert list(jrows[0].keys()) == names, (name, list(jrows[0].keys()))
    for i, (a, b) in enumerate(zip(jrows, rows)):
        assert a == b, (name, i, a, b)
a = doc["attributes"]
for k in ("candidates_evaluated", "candidates_feasible", "candidates_enumerated", "mpi_ranks"):
    assert a[k] == int(attrs[k]), (k, a[k], attrs[k])
for k in ("rule_counts", "infeasible_counts"):
    v = attrs[k].decode() if isinstance(attrs[k], bytes) else attrs[k]
    assert a[k] == v, (k, a[k], v)
assert "tokens = " in a["resolved_config"]
print("rows compared:", {n: len(tables[n][1]) for n in tables})
PY
# The same rows for another thread count: the text files are identical too.
expect_rc 0 "$PPSEARCH" --gpus 64,128 --tp 1,2,4 --pp 1,2 --threads 1 --tokens 15T \
  --price-per-gpu-hour 2.5 --output t1.csv
cmp -s r.csv t1.csv && cmp -s r_stages.csv t1_stages.csv && cmp -s r_best.csv t1_best.csv \
  && ok "CSV identical for 1 and 2 threads" || bad "CSV differs between thread counts"
# An unknown extension is a usage error naming --output; --format overrides the extension.
expect_rc 2 "$PPSEARCH" "${common[@]}" --output r.txt
grep -q "^ppsearch: error: --output: r.txt: a name ending in .h5 or .hdf5 (HDF5), .csv (CSV) or .json (JSON)" err.txt \
  && ok "unknown extension refused" || { bad "unknown extension message"; cat err.txt >&2; }
[ ! -e r.txt ] && ok "r.txt not written" || bad "r.txt written"
expect_rc 2 "$PPSEARCH" "${common[@]}" --output r.h5 --format xml
grep -q "^ppsearch: error: --format: xml: one of hdf5, csv or json" err.txt && ok "bad --format named" || { bad "--format message"; cat err.txt >&2; }
expect_rc 0 "$PPSEARCH" "${common[@]}" --output r.txt --format json
"$PY" -c "import json,sys; json.load(open('r.txt'))" && ok "--format json into r.txt" || bad "r.txt not JSON"
# Output safety of the companion files: an existing one without --overwrite stops the run at
# once (exit 2), and nothing is written; a symbolic link is never replaced.
echo keep > s_best.csv
expect_rc 2 "$PPSEARCH" "${common[@]}" --output s.csv
[ ! -e s.csv ] && [ ! -e s_stages.csv ] && [ "$(cat s_best.csv)" = keep ] \
  && ok "existing companion refused, nothing written" || bad "companion safety"
ln -s s_best.csv u_stages.csv
expect_rc 2 "$PPSEARCH" "${common[@]}" --output u.csv --overwrite
[ -L u_stages.csv ] && [ ! -e u.csv ] && ok "symbolic-link companion refused" || bad "link companion"
if ls -a | grep -q "ppsearch-tmp"; then bad "temporary folders left"; ls -a >&2; else ok "no temporary folders left"; fi
expect_rc 0 "$PPSEARCH" "${common[@]}" --output r.csv --overwrite
ok "overwrite of a CSV result"

# ---- folded table and progress ----------------------------------------------------------------
# Which rows fold depends on the cost model's figures, so the expected folding is derived from
# the results file itself (every row is there, unfolded) with the rule fold_near_duplicates
# states: a feasible row joins the first earlier leader on the same GPU count within 0.1 % in
# both step time and peak memory. The printed table must show the first 10 leaders, in order,
# and a "+n" with an "also:" line exactly where a leader has followers ranked above the 10th.
# Two searches, so that at least one of them has a fold to print (checked below).
folds_seen=0
for g in 64 128; do
  expect_rc 0 "$PPSEARCH" --gpus "$g" --top 10 --output "fold$g.h5"
  n=$("$PY" - out.txt "fold$g.h5" <<'PY'
import re, sys
import h5py
lines = open(sys.argv[1]).read().splitlines()
head = next(i for i, l in enumerate(lines) if l.startswith("rank"))
rows, also = [], 0
for l in lines[head + 1:]:
    if l.strip().startswith("also:"):
        also += 1
        continue
    if not re.match(r"^\s*\d+\s", l):
        break
    f = l.split()
    rows.append((float(f[13]), f[18] if len(f) > 18 else ""))
assert len(rows) == 10, rows
c = h5py.File(sys.argv[2], "r")["candidates"][()]
feas = sorted((float(r["iteration_time_s"]), float(r["peak_memory_gb"]), int(r["gpus"]))
              for r in c if r["feasible"])
close = lambda a, b: abs(a - b) <= 1e-3 * max(abs(a), abs(b))
leaders, followers = [], []
for t, m, g in feas:
    if len(leaders) == 10:
        break
    for k, (lt, lm, lg) in enumerate(leaders):
        if lg == g and close(lt, t) and close(lm, m):
            followers[k] += 1
            break
    else:
        leaders.append((t, m, g))
        followers.append(0)
assert len(leaders) == 10, leaders
for k, ((t, _), (lt, _, _)) in enumerate(zip(rows, leaders)):
    assert abs(t - lt) <= 5e-4, (k, t, lt)
plus = [s for _, s in rows if s.startswith("+")]
assert also == len(plus), (plus, also)
for k, (_, s) in enumerate(rows):
    assert (followers[k] > 0) == s.startswith("+"), (k, followers[k], s)
    assert followers[k] == 0 or int(s[1:]) >= followers[k], (k, followers[k], s)
print(sum(1 for x in followers if x))
PY
)
  if [ -n "$n" ]; then
    ok "$g GPUs: top 10 are the first 10 distinct strategies, $n folded"
    folds_seen=$((folds_seen + n))
  else
    bad "folding on $g GPUs"
  fi
done
[ "$folds_seen" -gt 0 ] && ok "a folded row was printed" || bad "no search printed a folded row"
PPSEARCH_PROGRESS_INTERVAL_S=0.01 "$PPSEARCH" --gpus 128 --output prog.h5 >/dev/null 2>prog.txt
if grep -qE '^progress: [0-9]+% \([0-9]+/[0-9]+ candidates\), [0-9.]+ s elapsed, ETA [0-9]+ s$' prog.txt \
   && ! grep -q $'\r' prog.txt; then
  ok "plain progress lines when stderr is a file"
else
  bad "progress lines"; cat -A prog.txt | head >&2
fi
"$PPSEARCH" --gpus 128 --output prog2.h5 --quiet 2>prog2.txt >/dev/null
[ ! -s prog2.txt ] && ok "--quiet prints no progress" || bad "--quiet printed progress"
finish
