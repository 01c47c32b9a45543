#!/usr/bin/env bash
# Fixing every knob evaluates exactly that configuration (docs/interface.md §1).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
expect_rc 0 "$PPSEARCH" --gpus 128 --tp 8 --pp 8 --vpp 2 --mbs 1 --schedule interleaved-1f1b \
  --recompute selective --sp on --zero 1 --cp 1 --output one.h5 --overwrite
expect_rc 0 "$PY" "$H5CHECK" one.h5 --expect-rows 1 --expect-feasible-min 1
"$PY" - one.h5 <<'PY' && ok "the row is the requested configuration" || bad "row differs"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["candidates"][0]
    assert (r["tp"], r["pp"], r["vpp"], r["mbs"], r["cp"], r["dp"]) == (8, 8, 2, 1, 1, 2), r
    assert r["sequence_parallel"] == 1 and r["zero_stage"] == 1
    st = f["stages"][...]
    assert len(st) == 16 and list(st["pipeline_rank"]) == [i % 8 for i in range(16)]
PY
finish
