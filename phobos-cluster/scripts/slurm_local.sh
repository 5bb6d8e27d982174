#!/usr/bin/env bash
# A one-machine Slurm (Debian's slurm-wlm: munged, slurmctld and slurmd on
# this host) for the Slurm test. slurm-wlm comes from scripts/setup.sh (`make
# test` runs it; a test installs nothing); writes its config under $1
# (default /tmp/phobos-slurm); starts the daemons unless they already answer.
# Prints the slurm.conf path on stdout. Exits 2 when Slurm is not installed
# or does not start (the test then skips, saying why).
set -euo pipefail
root="${1:-/tmp/phobos-slurm}"
say() { echo "slurm_local: $*" >&2; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  say "slurm-wlm is not installed (scripts/setup.sh installs it)"; exit 2
fi
mkdir -p "$root/state" "$root/spool" "$root/log"
host="$(hostname -s)"
cpus="$(nproc)"
mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)"
conf="$root/slurm.conf"
cat >"$conf" <<CONF
ClusterName=phobos-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$root/state
SlurmdSpoolDir=$root/spool
SlurmctldPidFile=$root/slurmctld.pid
SlurmdPidFile=$root/slurmd.pid
SlurmctldLogFile=$root/log/slurmctld.log
SlurmdLogFile=$root/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF="$conf"
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  if [ ! -s /etc/munge/munge.key ]; then
    (umask 077; head -c 1024 /dev/urandom >/etc/munge/munge.key); chown munge:munge /etc/munge/munge.key
  fi
  runuser -u munge -- munged >&2 || munged --force >&2 || { say "munged does not start"; exit 2; }
fi
if ! scontrol ping 2>/dev/null | grep -q UP; then
  slurmctld -f "$conf" >&2 || { say "slurmctld does not start"; exit 2; }
  slurmd -f "$conf" >&2 || { say "slurmd does not start"; exit 2; }
  for _ in $(seq 50); do
    scontrol ping 2>/dev/null | grep -q UP && break
    sleep 0.2
  done
fi
for _ in $(seq 100); do
  state="$(sinfo -h -o %t 2>/dev/null | head -n1)"
  case "$state" in idle|mix|alloc) echo "$conf"; exit 0 ;; esac
  sleep 0.2
done
say "the node never became idle (sinfo: ${state:-nothing}); logs in $root/log"; exit 2
