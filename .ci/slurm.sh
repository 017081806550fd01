#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the test that runs tokperf k8s
# slurm's script through sbatch for real (Debian's slurm-wlm and munge).
#
#   .ci/slurm.sh install   apt-get install slurm-wlm munge (when sbatch is missing)
#   .ci/slurm.sh start     a munge key, munged, slurm.conf, slurmctld and slurmd,
#                          all under $TOKPERF_SLURM_DIR; prints the SLURM_CONF to export
#   .ci/slurm.sh stop      stops what start started (by the pids it wrote) and
#                          removes the directory
#
# Everything lives in TOKPERF_SLURM_DIR (default /tmp/tokperf-slurm): no file
# of the machine's own Slurm or munge is touched. The node is this machine,
# with its CPUs; the daemons run as the user who starts them (root in CI).
set -euo pipefail
dir=${TOKPERF_SLURM_DIR:-/tmp/tokperf-slurm}
ctld_port=${TOKPERF_SLURM_PORT:-16817}
node=$(hostname -s)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi

install() {
  if command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
    return
  fi
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends slurm-wlm munge
}

# pid_alive is whether the pid in file $1 is a running process.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
  for d in slurmd slurmctld munged; do
    f="$dir/$d.pid"
    if pid_alive "$f"; then
      pid=$(cat "$f")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
}

start() {
  if pid_alive "$dir/slurmctld.pid"; then
    echo "slurm.sh: a cluster already runs in $dir (.ci/slurm.sh stop first)" >&2
    exit 1
  fi
  rm -rf "$dir"
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir" "$dir/munge"
  user=$(id -un)
  # munge: a fresh key, a daemon with its own socket.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed"
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
  cat >"$dir/slurm.conf" <<EOF
ClusterName=tokperf
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MinJobAge=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=tokperf Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  # Slurm's own cgroup.conf would be read if absent; the node needs none.
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  # Up once the node is idle.
  for _ in $(seq 100); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -q '^idle'; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return
    fi
    sleep 0.2
  done
  echo "slurm.sh: the node did not come up in 20 s" >&2
  sinfo -N >&2 || true
  tail -n 20 "$dir"/*.log >&2 || true
  stop
  exit 1
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
*)
  echo "usage: .ci/slurm.sh install|start|stop" >&2
  exit 2
  ;;
esac
