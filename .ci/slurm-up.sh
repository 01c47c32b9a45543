#!/usr/bin/env bash
# Bring up a one-node Slurm cluster (munge + slurmctld + slurmd) without systemd, as root.
# Usage: slurm-up.sh DIR   (DIR holds slurm.conf, state, spool, logs, pid files; nothing is
# written to /etc/slurm). Prints "export SLURM_CONF=DIR/slurm.conf" last.
# Verified recipe: docs/environment.md §5. Idempotent: daemons a previous run left in
# DIR are stopped first (by PID, slurm-down.sh).
set -euo pipefail
D=$(realpath -m "${1:?usage: slurm-up.sh DIR}")
HERE=$(cd "$(dirname "$0")" && pwd)
bash "$HERE/slurm-down.sh" "$D" >/dev/null 2>&1 || true
rm -rf "$D"/state "$D"/spool
mkdir -p "$D"/{state,spool,log}
NODE=$(hostname -s)
CPUS=${SLURM_FAKE_CPUS:-8}          # more than the real 2: lets srun -n 4/8 run
cat > "$D/slurm.conf" <<CONF
ClusterName=ci
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
MailProg=/bin/true
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
# munge: Debian's postinst made /etc/munge/munge.key; /run/munge normally comes from
# systemd-tmpfiles.
if [ ! -s /etc/munge/munge.key ]; then
  mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key
  chmod 600 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 0755 /run/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged          # daemonizes; pid in /run/munge/munged.pid
  cp /run/munge/munged.pid "$D/munged.pid"      # remember that WE started it
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
fi
munge -n </dev/null | unmunge | grep -q 'STATUS: *Success' || { echo "munge not working" >&2; exit 1; }
slurmctld -f "$SLURM_CONF"          # daemonizes; pid in $D/slurmctld.pid
slurmd -f "$SLURM_CONF"             # daemonizes; pid in $D/slurmd.pid
st=""
for _ in $(seq 300); do
  st=$(sinfo -h -N -o %T 2>/dev/null | head -1 || true)
  [ "$st" = idle ] && break
  sleep 0.2
done
sinfo
if [ "$st" != idle ]; then
  echo "node not idle: $st" >&2
  tail -20 "$D"/log/*.log >&2
  exit 1
fi
echo "export SLURM_CONF=$SLURM_CONF"
