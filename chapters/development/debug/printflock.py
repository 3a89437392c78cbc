#!/usr/bin/env python3
"""Print from many processes at once without their lines getting mixed up.

When several processes (for example the ranks started by torchrun) write to the
same terminal or log file, a long line from one of them can be cut in the middle
by a line from another. `printflock` takes an exclusive advisory lock with
`fcntl.flock` before printing and releases it after the text has been flushed,
so each call reaches the output in one piece.

Use it as a drop-in replacement for `print`:

    from printflock import printflock as print
    print(f"[rank {rank}] loss={loss:.4f}")

To keep several prints together, hold the lock over a block:

    with print_lock():
        print("header")
        print("details")

By default the lock is taken on this file itself, which every process on the
node can open. Pass `lock_file=...` (or set PRINTFLOCK_FILE) to use another
path, e.g. when the script lives on a read-only or network filesystem where
flock is not reliable. The lock is advisory and per node: it orders processes
that share a kernel, not processes on different machines.

Run `python printflock.py --help` for a demo that shows the difference.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
from typing import IO, Iterator

__all__ = ["printflock", "print_lock", "default_lock_file"]


def default_lock_file() -> str:
    """The file to lock: $PRINTFLOCK_FILE when set, else this source file."""
    return os.environ.get("PRINTFLOCK_FILE") or os.path.abspath(__file__)


@contextlib.contextmanager
def print_lock(lock_file: str | None = None) -> Iterator[None]:
    """Hold an exclusive flock on `lock_file` for the duration of the block.

    Every call opens the file anew, so the lock also separates threads of one
    process (flock locks belong to the open file description, not the process).
    """
    path = lock_file or default_lock_file()
    # flock works on a read-only descriptor; "a" only creates a missing lock file.
    mode = "r" if os.path.exists(path) else "a"
    with open(path, mode) as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def printflock(*args: object, lock_file: str | None = None, **kwargs) -> None:
    """`print(*args, **kwargs)` under an exclusive file lock, always flushed.

    Accepts everything `print` accepts (sep, end, file) plus `lock_file`.
    """
    stream: IO[str] = kwargs.pop("file", None) or sys.stdout
    kwargs.pop("flush", None)
    with print_lock(lock_file):
        print(*args, file=stream, flush=True, **kwargs)


# ---------------------------------------------------------------- demo
def _worker(idx: int, lines: int, width: int, use_lock: bool, lock_file: str | None) -> None:
    # Each process writes lines made of one letter only, so a mixed line is
    # easy to spot: it contains more than one distinct letter.
    letter = chr(ord("A") + idx % 26)
    for n in range(lines):
        text = f"{letter}{n:04d} " + letter * width
        if use_lock:
            printflock(text, lock_file=lock_file)
        else:
            # Plain print, flushed too, so the only difference is the lock.
            print(text, flush=True)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "Demo: start several processes that print long lines to the same stdout, "
            "with printflock (default) or with plain print (--no-lock). Each line holds "
            "one repeated letter per process, so a line holding two different letters "
            "was cut by another process. Count them with: python printflock.py | awk "
            "'{s=substr($0,1,1); t=$0; gsub(s,\"\",t); if (t !~ /^[0-9]+ $/) bad++} "
            "END {print bad+0, \"mixed lines of\", NR}'"
        )
    )
    parser.add_argument("--procs", type=_positive, default=4, help="number of processes (default: 4)")
    parser.add_argument("--lines", type=_positive, default=20, help="lines per process (default: 20)")
    parser.add_argument(
        "--width",
        type=_positive,
        default=20000,
        help="characters per line (default: 20000, larger than a pipe's atomic write size)",
    )
    parser.add_argument("--no-lock", action="store_true", help="use plain print to see lines interleave")
    parser.add_argument("--lock-file", default=None, help="file to flock (default: this script)")
    args = parser.parse_args(argv)

    import multiprocessing as mp

    sys.stdout.flush()
    ctx = mp.get_context("fork")
    procs = [
        ctx.Process(target=_worker, args=(i, args.lines, args.width, not args.no_lock, args.lock_file))
        for i in range(args.procs)
    ]
    for p in procs:
        p.start()
    failed = 0
    for p in procs:
        p.join()
        failed += p.exitcode != 0
    mode = "plain print" if args.no_lock else f"printflock on {args.lock_file or default_lock_file()}"
    print(
        f"# {args.procs} processes x {args.lines} lines of {args.width} characters, {mode}",
        file=sys.stderr,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
