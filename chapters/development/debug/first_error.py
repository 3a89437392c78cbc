#!/usr/bin/env python
"""Find the first error of every rank in a job's logs, and tell causes from their echoes.

    python first_error.py logs/                  # every file below logs/ (torchrun --log-dir layout too)
    python first_error.py job.out                # one combined log with [rankN]: or [defaultN]: prefixes
    python first_error.py demo --out logs        # a real 3-rank failure on CPU, then its analysis

When one rank of a distributed job fails, the others fail after it, usually louder: a
collective timeout, a closed connection, a SIGTERM from the launcher. The useful line is
the first error of the rank that failed first, which is rarely the last line of the job
log. This script reads the logs, assigns each line to a rank (a [rankN]: or [defaultN]:
prefix, else "rank N" or a torchrun rank folder in the file's path), finds each rank's
first error line (the exception line of a Python traceback counts, not the traceback
header), classifies it, and separates likely causes (a Python exception, a CUDA error,
an out-of-memory error, a crash) from consequences (timeouts, peers that went away,
signals from the launcher). Ranks that logged no error at all are listed: a silent rank
among ranks that time out is a suspect too.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PREFIX = re.compile(r"^\[(?:rank|default)(\d+)\]:?\s?")
RANK_IN_PATH = re.compile(r"(?:rank[-_]?|/attempt_\d+/)(\d+)(?:/|[-_.]|$)")
# (class, is it a likely cause?, pattern), first match wins
RULES = [
    ("out of memory", True, r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED"),
    ("CUDA error", True, r"CUDA error|illegal memory access|device-side assert|CUBLAS_STATUS|CUDNN_STATUS|"
                         r"cudaError|CUDA driver|no kernel image"),
    ("hardware", True, r"uncorrectable ECC|Xid|fallen off the bus"),
    ("crash", True, r"Segmentation fault|Fatal Python error|SIGSEGV|SIGBUS|SIGILL|core dumped"),
    ("collective timeout", False, r"[Tt]imed? ?out|Watchdog caught collective operation timeout|DistStoreError"),
    ("peer went away", False, r"Connection (?:reset|closed) by peer|Broken pipe|remote (?:worker|process)|"
                              r"ncclRemoteError|communicator was aborted|Socket Timeout"),
    ("stopped by the launcher", False, r"SIGTERM|Signal 15|SIGKILL|Signal 9"),
    ("exception", True, r"^[A-Za-z_][\w.]*(?:Error|Exception)\b|^[A-Za-z_][\w.]*(?:Interrupt|Exit)\b"),
]
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)?: ")


@dataclass
class FirstError:
    rank: int
    source: str
    line_no: int
    text: str
    kind: str
    cause: bool


def classify(text: str) -> tuple[str, bool] | None:
    for kind, cause, pattern in RULES:
        if re.search(pattern, text):
            return kind, cause
    return None


def rank_of_path(path: Path) -> int | None:
    m = RANK_IN_PATH.search(path.as_posix())
    return int(m[1]) if m else None


def scan(paths: list[Path]) -> tuple[dict[int, FirstError], set[int]]:
    """rank -> its first error; and every rank seen in the logs."""
    files: list[Path] = []
    for path in paths:
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    first: dict[int, FirstError] = {}
    seen: set[int] = set()
    in_traceback: dict[int, bool] = {}
    for path in files:
        default_rank = rank_of_path(path)
        for no, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = PREFIX.match(raw)
            rank = int(m[1]) if m else default_rank
            if rank is None:
                continue
            seen.add(rank)
            line = raw[m.end():] if m else raw
            if rank in first:
                continue
            if line.startswith("Traceback (most recent call last)"):
                in_traceback[rank] = True
                continue
            if in_traceback.get(rank):
                if line.startswith((" ", "\t")) or not line.strip() or line.startswith("During handling"):
                    continue
                in_traceback[rank] = False
                if EXCEPTION_LINE.match(line):  # the exception line that ends the traceback
                    kind, cause = classify(line) or ("exception", True)
                    first[rank] = FirstError(rank, str(path), no, line.strip(), kind, cause)
                continue
            found = classify(line)
            if found and (found[0] != "exception" or EXCEPTION_LINE.match(line)):
                first[rank] = FirstError(rank, str(path), no, line.strip(), *found)
    return first, seen


ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)"
                        r".*?traceback\s*:\s*([^\n]*)", re.S)


def launcher_root_cause(paths: list[Path]) -> str | None:
    """torchrun's own summary names the rank whose failure it observed first."""
    for path in paths:
        for f in (sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]):
            if m := ROOT_CAUSE.search(f.read_text(errors="replace")):
                return f"torchrun's root cause: rank {m[1]}, exit code {m[2]}, traceback: {m[3].strip()[:100]}"
    return None


