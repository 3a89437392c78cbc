#!/usr/bin/env python
"""Group the stack dumps of many ranks by where their main thread is, and name the odd ranks out.

    python stack_diff.py stacks/                       # every file in stacks/ (py-spy or faulthandler dumps)
    python stack_diff.py rank0.txt rank1.txt ...       # or the files themselves
    python stack_diff.py demo --ranks 4 --odd 2 --out stacks   # make a hung 4-rank job, dump it, compare

A hung job with hundreds of ranks leaves hundreds of dumps, and what matters is the few
that differ from the rest. This script reads dumps written by `py-spy dump` (also as
written by pyspy_all_ranks.py) or by Python's faulthandler (dump_traceback or
dump_traceback_later), takes the main thread of each (the thread whose outermost frame
is <module>), groups ranks whose stacks are the same function by function, and for every
rank outside the largest group prints where its stack leaves the majority's. A rank's
number comes from a line "rank N" in the file, else from "rank<N>" in the file name.

`demo` starts --ranks processes over gloo on this machine; all but rank --odd enter an
all-reduce that rank --odd never calls. Each rank writes its own stacks with
faulthandler.dump_traceback_later after --after seconds, the launcher kills the job
and then compares the dumps, as you would after a real hang.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PYSPY_THREAD = re.compile(r'^Thread (\S+) \((\w+)\)(?:: "(.*)")?')
PYSPY_FRAME = re.compile(r"^\s+(\S.*?) \((.+?):(\d+)\)\s*$")
FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+) \(most recent call first\):")
FH_FRAME = re.compile(r'^\s+File "(.+?)", line (\d+) in (\S+)')
RANK_IN_TEXT = re.compile(r"\brank[ =:]+(\d+)\b")
RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)")


@dataclass
class Frame:
    function: str
    file: str
    line: int

    def key(self, with_lines: bool) -> tuple:
        return (self.function, Path(self.file).name) + ((self.line,) if with_lines else ())

    def __str__(self) -> str:
        return f"{self.function} ({Path(self.file).name}:{self.line})"


@dataclass
class Thread:
    name: str
    frames: list[Frame] = field(default_factory=list)  # innermost first, as both tools print them


def parse_threads(text: str) -> list[Thread]:
    """All threads of one dump, in py-spy's or faulthandler's format."""
    threads: list[Thread] = []
    for line in text.splitlines():
        if m := PYSPY_THREAD.match(line):
            threads.append(Thread(m[3] or m[1]))
        elif m := FH_THREAD.match(line):
            threads.append(Thread(m[2]))
        elif threads and (m := PYSPY_FRAME.match(line)):
            threads[-1].frames.append(Frame(m[1], m[2], int(m[3])))
        elif threads and (m := FH_FRAME.match(line)):
            threads[-1].frames.append(Frame(m[3], m[1], int(m[2])))
    return [t for t in threads if t.frames]


def main_thread(threads: list[Thread]) -> Thread | None:
    """The thread that runs the script: named MainThread by py-spy, else the one whose outermost frame is <module>."""
    for thread in threads:
        if thread.name == "MainThread":
            return thread
    for thread in threads:
        if thread.frames[-1].function == "<module>":
            return thread
    return threads[0] if threads else None


def rank_of(path: Path, text: str) -> int | None:
    if m := RANK_IN_TEXT.search(text[:2000]):
        return int(m[1])
    if m := RANK_IN_NAME.search(path.name):
        return int(m[1])
    return None


def load(paths: list[Path]) -> dict[int, Thread]:
    """rank -> main thread, for every readable dump; files without a rank or a stack are reported and skipped."""
    files: list[Path] = []
    for path in paths:
        files += sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    stacks: dict[int, Thread] = {}
    for path in files:
        text = path.read_text(errors="replace")
        rank, thread = rank_of(path, text), main_thread(parse_threads(text))
        if rank is None or thread is None:
            print(f"skipped {path}: {'no rank' if rank is None else 'no stack'} found in it", file=sys.stderr)
            continue
        if rank in stacks:
            print(f"skipped {path}: a second dump of rank {rank}", file=sys.stderr)
            continue
        stacks[rank] = thread
    return stacks


def ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out, start = [], None
    for i, r in enumerate(sorted(ranks)):
        if start is None:
            start = r
        if i + 1 == len(ranks) or sorted(ranks)[i + 1] != r + 1:
            out.append(f"{start}-{r}" if r != start else f"{r}")
            start = None
    return ",".join(out)


def divergence(odd: list[Frame], common: list[Frame], with_lines: bool) -> tuple[int, Frame | None, Frame | None]:
    """Walk both stacks from the outermost frame in; return the depth where they part and the two frames there."""
    a, b = list(reversed(odd)), list(reversed(common))
    depth = 0
    while depth < min(len(a), len(b)) and a[depth].key(with_lines) == b[depth].key(with_lines):
        depth += 1
    return depth, (a[depth] if depth < len(a) else None), (b[depth] if depth < len(b) else None)


def report(stacks: dict[int, Thread], with_lines: bool = False, depth: int = 6) -> str:
    groups: dict[tuple, list[int]] = defaultdict(list)
    for rank, thread in stacks.items():
        groups[tuple(f.key(with_lines) for f in thread.frames)].append(rank)
    ordered = sorted(groups.values(), key=lambda rs: (-len(rs), min(rs)))
    lines = [f"{len(stacks)} ranks, {len(ordered)} distinct main-thread stack(s)"]
    tie = len(ordered) > 1 and len(ordered[0]) == len(ordered[1])
    base = "the group of the lowest rank" if tie else "the majority"
    for i, ranks in enumerate(ordered):
        frames = stacks[ranks[0]].frames
        if len(ordered) == 1:
            label = "all ranks"
        else:
            label = f"group {i + 1}" if tie else ("majority" if i == 0 else "different")
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranges(ranks)} ({len(ranks)})"
        lines.append(f"\n[{label}] {who}: innermost first")
        lines += [f"    {f}" for f in frames[:depth]] + (["    ..."] if len(frames) > depth else [])
    if len(ordered) > 1:
        common = stacks[ordered[0][0]].frames
        if tie:
            lines.append("\nno single majority: the groups are compared with the first one, which holds the lowest rank")
        lines.append(f"\nodd ranks out, and where they leave the stack of {base}:")
        for ranks in ordered[1:]:
            level, mine, theirs = divergence(stacks[ranks[0]].frames, common, with_lines)
            parent = list(reversed(common))[level - 1] if level else None
            where = f"inside {parent.function}" if parent else "at the outermost frame"
            who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranges(ranks)}"
            lines.append(f"  {who}: parts from it {where}: here {mine or 'nothing deeper'}, "
                         f"there {theirs or 'nothing deeper'}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- demo
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load_next_shard(seconds: float) -> None:
    """The odd rank's detour: busy with something else while the others wait for it."""
    time.sleep(seconds)


