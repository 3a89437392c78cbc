#!/usr/bin/env python
"""Compare torch.distributed.all_gather_object with the tensor all_gather for the same payload.

Each rank holds a tensor of --sizes bytes (several sizes can be given). The script
gathers it from every rank in two ways and times both:

* tensor path: dist.all_gather(list_of_tensors, tensor); one collective, the data
  stays on the device;
* object path: dist.all_gather_object(list_of_objects, obj), where obj is the same
  tensor copied to the CPU (--object tensor) or turned into a Python list of floats
  (--object list). all_gather_object pickles the object, exchanges the pickled
  lengths in a first collective, the padded bytes in a second one, and unpickles
  every rank's bytes; with NCCL the bytes also travel host -> GPU -> host.

Both paths are timed with time.perf_counter around the whole call (the GPU is
synchronized before the clock is read), because the object path spends much of
its time on the host. The time of the conversion to a CPU tensor or a list is
included in the object path, since a caller has to pay it. Reported times are
milliseconds per call, the slowest rank's average; the ratio is object / tensor.

Launch with torchrun, e.g.:

    torchrun --nproc_per_node 8 all_gather_object_vs_all_gather.py --sizes 4 1K 1M
    torchrun --nproc_per_node 2 all_gather_object_vs_all_gather.py --backend gloo --object list
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import sys
import time

# torch is imported after the arguments are parsed, so --help and usage errors are instant.
torch = dist = None

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}
SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """Parse '4', '1K', '1M', '1G' (binary suffixes, 1K = 1024 bytes) into bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not match or int(match.group(1)) < 1:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: use a positive number of bytes with an optional K, M or G suffix, e.g. 1K"
        )
    return int(match.group(1)) * SUFFIXES[match.group(2).upper()]


def human_size(nbytes: int) -> str:
    for suffix in ("G", "M", "K"):
        if nbytes % SUFFIXES[suffix] == 0:
            return f"{nbytes // SUFFIXES[suffix]}{suffix}"
    return str(nbytes)


def counted_int(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Units: payload in bytes per rank (1K = 1024 bytes); times in ms per call (slowest rank); "
        "ratio = all_gather_object time / all_gather time. "
        "Launch with: torchrun --nproc_per_node N all_gather_object_vs_all_gather.py [options]",
    )
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=None,
                        help="payload sizes per rank in bytes, suffixes K/M/G allowed (default: 4 1K 64K 1M)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32", help="element type (default: fp32)")
    parser.add_argument("--object", choices=["tensor", "list"], default="tensor",
                        help="what all_gather_object sends: the tensor copied to CPU, or tensor.tolist() "
                        "(default: tensor)")
    parser.add_argument("--warmup", type=counted_int(0), default=3, help="untimed calls per size (default: 3)")
    parser.add_argument("--iters", type=counted_int(1), default=10, help="timed calls per size (default: 10)")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto",
                        help="auto = nccl when CUDA is available, else gloo")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH (rank 0)")
    return parser


def validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    global torch, dist
    if args.sizes is None:
        args.sizes = [4, 2**10, 2**16, 2**20]
    itemsize = ITEMSIZE[args.dtype]
    bad = [s for s in args.sizes if s % itemsize]
    if bad:
        parser.error(f"--sizes must be multiples of the {args.dtype} element size ({itemsize} bytes): {bad}")
    missing = [v for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        parser.error(f"environment variables {', '.join(missing)} are not set: launch with "
                     f"'torchrun --nproc_per_node N {os.path.basename(sys.argv[0])} ...'")
    import torch as _torch
    import torch.distributed as _dist

    torch, dist = _torch, _dist
    if args.backend == "auto":
        args.backend = "nccl" if torch.cuda.is_available() else "gloo"
    if args.backend == "nccl" and not torch.cuda.is_available():
        parser.error("--backend nccl needs CUDA GPUs, but torch.cuda.is_available() is False; use --backend gloo")
    args.device = "cuda" if args.backend == "nccl" else "cpu"


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def gather_tensor(tensor, world_size: int):
    out = [torch.empty_like(tensor) for _ in range(world_size)]
    dist.all_gather(out, tensor)
    return out


def gather_object(tensor, world_size: int, kind: str):
    obj = tensor.cpu() if kind == "tensor" else tensor.tolist()
    out = [None] * world_size
    dist.all_gather_object(out, obj)
    return out


def timed(fn, device: str, warmup: int, iters: int) -> float:
    """Mean seconds per call of fn() on this rank, wall clock, device synchronized."""
    for _ in range(warmup):
        fn()
    sync(device)
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    return (time.perf_counter() - begin) / iters


def slowest(seconds: float, device: str) -> float:
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def check(tensor_out, object_out, kind: str) -> None:
    """Rank r filled its tensor with r % 200: both paths must return exactly that, in rank order."""
    for r, (t, o) in enumerate(zip(tensor_out, object_out)):
        values = o if kind == "list" else o.tolist()
        if not (torch.all(t == r % 200) and all(v == r % 200 for v in values)):
            raise RuntimeError(f"gathered data from rank {r} is wrong")


HEADER = (f"{'size':>6} {'bytes':>10} {'elements':>10} {'pickled bytes':>14} "
          f"{'all_gather (ms)':>16} {'all_gather_object (ms)':>23} {'ratio':>8}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    validate(parser, args)
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=args.backend, device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group(backend=args.backend)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    dtype = getattr(torch, DTYPES[args.dtype])
    try:
        if rank == 0:
            print(f"all_gather vs all_gather_object: backend={args.backend} device={args.device} "
                  f"world_size={world_size} dtype={args.dtype} object={args.object} "
                  f"warmup={args.warmup} iters={args.iters}")
            print("units: payload per rank in bytes (1K = 1024 bytes), times in ms per call (slowest rank, "
                  "wall clock), ratio = all_gather_object / all_gather")
            print(HEADER, flush=True)
        results = []
        for size in args.sizes:
            tensor = torch.full((size // ITEMSIZE[args.dtype],), rank % 200, dtype=dtype, device=args.device)
            check(gather_tensor(tensor, world_size), gather_object(tensor, world_size, args.object), args.object)
            obj = tensor.cpu() if args.object == "tensor" else tensor.tolist()
            pickled = len(pickle.dumps(obj))
            t_tensor = slowest(timed(lambda: gather_tensor(tensor, world_size), args.device,
                                     args.warmup, args.iters), args.device)
            t_object = slowest(timed(lambda: gather_object(tensor, world_size, args.object), args.device,
                                     args.warmup, args.iters), args.device)
            row = {"size": human_size(size), "size_bytes": size, "elements": tensor.numel(),
                   "pickled_bytes": pickled, "all_gather_ms": t_tensor * 1e3,
                   "all_gather_object_ms": t_object * 1e3, "ratio": t_object / t_tensor}
            results.append(row)
            if rank == 0:
                print(f"{row['size']:>6} {size:>10} {row['elements']:>10} {pickled:>14} "
                      f"{row['all_gather_ms']:>16.3f} {row['all_gather_object_ms']:>23.3f} "
                      f"{row['ratio']:>7.1f}x", flush=True)
        if rank == 0:
            print(f"all_gather_object was {min(r['ratio'] for r in results):.1f}x to "
                  f"{max(r['ratio'] for r in results):.1f}x slower than all_gather over these sizes")
            if args.json:
                meta = {"benchmark": "all_gather_object_vs_all_gather", "backend": args.backend,
                        "device": args.device, "world_size": world_size, "dtype": args.dtype,
                        "object": args.object, "warmup": args.warmup, "iters": args.iters,
                        "torch_version": torch.__version__,
                        "units": {"size_bytes": "bytes per rank", "all_gather_ms": "ms per call",
                                  "all_gather_object_ms": "ms per call", "ratio": "object / tensor"}}
                with open(args.json, "w") as f:
                    json.dump({**meta, "results": results}, f, indent=2)
                print(f"wrote {args.json}")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
