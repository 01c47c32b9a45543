#!/usr/bin/env bash
# Mixture-of-experts presets end to end (docs/moe.md): each MoE preset searches, ranks feasible
# rows that use expert parallelism, writes the ep/etp columns, emits Megatron's MoE arguments,
# and the MoE validation file (tests/validation/runs-moe.csv) is read and modelled row by row.
# The step-time error of runs-moe.csv as a whole is reported by ppsearch-validate, not bounded
# here (docs/moe.md "Validation"); its BF16 DeepSeek-V3 / Qwen3-235B rows are.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"

for spec in "deepseek-v3 h200-8gpu-ndr 256" "mixtral-8x22b h100-8gpu-ndr 64" \
            "qwen3-30b-a3b h100-8gpu-ndr 16" "gpt-oss-120b h100-8gpu-ndr 64" \
            "gpt-oss-20b h100-8gpu-ndr 16"; do
  read -r model cluster gpus <<<"$spec"
  expect_rc 0 "$PPSEARCH" --model "$model" --cluster "$cluster" --gpus "$gpus" --threads 2 \
    --output "$model.csv" --overwrite --top 3
  # The CSV has the ep and etp columns; some feasible row uses EP > 1; every ep divides the
  # expert count and ep·etp divides tp·cp·dp (the folding rule).
  if "$PY" - "$model.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows and "ep" in rows[0] and "etp" in rows[0], "ep/etp columns"
feasible = [r for r in rows if r["feasible"] == "1"]
assert any(int(r["ep"]) > 1 for r in feasible), "no feasible row with ep > 1"
for r in rows:
    ep, etp = int(r["ep"]), int(r["etp"])
    ranks = int(r["tp"]) * int(r["cp"]) * int(r["dp"])
    assert ranks % (ep * etp) == 0, r
PY
  then ok "$model: ep/etp columns, EP > 1 rows, folding rule"; else bad "$model: ep/etp check"; fi
  expect_rc 0 "$PPSEARCH" --model "$model" --cluster "$cluster" --gpus "$gpus" --threads 2 \
    --schedule 1f1b,interleaved-1f1b --zero 0,1 --output "$model-emit.csv" --overwrite --quiet \
    --emit megatron
  if grep -q -- "--num-experts" out.txt && grep -q -- "--expert-model-parallel-size" out.txt; then
    ok "$model: Megatron MoE arguments emitted"
  else
    bad "$model: no --num-experts / --expert-model-parallel-size in the emitted arguments"
    cat out.txt >&2
  fi
done

# The presets' model keys as their config.json (GPT-OSS: sliding window on every other layer) and
# DeepSeek-V3's multi-token-prediction module (docs/moe.md "MTP", "GPT-OSS").
for spec in "gpt-oss-120b 36 128 4 128 2 0" "gpt-oss-20b 24 32 4 128 2 0" \
            "deepseek-v3 61 256 8 0 0 1"; do
  read -r model layers experts topk window skip mtp <<<"$spec"
  expect_rc 0 "$PPSEARCH" --model "$model" --gpus 64 --print-config
  if grep -qx "layers = $layers" out.txt && grep -qx "moe_experts = $experts" out.txt &&
     grep -qx "moe_top_k = $topk" out.txt && grep -qx "attention_window = $window" out.txt &&
     grep -qx "window_attn_skip_freq = $skip" out.txt && grep -qx "mtp_layers = $mtp" out.txt; then
    ok "$model: preset keys as its config.json"
  else
    bad "$model: preset keys differ from config.json"; cat out.txt >&2
  fi
done
# One MTP module costs the last stage time and memory: the same DeepSeek-V3 configuration with
# model.mtp_layers = 0 is faster and needs less memory.
for n in 0 1; do
  expect_rc 0 "$PPSEARCH" --model deepseek-v3 --cluster h200-8gpu-ndr --gpus 256 --threads 1 \
    --tp 2 --pp 8 --cp 1 --vpp 1 --mbs 1 --ep 16 --etp 1 --schedule 1f1b --recompute full \
    --sp on --zero 1 --set model.mtp_layers=$n --output "mtp$n.csv" --overwrite --quiet
done
if "$PY" - mtp0.csv mtp1.csv <<'PY'
import csv, sys
a, b = (next(csv.DictReader(open(f, newline=""))) for f in sys.argv[1:3])
assert a["feasible"] == "1" and b["feasible"] == "1", (a, b)
assert float(b["iteration_time_s"]) > float(a["iteration_time_s"]), (a["iteration_time_s"], b["iteration_time_s"])
assert float(b["peak_memory_gb"]) > float(a["peak_memory_gb"]), (a["peak_memory_gb"], b["peak_memory_gb"])
PY
then ok "DeepSeek-V3: the MTP module costs time and memory"; else bad "DeepSeek-V3: MTP cost"; fi

