#!/usr/bin/env bash
# --explain, --gantt and --trace FILE.json (docs/explain.md): the report in the exact-
# configuration mode, a valid Chrome trace whose ops match the schedule and whose makespan is
# the evaluated pipeline time, and the result file's output safety for the trace file.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
base=(--gpus 32 --tp 4 --pp 4 --cp 1 --vpp 1 --mbs 1 --recompute selective --sp on --zero 1
      --set training.global_batch_size=16)
exact=("${base[@]}" --schedule 1f1b)
rm -f one.h5 zb.h5 s.h5 a.h5 b.h5 trace.json zb.json old.json fifo.json link.json  # earlier runs

# Exact mode: the report comes by itself (one candidate), the Gantt too (P = 4, M = 8).
expect_rc 0 "$PPSEARCH" "${exact[@]}" --output one.h5 --trace trace.json
for want in "Explain: tp=4 pp=4 cp=1 dp=2" "Per pipeline rank" "Communication per step" \
            "Bubble:" "Binding constraint:" "bottleneck stage: pipeline rank" "rank  3 |" \
            "trace: trace.json"; do
  if grep -qF -- "$want" out.txt; then ok "report has: $want"; else bad "report lacks: $want"; fi
done
[ "$(grep -c '^  rank  [0-9] |' out.txt)" = 4 ] && ok "one Gantt line per rank" || bad "Gantt lines"

"$PY" - trace.json one.h5 1f1b <<'PY' && ok "trace: valid JSON, one event per op, ordered, ends at pipeline_s" || bad "trace check"
import json, sys, h5py
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
with h5py.File(sys.argv[2], "r") as f:
    row = f["candidates"][0]
    P, M, pipeline_s, step_s = int(row["pp"]), int(row["num_microbatches"]), float(row["pipeline_s"]), float(row["iteration_time_s"])
