#!/usr/bin/env bash
# The split a Megatron-family row runs (docs/validation.md; docs/step-time.md "Megatron-Bridge
# Llama 3 70B FP8 on H100"): by default the rows of a Megatron-family stack with pp > 1, a stated
# vpp and no pp_layout run Megatron-Core's default split, which for the Bridge 70B H100 row puts
# 10 layers and the output layer on the last rank and so predicts it slower than the
# partitioner's split (--partitioner-layout); a Megatron row whose vpp is searched and a
# torchtitan row are left as they are. --megatron-layout names the default; the two flags take no
# value and exclude each other.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"
head -1 "$RUNS" >rows.csv
for id in mbridge-2511-70b-fp8cs-h100 nar21-t1-39.1b titan-2506-llama3-70b-fsdp32-tp8-h100; do
  grep -m1 "^$id," "$RUNS" >>rows.csv || { bad "row $id missing from $RUNS"; }
done
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv --partitioner-layout
cp out.txt free.txt
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv
cp out.txt fixed.txt
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv --megatron-layout
if cmp -s out.txt fixed.txt; then ok "--megatron-layout is the default"; else bad "--megatron-layout differs from the default"; fi
pred() { awk -v id="$1" '$1 == id {print $2}' "$2"; }
a=$(pred mbridge-2511-70b-fp8cs-h100 free.txt)
b=$(pred mbridge-2511-70b-fp8cs-h100 fixed.txt)
if [ -n "$a" ] && [ -n "$b" ] && $PY -c "import sys; sys.exit(0 if float('$b') > float('$a') * 1.005 else 1)"; then
  ok "Bridge 70B row slower with Megatron's split: $a -> $b s"
else
  bad "Bridge 70B row: $a -> $b s (want slower with Megatron's split than with --partitioner-layout)"
fi
for id in nar21-t1-39.1b titan-2506-llama3-70b-fsdp32-tp8-h100; do
  x=$(grep "^$id " free.txt || true)
  y=$(grep "^$id " fixed.txt || true)
  if [ -n "$x" ] && [ "$x" = "$y" ]; then ok "$id unchanged"; else bad "$id changed or missing: '$x' / '$y'"; fi
done
if grep -q "Megatron default split" fixed.txt && ! grep -q "Megatron default split" free.txt; then
  ok "note by default, none with --partitioner-layout"
else
  bad "note 'Megatron default split' missing by default or present with --partitioner-layout"
fi
expect_rc 2 "$PPSEARCH_VALIDATE" rows.csv --megatron-layout=1
expect_rc 2 "$PPSEARCH_VALIDATE" rows.csv --partitioner-layout=1
expect_rc 2 "$PPSEARCH_VALIDATE" rows.csv --partitioner-layout --megatron-layout
finish
