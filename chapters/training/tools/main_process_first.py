#!/usr/bin/env python
"""Let rank 0 run a block of code first while the other ranks wait, then let them run it.

The typical use is work whose result every rank needs and which should be done
once: downloading or preprocessing a dataset, building a tokenizer cache,
compiling a kernel. Rank 0 runs the block and writes the result; the other
ranks wait at a barrier and then run the same block, which now finds the result
ready (a cache hit) instead of doing the work again or racing on the same files.

    from main_process_first import main_process_first

    with main_process_first(local=True):
        dataset = load_or_build_dataset(cache_dir)

`local=True` makes local rank 0 of every node go first: right when the result is
written to node-local storage (/tmp, a local NVMe), where each node needs its
own copy. `local=False` makes only global rank 0 go first: right when the
result lands on a file system shared by all nodes. When torch.distributed is
not initialised (a single-process run) the block simply runs.

The barrier is collective: every rank of the job must enter the block, or the
others wait forever (until the process group's timeout).

Demo (2 processes on one machine, gloo backend, no GPU needed):

    torchrun --nproc_per_node 2 main_process_first.py --work-seconds 1

Every rank prints when it enters and leaves the block and whether it found the
cache; rank 0 builds it (a cache miss) and the others only start once it has
finished (cache hits). `python main_process_first.py` without torchrun runs the
demo as a single process.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time


@contextlib.contextmanager
def main_process_first(local: bool = True, desc: str = "work"):
    """Run the with-block on rank 0 first (local rank 0 if `local`), then on every other rank.

    Non-main ranks wait at `torch.distributed.barrier()` before the block; the
    main rank reaches the same barrier after its block, which releases them.
    The main rank passes that barrier even when its block raises, so the others
    never hang on it; the exception then propagates on the main rank as usual.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        yield
        return
    if local:
        if "LOCAL_RANK" not in os.environ:
            raise RuntimeError(
                "main_process_first(local=True) needs the LOCAL_RANK environment variable, which torchrun "
                "sets; set it in your launcher or use local=False"
            )
        rank = int(os.environ["LOCAL_RANK"])
    else:
        rank = dist.get_rank()
    is_main = rank == 0
    if not is_main:
        dist.barrier()  # wait until the main process(es) finished `desc`
    try:
        yield
    finally:
        if is_main:
            dist.barrier()  # release the waiting ranks


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Demo of main_process_first(): rank 0 builds a cache file while the other ranks wait, "
        "then they load it. Launch with: torchrun --nproc_per_node 2 main_process_first.py",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--work-seconds", type=float, default=1.0,
                        help="how long building the cache takes (simulated with sleep), in seconds")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--local", dest="local", action="store_true", default=True,
                       help="local rank 0 of each node goes first (node-local cache)")
    scope.add_argument("--global", dest="local", action="store_false",
                       help="only global rank 0 goes first (cache on a shared file system)")
    parser.add_argument("--cache-dir", default=None,
                        help="where the demo writes its cache file (default: a folder in the temp dir)")
    parser.add_argument("--keep-cache", action="store_true",
                        help="do not delete an existing cache file first (then every rank gets a cache hit)")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"],
                        help="torch.distributed backend; gloo needs no GPU")
    args = parser.parse_args(argv)
    if not 0 <= args.work_seconds <= 3600:
        parser.error(f"--work-seconds must be between 0 and 3600, got {args.work_seconds}")
    return args


def log(rank: int, message: str) -> None:
    # one write per line keeps lines whole; see multiprocess_print.py for whole blocks
    sys.stdout.write(f"[rank {rank}] t={time.time():.3f} {message}\n")
    sys.stdout.flush()


def build_or_load(path: str, work_seconds: float) -> tuple[str, int]:
    """Return ('hit' or 'miss', number of records): the stand-in for preparing a dataset."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            return "hit", len(fh.read().split())
    time.sleep(work_seconds)  # the expensive part: download, tokenize, ...
    records = " ".join(str(i) for i in range(1000))
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(records)
    os.replace(tmp, path)  # readers never see a half-written cache
    return "miss", 1000


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("error: this demo needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if launched:
        if args.backend == "nccl":
            if not torch.cuda.is_available():
                print("error: --backend nccl needs CUDA GPUs; use --backend gloo", file=sys.stderr)
                return 2
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend=args.backend)
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
        print("not launched by torchrun (no RANK/WORLD_SIZE): running as a single process; "
              "try: torchrun --nproc_per_node 2 main_process_first.py")
    local_rank = int(os.environ.get("LOCAL_RANK", rank))

    cache_dir = args.cache_dir or os.path.join(tempfile.gettempdir(), f"main_process_first_demo-{os.getuid()}")
    os.makedirs(cache_dir, exist_ok=True)
    cache = os.path.join(cache_dir, "records.txt")
    first = local_rank == 0 if args.local else rank == 0
    if first and not args.keep_cache and os.path.exists(cache):
        os.unlink(cache)
    if launched:
        dist.barrier()  # nobody looks at the cache before it was cleaned

    if rank == 0:
        scope = "local rank 0 of each node" if args.local else "global rank 0"
        log(rank, f"world size {world}; {scope} goes first; cache file {cache}")
    with main_process_first(local=args.local, desc="build the record cache"):
        log(rank, "enter block")
        result, records = build_or_load(cache, args.work_seconds)
        log(rank, f"leave block: cache {result}, {records} records")

    if launched:
        dist.barrier()
        if first and not args.keep_cache and os.path.exists(cache):
            os.unlink(cache)
        dist.destroy_process_group()
    elif not args.keep_cache and os.path.exists(cache):
        os.unlink(cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
