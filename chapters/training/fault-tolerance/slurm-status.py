#!/usr/bin/env python
"""Check that a Slurm partition has enough usable nodes, and say which nodes are not usable and why.

A long training run needs a fixed number of nodes. When nodes go down or get drained faster than they
come back, the next restart of the job will wait in the queue, possibly for days, and nobody notices until
someone looks. Run this periodically (slurm-status.slurm does) and it exits non-zero, and runs an alert
command if you give one, as soon as fewer than --min-nodes nodes are usable.

Examples:

    slurm-status.py                                  # every partition; all of its nodes must be usable
    slurm-status.py --partition gpu --min-nodes 64   # the training partition; 64 usable nodes needed
    slurm-status.py --partition gpu --min-nodes 64 --alert-cmd 'mail -s "slurm: nodes missing" me@example.com'
    slurm-status.py --json                           # the same facts for another program

A node counts as usable when its state is idle, mixed, allocated, completing or planned and it carries no
flag that stops new work (* not responding, ~ powered off, # powering up, ! or % powering down,
$ maintenance, @ or ^ reboot). Drained, draining, down, failing and the rest count as unusable.
Exit status: 0 when every partition checked has at least --min-nodes usable nodes, 1 when one has fewer,
2 when sinfo fails (the controller cannot be reached, for example) or the partition does not exist.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field

USABLE_STATES = {"idle", "mixed", "allocated", "allocated+", "completing", "planned"}
# Suffixes sinfo appends to a state; '-' (planned by the backfill scheduler) is harmless, the others are not.
BLOCKING_FLAGS = {"*": "not responding", "~": "powered off", "#": "powering up", "!": "pending power down",
                  "%": "powering down", "$": "maintenance", "@": "pending reboot", "^": "rebooting"}
HARMLESS_FLAGS = {"-"}


@dataclass
class Node:
    name: str
    state: str
    reason: str
    usable: bool


@dataclass
class Partition:
    name: str
    nodes: list[Node] = field(default_factory=list)

    @property
    def usable(self) -> list[Node]:
        return [n for n in self.nodes if n.usable]

    @property
    def unusable(self) -> list[Node]:
        return [n for n in self.nodes if not n.usable]


def is_usable(state: str) -> bool:
    """Whether a node in this sinfo %T state (e.g. 'idle', 'drained', 'idle*', 'mixed-') takes new work."""
    state = state.strip().lower()
    while state and (state[-1] in BLOCKING_FLAGS or state[-1] in HARMLESS_FLAGS):
        if state[-1] in BLOCKING_FLAGS:
            return False
        state = state[:-1]
    return state in USABLE_STATES


def parse_sinfo(text: str) -> dict[str, Partition]:
    """Parse `sinfo --noheader --Node --format='%N|%P|%T|%E'` output into partitions."""
    parts: dict[str, Partition] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, part, state, reason = (line.split("|", 3) + ["", "", ""])[:4]
        part = part.rstrip("*")  # sinfo marks the default partition with a star
        reason = "" if reason.strip() in ("", "none", "(null)") else reason.strip()
        p = parts.setdefault(part, Partition(part))
        if all(n.name != name for n in p.nodes):
            p.nodes.append(Node(name, state.strip(), reason, is_usable(state)))
    return parts


def run_sinfo(partition: str | None) -> str:
    sinfo = shutil.which("sinfo")
    if sinfo is None:
        raise RuntimeError("sinfo is not installed or not on PATH")
    cmd = [sinfo, "--noheader", "--Node", "--format=%N|%P|%T|%E"]
    if partition:
        cmd.append(f"--partition={partition}")
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"sinfo failed (exit {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def report(parts: dict[str, Partition], min_nodes: int | None) -> tuple[str, bool]:
    """A human-readable report and whether every partition has enough usable nodes."""
    lines, ok = [], True
    for p in sorted(parts.values(), key=lambda p: p.name):
        need = len(p.nodes) if min_nodes is None else min_nodes
        enough = len(p.usable) >= need
        ok &= enough
        verdict = "ok" if enough else f"PROBLEM: {need - len(p.usable)} short"
        lines.append(f"partition {p.name}: {len(p.usable)} of {len(p.nodes)} nodes usable, need {need}: {verdict}")
        for n in p.unusable:
            lines.append(f"  {n.name:<12} {n.state:<12} {('reason: ' + n.reason) if n.reason else ''}".rstrip())
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], epilog=doc.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partition", "-p", help="the partition to check (default: every partition)")
    ap.add_argument("--min-nodes", "-n", type=int, default=None,
                    help="usable nodes needed in each partition checked (default: all of its nodes)")
    ap.add_argument("--alert-cmd", help="shell command to run when there is a problem; gets the report on stdin")
    ap.add_argument("--json", action="store_true", help="print a JSON summary instead of the text report")
    ap.add_argument("--quiet", "-q", action="store_true", help="print nothing when all is well")
    args = ap.parse_args(argv)

    try:
        parts = parse_sinfo(run_sinfo(args.partition))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        text, ok, code = f"slurm-status: cannot get the node states: {e}", False, 2
        parts = {}
    else:
        if not parts:
            text, ok, code = f"slurm-status: no nodes found{' in partition ' + args.partition if args.partition else ''}", False, 2
        else:
            text, ok = report(parts, args.min_nodes)
            code = 0 if ok else 1

    if args.json:
        print(json.dumps({
            "ok": ok,
            "exit_code": code,
            "min_nodes": args.min_nodes,
            "partitions": {name: {"total": len(p.nodes), "usable": len(p.usable),
                                  "unusable": [asdict(n) for n in p.unusable]} for name, p in parts.items()},
            "message": text if code == 2 else None,
        }, indent=2))
    elif not (ok and args.quiet):
        print(text, file=sys.stderr if code == 2 else sys.stdout)
    if not ok and args.alert_cmd:
        subprocess.run(args.alert_cmd, shell=True, input=text + "\n", text=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