ops = [e for e in ev if e["ph"] == "X" and e["cat"] in ("F", "B", "W", "BW")]
kinds = {"1f1b": 2, "zb-h1": 3}[sys.argv[3]]
assert len(ops) == kinds * P * M, (len(ops), P, M)
assert {e["tid"] for e in ops} == set(range(P))
for tid in range(P):
    mine = sorted((e for e in ops if e["tid"] == tid), key=lambda e: e["ts"])
    assert len(mine) == kinds * M
    for a, b in zip(mine, mine[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (a, b)  # µs; no overlap on a track
    first = {}
    for e in mine:
        mb = e["args"]["microbatch"]
        if e["cat"] == "F":
            first[mb] = e["ts"]
        else:
            assert mb in first and first[mb] < e["ts"], e  # F before B / W per micro-batch
    assert sorted(first) == list(range(M))
end_ops = max(e["ts"] + e["dur"] for e in ev if e["ph"] == "X" and e["cat"] != "tail") / 1e6
assert abs(end_ops - pipeline_s) <= 1e-9 * pipeline_s + 1e-9, (end_ops, pipeline_s)
end_all = max(e["ts"] + e["dur"] for e in ev if e["ph"] == "X") / 1e6
assert abs(end_all - step_s) <= 1e-9 * step_s + 1e-9, (end_all, step_s)
assert any(e["ph"] == "s" for e in ev) and any(e["ph"] == "f" for e in ev)  # p2p arrows
print(len(ops), "op events of", len(ev))
PY

# Split backward: W events too.
expect_rc 0 "$PPSEARCH" "${base[@]}" --schedule zb-h1 --output zb.h5 --trace zb.json --quiet
[ ! -s out.txt ] && ok "--quiet prints nothing" || bad "--quiet printed"
"$PY" - zb.json zb.h5 zb-h1 <<'PY' && ok "zb-h1 trace has F, B and W per micro-batch" || bad "zb-h1 trace"
import json, sys, h5py
ev = json.load(open(sys.argv[1]))["traceEvents"]
with h5py.File(sys.argv[2], "r") as f:
    row = f["candidates"][0]
    P, M = int(row["pp"]), int(row["num_microbatches"])
for k in ("F", "B", "W"):
    assert sum(1 for e in ev if e.get("cat") == k and e["ph"] == "X") == P * M, k
PY

# A search: --explain explains the best row; without it (and without one candidate) nothing.
expect_rc 0 "$PPSEARCH" --gpus 32 --tp 4 --pp 4 --cp 1 --vpp 1 --schedule 1f1b --sp on --zero 1 \
  --set training.global_batch_size=16 --output s.h5
grep -qF "Explain:" out.txt && bad "explained without --explain" || ok "no report by default"
expect_rc 0 "$PPSEARCH" --gpus 32 --tp 4 --pp 4 --cp 1 --vpp 1 --schedule 1f1b --sp on --zero 1 \
  --set training.global_batch_size=16 --output s.h5 --overwrite --explain
grep -qF "Explain:" out.txt && ok "--explain explains the best row" || bad "--explain"

# Output safety: an existing file needs --overwrite; a FIFO or a symbolic link is never written,
# and nothing (no temporary folder, no result file) is left behind.
echo keep > old.json
expect_rc 2 "$PPSEARCH" "${exact[@]}" --output a.h5 --trace old.json
[ "$(cat old.json)" = keep ] && [ ! -e a.h5 ] && ok "existing trace kept, no result" || bad "existing trace"
expect_rc 0 "$PPSEARCH" "${exact[@]}" --output a.h5 --trace old.json --overwrite --quiet
"$PY" -c 'import json,sys; json.load(open("old.json"))' && ok "--overwrite replaces it" || bad "overwrite"
mkfifo fifo.json
ln -s old.json link.json
for t in fifo.json link.json; do
  expect_rc 2 "$PPSEARCH" "${exact[@]}" --output b.h5 --overwrite --trace "$t"
  grep -qF -- "--trace: trace = $t:" err.txt && ok "$t refused by name" || bad "$t message"
done
[ -p fifo.json ] && [ -L link.json ] && ok "FIFO and link left as they were" || bad "targets changed"
ls -a | grep -q 'ppsearch-tmp' && bad "temporary folder left" || ok "no temporary folder left"

# Deferred output-layer wgrad (docs/step-time.md): the report's tail names it, and the trace has
# one such event on the last rank, after its last op, with the step still ending at step_s.
rm -f dw.h5 dw.json
expect_rc 0 "$PPSEARCH" "${exact[@]}" --set training.defer_embedding_wgrad=true \
  --set training.wgrad_deferral_limit=4 --output dw.h5 --trace dw.json
grep -q "deferred output-layer wgrad .* on rank 3 after its last backward" out.txt &&
  ok "report names the deferred wgrad" || bad "report lacks the deferred wgrad"
"$PY" - dw.json dw.h5 <<'PY' && ok "trace: deferred wgrad after rank 3's last op, step ends at step_s" || bad "deferred wgrad trace"
import json, sys, h5py
ev = json.load(open(sys.argv[1]))["traceEvents"]
with h5py.File(sys.argv[2], "r") as f:
    step_s = float(f["candidates"][0]["iteration_time_s"])
dw = [e for e in ev if e.get("name") == "deferred output-layer wgrad"]
assert len(dw) == 1 and dw[0]["tid"] == 3 and dw[0]["dur"] > 0, dw
last_op = max(e["ts"] + e["dur"] for e in ev
              if e["ph"] == "X" and e["tid"] == 3 and e["cat"] in ("F", "B", "W", "BW", "p2p"))
assert abs(dw[0]["ts"] - last_op) <= 1e-3, (dw[0]["ts"], last_op)
end_all = max(e["ts"] + e["dur"] for e in ev if e["ph"] == "X") / 1e6
assert abs(end_all - step_s) <= 1e-9 * step_s + 1e-9, (end_all, step_s)
PY
finish
