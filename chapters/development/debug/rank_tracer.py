#!/usr/bin/env python
"""Run a Python script and write every line it executes, prefixed with the rank, to one file per rank.

    torchrun --nproc_per_node 2 rank_tracer.py --out traces -- train.py --lr 1e-4
    tail -n 3 traces/trace-rank*.txt          # where did each rank stop?

Only lines of files under --only (default: the folder of the traced script) are
written, so the libraries stay silent. Lines go to traces/trace-rank<RANK>.txt,
flushed one by one, so the last line of a hung or killed rank is on disk. The rank
comes from the RANK variable that torchrun and most launchers set (0 without it).
Tracing every line makes the program many times slower: use it on a small reproduction.
Inside a program, `with trace_lines("traces"):` traces one block instead.
"""
from __future__ import annotations

import argparse
import linecache
import os
import runpy
import sys
import threading
from contextlib import contextmanager
from pathlib import Path


class RankTracer:
    """A sys.settrace function writing `[rank N] file:line: source` for the files under `roots`."""

    def __init__(self, out_dir: Path, roots: list[Path], rank: int | None = None):
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        self.roots = tuple(str(root.resolve()) + os.sep for root in roots)
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = out_dir / f"trace-rank{self.rank}.txt"
        self.file = self.path.open("w", buffering=1)  # line-buffered: the last line survives a kill
        self.wanted: dict[str, bool] = {}
        self.here = str(Path(__file__).resolve())

    def is_wanted(self, filename: str) -> bool:
        if filename not in self.wanted:
            real = os.path.realpath(filename)  # "<frozen ...>" and "<string>" are no files
            self.wanted[filename] = not filename.startswith("<") and real != self.here and real.startswith(self.roots)
        return self.wanted[filename]

    def global_trace(self, frame, event, arg):
        # Called on each new frame: trace its lines only when it runs one of our files.
        return self.local_trace if self.is_wanted(frame.f_code.co_filename) else None

    def local_trace(self, frame, event, arg):
        if event == "line":
            filename = frame.f_code.co_filename
            source = linecache.getline(filename, frame.f_lineno).strip()
            self.file.write(f"[rank {self.rank}] {os.path.basename(filename)}:{frame.f_lineno}: {source}\n")
        return self.local_trace

    def start(self) -> None:
        threading.settrace(self.global_trace)
        sys.settrace(self.global_trace)

    def stop(self) -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        self.file.close()


@contextmanager
def trace_lines(out_dir: str | Path, only: list[str | Path] | None = None):
    """Trace the lines run inside the block (default: the files under the current folder)."""
    tracer = RankTracer(Path(out_dir), [Path(p) for p in (only or [Path.cwd()])])
    tracer.start()
    try:
        yield tracer
    finally:
        tracer.stop()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rank_tracer.py", description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s [--out DIR] [--only PATH ...] -- SCRIPT [ARGS ...]")
    parser.add_argument("--out", type=Path, default=Path("traces"), help="folder of the trace files (default: traces)")
    parser.add_argument("--only", type=Path, action="append",
                        help="trace only files under this path (repeatable; default: the script's folder)")
    parser.add_argument("script", type=Path, help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.script.is_file():
        print(f"error: {args.script}: no such script", file=sys.stderr)
        return 2
    tracer = RankTracer(args.out, args.only or [args.script.resolve().parent])
    sys.argv = [str(args.script), *args.args]
    sys.path.insert(0, str(args.script.resolve().parent))
    tracer.start()
    try:
        runpy.run_path(str(args.script), run_name="__main__")
    finally:
        tracer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