def demo_rank(out: Path, odd: int, after: float) -> None:
    import faulthandler
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    dump = open(out / f"stacks-rank{rank}.txt", "w")  # kept open until the process is killed
    dist.init_process_group("gloo")
    tensor = torch.ones(4)
    dist.all_reduce(tensor)  # every rank takes part in the first one
    faulthandler.dump_traceback_later(after, file=dump)
    if rank == odd:
        load_next_shard(after * 20)
    else:
        dist.all_reduce(tensor)  # waits for the odd rank, which never comes
    time.sleep(after * 20)


def run_demo(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("stacks-rank*.txt"):
        old.unlink()
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "_rank", "--out", str(args.out), "--odd", str(args.odd), "--after", str(args.after)]
    procs = [subprocess.Popen(cmd, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, start_new_session=True)
             for r in range(args.ranks)]
    files = [args.out / f"stacks-rank{r}.txt" for r in range(args.ranks)]
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and not all(f.exists() and "File" in f.read_text() for f in files):
            if any(p.poll() is not None for p in procs):
                print("demo: a rank exited before its stacks were written", file=sys.stderr)
                return 1
            time.sleep(0.2)
        time.sleep(0.3)  # let the last dump finish writing
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    print(f"demo: {args.ranks} ranks, rank {args.odd} skipped the second all-reduce; stacks in {args.out}\n")
    print(report(load([args.out]), args.lines, args.depth))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv and argv[0] in ("demo", "_rank"):
        parser = argparse.ArgumentParser(prog=f"stack_diff.py {argv[0]}", description="Make a hung job and compare its stacks.")
        parser.add_argument("--ranks", type=int, default=4, help="number of ranks (default: 4)")
        parser.add_argument("--odd", type=int, default=2, help="the rank that skips the collective (default: 2)")
        parser.add_argument("--after", type=float, default=3.0, help="seconds before each rank dumps its stacks (default: 3)")
        parser.add_argument("--out", type=Path, default=Path("stacks"), help="folder for the dumps (default: stacks)")
        parser.add_argument("--lines", action="store_true", help="also compare line numbers")
        parser.add_argument("--depth", type=int, default=6, help="frames shown per group (default: 6)")
        args = parser.parse_args(argv[1:])
        args.mode = argv[0]
        if not 2 <= args.ranks <= 16:
            parser.error("--ranks must be between 2 and 16")
        if not 0 <= args.odd < args.ranks:
            parser.error(f"--odd must be a rank between 0 and {args.ranks - 1}")
        if args.after <= 0:
            parser.error("--after must be positive")
        return args
    parser = argparse.ArgumentParser(prog="stack_diff.py", description=__doc__.split("\n\n")[0],
                                     epilog="`stack_diff.py demo --help` for the demo's options.")
    parser.add_argument("dumps", nargs="+", type=Path, help="dump files, or folders of them")
    parser.add_argument("--lines", action="store_true", help="also compare line numbers, not only functions and files")
    parser.add_argument("--depth", type=int, default=6, help="frames shown per group (default: 6)")
    args = parser.parse_args(argv)
    args.mode = "compare"
    missing = [str(p) for p in args.dumps if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.mode == "_rank":
        demo_rank(args.out, args.odd, args.after)
        return 0
    if args.mode == "demo":
        return run_demo(args)
    stacks = load(args.dumps)
    if not stacks:
        print("error: no dump with a rank and a stack was found", file=sys.stderr)
        return 1
    print(report(stacks, args.lines, args.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
