#!/usr/bin/env bash
# Launch configurations (docs/launch.md): --emit and ppsearch-show print only flag names of the
# pinned framework versions, and the printed flags, parsed back, select the same row (same step
# time and memory). ZeRO-2/3 rows are refused for Megatron-LM and NeMo with a reason.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_SHOW:?path of the ppsearch-show binary}"
export PPSEARCH PPSEARCH_SHOW SOURCE_DIR
RT="$SOURCE_DIR/tests/e2e/_emit_roundtrip.py"

# A ZeRO-3 (FSDP) search: torchtitan runs its rows, Megatron-LM and NeMo refuse them.
expect_rc 0 "$PPSEARCH" --gpus 128 --zero 3 --output default.h5 --overwrite --quiet
expect_rc 0 "$PY" "$RT" default.h5 torchtitan 10
grep -qx "torchtitan: rows 10 launchable 10 refused 0" out.txt && ok "torchtitan runs the top 10" ||
  { bad "torchtitan top 10: $(cat out.txt)"; }
for f in megatron nemo; do
  expect_rc 0 "$PY" "$RT" default.h5 $f 10
  grep -qx "$f: rows 10 launchable 0 refused 10" out.txt && ok "$f refuses the ZeRO-3 top 10" ||
    bad "$f on ZeRO-3 rows: $(cat out.txt)"
done
expect_rc 5 "$PPSEARCH_SHOW" default.h5 --row 0 --emit megatron
grep -q "NOT RUNNABLE: ZeRO stage 3 has no Megatron-LM flag" out.txt && grep -q "torchtitan" out.txt &&
  ok "the refusal names the reason and torchtitan" || bad "refusal text: $(cat out.txt)"
if grep -v '^#' out.txt | grep -q .; then bad "a refused row printed flags"; else ok "no flags for a refused row"; fi

# Rows Megatron-LM can run: ZeRO 0/1 (interleaved, uneven layouts), full recompute, 1F1B, no SP
# (zero-bubble schedules, which Megatron-LM does not run, left out).
expect_rc 0 "$PPSEARCH" --gpus 128 --zero 0,1 --schedule 1f1b,interleaved-1f1b --output z01.h5 \
  --overwrite --quiet
expect_rc 0 "$PPSEARCH" --gpus 64 --zero 0 --recompute full --pp 4 --schedule 1f1b --sp off \
  --output full.h5 --overwrite --quiet
# Partial recompute: Megatron's block method, N layers a stage.
expect_rc 0 "$PPSEARCH" --gpus 64 --zero 0 --recompute full --recompute-num-layers 2,4 --pp 4 \
  --schedule 1f1b --output block.h5 --overwrite --quiet
for file in z01.h5 full.h5 block.h5; do
  for f in megatron nemo; do
    expect_rc 0 "$PY" "$RT" $file $f 10
    grep -qx "$f: rows 10 launchable 10 refused 0" out.txt && ok "$f round trip, $file" ||
      bad "$f on $file: $(cat out.txt)"
    # Rows without an approximation, run again from Megatron-LM's defaults with only the printed
    # overlap / reduction / cross-entropy settings: the same step time and memory.
    n=$(sed -n 's/^settings-checked //p' out.txt)
    [ "${n:-0}" -ge 1 ] && ok "$f: the printed stack settings reproduce $n rows of $file" ||
      bad "$f on $file: no row checked from the framework's defaults: $(cat out.txt)"
  done
done
expect_rc 0 "$PY" "$RT" full.h5 torchtitan 10  # ZeRO-0 = DDP, 1F1B: exact in torchtitan
grep -qx "torchtitan: rows 10 launchable 10 refused 0" out.txt && ok "torchtitan round trip, full.h5" ||
  bad "torchtitan on full.h5: $(cat out.txt)"

# --emit prints the same text as ppsearch-show for row 0; alone with --quiet.
expect_rc 0 "$PPSEARCH" --gpus 128 --zero 0,1 --schedule 1f1b,interleaved-1f1b --output z01b.h5 \
  --overwrite --quiet --emit nemo
cp out.txt emit_quiet.txt
expect_rc 0 "$PPSEARCH_SHOW" z01b.h5 --emit nemo
if diff <(grep -v '^# z01b.h5 row\|^# predicted' out.txt) emit_quiet.txt >/dev/null; then
  ok "--emit --quiet = ppsearch-show row 0"
else bad "--emit differs from ppsearch-show"; diff <(cat out.txt) emit_quiet.txt >&2 || true; fi

# Bad input: exit 2 with the file named; never a half answer.
expect_rc 2 "$PPSEARCH" --gpus 128 --emit slurm --output x.h5
expect_stderr "ppsearch: error: --emit: slurm: one of megatron, nemo, torchtitan"
expect_rc 2 "$PPSEARCH_SHOW" default.h5 --row 999999
grep -q "default.h5: row 999999 does not exist (/candidates has" err.txt && ok "bad row named" || bad "bad row message: $(cat err.txt)"
expect_rc 2 "$PPSEARCH_SHOW" default.h5 --row -1
expect_rc 2 "$PPSEARCH_SHOW" default.h5 --emit slurm
printf 'not hdf5\n' > plain.txt
expect_rc 2 "$PPSEARCH_SHOW" plain.txt
expect_stderr "ppsearch-show: plain.txt: not an HDF5 file (expected a ppsearch result file)"
rm -f fifo && mkfifo fifo
expect_rc 2 "$PPSEARCH_SHOW" fifo
expect_stderr "ppsearch-show: fifo: not a regular file"
expect_rc 2 "$PPSEARCH_SHOW" missing.h5
expect_rc 2 "$PPSEARCH_SHOW"
"$PY" -c 'import h5py; h5py.File("other.h5", "w")["x"] = [1]'
expect_rc 2 "$PPSEARCH_SHOW" other.h5
grep -q "not a ppsearch result file" err.txt && ok "foreign HDF5 file named" || bad "foreign file: $(cat err.txt)"
finish
