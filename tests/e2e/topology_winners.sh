#!/usr/bin/env bash
# The topology changes the answer (docs/topology.md "Cases where the winner changes"): each pair of
# runs differs only in the fabric, and the best row must differ between them (degrees, schedule,
# chunks or placement), with the step times of docs/topology.md. Any of these fails when the
# fabric model stops reaching the ranking.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf run && mkdir run && cd run

# best TAG ARGS...: run ppsearch, write the best row's knobs and step time to TAG.txt.
best() {
  local tag=$1; shift
  expect_rc 0 "$PPSEARCH" "$@" --threads 2 --quiet --output "$tag.csv"
  "$PY" - "$tag.csv" >"$tag.txt" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
keys = ["tp", "pp", "cp", "dp", "vpp", "mbs", "schedule", "recompute", "sequence_parallel",
        "zero_stage", "placement"]
print(" ".join(k + "=" + r[k] for k in keys), "%.3f" % float(r["iteration_time_s"]))
PY
}
# differ A B WHAT: the knobs of the two best rows differ; print both.
differ() {
  local a b
  a=$(cut -d' ' -f1-11 "$1.txt"); b=$(cut -d' ' -f1-11 "$2.txt")
  if [ "$a" != "$b" ]; then ok "$3: $(cat "$1.txt") | $(cat "$2.txt")"
  else bad "$3: the same winner on both fabrics: $a"; fi
}
# time_is TAG SECONDS: the best row's step time as documented (3 decimals).
time_is() {
  local t; t=$(awk '{print $NF}' "$1.txt")
  if [ "$t" = "$2" ]; then ok "$1 step time $t s"; else bad "$1 step time $t s, docs/topology.md says $2"; fi
}

# InfiniBand (adaptive routing) against RoCE with static ECMP at 1,024 GPUs.
best ib --gpus 1024 --model llama3-405b --cluster h100-8gpu-ndr
best roce --gpus 1024 --model llama3-405b --cluster h100-roce-ecmp
differ ib roce "InfiniBand vs RoCE ECMP, llama3-405b, 1024 GPUs"
time_is ib 75.460
time_is roce 75.574

# Rail-optimised against top-of-rack leaves (both RoCE ECMP) at 512 GPUs.
best rail --gpus 512 --cluster h100-roce-ecmp
best tor --gpus 512 --cluster h100-roce-tor
differ rail tor "rail-optimised vs not, llama3-70b, 512 GPUs"
time_is rail 3.810
time_is tor 3.853

# A 2:1 taper against a 1:1 spine (both InfiniBand, top-of-rack leaves) at 512 GPUs.
best flat --gpus 512 --cluster h100-8gpu-ndr --set cluster.rail_optimized=false
best taper --gpus 512 --cluster h100-ndr-tor-2to1
differ flat taper "1:1 vs 2:1 taper, llama3-70b, 512 GPUs"
time_is flat 3.788
time_is taper 3.795

# 72-GPU against 8-GPU NVLink domains (GB200, otherwise the same) at 576 GPUs.
best nvl72 --gpus 576 --model gpt3-175b --cluster gb200-nvl72
best nvl8 --gpus 576 --model gpt3-175b --cluster gb200-nvl72 --set cluster.nvlink_domain_size=8
differ nvl72 nvl8 "NVL72 vs 8-GPU NVLink domains, gpt3-175b, 576 GPUs"
time_is nvl72 5.309
time_is nvl8 5.818

# The placement is searched only on a costly spine, and reported per row.
"$PY" - roce.csv ib.csv <<'PY' && ok "placement searched on RoCE ECMP only" || bad "placement"
import csv, sys
roce = {r["placement"] for r in csv.DictReader(open(sys.argv[1]))}
ib = {r["placement"] for r in csv.DictReader(open(sys.argv[2]))}
assert roce == {"tp-cp-dp-pp", "tp-cp-pp-dp"}, roce
assert ib == {"tp-cp-dp-pp"}, ib
PY
# The Megatron launch of a tp-cp-pp-dp row carries Megatron-Core's matching rank order.
expect_rc 0 "$PPSEARCH" --gpus 512 --cluster h100-roce-ecmp --tp 2 --pp 8 --cp 4 --vpp 5 \
  --mbs 1 --schedule interleaved-1f1b --recompute none --sp on --zero 1 --threads 2 --quiet \
  --emit megatron --output emit.csv
if grep -q -- "--use-tp-pp-dp-mapping" out.txt; then ok "emit: --use-tp-pp-dp-mapping"
else bad "emit: no --use-tp-pp-dp-mapping for a tp-cp-pp-dp row"; cat out.txt >&2; fi
finish
