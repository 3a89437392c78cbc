#!/usr/bin/env python
"""Print from many processes without their output interleaving, using a lock file.

When the ranks of a torchrun job print at the same time, their lines (and even
parts of lines) mix on the shared terminal or log file. This module serialises
the printing with an exclusive `fcntl.flock` on a lock file, so one process
writes at a time:

    from multiprocess_print import mprint, output_lock, print_rank

    mprint(f"[rank {rank}] loss={loss:.4f}")    # one call, printed whole

    with output_lock():                          # several prints kept together
        print(f"[rank {rank}] config:")
        for key, value in config.items():
            print(f"    {key} = {value}")

    print_rank(f"step {step}: loss={loss:.4f}")  # only rank 0 prints (ranks=(0,) by default)

The lock is advisory and per machine: it orders the processes on one node that
use the same lock file (by default one per user in the temp dir). Processes on
other nodes write to other terminals or files anyway. Holding the lock makes a
process wait for the others, so use it for diagnostics, not in a hot loop.
POSIX only (Linux, macOS): Windows has no fcntl.

Demo: every process prints a block of lines with a short pause between the
lines, first without the lock (the blocks interleave) and then with it (each
block stays in one piece):

    torchrun --nproc_per_node 2 multiprocess_print.py --lines 4
    python multiprocess_print.py --procs 2 --lines 4      # same, without torchrun or torch
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time


def default_lock_path() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"multiprocess_print-{uid}.lock")


@contextlib.contextmanager
def output_lock(lock_path: str | None = None):
    """Hold an exclusive lock on `lock_path` for the duration of the block; flush stdout/stderr before release."""
    try:
        import fcntl
    except ImportError:  # Windows
        raise RuntimeError("multiprocess_print needs fcntl.flock, which exists on POSIX systems only") from None
    path = lock_path or default_lock_path()
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            fcntl.flock(fh, fcntl.LOCK_UN)


def mprint(*args, lock_path: str | None = None, **kwargs) -> None:
    """print() under the output lock, flushed before the lock is released."""
    kwargs["flush"] = True
    with output_lock(lock_path):
        print(*args, **kwargs)


def current_rank() -> int:
    """The global rank: from torch.distributed when it is initialised, else $RANK (torchrun sets it), else 0."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def print_rank(*args, ranks=(0,), rank: int | None = None, lock_path: str | None = None, **kwargs) -> None:
    """mprint() on the listed global ranks only (default: rank 0); the other ranks print nothing."""
    if (current_rank() if rank is None else rank) in ranks:
        mprint(*args, lock_path=lock_path, **kwargs)


def print_block(rank: int, label: str, lines: int, delay: float) -> None:
    for i in range(1, lines + 1):
        print(f"[rank {rank}] {label} line {i}/{lines}", flush=True)
        time.sleep(delay)


def demo(rank: int, world: int, args: argparse.Namespace, barrier) -> None:
    if "plain" in args.modes:
        barrier()
        if rank == 0:
            mprint("--- without the lock: blocks may interleave ---", lock_path=args.lock_file)
        barrier()
        print_block(rank, "plain", args.lines, args.delay)
    if "locked" in args.modes:
        barrier()
        if rank == 0:
            mprint("--- with output_lock(): each block stays whole ---", lock_path=args.lock_file)
        barrier()
        with output_lock(args.lock_file):
            print_block(rank, "locked", args.lines, args.delay)
    barrier()
    print_rank(f"--- {world} processes done; this line is printed by rank 0 only (print_rank) ---",
               rank=rank, lock_path=args.lock_file)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Demo of non-interleaved printing across processes with a lock file. Under torchrun "
        "every rank takes part; without torchrun --procs processes are started here.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--lines", type=positive_int, default=4, help="lines in each process's block")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between two lines of a block")
    parser.add_argument("--modes", default="plain,locked",
                        help="comma-separated: plain (no lock), locked (output_lock), or both")
    parser.add_argument("--procs", type=positive_int, default=2,
                        help="processes to start when not launched by torchrun")
    parser.add_argument("--lock-file", default=None, help="lock file path (default: one per user in the temp dir)")
    args = parser.parse_args(argv)
    if not 0 <= args.delay <= 10:
        parser.error(f"--delay must be between 0 and 10 seconds, got {args.delay}")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("plain", "locked")]
    if bad or not modes:
        parser.error(f"--modes takes plain, locked or plain,locked; got {args.modes!r}")
    args.modes = modes
    if args.lock_file:
        directory = os.path.dirname(os.path.abspath(args.lock_file))
        if not os.path.isdir(directory):
            parser.error(f"--lock-file: the folder {directory} does not exist")
    return args


def _standalone_worker(rank: int, args: argparse.Namespace, barrier) -> None:
    demo(rank, args.procs, args, barrier.wait)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        try:
            import torch.distributed as dist
        except ImportError:
            print("error: under torchrun the demo synchronises with torch.distributed; install torch",
                  file=sys.stderr)
            return 2
        dist.init_process_group(backend="gloo")
        try:
            demo(dist.get_rank(), dist.get_world_size(), args, dist.barrier)
        finally:
            dist.destroy_process_group()
        return 0

    import multiprocessing as mp

    barrier = mp.Barrier(args.procs)
    procs = [mp.Process(target=_standalone_worker, args=(rank, args, barrier)) for rank in range(args.procs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        print(f"error: {len(failed)} demo process(es) failed (exit codes {failed})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
