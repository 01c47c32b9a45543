#!/usr/bin/env bash
# The llm-foundry rows of tests/validation/runs-public.csv (docs/validation.md, "The llm-foundry
# rows, checked against their source"): every figure of a row must follow from the cited table row
# of mosaicml/llm-foundry scripts/train/benchmarking/README.md @5e85bd62d the way that README and
# its collect_results.py compute them:
#   - step time = GlobalBatchSize (T) / Throughput (T/s), the two numbers of the derivation, with
#     GlobalBatchSize (T) = global_batch_size × seq_length;
#   - NumParams (quoted in the source) = L·(12h² + 13h) + V·h + s·h + 2h: MPT with biases (no_bias
#     false), LayerNorm weights and biases, learned position embeddings of max_seq_len rows (no
#     ALiBi) and tied embeddings, so the row's shape is the one that ran;
#   - MFU = (6·N·s + 12·L·h·s²) · (global_batch_size / step) / (gpus · 989 TFLOP/s) (collect_results.py:
#     3·flops_per_seq + 3·attn_flops_per_seq, attn_flops_per_seq = 4·L·h·s², Composer's H100 SXM
#     bf16 peak), within the table's rounding;
#   - the attention kernel named in the source is the one the campaign ran: `flash` for the 1b, 3b,
#     7b and 70b rows of the "Large Scale" table (sweep.py), triton for every other row;
#   - the stack is the campaign's: llmfoundry-2024 for the "Large Scale" table, llmfoundry-2023
#     for the 8-64 GPU table.
# A copy with one step time, one shape and one kernel altered must fail with the row named.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"

cat >check_llmfoundry.py <<'PY'
import csv, re, sys

PEAK = 989e12  # composer.callbacks.speed_monitor.GPU_AVAILABLE_FLOPS['h100-sxm']['amp_bf16']
path = sys.argv[1]
bad = n = 0

def fail(line, rid, what):
    global bad
    bad += 1
    print("%s:%d: id %s: %s" % (path, line, rid, what))

for line, r in enumerate(csv.DictReader(open(path, newline="")), start=2):
    rid = r["id"]
    if not rid.startswith("llmfoundry-"):
        continue
    n += 1
    L, h, V, s = (int(r[k]) for k in ("layers", "hidden_size", "vocab_size", "seq_length"))
    gbs, gpus = int(r["global_batch_size"]), int(r["gpus"])
    step = float(r["measured_step_time_s"])
    m = re.fullmatch(r"GlobalBatchSize\(T\) / Throughput\(T/s\) = (\d+) / (\d+)",
                     r["step_time_derivation"])
    if not m:
        fail(line, rid, "step_time_derivation '%s' is not 'GlobalBatchSize(T) / Throughput(T/s) = A / B'"
             % r["step_time_derivation"])
        continue
    tokens, tput = int(m.group(1)), int(m.group(2))
    if tokens != gbs * s:
        fail(line, rid, "GlobalBatchSize(T) %d != global_batch_size %d x seq_length %d" % (tokens, gbs, s))
    if abs(tokens / tput - step) > 5e-5:
        fail(line, rid, "measured_step_time_s %s != %d / %d = %.4f" % (r["measured_step_time_s"], tokens, tput, tokens / tput))
    p = re.search(r"NumParams (\d+)", r["source"])
    if not p:
        fail(line, rid, "the source quotes no NumParams")
        continue
    N = int(p.group(1))
    shape = L * (12 * h * h + 13 * h) + V * h + s * h + 2 * h
    if shape != N:
        fail(line, rid, "NumParams %d != L(12h^2+13h)+Vh+sh+2h = %d for the row's shape" % (N, shape))
    mfu = (6.0 * N * s + 12.0 * L * h * s * s) * (gbs / step) / (gpus * PEAK) * 100.0
    if abs(mfu - float(r["measured_mfu_pct"])) > 0.06:
        fail(line, rid, "measured_mfu_pct %s but the README formula gives %.2f" % (r["measured_mfu_pct"], mfu))
    large = "Large Scale" in r["source"]
    model = re.match(r"llmfoundry-mpt-(\d+b)-", rid).group(1)
    flash = large and model in ("1b", "3b", "7b", "70b")
    says_triton = "triton flash attention" in r["source"]
    says_flash = "attn_impl flash" in r["source"]
    if flash and not (says_flash and not says_triton):
        fail(line, rid, "the Large Scale %s rows ran attn_impl flash (sweep.py); the source says otherwise" % model)
    if not flash and not (says_triton and not says_flash):
        fail(line, rid, "this campaign ran attn_impl triton; the source says otherwise")
    # The two campaigns' FSDP settings (docs/step-time.md "llm-foundry: FSDP backward
    # prefetch"): the Large Scale table ran sweep.py's BACKWARD_PRE, the 8-64 GPU table
    # Composer 0.16's default BACKWARD_POST.
    want = "llmfoundry-2024" if large else "llmfoundry-2023"
    if r["stack"] != want:
        fail(line, rid, "stack '%s', want %s" % (r["stack"], want))
