#!/usr/bin/env bash
# Re-evaluated rows (docs/uncertainty.md): step-time bounds of the top rows (/candidates
# iteration_time_lo_s/_hi_s, /uncertainty, /robust) and the cross-topology regret matrix
# (--regret-clusters, /regret), read back with h5py and h5dump; the same tables for 1 and 2 MPI
# ranks; a bad cluster name is a usage error that writes nothing.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf ./*.h5 ./*.json ./*.csv results
clusters=h200-16gpu-ib,h100-8gpu-ndr,b200-8gpu-xdr

# ---- the default run states its recommendation with its uncertainty ----------------------
expect_rc 0 "$PPSEARCH" --gpus 128 --threads 2 --output default.h5
grep -q "^  recommendation (rank 1): .* s/step, .* to .* s" out.txt && ok "recommendation with bounds" || bad "no recommendation bounds"
grep -q "robust winner (smallest worst case) on 128 GPUs" out.txt && ok "robust winner printed" || bad "no robust winner"
grep -q "the top [23] differ by less than the model's uncertainty\|stays ahead of rank 2" out.txt && ok "top-3 statement" || bad "no top-3 statement"
"$PY" - default.h5 <<'PY' && ok "bounds in /candidates, /best, /uncertainty, /robust" || bad "bounds"
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    c = f["candidates"][...]
    n_top = 10
    feas = c[c["feasible"] == 1]
    assert len(feas) > n_top
    for r in feas[:n_top]:
        t, lo, hi = r["iteration_time_s"], r["iteration_time_lo_s"], r["iteration_time_hi_s"]
        assert lo <= t <= hi and lo < hi, (t, lo, hi)
        assert 0.5 * t < lo and hi < 2 * t, (t, lo, hi)
    assert all(math.isnan(x) for x in feas[n_top:]["iteration_time_lo_s"])
    assert all(math.isnan(x) for x in c[c["feasible"] == 0]["iteration_time_hi_s"])
    b = f["best"][0]
    assert b["iteration_time_lo_s"] == feas[0]["iteration_time_lo_s"]
    assert b["iteration_time_hi_s"] == feas[0]["iteration_time_hi_s"]
    u = f["uncertainty"][...]
    per_row = len(u) // n_top
    assert len(u) == n_top * per_row and per_row >= 2 and per_row % 2 == 0, len(u)
    assert set(u["candidate"]) == set(range(n_top))
    assert {x.decode() if isinstance(x, bytes) else x for x in u["end"]} == {"low", "high"}
    for cand in range(n_top):
        times = u[u["candidate"] == cand]["iteration_time_s"]
        r = c[cand]
        # NaN: the row is infeasible under that variation (combine_bounds skips it)
        assert all(math.isnan(t) or r["iteration_time_lo_s"] - 1e-9 <= t <= r["iteration_time_hi_s"] + 1e-9 for t in times)
    # ranks: a permutation of 1..n_top under each variation
    for k in range(per_row):
        sel = u[k::per_row]
        assert sorted(sel["rank"]) == list(range(1, n_top + 1)), sel["rank"]
    rb = f["robust"][...]
    assert len(rb) == 1 and rb[0]["gpus"] == 128 and rb[0]["rows_compared"] == n_top
    k = rb[0]["candidate"]
    assert 0 <= k < n_top and rb[0]["best_candidate"] == 0
    his = feas[:n_top]["iteration_time_hi_s"]
    assert rb[0]["iteration_time_hi_s"] == his.min() == c[k]["iteration_time_hi_s"]
    assert len(f["regret"]) == 0
PY
expect_rc 0 "$PY" "$H5CHECK" default.h5 --expect-feasible-min 1

# ---- --uncertainty-top 0 switches it off ---------------------------------------------------
expect_rc 0 "$PPSEARCH" --gpus 128 --threads 2 --output off.h5 --uncertainty-top 0
grep -q "recommendation (rank 1)" out.txt && bad "bounds printed with --uncertainty-top 0" || ok "nothing printed when off"
"$PY" - off.h5 default.h5 <<'PY' && ok "off: NaN bounds, empty tables, the same ranking" || bad "off"
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "r") as g:
    assert all(math.isnan(x) for x in f["candidates"]["iteration_time_lo_s"])
    assert len(f["uncertainty"]) == 0 and len(f["robust"]) == 0
    assert f["candidates"]["iteration_time_s"].tobytes() == g["candidates"]["iteration_time_s"].tobytes()
    a, b = f["candidates"][...], g["candidates"][...]
    for name in ("tp", "pp", "cp", "dp", "mbs", "zero_stage"):
        assert (a[name] == b[name]).all(), name
PY

# ---- the regret matrix, the same for 1 and 2 ranks ----------------------------------------
for np in 1 2; do
  expect_rc 0 "$MPIEXEC" -n $np --bind-to none "$PPSEARCH" --gpus 128 --threads 1 \
    --regret-clusters $clusters --output regret_np$np.h5
  cp out.txt regret_np$np.txt