def verdict(first: dict[int, FirstError], seen: set[int], launcher: str | None = None) -> str:
    lines = [f"{len(seen)} ranks in the logs; {len(first)} logged an error"]
    for rank in sorted(first):
        e = first[rank]
        role = "CAUSE?" if e.cause else "echo  "
        lines.append(f"  rank {rank:>3} {role} [{e.kind}] {e.text[:150]}")
        lines.append(f"           {e.source}:{e.line_no}")
    silent = sorted(seen - set(first))
    if silent:
        lines.append(f"  ranks without an error line: {silent}")
    causes = sorted(r for r, e in first.items() if e.cause)
    if launcher:
        lines.append(launcher)
    if causes:
        lines.append(f"look first at rank{'s' if len(causes) > 1 else ''} {causes}: "
                     f"{first[causes[0]].kind}: {first[causes[0]].text[:120]}")
        if len(causes) > 1:
            lines.append("several ranks report a cause: compare their times, or look for what they share (a node, a GPU)")
    elif not seen:
        lines.append("no per-rank log was given: pass the ranks' logs too (torchrun --log-dir, or the job's output)")
    elif silent:
        lines.append(f"no rank reports a cause; the silent ranks {silent} are the suspects "
                     f"(killed, hung, or out of host memory: check dmesg on their nodes)")
    else:
        lines.append("only echoes: the cause was not logged; check the launcher's log, dmesg and the scheduler")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- demo
def demo_rank(bad_rank: int) -> int:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=10))
    rank = dist.get_rank()
    print(f"rank {rank}: step 1 starts", flush=True)
    if rank == bad_rank:
        token, vocab = 50304, 50304
        raise ValueError(f"token id {token} is out of range for a vocabulary of {vocab}")
    dist.all_reduce(torch.ones(4))
    return 0


def run_demo(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(args.ranks),
           "--master_addr", "127.0.0.1", "--master_port", str(port), "--log-dir", str(args.out / "torchrun"),
           "--redirects", "3", __file__, "_rank", "--bad-rank", str(args.bad_rank)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    (args.out / "launcher.log").write_text(run.stdout + run.stderr)
    print(f"demo: torchrun exited with {run.returncode}; logs in {args.out}\n")
    first, seen = scan([args.out / "torchrun"])
    print(verdict(first, seen, launcher_root_cause([args.out / "launcher.log"])))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv[:1] in (["demo"], ["_rank"]):
        parser = argparse.ArgumentParser(prog=f"first_error.py {argv[0]}", description="A real failure to analyse.")
        parser.add_argument("--out", type=Path, default=Path("logs"), help="folder for the logs (default: logs)")
        parser.add_argument("--ranks", type=int, default=3, help="ranks, 2 to 8 (default: 3)")
        parser.add_argument("--bad-rank", type=int, default=1, help="the rank that raises (default: 1)")
        args = parser.parse_args(argv[1:])
        args.mode = argv[0]
        if not 2 <= args.ranks <= 8 or not 0 <= args.bad_rank < args.ranks:
            parser.error("--ranks must be 2 to 8 and --bad-rank one of them")
        return args
    parser = argparse.ArgumentParser(prog="first_error.py", description=__doc__.split("\n\n")[0],
                                     epilog="`first_error.py demo --help` for the demo.")
    parser.add_argument("logs", nargs="+", type=Path, help="log files, or folders searched recursively")
    args = parser.parse_args(argv)
    args.mode = "scan"
    missing = [str(p) for p in args.logs if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.mode == "_rank":
        return demo_rank(args.bad_rank)
    if args.mode == "demo":
        return run_demo(args)
    first, seen = scan(args.logs)
    launcher = launcher_root_cause(args.logs)
    if not seen and not launcher:
        print("error: no line could be assigned to a rank", file=sys.stderr)
        return 1
    print(verdict(first, seen, launcher))
    return 0


if __name__ == "__main__":
    sys.exit(main())
