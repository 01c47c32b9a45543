#!/usr/bin/env bash
# Input limits (issue #8): each audited reproducer ends with exit 2 and one clear message,
# in well under a second, with nothing written; special files are refused without
# blocking; ppsearch-validate caps its list of issues. Special files are made here.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of ppsearch-validate}"
rm -rf results out tmp
mkdir -p out tmp
T=10  # seconds: a hang or a runaway sweep fails instead of stalling the suite
# Every reproducer: exit 2, the expected first error line, nothing in out/.
expect_usage() {
  local line=$1; shift
  expect_rc 2 timeout "$T" "$PPSEARCH" "$@" --output out/r.h5
  if [ "$(head -1 err.txt)" = "$line" ]; then ok "message: $line"; else
    bad "first line: want '$line'"; cat err.txt >&2; fi
}
expect_usage "ppsearch: error: --gpus: search.gpus = 1073741824: GPU counts in [1, 131072]: N, a comma list N,M,..., START:END (every multiple of cluster.gpus_per_node in range) or START:END:STEP" \
  --gpus 1073741824
expect_usage "ppsearch: error: --gpus: search.gpus = 2147483647: GPU counts in [1, 131072]: N, a comma list N,M,..., START:END (every multiple of cluster.gpus_per_node in range) or START:END:STEP" \
  --gpus 2147483647
expect_usage "ppsearch: error: --global-batch: training.global_batch_size = 2147483647: an integer in [1, 16777216]" \
  --gpus 64 --global-batch 2147483647 --mbs 1073741824 --tp 1 --pp 1 --cp 1
expect_usage "ppsearch: error: --tp: search.tp = 65536: tp x pp x cp (smallest values: 281474976710656) at most the largest GPU count (search.gpus = 65536)" \
  --gpus 65536 --tp 65536 --pp 65536 --cp 65536
expect_usage "ppsearch: error: --tp: search.tp = 1,2147483647: a comma list of at most 256 integers in [1, 131072], or auto" \
  --gpus 64 --tp 1,2147483647
expect_usage "ppsearch: error: --vpp: search.vpp = 2147483647: a comma list of integers in [1, 64], or auto" \
  --gpus 64 --vpp 2147483647
expect_usage "ppsearch: error: --set: model.layers = 2147483647: an integer in [1, 4096]" \
  --gpus 64 --set model.layers=2147483647
expect_usage "ppsearch: error: --set: model.layers = 100000000: an integer in [1, 4096]" \
  --gpus 64 --set model.layers=100000000
expect_usage "ppsearch: error: --set: gpu.activation_overhead = 1e308: a number in [1, 10]" \
  --gpus 64 --set gpu.activation_overhead=1e308
expect_usage "ppsearch: error: --set: gpu.peak_tflops = 1e-300: a number in [1, 100000]" \
  --gpus 64 --set gpu.peak_tflops=1e-300
expect_usage "ppsearch: error: --set: cluster.network_latency_us = 1e300: a number in [0, 1000]" \
  --gpus 64 --set cluster.network_latency_us=1e300
# The sweep budget refuses before anything is built or written.
expect_usage "ppsearch: error: (default): search.max_candidates = 500000: at least the sweep's 943047 candidates (results alone need about 7.8 GB); narrow the sweep (fix --tp, --pp, --cp, --mbs, --schedule or --recompute, or give a smaller --gpus range) or raise the limit with --max-candidates N" \
  --gpus 1:65536
expect_rc 2 timeout "$T" "$PPSEARCH" --model llama3-405b --gpus 1:65536 --global-batch 1048576 \
  --mbs 1,2,4,8,16,32,64,128 --output out/r.h5
grep -q "the sweep's 3117648 candidates" err.txt && ok "405B micro-batch sweep counted" || bad "405B count"
expect_rc 2 timeout "$T" "$PPSEARCH" --gpus 1:131072 --mbs 1,2,4,8,16,32,64,128 --output out/r.h5
grep -q "search.max_candidates = 500000" err.txt && ok "1:131072 refused" || bad "1:131072"

