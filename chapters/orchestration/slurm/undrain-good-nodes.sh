#!/usr/bin/env bash
# undrain-good-nodes.sh: return drained Slurm nodes to service, but only those that pass a health check.
#
# Slurm drains a node for many reasons: an admin asked for it, a job's processes would not die in time
# ("Kill task failed"), a prolog or health-check script failed, the node rebooted unexpectedly. Some of
# these clear by themselves and some mean broken hardware. Resuming every drained node puts the broken ones
# back in the pool, where the next job fails on them; resuming none wastes healthy machines. This script
# checks each drained node first and resumes only the ones that pass.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: undrain-good-nodes.sh [--dry-run] [--check CMD] [--partition NAME] [--reason REGEX] [--timeout SEC]

Find drained nodes (sinfo), run a health check for each, and resume (scontrol update state=resume) only
the nodes whose check exits 0. Nodes that are still draining (a job still runs there) are left alone.

  --check CMD       the health check, run by bash once per node; {node} in CMD is replaced by the node
                    name, and the name is also in $NODE. Default:
                    ssh -o BatchMode=yes -o ConnectTimeout=10 {node} true
                    (reachable and able to start a process). On GPU nodes something like
                    "ssh {node} nvidia-smi --query-gpu=name --format=csv,noheader" checks the GPUs too.
  --partition NAME  only look at nodes of this partition
  --reason REGEX    only consider nodes whose drain reason matches REGEX (grep -E), for example
                    'Kill task failed|Not responding'; nodes drained for other reasons are skipped
  --timeout SEC     give each check at most SEC seconds (default: 60); a check that times out fails
  --dry-run         run the checks and print what would be resumed, change nothing
  -h, --help        show this help

Exit status: 0 when every drained node considered was healthy (or there was none), 1 when some nodes
failed their check and stay drained, 2 on a usage error.
EOF
}

check='ssh -o BatchMode=yes -o ConnectTimeout=10 {node} true'
partition=''
reason_re=''
timeout_s=60
dry_run=0

while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=${2:?--check needs a command}; shift 2 ;;
    --partition) partition=${2:?--partition needs a name}; shift 2 ;;
    --reason) reason_re=${2:?--reason needs a pattern}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "undrain-good-nodes.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

case "$timeout_s" in '' | *[!0-9]*) echo "undrain-good-nodes.sh: --timeout wants whole seconds" >&2; exit 2 ;; esac

sinfo_args=(--noheader --Node --states=drained --format='%N|%E')
[ -n "$partition" ] && sinfo_args+=(--partition="$partition")

# One line per drained node: "name|reason". With --Node a node in several partitions is listed once per
# partition, hence sort -u. "drained" does not include "draining": those still run a job.
mapfile -t drained < <(sinfo "${sinfo_args[@]}" | sort -u)

if [ ${#drained[@]} -eq 0 ]; then
  echo "no drained nodes${partition:+ in partition $partition}"
  exit 0
fi

bad=0
resumed=0
skipped=0
for line in "${drained[@]}"; do
  node=${line%%|*}
  reason=${line#*|}
  if [ -n "$reason_re" ] && ! grep -qE -- "$reason_re" <<< "$reason"; then
    echo "$node: drained ($reason): reason does not match '$reason_re', skipped"
    skipped=$((skipped + 1))
    continue
  fi
  cmd=${check//\{node\}/$node}
  # The check runs in its own bash with the node name in $NODE; `timeout` stops a hung ssh.
  if NODE=$node timeout "$timeout_s" bash -c "$cmd" < /dev/null > /dev/null 2>&1; then
    if [ "$dry_run" -eq 1 ]; then
      echo "$node: drained ($reason): healthy, would resume (dry run)"
    else
      scontrol update nodename="$node" state=resume
      echo "$node: drained ($reason): healthy, resumed"
    fi
    resumed=$((resumed + 1))
  else
    echo "$node: drained ($reason): health check failed (exit $?), left drained"
    bad=$((bad + 1))
  fi
done

echo "summary: ${#drained[@]} drained, $skipped skipped, $resumed healthy$([ "$dry_run" -eq 1 ] && echo ' (dry run)'), $bad failed the check"
[ "$bad" -eq 0 ]
