#!/usr/bin/env bash
# Slurm end to end (CTest label "slurm"): needs a running Slurm, e.g. from .ci/slurm-up.sh, with
# SLURM_CONF set; exits 77 (skipped) without it.
#  1. bash -n on every jobs/*.sbatch; each asks for one node and no more CPUs than this one-node
#     cluster has (a job that cannot start stays PENDING with no hint)
#  2. sbatch jobs/search-128-h200.sbatch; wait (squeue polling, bounded; a job PENDING for a
#     reason that will not go away fails at once); JobState=COMPLETED and ExitCode=0:0; its HDF5
#     file has /candidates and /best (one row, gpus == 128)
#  3. srun -n 2 --mpi=pmix ppsearch --gpus 128: the same checks, and /best equals the job's
#     (4 ranks there, 2 here: the result must not depend on the rank count)
#  4. sbatch jobs/sweep-64-1024.sbatch on the same one node: COMPLETED, /best has the 61 sizes
#  5. srun -n 2 --mpi=pmix ppsearch-probe --output probe.ini, then ppsearch --cluster probe.ini
#     loads it (docs/probe.md); skipped with a note when PPSEARCH_PROBE is not built
# Environment (set by tests/CMakeLists.txt): PPSEARCH, SOURCE_DIR, BUILD_DIR, PPSEARCH_RESULTS,
# PPSEARCH_PROBE.
set -euo pipefail
if [ -z "${SLURM_CONF:-}" ]; then
  echo "SLURM_CONF is not set: no Slurm to test against (skipped)"
  exit 77
fi
: "${PPSEARCH:?}" "${SOURCE_DIR:?}" "${BUILD_DIR:?}"
[ -x "$PPSEARCH" ] || { echo "FAIL: no ppsearch binary at '$PPSEARCH'"; exit 1; }
RESULTS=${PPSEARCH_RESULTS:-$BUILD_DIR/tests/slurm_results}
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
export PPSEARCH PPSEARCH_RESULTS=$RESULTS OMP_NUM_THREADS=1
LIMIT_S=${SLURM_TEST_LIMIT_S:-600}

check_h5() {  # check_h5 FILE [REFERENCE]: schema checks; /best equal to REFERENCE's if given
  /usr/bin/python3 - "$@" <<'PY'
import sys
import h5py
import numpy as np

def best(path):
    with h5py.File(path, "r") as f:
        for name in ("candidates", "best"):
            assert name in f, f"/{name} missing in {path}"
        cand, b = f["candidates"][...], f["best"][...]
    assert cand.shape[0] > 0, f"{path}: /candidates is empty"
    assert b.shape == (1,), f"{path}: /best has {b.shape[0]} rows, expected 1 (--gpus 128)"
    assert int(b["gpus"][0]) == 128, f"{path}: /best gpus = {b['gpus'][0]}"
    assert 0.0 < float(b["mfu"][0]) <= 1.0, f"{path}: /best mfu = {b['mfu'][0]}"
    print(f"{path}: {cand.shape[0]} candidates, best mfu {float(b['mfu'][0]):.4f}")
    return b

b = best(sys.argv[1])
if len(sys.argv) > 2:
    ref = best(sys.argv[2])
    assert b.dtype == ref.dtype, (b.dtype, ref.dtype)
    for field in b.dtype.names:
        x, y = b[field], ref[field]
        same = (np.array_equal(x, y, equal_nan=True) if x.dtype.kind == "f"
                else np.array_equal(x, y))
        assert same, f"/best.{field} differs: {x} here vs {y} in {sys.argv[2]}"
    print(f"/best identical to {sys.argv[2]}")
PY
}

