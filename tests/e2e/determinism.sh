#!/usr/bin/env bash
# /candidates is byte-identical for mpirun -np 1, 2, 4 x 1 and 2 OpenMP threads.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
ref=""
for np in 1 2 4; do
  for th in 1 2; do
    out=np${np}_t${th}.h5
    expect_rc 0 env OMP_NUM_THREADS=$th "$MPIEXEC" -n $np --bind-to none "$PPSEARCH" --gpus 64,128 \
      --threads $th --quiet --overwrite --output "$out"
    h=$("$PY" "$H5CHECK" "$out" --dump-candidates-hash)
    echo "np=$np threads=$th candidates sha256=$h"
    if [ -z "$ref" ]; then ref=$h; elif [ "$h" = "$ref" ]; then ok "np $np x $th threads identical"; else bad "np $np x $th differs"; fi
  done
done
finish