# Deterministic: the same MoE sweep on 1 and 2 threads gives the same table.
expect_rc 0 "$PPSEARCH" --model qwen3-30b-a3b --cluster h100-8gpu-ndr --gpus 16 --threads 1 \
  --output det1.csv --overwrite --quiet
expect_rc 0 "$PPSEARCH" --model qwen3-30b-a3b --cluster h100-8gpu-ndr --gpus 16 --threads 2 \
  --output det2.csv --overwrite --quiet
cmp -s det1.csv det2.csv && ok "MoE sweep: identical tables on 1 and 2 threads" \
  || bad "MoE sweep: tables differ between 1 and 2 threads"

# A dense model with an EP list: every EP > 1 removed by the rule ep_needs_moe.
expect_rc 0 "$PPSEARCH" --model llama3-8b --gpus 16 --ep 1,2 --threads 2 --output dense.csv \
  --overwrite --top 1
grep -q "ep_needs_moe" out.txt && ok "dense model: ep_needs_moe counted" || bad "ep_needs_moe missing"

# The MoE validation file: every row read and modelled, with the NeMo performance recipes'
# gradient and loss settings (docs/moe.md "Validation"). MAX_MOE_BF16_ERROR_PCT bounds the mean
# |step-time error| of the four 25.11 GB200/GB300 BF16 DeepSeek-V3 and Qwen3-235B rows (8.4 % today; the issue's target
# for MoE rows is 12 %): a regression guard for the MoE cost model.
MAX_MOE_BF16_ERROR_PCT=${MAX_MOE_BF16_ERROR_PCT:-12}
expect_rc 0 "$PPSEARCH_VALIDATE" "$SOURCE_DIR/tests/validation/runs-moe.csv" \
  --set training.grad_reduce_in_fp32=false --set training.cross_entropy_fusion=true
# Every row is modelled in the configuration its recipe states: a published run that the memory
# model rejects is a memory-model error (docs/memory.md; the H100 Qwen3-30B row fits since the
# expert output is no longer kept for the unpermute, docs/moe.md).
grep -q "Step-time error (all rows, 68 of 68 modelled)" out.txt &&
  grep -q "Step-time error (split = fit, 25 of 25 modelled)" out.txt &&
  grep -q "judges not to fit in memory: 0 of 68 rows" out.txt &&
  ok "runs-moe.csv: 68 of 68 rows modelled (25 fit), none judged not to fit" ||
  { bad "runs-moe.csv: not every row modelled"; cat out.txt >&2; }
mean=$(awk '/^mb[0-9]+-gb[0-9]+-(dsv3|qwen3-235b)-bf16 / { e = $4; sub(/^\+/, "", e); if (e < 0) e = -e;
             s += e; n++ } END { if (n == 4) printf "%.2f", s / n; else print "none" }' out.txt)
if [ "$mean" != none ] && awk -v m="$mean" -v b="$MAX_MOE_BF16_ERROR_PCT" 'BEGIN { exit !(m <= b) }'; then
  ok "BF16 DeepSeek-V3 / Qwen3-235B rows: mean |error| $mean % <= $MAX_MOE_BF16_ERROR_PCT %"
else
  bad "BF16 DeepSeek-V3 / Qwen3-235B rows: mean |error| $mean % (bound $MAX_MOE_BF16_ERROR_PCT %)"
fi

# The split of runs-moe.csv (docs/validation.md "The split"): the 20 rows of the first MoE round
# stay held-out; every later row is fit when the 32-bit FNV-1a hash of its id is even, held-out
# when it is odd. Every row names the recipe's dispatcher and CUDA-graph scopes (docs/moe.md).
"$PY" - "$SOURCE_DIR/tests/validation/runs-moe.csv" <<'PY' && ok "runs-moe.csv: split rule and recipe columns (dispatcher, graphs, MTP, 26.06 features)" || bad "runs-moe.csv: split rule or recipe columns"
import csv, sys