# Special and oversized files: refused by name, without blocking on a FIFO.
mkfifo tmp/fifo.ini
mkdir tmp/dir.ini
head -c 1048577 /dev/zero | tr '\0' '#' > tmp/big.ini
expect_usage "ppsearch: error: --model: tmp/fifo.ini: an existing INI file (not a regular file) or a model preset (deepseek-v3, gpt-oss-120b, gpt-oss-20b, gpt3-13b, gpt3-175b, llama3-405b, llama3-70b, llama3-8b, mixtral-8x22b, nemotron4-15b, qwen3-30b-a3b, seed-gpt-48l)" \
  --gpus 64 --model tmp/fifo.ini
expect_usage "ppsearch: error: --config: tmp/dir.ini: an existing INI file (not a regular file) or a search preset (default)" \
  --gpus 64 --config tmp/dir.ini
expect_usage "ppsearch: error: --config: tmp/big.ini: an existing INI file (larger than 1 MiB) or a search preset (default)" \
  --gpus 64 --config tmp/big.ini
if mknod tmp/null.ini c 1 3 2>/dev/null; then
  expect_usage "ppsearch: error: --cluster: tmp/null.ini: an existing INI file (not a regular file) or a cluster preset (a100-8gpu-hdr, b200-8gpu-xdr, b300-8gpu-xdr, gb200-nvl72, gb300-nvl72, h100-8gpu-ndr, h100-ndr-tor-2to1, h100-roce-ecmp, h100-roce-tor, h200-16gpu-ib, h200-16gpu-roce, h200-8gpu-ndr)" \
    --gpus 64 --cluster tmp/null.ini
else
  echo "skip: mknod not permitted"
fi
[ -z "$(ls -A out)" ] && ok "nothing written by any refused run" || { bad "files left in out/"; ls -la out >&2; }
[ ! -e results ] && ok "no results folder" || bad "results folder created"

# A UTF-8 BOM at the start of an INI file is accepted.
printf '\xEF\xBB\xBF[search]\ntp = 8\npp = 4\ncp = 1\nmbs = 1\nschedule = 1f1b\n' > tmp/bom.ini
expect_rc 0 timeout 120 "$PPSEARCH" --gpus 128 --config tmp/bom.ini --output out/bom.h5 --quiet

# ppsearch-validate: special files, ranges, and at most 20 issues for a million bad rows.
expect_rc 2 timeout "$T" "$PPSEARCH_VALIDATE" tmp/fifo.ini
expect_stderr "ppsearch-validate: error: tmp/fifo.ini: a readable runs CSV file (not a regular file)"
expect_rc 2 timeout "$T" "$PPSEARCH_VALIDATE" tmp/dir.ini
expect_stderr "ppsearch-validate: error: tmp/dir.ini: a readable runs CSV file (not a regular file)"
CSV="$SOURCE_DIR/tests/validation/runs-public.csv"
"$PY" - "$CSV" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head, row = rows[0], rows[1]
def write(name, changes, n=1):
    with open(name, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for i in range(n):
            r = list(row)
            r[head.index("id")] = "r%d" % i
            for k, v in changes.items():
                r[head.index(k)] = v
            w.writerow(r)
write("tmp/layers.csv", {"layers": "999999999"})
write("tmp/net.csv", {"network_gbit_per_s": "1e-300"})
with open("tmp/many.csv", "w") as f:
    f.write(",".join(head) + "\n" + "a,b\n" * 1000000)
PY
expect_rc 2 timeout "$T" "$PPSEARCH_VALIDATE" tmp/layers.csv
expect_stderr "ppsearch-validate: error: tmp/layers.csv:2: layers = 999999999: an integer in [1, 4096]"
expect_rc 2 timeout "$T" "$PPSEARCH_VALIDATE" tmp/net.csv
expect_stderr "ppsearch-validate: error: tmp/net.csv:2: network_gbit_per_s = 1e-300: a number in [1, 100000] (Gbit/s per GPU), or empty"
expect_rc 2 timeout 60 "$PPSEARCH_VALIDATE" tmp/many.csv
[ "$(wc -l < err.txt)" = 21 ] && ok "21 lines for a million bad rows" || bad "$(wc -l < err.txt) lines"
expect_stderr "ppsearch-validate: error: tmp/many.csv: ... and 999980 more issues: the first 20 are shown"
finish
