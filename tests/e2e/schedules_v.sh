#!/usr/bin/env bash
# ZB-V and DualPipe (docs/algorithms.md §2.1, §2.4; docs/interface.md "Schedules zb-v and
# dualpipe"): searched only when listed, written with their names, refused with a reason by the
# launch-config emitters that cannot run them (exit 5 in ppsearch-show), ZB-V mapped to
# torchtitan's ZBVZeroBubble.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_SHOW:?path of the ppsearch-show binary}"

# Not in auto: the default search has no such rows.
expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --output auto.h5 --overwrite
if grep -Eq ' (zb-v|dualpipe) ' out.txt; then bad "auto lists zb-v or dualpipe"; else ok "auto keeps the four schedules"; fi

expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --zero 0,1 --schedule zb-v,dualpipe \
  --output v.h5 --overwrite
grep -Eq ' (zb-v|dualpipe) ' out.txt && ok "rows printed with the names" || bad "names: $(cat out.txt)"
"$PY" - v.h5 <<'PYEOF' >py.txt 2>&1 && ok "HDF5 enum names and vpp" || bad "HDF5 check: $(cat py.txt)"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
c = f["candidates"]
names = {v: k for k, v in h5py.check_enum_dtype(c.dtype["schedule"]).items()}
assert names[4] == "zb-v" and names[5] == "dualpipe", names
rows = c[:]
seen = set()
for r in rows:
    s = names[int(r["schedule"])]
    seen.add(s)
    if s == "zb-v":
        assert r["vpp"] == 2, r["vpp"]  # two chunks per rank, always
    if s == "dualpipe":
        assert r["vpp"] == 1 and r["pp"] % 2 == 0, (r["vpp"], r["pp"])
assert seen == {"zb-v", "dualpipe"}, seen
PYEOF

# DualPipe: no framework among megatron, nemo, torchtitan runs it.
expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --zero 0,1 --schedule dualpipe \
  --output dual.h5 --overwrite --quiet
for f in megatron nemo; do
  expect_rc 5 "$PPSEARCH_SHOW" dual.h5 --row 0 --emit $f
  grep -q "NOT RUNNABLE: Megatron-LM has no dualpipe pipeline schedule" out.txt &&
    ok "$f refuses dualpipe" || bad "$f on dualpipe: $(cat out.txt)"
done
expect_rc 5 "$PPSEARCH_SHOW" dual.h5 --row 0 --emit torchtitan
grep -q "NOT RUNNABLE: torch.distributed.pipelining has no bidirectional DualPipe" out.txt &&
  ok "torchtitan refuses dualpipe" || bad "torchtitan on dualpipe: $(cat out.txt)"
if grep -v '^#' out.txt | grep -q .; then bad "a refused row printed flags"; else ok "no flags"; fi

# ZB-V: torchtitan runs it as ZBVZeroBubble; Megatron-LM has none.
expect_rc 0 "$PPSEARCH" --gpus 64 --model llama3-8b --pp 4 --zero 0 --schedule zb-v \
  --output zbv.h5 --overwrite --quiet
expect_rc 0 "$PPSEARCH_SHOW" zbv.h5 --row 0 --emit torchtitan
grep -q -- "--parallelism.pipeline_parallel_schedule ZBVZeroBubble" out.txt &&
  ok "torchtitan ZBVZeroBubble" || bad "torchtitan on zb-v: $(cat out.txt)"
expect_rc 5 "$PPSEARCH_SHOW" zbv.h5 --row 0 --emit megatron
grep -q "NOT RUNNABLE: Megatron-LM has no zb-v pipeline schedule" out.txt &&
  ok "megatron refuses zb-v" || bad "megatron on zb-v: $(cat out.txt)"

# The rules name themselves: DualPipe with an odd PP or too few micro-batches.
expect_rc 0 "$PPSEARCH" --gpus 48 --model llama3-8b --pp 3,4 --schedule dualpipe,1f1b \
  --global-batch 6 --output rules.h5 --overwrite
grep -q "dualpipe_even_pp:" out.txt && ok "dualpipe_even_pp counted" || bad "rules: $(cat out.txt)"
grep -q "dualpipe_microbatches:" out.txt && ok "dualpipe_microbatches counted" ||
  bad "rules: $(cat out.txt)"
finish
