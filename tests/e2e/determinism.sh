#!/usr/bin/env bash
# /candidates, /stages and /best are byte-identical, and so is the printed table, for mpirun
# -np 1, 2, 3, 4 x 1 and 2 OpenMP threads: each rank sorts its own rows and rank 0 merges them
# block by block, which must give the one total order whatever the split.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
ref=""
ref_table=""
for np in 1 2 3 4; do
  for th in 1 2; do
    out=np${np}_t${th}.h5
    expect_rc 0 env OMP_NUM_THREADS=$th "$MPIEXEC" -n $np --bind-to none \
      "$PPSEARCH" --gpus 64,128 --threads $th --top 25 --overwrite --output "$out"
    # The table without the lines that name the run (time, ranks, threads, file).
    grep -vE "^evaluated |^results: " out.txt > table_np${np}_t${th}.txt
    h=$("$PY" - "$out" <<'PY'
import hashlib, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(hashlib.sha256(f[d][()].tobytes()).hexdigest()[:16]
                   for d in ("candidates", "stages", "best")))
PY
)
    echo "np=$np threads=$th candidates/stages/best sha256: $h"
    if [ -z "$ref" ]; then
      ref=$h
      ref_table=table_np${np}_t${th}.txt
      grep -q "^rank  gpus" "$ref_table" && ok "table printed" || bad "no table"
    else
      [ "$h" = "$ref" ] && ok "np $np x $th threads: identical datasets" || bad "np $np x $th: datasets differ"
      cmp -s "$ref_table" table_np${np}_t${th}.txt && ok "np $np x $th threads: identical table" ||
        { bad "np $np x $th: table differs"; diff "$ref_table" table_np${np}_t${th}.txt | head -20; }
    fi
  done
done
finish