done
grep -q "^cross-topology regret on 128 GPUs" regret_np1.txt && ok "matrix printed" || bad "no matrix"
grep -q "^robust: " regret_np1.txt && ok "robust configuration printed" || bad "no robust line"
h5dump -d /regret regret_np1.h5 | grep -v '^HDF5 "' > regret1.txt
h5dump -d /regret regret_np2.h5 | grep -v '^HDF5 "' > regret2.txt
grep -q '"tuned_on"' regret1.txt && ok "h5dump reads /regret" || bad "h5dump /regret"
cmp -s regret1.txt regret2.txt && ok "/regret identical for 1 and 2 ranks" || bad "/regret differs between 1 and 2 ranks"
"$PY" - regret_np1.h5 regret_np2.h5 <<'PY' && ok "/regret contents" || bad "/regret contents"
import math, sys, h5py
s = lambda x: x.decode() if isinstance(x, bytes) else x
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "r") as g:
    for d in ("candidates", "best", "stages"):  # fixed-size rows: byte for byte
        assert f[d][...].tobytes() == g[d][...].tobytes(), d
    for d in ("regret", "uncertainty", "robust"):  # text columns: value for value
        assert repr(f[d][...].tolist()) == repr(g[d][...].tolist()), d
    r = f["regret"][...]
    names = ["h200-16gpu-ib", "h100-8gpu-ndr", "b200-8gpu-xdr"]
    assert len(r) == 9, len(r)
    assert [s(x) for x in r["tuned_on"]] == [n for n in names for _ in names]
    assert [s(x) for x in r["run_on"]] == names * 3
    best = {}
    for x in r:
        if s(x["tuned_on"]) == s(x["run_on"]):
            assert x["feasible"] == 1 and x["regret_pct"] == 0.0 and x["in_search_space"] == 1
            assert x["iteration_time_s"] == x["best_time_s"]
            best[s(x["run_on"])] = x["iteration_time_s"]
    for x in r:
        assert x["best_time_s"] == best[s(x["run_on"])]
        if x["feasible"]:
            want = 100 * (x["iteration_time_s"] - x["best_time_s"]) / x["best_time_s"]
            assert abs(x["regret_pct"] - want) < 1e-9
            if x["in_search_space"]:
                assert x["regret_pct"] >= 0, x
        else:
            assert math.isnan(x["iteration_time_s"]) and s(x["infeasible_reason"]) != "none"
    # one robust tuned_on, with the smallest worst regret
    rob = {s(x["tuned_on"]) for x in r if x["robust"]}
    assert len(rob) == 1, rob
    worst = {s(x["tuned_on"]): x["worst_regret_pct"] for x in r}
    assert worst[rob.pop()] == min(worst.values())
PY
diff <(grep -v "^evaluated \|^results: " regret_np1.txt) <(grep -v "^evaluated \|^results: " regret_np2.txt) >/dev/null \
  && ok "stdout identical for 1 and 2 ranks" || bad "stdout differs between 1 and 2 ranks"

# ---- the text formats ------------------------------------------------------------------------
expect_rc 0 "$PPSEARCH" --gpus 128 --threads 2 --regret-clusters $clusters --output r.json --quiet
"$PY" - r.json <<'PY' && ok "JSON: regret, uncertainty, robust" || bad "JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["regret"]) == 9 and d["regret"][0]["tuned_on"] == "h200-16gpu-ib"
assert len(d["uncertainty"]) > 0 and len(d["robust"]) == 1
assert d["candidates"][0]["iteration_time_lo_s"] <= d["candidates"][0]["iteration_time_s"]
PY
expect_rc 0 "$PPSEARCH" --gpus 128 --threads 2 --regret-clusters $clusters --output r.csv --quiet
[ -f r_regret.csv ] && [ "$(wc -l < r_regret.csv)" = 10 ] && ok "CSV: r_regret.csv, 9 rows" || bad "CSV regret"
head -1 r.csv | grep -q "iteration_time_lo_s,iteration_time_hi_s" && ok "CSV bound columns" || bad "CSV bound columns"

# ---- bad input: exit 2, the option and the value named, nothing written ------------------
for bad_list in "h200-16gpu-ib,no-such-cluster" "h200-16gpu-ib" "h200-16gpu-ib,h200-16gpu-ib" "h200-16gpu-ib,$PWD/missing.ini"; do
  expect_rc 2 "$PPSEARCH" --gpus 128 --regret-clusters "$bad_list" --output bad.h5
  grep -q "^ppsearch: error: --regret-clusters" err.txt && ok "message names the option ($bad_list)" || { bad "message: $bad_list"; cat err.txt; }
  [ ! -e bad.h5 ] && ok "nothing written ($bad_list)" || bad "bad.h5 written"
done
grep -q "no-such-cluster" <("$PPSEARCH" --gpus 128 --regret-clusters h200-16gpu-ib,no-such-cluster 2>&1) && ok "value named" || bad "value not named"
expect_rc 2 "$PPSEARCH" --gpus 128 --uncertainty-top -1 --output bad.h5
expect_stderr "ppsearch: error: --uncertainty-top: -1: an integer in [0, 1000]"
[ -z "$(ls -A | grep -i tmp || true)" ] && ok "no temporary file left" || bad "temporary file left"
finish