def fnv1a32(s):
    h = 0x811C9DC5
    for b in s.encode("utf-8"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h

first = {"mb2511-gb300-dsv3-bf16", "mb2511-gb200-dsv3-bf16", "mb2511-gb300-qwen3-235b-bf16",
         "mb2511-gb200-qwen3-235b-bf16", "mb2602-gb300-gptoss-120b-bf16",
         "mb2602-gb200-gptoss-120b-bf16", "mb2602-b300-gptoss-120b-bf16",
         "mb2602-b200-gptoss-120b-bf16", "mb2602-h100-gptoss-120b-bf16", "mb2511-gb300-dsv3-fp8mx",
         "mb2511-gb200-dsv3-fp8mx", "mb2511-b200-dsv3-fp8mx", "mb2602-gb200-dsv3-fp8mx",
         "mb2511-gb300-qwen3-30b-fp8mx", "mb2511-gb200-qwen3-30b-fp8mx",
         "mb2511-b200-qwen3-30b-fp8mx", "mb2511-h100-qwen3-30b-fp8cs",
         "mb2602-gb300-qwen3-30b-fp8mx", "mb2511-b200-qwen3-235b-fp8mx", "mb2602-h100-qwen3-235b-fp8"}
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
bad = []
for r in rows:
    want = "held-out" if r["id"] in first else ("fit" if fnv1a32(r["id"]) % 2 == 0 else "held-out")
    if r["split"] != want:
        bad.append("%s: split %s, the rule says %s" % (r["id"], r["split"], want))
    # flex:deepep / flex:hybridep name the flex backend (docs/moe.md "DeepEP's host wait").
    if r["moe_dispatcher"] not in ("alltoall", "allgather", "flex", "flex:deepep", "flex:hybridep"):
        bad.append("%s: moe_dispatcher %r" % (r["id"], r["moe_dispatcher"]))
    scopes = r["cuda_graph_scope"].split("+")
    if r["cuda_graph_scope"] != "none" and not all(
            x in ("attn", "mlp", "moe", "moe_router", "moe_preprocess", "full_iteration") for x in scopes):
        bad.append("%s: cuda_graph_scope %r" % (r["id"], r["cuda_graph_scope"]))
    if r["mtp_layers"] not in ("", "0", "1"):
        bad.append("%s: mtp_layers %r" % (r["id"], r["mtp_layers"]))
    # The 26.06 recipe-feature columns (docs/moe.md "26.06 recipe features") agree with the
    # recipe each row's source names: moe_a2a_overlap (or, at 25.09, the run script's
    # overlap_moe_expert_parallel_comm), fp8_dot_product_attention, cutedsl_fused_grouped_mlp.
    s = r["source"]
    want_cols = {
        "moe_a2a_overlap": "moe_a2a_overlap True" in s or "moe_a2a_overlap = True" in s
                           or "overlap_moe_expert_parallel_comm" in s,
        "fp8_attention": "fp8_dot_product_attention True" in s,
        "moe_fused_grouped_mlp": "cutedsl_fused_grouped_mlp True" in s,
    }
    for col, on in want_cols.items():
        if r.get(col) != ("1" if on else "0"):
            bad.append("%s: %s %r, the source says %s" % (r["id"], col, r.get(col), on))
    if r["fp8_attention"] == "1" and r["precision"] not in ("fp8-cs", "mxfp8", "fp8"):
        bad.append("%s: fp8_attention in a %s run" % (r["id"], r["precision"]))
    if r["moe_fused_grouped_mlp"] == "1" and r["precision"] != "mxfp8":
        bad.append("%s: moe_fused_grouped_mlp in a %s run" % (r["id"], r["precision"]))
assert len(first & {r["id"] for r in rows}) == 20, "the first 20 rows are gone"
assert not bad, "\n".join(bad)
PY

# The expert-parallel degrees in the no-feasible report's closest miss and in the trace JSON
# (docs/moe.md, docs/explain.md).
expect_rc 3 "$PPSEARCH" --model deepseek-v3 --cluster h200-8gpu-ndr --gpus 8 --threads 2 \
  --output miss.csv --overwrite
grep -Eq "^  closest: tp [0-9]+ pp [0-9]+ cp [0-9]+ dp [0-9]+ mbs [0-9]+ ep [0-9]+ etp [0-9]+: " \
  out.txt err.txt && ok "closest miss names ep and etp" || { bad "closest miss without ep/etp"; cat out.txt err.txt >&2; }
rm -f moe-trace.json
expect_rc 0 "$PPSEARCH" --model qwen3-30b-a3b --cluster h100-8gpu-ndr --gpus 16 --threads 1 \
  --tp 1 --pp 2 --cp 1 --vpp 1 --mbs 1 --ep 8 --etp 1 --schedule 1f1b --recompute full --sp off \
  --zero 1 --output trace.csv --overwrite --quiet --trace moe-trace.json
"$PY" - moe-trace.json <<'PY' && ok "trace otherData has ep 8 etp 1" || bad "trace ep/etp"
import json, sys
d = json.load(open(sys.argv[1]))["otherData"]
assert d["ep"] == 8 and d["etp"] == 1, d
PY
finish
