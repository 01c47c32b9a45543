#!/usr/bin/env bash
# ZB-H2 (docs/algorithms.md §2.1, §2.4; docs/interface.md "Schedule zb-h2"): searched only when
# listed, written with its name (HDF5 enum value 6), never slower than zb-h1 on the same shape but
# with more memory (shapes that only fit with zb-h1 are counted infeasible, reason memory),
# refused with a reason by every launch-config emitter (exit 5 in ppsearch-show).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_SHOW:?path of the ppsearch-show binary}"

expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --output auto.h5 --overwrite
if grep -Eq ' zb-h2 ' out.txt; then bad "auto lists zb-h2"; else ok "auto keeps the four schedules"; fi

expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --zero 0,1 --mbs 1 --recompute none \
  --schedule zb-h1,zb-h2 --output h2.h5 --overwrite
grep -Eq ' zb-h2 ' out.txt && ok "rows printed with the name" || bad "names: $(cat out.txt)"
"$PY" - h2.h5 <<'PYEOF' >py.txt 2>&1 && ok "HDF5 enum name; zb-h2 against zb-h1" || bad "HDF5 check: $(cat py.txt)"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
c = f["candidates"]
names = {v: k for k, v in h5py.check_enum_dtype(c.dtype["schedule"]).items()}
assert names[6] == "zb-h2", names
rows = c[:]
knobs = [k for k in ("gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches", "recompute",
                      "sequence_parallel", "zero_stage", "ep", "etp", "placement",
                      "recompute_num_layers") if k in c.dtype.names]
key = lambda r: tuple(int(r[k]) for k in knobs)
by = {}
for r in rows:
    if int(r["pp"]) == 4:
        by.setdefault(key(r), {})[names[int(r["schedule"])]] = r
pairs = [v for v in by.values() if "zb-h1" in v and "zb-h2" in v]
assert pairs, "no zb-h1 / zb-h2 pair on the same shape"
for v in pairs:
    h1, h2 = v["zb-h1"], v["zb-h2"]
    if h1["feasible"] and h2["feasible"]:
        # Same stages: the ZB-H2 period is never longer; its peak memory is higher (2P-1 in flight).
        assert h2["iteration_time_s"] <= h1["iteration_time_s"] * (1 + 1e-9), (h1, h2)
        assert h2["peak_memory_gb"] > h1["peak_memory_gb"], (h1, h2)
PYEOF

# Memory: on a large model some shapes fit with zb-h1 but not with zb-h2 (2·PP−1 micro-batches in
# flight on the first stage); those rows are counted infeasible with the reason "memory".
expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-70b --pp 8 --zero 1 --recompute none \
  --schedule zb-h1,zb-h2 --output mem.h5 --overwrite --quiet
"$PY" - mem.h5 <<'PYEOF' >py.txt 2>&1 && ok "zb-h2 rows that do not fit: reason memory" || bad "memory check: $(cat py.txt)"
import sys, h5py
c = h5py.File(sys.argv[1], "r")["candidates"]
sn = {v: k for k, v in h5py.check_enum_dtype(c.dtype["schedule"]).items()}
rn = {v: k for k, v in h5py.check_enum_dtype(c.dtype["infeasible_reason"]).items()}
knobs = [k for k in ("gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches", "recompute",
                      "sequence_parallel", "zero_stage", "ep", "etp", "placement",
                      "recompute_num_layers") if k in c.dtype.names]
by = {}
for r in c[:]:
    by.setdefault(tuple(int(r[k]) for k in knobs), {})[sn[int(r["schedule"])]] = r
only_h1 = [v for v in by.values() if "zb-h1" in v and "zb-h2" in v and v["zb-h1"]["feasible"]
           and not v["zb-h2"]["feasible"]]
assert only_h1, "no shape where zb-h1 fits and zb-h2 does not"
assert all(rn[int(v["zb-h2"]["infeasible_reason"])] == "memory" for v in only_h1)
assert not any(v["zb-h2"]["feasible"] and not v["zb-h1"]["feasible"] for v in by.values()
               if "zb-h1" in v and "zb-h2" in v)
PYEOF

expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --zero 0,1 --schedule zb-h2 \
  --output only.h5 --overwrite --quiet
for f in megatron nemo; do
  expect_rc 5 "$PPSEARCH_SHOW" only.h5 --row 0 --emit $f
  grep -q "NOT RUNNABLE: Megatron-LM has no zb-h2 pipeline schedule" out.txt &&
    ok "$f refuses zb-h2" || bad "$f on zb-h2: $(cat out.txt)"
done
expect_rc 5 "$PPSEARCH_SHOW" only.h5 --row 0 --emit torchtitan
grep -q "NOT RUNNABLE: torch.distributed.pipelining has no zb-h2 schedule" out.txt &&
  ok "torchtitan refuses zb-h2" || bad "torchtitan on zb-h2: $(cat out.txt)"
finish