echo "--- 1. job scripts parse and fit one node"
node_cpus=$(timeout 10 scontrol show node | grep -o 'CPUTot=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$node_cpus" ] || { echo "FAIL: cannot read CPUTot from scontrol show node"; exit 1; }
sbatch_opt() {  # sbatch_opt FILE OPTION: the value of "#SBATCH --OPTION=VALUE", or empty
  sed -n "s/^#SBATCH --$2=\([^ ]*\).*/\1/p" "$1" | head -1
}
for job in "$SOURCE_DIR"/jobs/*.sbatch; do
  bash -n "$job"
  grep -q '^#SBATCH --job-name=' "$job" || { echo "FAIL: $job has no #SBATCH --job-name"; exit 1; }
  nodes=$(sbatch_opt "$job" nodes)
  ntasks=$(sbatch_opt "$job" ntasks)
  cpt=$(sbatch_opt "$job" cpus-per-task)
  [ "$nodes" = 1 ] || { echo "FAIL: $job asks for --nodes=${nodes:-?}, not 1"; exit 1; }
  [ -n "$ntasks" ] && [ -n "$cpt" ] ||
    { echo "FAIL: $job lacks #SBATCH --ntasks or --cpus-per-task"; exit 1; }
  [ $((ntasks * cpt)) -le "$node_cpus" ] ||
    { echo "FAIL: $job asks for $ntasks x $cpt CPUs, the one node has $node_cpus"; exit 1; }
  grep -q '^# Needs: ONE node' "$job" || { echo "FAIL: $job does not say what it needs"; exit 1; }
  echo "$(basename "$job"): 1 node, $ntasks x $cpt CPUs (node: $node_cpus)"
done

wait_job() {  # wait_job ID: until it leaves the queue; fail on a hopeless PENDING or the limit
  local jid=$1 start=$SECONDS reason
  while timeout 10 squeue -h -j "$jid" 2>/dev/null | grep -q .; do
    reason=$(timeout 10 squeue -h -j "$jid" -o '%T %r' 2>/dev/null || true)
    case $reason in
      "PENDING PartitionConfig"* | "PENDING PartitionNodeLimit"* | "PENDING BadConstraints"*)
        scancel "$jid" || true
        echo "FAIL: job $jid cannot start on this cluster: $reason"
        exit 1 ;;
    esac
    if [ $((SECONDS - start)) -ge "$LIMIT_S" ]; then
      scancel "$jid" || true
      echo "FAIL: job $jid still queued/running after $LIMIT_S s"
      exit 1
    fi
    sleep 0.5
  done
  echo "job $jid left the queue after $((SECONDS - start)) s"
}
check_completed() {  # check_completed ID
  local info
  info=$(scontrol show job "$1")
  echo "$info" | grep -E 'JobState|ExitCode'
  echo "$info" | grep -q 'JobState=COMPLETED' || { echo "FAIL: job $1 did not complete"; exit 1; }
  echo "$info" | grep -q 'ExitCode=0:0' || { echo "FAIL: job $1 exit code is not 0:0"; exit 1; }
}

echo "--- 2. sbatch jobs/search-128-h200.sbatch"
cd "$SOURCE_DIR"  # the job resolves configs/ and results/ against the submit dir
jid=$(timeout 30 sbatch --parsable --output="$RESULTS/slurm-%x-%j.out" \
        jobs/search-128-h200.sbatch)
echo "job $jid submitted"
wait_job "$jid"
cat "$RESULTS"/slurm-search-128-h200-"$jid".out || true
check_completed "$jid"
shopt -s nullglob
h5s=("$RESULTS"/*_search-128-h200_"$jid"/*.h5)
[ "${#h5s[@]}" -eq 1 ] || { echo "FAIL: expected one .h5 in $RESULTS/*_$jid, found ${#h5s[@]}"; exit 1; }
job_h5=${h5s[0]}
check_h5 "$job_h5"
[ -s "$(dirname "$job_h5")/ranked.txt" ] || { echo "FAIL: ranked.txt missing or empty"; exit 1; }

echo "--- 3. srun -n 2 --mpi=pmix ppsearch --gpus 128"
srun_h5=$RESULTS/srun_np2.h5
timeout "$LIMIT_S" srun -n 2 --mpi=pmix "$PPSEARCH" --gpus 128 --output "$srun_h5" \
  --overwrite --quiet
check_h5 "$srun_h5" "$job_h5"

echo "--- 4. sbatch jobs/sweep-64-1024.sbatch (one node)"
jid=$(timeout 30 sbatch --parsable --output="$RESULTS/slurm-%x-%j.out" jobs/sweep-64-1024.sbatch)
echo "job $jid submitted"
wait_job "$jid"
head -3 "$RESULTS"/slurm-sweep-64-1024-"$jid".out || true
check_completed "$jid"
h5s=("$RESULTS"/*_sweep-64-1024_"$jid"/*.h5)
[ "${#h5s[@]}" -eq 1 ] || { echo "FAIL: expected one .h5 in $RESULTS/*_$jid, found ${#h5s[@]}"; exit 1; }
/usr/bin/python3 - "${h5s[0]}" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    gpus = [int(g) for g in f["best"]["gpus"]]
assert gpus == list(range(64, 1025, 16)), f"/best gpus: {gpus}"
print(f"{sys.argv[1]}: /best has the {len(gpus)} sizes 64..1024")
PY

echo "--- 5. srun -n 2 --mpi=pmix ppsearch-probe, then ppsearch --cluster the INI it wrote"
if [ -x "${PPSEARCH_PROBE:-}" ]; then
  probe_ini=$RESULTS/probe.ini
  timeout "$LIMIT_S" srun -n 2 --mpi=pmix "$PPSEARCH_PROBE" --output "$probe_ini" \
    --max-bytes 1048576 --iters 3 || { echo "FAIL: srun ppsearch-probe"; exit 1; }
  grep -Eq '^nvlink_(efficiency|bandwidth_gb_per_s) = .*# measured' "$probe_ini" ||
    { echo "FAIL: $probe_ini has no measured intra-node bandwidth"; cat "$probe_ini"; exit 1; }
  timeout "$LIMIT_S" "$PPSEARCH" --gpus 128 --cluster "$probe_ini" --quiet \
    --output "$RESULTS/probe_search.h5" || { echo "FAIL: ppsearch --cluster $probe_ini"; exit 1; }
  check_h5 "$RESULTS/probe_search.h5"
  echo "slurm: 4 passed, 0 failed (sbatch search, srun, sbatch sweep, srun probe)"
else
  echo "note: PPSEARCH_PROBE not built; step 5 skipped"
  echo "slurm: 3 passed, 0 failed (sbatch search, srun, sbatch sweep)"
fi
