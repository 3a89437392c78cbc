#!/usr/bin/env bash
# A two-node Slurm cluster on localhost, for the test suite and for trying the book's Slurm scripts.
#
#   scripts/slurm-cluster.sh up       start munged, slurmctld and two slurmd (nodes n1 and n2); wait until both are idle
#   scripts/slurm-cluster.sh down     cancel every job, then stop only the daemons this script started
#   scripts/slurm-cluster.sh status   say what runs and show sinfo; exit 0 only when the cluster is up
#   scripts/slurm-cluster.sh env      print the `export SLURM_CONF=...` line that points client tools here
#
# It uses Debian's packages (slurm-wlm, munge; `bash scripts/install-system-deps.sh` installs them) and must
# run as root: munged has to be started as the `munge` user and slurmd needs root to start jobs.
# Everything it writes lives under $MLBOOK_SLURM_DIR (default /tmp/mlbook-slurm): the config, a private munge
# key and socket, slurmctld's state, each slurmd's spool, logs and pid files. Outside that directory it only
# adds `127.0.0.1 n1 n2` to /etc/hosts when those names do not resolve; `down` removes that line again.
# Client tools (sinfo, sbatch, ...) find the cluster through SLURM_CONF:
#     eval "$(scripts/slurm-cluster.sh env)"
#
# The configuration is the smallest that runs jobs in a container without systemd or cgroups:
# proctrack/linuxproc, task/none, select/cons_tres with CR_CPU, no accounting. Both slurmd daemons listen on
# 127.0.0.1 on distinct ports and learn which node they are from `slurmd -N`.
set -euo pipefail

STATE=${MLBOOK_SLURM_DIR:-/tmp/mlbook-slurm}
CONF="$STATE/etc/slurm.conf"
NODES=(n1 n2)
CPUS_PER_NODE=${MLBOOK_SLURM_CPUS:-2}
CTLD_PORT=${MLBOOK_SLURM_PORT:-16817}   # slurmd ports follow: 16818 for n1, 16819 for n2
UP_TIMEOUT=${MLBOOK_SLURM_UP_TIMEOUT:-60}
HOSTS_TAG="# mlbook-slurm"
MUNGE_SOCKET="$STATE/munge/munge.socket"

export SLURM_CONF="$CONF"

log() { echo "slurm-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
}

