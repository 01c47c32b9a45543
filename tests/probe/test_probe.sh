#!/usr/bin/env bash
# ppsearch-probe (docs/probe.md).
#   test_probe.sh import   nccl-tests import on the synthetic fixtures: the fitted bus bandwidth
#                          within 5 % of each fixture's chosen value; the INI loads in ppsearch;
#                          --compare warns past 20 %; bad input exits 2 naming file:line
#   test_probe.sh mpi N    mpiexec -n N ppsearch-probe: writes an INI that ppsearch loads
# Environment: PPSEARCH, PPSEARCH_PROBE, SOURCE_DIR, MPIEXEC (mpi mode), E2E_WORK_DIR.
set -euo pipefail
: "${PPSEARCH:?}" "${PPSEARCH_PROBE:?}" "${SOURCE_DIR:?}"
work=${E2E_WORK_DIR:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
FX=$SOURCE_DIR/tests/probe/fixtures
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*" >&2; }
expect_rc() {
  local want=$1; shift
  set +e; "$@" >out.txt 2>err.txt; local rc=$?; set -e
  if [ "$rc" = "$want" ]; then ok "rc $rc: $*"; else bad "rc $rc (want $want): $*"; cat out.txt err.txt >&2; fi
}
# within_5pct MEASURED CHOSEN LABEL
within_5pct() {
  if awk -v m="$1" -v c="$2" 'BEGIN { d = m / c - 1; exit !(d < 0.05 && d > -0.05) }'; then
    ok "$3: $1 within 5 % of $2"
  else bad "$3: $1 not within 5 % of $2"; fi
}
value() { grep "^$1 = " "$2" | head -1 | awk '{print $3}'; }
# effective BANDWIDTH_KEY EFFICIENCY_KEY FILE: bandwidth × efficiency as the cost model uses it
effective() { awk -v b="$(value "$1" "$3")" -v e="$(value "$2" "$3")" 'BEGIN { printf "%.6g", b * e }'; }

if [ "${1:-}" = import ]; then
  # Every fixture alone: the span's bandwidth key = the chosen bus bandwidth (file units).
  expect_rc 0 "$PPSEARCH_PROBE" --nccl-tests "$FX/all_reduce_1node_8gpu.log" --output a.ini
  within_5pct "$(effective nvlink_bandwidth_gb_per_s nvlink_efficiency a.ini)" 360 \
    "all_reduce, 1 node, effective GB/s"
  grep -q "^# inside a node: all_reduce bus bandwidth .*all_reduce_1node_8gpu.log" a.ini &&
    ok "comment names the log" || bad "comment: $(cat a.ini)"
  # network keys are in Gbit/s: chosen GB/s x 8
  for f in all_reduce_2node_16gpu:45 all_gather_2node_16gpu:44 reduce_scatter_2node_16gpu:43 \
           sendrecv_2node:47; do
    name=${f%%:*} chosen=${f##*:}
    expect_rc 0 "$PPSEARCH_PROBE" --nccl-tests "$FX/$name.log" --output "$name.ini"
    within_5pct "$(effective network_bandwidth_gbit_per_s network_efficiency "$name.ini")" \
      "$((chosen * 8))" "$name, effective Gbit/s"
  done
  within_5pct "$(value network_latency_us sendrecv_2node.ini)" 6 "sendrecv latency, us"
  # All together, against a preset: loads in ppsearch, and the warnings past 20 %.
  expect_rc 0 "$PPSEARCH_PROBE" --nccl-tests "$FX"/*.log --output all.ini --compare h200-16gpu-ib
  grep -q "ppsearch-probe: warning: across nodes: latency: measured 6.0.* us, h200-16gpu-ib assumes 14 us" err.txt &&
    ok "warns on the latency (6 us against 14)" || bad "no latency warning: $(cat err.txt)"
  if grep -q "across nodes: effective bandwidth" err.txt; then
    bad "warned on a bandwidth within 20 %: $(cat err.txt)"
  else ok "no warning within 20 % (45 against 400 / 8 x 0.95 = 47.5 GB/s)"; fi
  grep -q "inside a node: effective bandwidth: measured 36.* GB/s, h200-16gpu-ib assumes 369 GB/s" err.txt &&
    ok "no warning inside a node either" && bad "warned at -2 %: $(cat err.txt)" || true
  expect_rc 0 "$PPSEARCH" --gpus 128 --cluster all.ini --quiet --output all.h5 --overwrite
  # Bad input: exit 2, file:line named, nothing written.
  printf 'hello\nthis is not nccl-tests output\n' > garbage.log
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests garbage.log --output g.ini
  grep -q "garbage.log:1: " err.txt && ok "garbage named with file:line" || bad "garbage: $(cat err.txt)"
  [ ! -e g.ini ] && ok "nothing written" || bad "g.ini written"
  sed 's/all_reduce_perf/alltoall_perf/' "$FX/all_reduce_2node_16gpu.log" > alltoall.log
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests alltoall.log --output u.ini
  grep -q "alltoall.log:1: .*alltoall_perf is not imported" err.txt && ok "unknown collective named" ||
    bad "unknown collective: $(cat err.txt)"
  head -30 "$FX/all_reduce_2node_16gpu.log" > broken.log
  echo "   4096   1024  float  sum  -1  12.5  0.33" >> broken.log
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests broken.log --output b.ini
  grep -q "broken.log:31: " err.txt && ok "short row named with its line" || bad "short row: $(cat err.txt)"
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests missing.log --output m.ini
  grep -q "missing.log" err.txt && ok "missing log named" || bad "missing: $(cat err.txt)"
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests "$FX/sendrecv_2node.log"
  expect_rc 2 "$PPSEARCH_PROBE" --nccl-tests "$FX/sendrecv_2node.log" --output x.ini --base nowhere
elif [ "${1:-}" = mpi ]; then
  np=${2:?}
  : "${MPIEXEC:?}"
  expect_rc 0 "$MPIEXEC" -n "$np" "$PPSEARCH_PROBE" --output mpi.ini --max-bytes 262144 --iters 3
  grep -Eq '^nvlink_(efficiency|bandwidth_gb_per_s) = .*# measured' mpi.ini &&
    ok "intra-node bandwidth measured" || bad "mpi.ini: $(cat mpi.ini)"
  grep -q '^# inside a node: all_reduce bus bandwidth .* MPI ' mpi.ini && ok "commented" ||
    bad "comment: $(cat mpi.ini)"
  grep -q "No measurement across nodes" mpi.ini && ok "one node: says the network keys are the base's" ||
    bad "one-node note missing"
  expect_rc 0 "$PPSEARCH" --gpus 128 --cluster mpi.ini --quiet --output mpi.h5 --overwrite
else
  echo "usage: test_probe.sh import | mpi N" >&2
  exit 2
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
