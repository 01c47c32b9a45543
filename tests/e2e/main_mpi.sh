#!/usr/bin/env bash
# ppsearch --gpus 128 under mpirun -np 2: ranked table on stdout, the HDF5 file read back with
# h5py (every contract field), h5dump, and the seed's configuration (TP=4, PP=8, DP=4) present.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf results
expect_rc 0 "$MPIEXEC" -n 2 --bind-to none "$PPSEARCH" --gpus 128 --threads 1
grep -q "^rank  gpus" out.txt && ok "table header on stdout" || bad "no table on stdout"
# The best row as Megatron-LM arguments, or (ZeRO-2/3) the reason Megatron-LM cannot run it.
grep -q -- "--tensor-model-parallel-size\|# NOT RUNNABLE: ZeRO stage" out.txt && ok "best configuration as Megatron flags" || bad "no Megatron flags"
f=results/llama3-70b_h200-16gpu-ib_128.h5
[ -f "$f" ] && ok "default output path $f" || bad "no $f"
[ -z "$(ls results | grep tmp || true)" ] && ok "no temporary file left" || bad "temporary file left"
expect_rc 0 "$PY" "$H5CHECK" "$f" --expect-feasible-min 1
expect_rc 0 "$PY" "$H5CHECK" "$f" --find tp=4,pp=8,dp=4,cp=1,schedule=1f1b
cat out.txt
h5dump -A "$f" > attrs.txt && grep -q 'ATTRIBUTE "mpi_ranks"' attrs.txt && ok "h5dump reads the attributes" || bad "h5dump"
"$PY" - "$f" <<'PY' && ok "attributes" || bad "attributes"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f.attrs
    assert a["mpi_ranks"] == 2, a["mpi_ranks"]
    assert a["threads_per_rank"] == 1
    assert a["candidates_evaluated"] == len(f["candidates"])
    assert a["candidates_feasible"] == int(f["candidates"]["feasible"].sum())
    assert "[model]" in a["resolved_config"] and "llama3-70b" in a["resolved_config"]
    assert a["command_line"].startswith("ppsearch --gpus 128")
    assert len(f["best"]) == 1 and f["best"][0]["gpus"] == 128
PY
# More rows than one block (65536 rows go to the writer at a time, 32768 per rank message):
# -np 3 gives the same bytes as one rank, and the file is consistent.
for np in 1 3; do
  expect_rc 0 "$MPIEXEC" -n $np --bind-to none "$PPSEARCH" --gpus 64,96,128,192,256,384 \
    --threads 1 --quiet --overwrite --output big_np$np.h5
done
expect_rc 0 "$PY" "$H5CHECK" big_np3.h5 --expect-feasible-min 1
"$PY" - big_np1.h5 big_np3.h5 <<'PY' && ok "several blocks: np 3 = np 1, byte for byte" || bad "several blocks differ"
import sys, h5py
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert len(a["candidates"]) > 65536, len(a["candidates"])
for d in ("candidates", "stages", "best"):
    assert a[d][()].tobytes() == b[d][()].tobytes(), d
# Stage rows point at feasible rows, in order, across the block boundaries.
c, s = a["candidates"][()], a["stages"][()]
idx = s["candidate"]
assert (idx[1:] >= idx[:-1]).all() and c["feasible"][idx].all()
assert set(idx) == set(i for i in range(len(c)) if c["feasible"][i])
PY
finish