# The pid recorded in a pid file, but only when that process is still alive and is one of ours:
# its command line must mention our state directory (every daemon here is started with a path inside it).
our_pid() {
  local pidfile=$1 pid
  [ -s "$pidfile" ] || return 1
  pid=$(tr -dc '0-9' < "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "$STATE" || return 1
  echo "$pid"
}

munged_pid() { our_pid "$STATE/munge/munged.pid"; }
ctld_pid() { our_pid "$STATE/run/slurmctld.pid"; }
slurmd_pid() { our_pid "$STATE/run/slurmd-$1.pid"; }

write_config() {
  local host node port i=0
  host=$(hostname -s)
  mkdir -p "$STATE/etc" "$STATE/ctld" "$STATE/log" "$STATE/run"
  for node in "${NODES[@]}"; do mkdir -p "$STATE/spool/$node"; done   # slurmd does not create its spool dir
  {
    echo "# Written by scripts/slurm-cluster.sh; rewritten on every 'up'."
    echo "ClusterName=mlbook"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$CTLD_PORT"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$MUNGE_SOCKET"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$STATE/ctld"
    echo "SlurmdSpoolDir=$STATE/spool/%n"
    echo "SlurmctldPidFile=$STATE/run/slurmctld.pid"
    echo "SlurmdPidFile=$STATE/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$STATE/log/slurmctld.log"
    echo "SlurmdLogFile=$STATE/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SchedulerType=sched/backfill"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=60"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=600"
    for node in "${NODES[@]}"; do
      i=$((i + 1))
      port=$((CTLD_PORT + i))
      echo "NodeName=$node NodeAddr=127.0.0.1 Port=$port CPUs=$CPUS_PER_NODE State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } > "$CONF"
}

ensure_hosts() {
  local node missing=()
  for node in "${NODES[@]}"; do
    getent hosts "$node" > /dev/null || missing+=("$node")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "adding '127.0.0.1 ${missing[*]}' to /etc/hosts"
  # Append in place: /etc/hosts is often a bind mount in containers, so it cannot be replaced by a rename.
  echo "127.0.0.1 ${missing[*]} $HOSTS_TAG" >> /etc/hosts
}

undo_hosts() {
  grep -qF "$HOSTS_TAG" /etc/hosts 2>/dev/null || return 0
  local kept
  kept=$(grep -vF "$HOSTS_TAG" /etc/hosts)
  printf '%s\n' "$kept" > /etc/hosts
}

start_munged() {
  munged_pid > /dev/null && return 0
  mkdir -p "$STATE/munge"
  chown munge:munge "$STATE/munge"
  chmod 0755 "$STATE/munge"   # munged wants its socket dir searchable by all, writable only by itself
  if [ ! -s "$STATE/munge/munge.key" ]; then
    # A key of our own, so this cluster never depends on (or disturbs) a system-wide munge setup.
    runuser -u munge -- mungekey --create --keyfile="$STATE/munge/munge.key"
  fi
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  # munged refuses to run as root; it daemonizes itself and writes its pid file.
  runuser -u munge -- munged \
    --socket="$MUNGE_SOCKET" \
    --key-file="$STATE/munge/munge.key" \
    --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/munged.seed"
  local _
  for _ in $(seq 50); do
    munge --socket="$MUNGE_SOCKET" -n 2> /dev/null | unmunge --socket="$MUNGE_SOCKET" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "munged did not answer on $MUNGE_SOCKET; see $STATE/munge/munged.log"
}

start_slurmctld() {
  ctld_pid > /dev/null && return 0
  # -c: start from a clean state (no jobs, no drained nodes left over from an earlier run).
  slurmctld -c -f "$CONF"
}

start_slurmd() {
  local node=$1
  slurmd_pid "$node" > /dev/null && return 0
  slurmd -N "$node" -f "$CONF"
}

node_states() {
  sinfo -h -N -o '%N %t' 2> /dev/null | sort -u
}

all_idle() {
  local states node
  states=$(node_states) || return 1
  for node in "${NODES[@]}"; do
    grep -qx "$node idle" <<< "$states" || return 1
  done
}

is_up() {
  munged_pid > /dev/null && ctld_pid > /dev/null || return 1
  local node
  for node in "${NODES[@]}"; do slurmd_pid "$node" > /dev/null || return 1; done
  sinfo -h > /dev/null 2>&1
}

cmd_up() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (munged runs as the munge user, slurmd as root)"
  if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
    die "slurm-wlm and munge are not installed; run: bash scripts/install-system-deps.sh"
  fi
  if is_up; then
    log "already up ($CONF)"
    return 0
  fi
  local t0=$SECONDS node
  mkdir -p "$STATE"
  # Write the config only when nothing of ours runs yet, so a half-up cluster is completed, not reconfigured.
  if ! ctld_pid > /dev/null; then write_config; fi
  ensure_hosts
  start_munged
  start_slurmctld
  for node in "${NODES[@]}"; do start_slurmd "$node"; done
  until all_idle; do
    if [ $((SECONDS - t0)) -ge "$UP_TIMEOUT" ]; then
      node_states >&2 || true
      die "nodes not idle after ${UP_TIMEOUT}s; logs are in $STATE/log"
    fi
    sleep 0.5
  done
  log "up in $((SECONDS - t0))s; client tools need: export SLURM_CONF=$CONF"
}

# Send TERM to every pid given, wait up to 10 s for all of them, then KILL what is left.
stop_pids() {
  local pid alive _
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2> /dev/null || true
  for _ in $(seq 100); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2> /dev/null && alive=1; done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2> /dev/null || true
}

# slurmstepd processes that hold a file under our state dir (their spool sockets): started by our slurmd.
our_stepds() {
  local pid fd
  for pid in $(pgrep -x slurmstepd 2> /dev/null || true); do
    for fd in "/proc/$pid/fd/"*; do
      case "$(readlink "$fd" 2> /dev/null)" in
        "$STATE"/*) echo "$pid"; break ;;
      esac
    done
  done
}

cmd_down() {
  local pid node ids _ pids=()
  if ctld_pid > /dev/null; then
    # Cancel jobs first: otherwise slurmstepd and the job's processes outlive the daemons.
    ids=$(squeue -h -o '%i' 2> /dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086  # one argument per job id
      scancel $ids 2> /dev/null || true
      for _ in $(seq 30); do
        [ -z "$(squeue -h -o '%i' 2> /dev/null)" ] && break
        sleep 0.5
      done
    fi
  fi
  # Compute nodes first, then the controller, munged last (the others authenticate through it).
  for node in "${NODES[@]}"; do
    if pid=$(slurmd_pid "$node"); then pids+=("$pid"); fi
  done
  for pid in $(our_stepds); do pids+=("$pid"); done
  stop_pids "${pids[@]}"
  if pid=$(ctld_pid); then stop_pids "$pid"; fi
  if pid=$(munged_pid); then stop_pids "$pid"; fi
  undo_hosts
  log "down"
}

cmd_status() {
  local node state=0 pid
  if pid=$(munged_pid); then echo "munged     running (pid $pid)"; else echo "munged     stopped"; state=1; fi
  if pid=$(ctld_pid); then echo "slurmctld  running (pid $pid)"; else echo "slurmctld  stopped"; state=1; fi
  for node in "${NODES[@]}"; do
    if pid=$(slurmd_pid "$node"); then echo "slurmd $node  running (pid $pid)"; else echo "slurmd $node  stopped"; state=1; fi
  done
  echo "SLURM_CONF=$CONF"
  if [ "$state" -eq 0 ]; then sinfo -N -l || state=1; fi
  return "$state"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
