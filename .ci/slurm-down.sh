#!/usr/bin/env bash
# Stop what slurm-up.sh started in DIR, by PID only: slurmd, slurmctld, then munged (only if
# slurm-up.sh started it). All three get SIGTERM first and are then waited for (about 2 s).
# Usage: slurm-down.sh DIR
D=$(realpath -m "${1:?usage: slurm-down.sh DIR}")
if [ -s "$D/slurmctld.pid" ] && kill -0 "$(cat "$D/slurmctld.pid")" 2>/dev/null; then
  SLURM_CONF="$D/slurm.conf" timeout 10 scancel --user=root 2>/dev/null || true
fi
pids=()
for pair in slurmd.pid:slurmd slurmctld.pid:slurmctld munged.pid:munged; do
  f="$D/${pair%%:*}"
  comm=${pair#*:}
  [ -s "$f" ] || continue
  p=$(cat "$f")
  if kill -0 "$p" 2>/dev/null && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ]; then
    kill -TERM "$p" && pids+=("$p")
  fi
  rm -f "$f"
done
for p in "${pids[@]}"; do
  for _ in $(seq 100); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$p" 2>/dev/null && kill -KILL "$p"
done
exit 0
