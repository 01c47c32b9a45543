#!/usr/bin/env bash
# ppsearch-validate --explain LIST (docs/validation.md): after the report, the engine's breakdown
# of each listed row (ppsearch --explain's text for the row's chosen configuration). The report
# itself is unchanged by the option; the breakdown's step time, configuration and peak memory are
# the report's; an id that matches no row, or a missing list, is a usage error (exit 2).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"
head -1 "$RUNS" >rows.csv
for id in mbridge-2511-70b-fp8cs-h100 nar21-t1-39.1b titan-pr1884-8b-cp2-fsdp2; do
  grep -m1 "^$id," "$RUNS" >>rows.csv || { bad "row $id missing from $RUNS"; }
done
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv
cp out.txt plain.txt
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv --explain 'mbridge-2511-70b-fp8cs-h100,titan-pr1884*'
cp out.txt explained.txt
n=$(grep -c '^=== ' explained.txt || true)
[ "$n" = 2 ] && ok "two rows explained" || bad "want 2 explained rows, got $n"
if diff <(cat plain.txt) <(sed '/^=== /,$d' explained.txt | sed '${/^$/d}') >/dev/null; then
  ok "the report is the same with --explain"
else
  bad "the report changed with --explain"; diff plain.txt explained.txt | head >&2
fi
grep -q '^=== nar21' explained.txt && bad "an unlisted row was explained" || ok "only listed rows"
# The Bridge row: the breakdown's step time and configuration are the report's.
rep=$(awk '$1 == "mbridge-2511-70b-fp8cs-h100" {print $2}' plain.txt)
exp=$(sed -n '/^=== mbridge-2511-70b-fp8cs-h100 /,/^=== /p' explained.txt |
  sed -n 's/^Step time \([0-9.]*\) \(m\?s\) .*/\1 \2/p' | head -1)
if [ -n "$rep" ] && [ -n "$exp" ] && $PY - "$rep" $exp <<'PY'
import sys
rep, val, unit = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
val = val / 1000 if unit == "ms" else val
sys.exit(0 if abs(val - rep) <= 0.006 * rep else 1)
PY
then ok "explained step time $exp = reported $rep s"; else bad "explained '$exp' vs reported '$rep'"; fi
sed -n '/^=== mbridge-2511-70b-fp8cs-h100 /,/^=== /p' explained.txt |
  grep -q '^Explain: tp=4 pp=8 cp=1 dp=2 vpp=5 ' && grep -q '^mbridge-2511-70b-fp8cs-h100 .*tp4 pp8 dp2 vpp5' plain.txt &&
  ok "explained configuration is the reported one" || bad "explained configuration differs"
grep -q '^predicted .* s, measured 10.23 s' explained.txt && ok "measured time in the header" ||
  bad "header without the measured time"
# The memory-only row: predicted and measured peak memory in the header, as in the report.
mem=$(awk '$1 == "titan-pr1884-8b-cp2-fsdp2" {print $5}' plain.txt)
grep -q "^peak memory (reserved) predicted $mem GB, measured 48.15 GB" explained.txt &&
  ok "memory header matches the report ($mem GB)" || bad "memory header: want $mem GB"
expect_rc 0 "$PPSEARCH_VALIDATE" rows.csv --quiet --explain mbridge-2511-70b-fp8cs-h100
[ -s out.txt ] && bad "--quiet printed" || ok "--quiet prints nothing"
expect_rc 2 "$PPSEARCH_VALIDATE" rows.csv --explain nosuch-row
expect_stderr "ppsearch-validate: error: --explain: nosuch-row: matches no id of rows.csv"
expect_rc 2 "$PPSEARCH_VALIDATE" rows.csv --explain
finish