print("%d llm-foundry rows, %d inconsistencies" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
PY

expect_rc 0 "$PY" check_llmfoundry.py "$RUNS"
cat out.txt
n=$(sed -n 's/^\([0-9]*\) llm-foundry rows.*/\1/p' out.txt)
[ "$n" = 55 ] && ok "55 llm-foundry rows consistent with their source" || bad "'$n' llm-foundry rows (want 55)"

# Each kind of transcription error must be caught and named.
mutate() {  # mutate OUT ID FIELD PYEXPR(value)
  "$PY" - "$RUNS" "$1" "$2" "$3" "$4" <<'PY'
import csv, sys
src, out, rid, field, expr = sys.argv[1:]
rows = list(csv.DictReader(open(src, newline="")))
hit = [r for r in rows if r["id"] == rid]
assert len(hit) == 1, rid
hit[0][field] = eval(expr, {"v": hit[0][field]})
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
}
mutate step.csv llmfoundry-mpt-30b-s8k-h100-8 measured_step_time_s '"%.4f" % (float(v) * 0.9)'
expect_rc 1 "$PY" check_llmfoundry.py step.csv
grep -q "id llmfoundry-mpt-30b-s8k-h100-8: measured_step_time_s" out.txt && ok "a wrong step time is named" || bad "wrong step time not caught"
mutate shape.csv llmfoundry-mpt-1b-s8k-h100-8 seq_length '"2048"'
expect_rc 1 "$PY" check_llmfoundry.py shape.csv
grep -q "id llmfoundry-mpt-1b-s8k-h100-8: NumParams" out.txt && ok "a wrong shape is named" || bad "wrong shape not caught"
mutate kernel.csv llmfoundry-mpt-7b-s2k-h100-512 source 'v.replace("flash attention (attn_impl flash", "triton flash attention (")'
expect_rc 1 "$PY" check_llmfoundry.py kernel.csv
grep -q "id llmfoundry-mpt-7b-s2k-h100-512: the Large Scale 7b rows ran attn_impl flash" out.txt && ok "a wrong kernel is named" || bad "wrong kernel not caught"

# ppsearch-validate turns each row's measured step time back into the README's MFU under the
# row's convention (src/validate/conventions.cpp, llmfoundry-6N+12Lds): mfu_meas must match the
# printed mfu_rep to the table's rounding for all 55 rows.
if [ -n "${PPSEARCH_VALIDATE:-}" ]; then
  "$PY" - "$RUNS" only.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(r for r in rows if r["id"].startswith("llmfoundry-"))
PY
  expect_rc 0 "$PPSEARCH_VALIDATE" only.csv
  "$PY" - out.txt <<'PY' && ok "mfu_meas reproduces the printed MFU under llmfoundry-6N+12Lds" || bad "llm-foundry MFU convention"
import sys
n = 0
for line in open(sys.argv[1]):
    if not line.startswith("llmfoundry-"):  # the table, not the ranking lines
        continue
    f = line.split()
    n += 1
    mfu_meas, mfu_rep, conv = f[9], f[10], f[11]
    assert conv == "llmfoundry-6N+12Lds", line
    assert abs(float(mfu_meas) - float(mfu_rep)) <= 0.11, line
assert n == 55, n
PY
fi
finish
