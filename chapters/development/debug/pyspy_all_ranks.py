#!/usr/bin/env python
"""Dump the Python stack of every process of a job on this node with py-spy, one block per rank.

    python pyspy_all_ranks.py --pattern train.py              # print every dump
    python pyspy_all_ranks.py --pattern train.py --out stacks # one file per process in stacks/

A process belongs to the job when its command line matches --pattern (a regular
expression), or when one of its ancestors does, so the workers that torchrun or
multiprocessing start are found through their launcher. Each dump is headed by the
host, the pid and the RANK/LOCAL_RANK the process was started with. Linux only (/proc).
Run it on every node of a Slurm job with:

    srun --jobid $SLURM_JOB_ID --overlap --ntasks-per-node=1 python pyspy_all_ranks.py --pattern train.py
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pyspy_all_ranks.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pattern", required=True, help="regular expression matched against each command line")
    parser.add_argument("--out", type=Path, help="write one file per process into this folder instead of stdout")
    parser.add_argument("--native", action="store_true", help="also show C/C++ frames (py-spy dump --native)")
    parser.add_argument("--py-spy", dest="py_spy", help="path of the py-spy program (default: next to this Python, then PATH)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed for one dump (default: 60)")
    return parser.parse_args(argv)


def read_proc(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:  # the process ended, or belongs to someone else
        return b""


def command_line(pid: int) -> str:
    return read_proc(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


def parent_of(pid: int) -> int:
    stat = read_proc(pid, "stat").decode(errors="replace")
    fields = stat.rsplit(")", 1)[-1].split()  # the name in parentheses may hold spaces
    return int(fields[1]) if len(fields) > 1 else 0


def launch_env(pid: int) -> dict[str, str]:
    """The environment the process started with (later changes are not visible)."""
    pairs = (item.split(b"=", 1) for item in read_proc(pid, "environ").split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def job_processes(pattern: str) -> list[int]:
    """Pids matching the pattern and all their descendants, without this script and its parents."""
    regex = re.compile(pattern)
    pids = sorted(int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    excluded = {os.getpid()}
    ancestor = os.getppid()
    while ancestor > 1:
        excluded.add(ancestor)
        ancestor = parent_of(ancestor)
    parents = {pid: parent_of(pid) for pid in pids}
    matched = {pid for pid in pids if pid not in excluded and regex.search(command_line(pid))}
    changed = True
    while changed:
        children = {pid for pid, parent in parents.items() if parent in matched and pid not in excluded}
        changed = not children <= matched
        matched |= children
    return sorted(matched)


def find_py_spy(given: str | None) -> str:
    candidates = [given] if given else [str(Path(sys.executable).with_name("py-spy")), shutil.which("py-spy")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("error: py-spy not found: install it with `pip install py-spy` or pass --py-spy PATH")


def dump(py_spy: str, pid: int, native: bool, timeout: float) -> str:
    cmd = [py_spy, "dump", "--pid", str(pid)] + (["--native"] if native else [])
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"py-spy gave no dump within {timeout:g} s\n"
    if result.returncode != 0:
        first = (result.stderr.strip().splitlines() or ["no message"])[0]
        return f"py-spy failed ({first}); a process that is not Python, or a ptrace restriction (see the chapter)\n"
    return result.stdout


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    py_spy = find_py_spy(args.py_spy)
    pids = job_processes(args.pattern)
    host = socket.gethostname()
    if not pids:
        print(f"{host}: no process matches {args.pattern!r}", file=sys.stderr)
        return 1
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    for pid in pids:
        env = launch_env(pid)
        rank = env.get("RANK", "?")
        header = f"=== {host} pid {pid} rank {rank} local_rank {env.get('LOCAL_RANK', '?')}: {command_line(pid)[:200]}\n"
        text = header + dump(py_spy, pid, args.native, args.timeout)
        if args.out:
            (args.out / f"{host}-rank{rank}-pid{pid}.txt").write_text(text)
        else:
            print(text, flush=True)
    if args.out:
        print(f"{host}: wrote {len(pids)} dumps to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
