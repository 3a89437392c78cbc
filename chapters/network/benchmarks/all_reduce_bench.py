#!/usr/bin/env python
"""Measure all-reduce throughput over a sweep of payload sizes.

For every payload size (powers of two from --min-size to --max-size) the script
runs a few untimed warm-up all-reduces, then times --iters all-reduces and
reports, per size:

* time per all-reduce in milliseconds (the slowest rank's average),
* algorithm bandwidth: algbw = payload bytes / time,
* bus bandwidth:       busbw = algbw * 2 * (n - 1) / n, where n is the number of ranks.

Bandwidths are printed in GB/s with GB = 1e9 bytes, while size suffixes on the
command line are binary (1K = 1024 bytes, 1M = 1024**2, 1G = 1024**3 bytes).

Backend and device are auto-detected: NCCL on CUDA GPUs (timed with CUDA
events), gloo on CPU (timed with time.perf_counter). Override with --backend.

Launch one process per GPU (or per CPU rank) with torchrun, for example:

    torchrun --nproc_per_node 8 all_reduce_bench.py --min-size 32K --max-size 1G
    torchrun --nproc_per_node 2 all_reduce_bench.py --backend gloo --max-size 4M \\
        --json results.json --plot busbw.png
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time

# torch is imported in main() only after the arguments are parsed, so that --help and
# usage errors answer instantly instead of after the few seconds an `import torch` takes.
torch = dist = None

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}  # names in the torch namespace
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}  # bytes per element
SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
GB = 1e9  # bandwidth unit: decimal gigabytes, as NCCL's own tests report them


def parse_size(text: str) -> int:
    """Parse '4096', '32K', '1M', '1G' or '1.5G' (binary suffixes, 1K = 1024) into bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: use a number of bytes with an optional K, M, G or T suffix, e.g. 32K or 1G"
        )
    value = float(match.group(1)) * SUFFIXES[match.group(2).upper()]
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: must be a whole number of bytes >= 1")
    return int(value)


def human_size(nbytes: int) -> str:
    """Format a byte count with the largest binary suffix that divides it exactly (32768 -> '32K')."""
    for suffix in ("T", "G", "M", "K"):
        if nbytes % SUFFIXES[suffix] == 0:
            return f"{nbytes // SUFFIXES[suffix]}{suffix}"
    return str(nbytes)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Units: sizes in bytes (suffixes are binary, 1K = 1024 bytes); time in ms; "
        "algbw and busbw in GB/s where 1 GB = 1e9 bytes. Launch with: "
        "torchrun --nproc_per_node N all_reduce_bench.py [options]",
    )
    parser.add_argument("--min-size", type=parse_size, default=parse_size("32K"),
                        help="smallest payload in bytes, suffixes K/M/G allowed (default: 32K)")
    parser.add_argument("--max-size", type=parse_size, default=None,
                        help="largest payload in bytes (default: 1G on GPU, 16M on CPU)")
    parser.add_argument("--warmup", type=non_negative_int, default=5,
                        help="untimed all-reduces per size before timing (default: 5)")
    parser.add_argument("--iters", type=positive_int, default=20,
                        help="timed all-reduces per size (default: 20)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32",
                        help="element type of the payload (default: fp32)")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto",
                        help="process-group backend; auto = nccl when CUDA is available, else gloo")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH (rank 0)")
    parser.add_argument("--plot", metavar="PATH.png", help="write a plot of busbw against payload size (rank 0)")
    return parser


def import_torch() -> None:
    global torch, dist
    import torch as _torch
    import torch.distributed as _dist

    torch, dist = _torch, _dist


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo on Linux, else whatever platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check arguments and the launch environment before touching the network."""
    if args.max_size is not None and args.min_size > args.max_size:
        parser.error(f"--min-size ({args.min_size} bytes) must not exceed --max-size ({args.max_size} bytes)")
    itemsize = ITEMSIZE[args.dtype]
    if args.min_size < itemsize:
        parser.error(f"--min-size must be at least one {args.dtype} element ({itemsize} bytes)")
    if args.plot and not args.plot.lower().endswith(".png"):
        parser.error(f"--plot expects a .png path, got {args.plot!r}")
    missing = [name for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
               if name not in os.environ]
    if missing:
        parser.error(
            f"environment variables {', '.join(missing)} are not set: launch with "
            f"'torchrun --nproc_per_node N {os.path.basename(sys.argv[0])} ...'"
        )
    import_torch()
    if args.backend == "auto":
        args.backend = "nccl" if torch.cuda.is_available() else "gloo"
    if args.backend == "nccl" and not torch.cuda.is_available():
        parser.error("--backend nccl needs CUDA GPUs, but torch.cuda.is_available() is False; use --backend gloo")
    if args.backend == "nccl" and not dist.is_nccl_available():
        parser.error("--backend nccl: this PyTorch build has no NCCL support; use --backend gloo")
    args.device = "cuda" if args.backend == "nccl" else "cpu"
    if args.max_size is None:
        args.max_size = max(args.min_size, parse_size("1G") if args.device == "cuda" else parse_size("16M"))


def payload_sizes(min_size: int, max_size: int, itemsize: int) -> list[int]:
    """Sizes min, 2*min, 4*min, ... <= max, each rounded down to whole elements."""
    sizes, size = [], min_size
    while size <= max_size:
        sizes.append(size // itemsize * itemsize)
        size *= 2
    return sizes


def time_all_reduce(tensor: torch.Tensor, warmup: int, iters: int) -> float:
    """Seconds per all-reduce on this rank, averaged over `iters` calls."""
    for _ in range(warmup):
        dist.all_reduce(tensor)
    if tensor.is_cuda:
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(tensor)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / iters  # elapsed_time is in ms
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
    return (time.perf_counter() - begin) / iters


# Largest integer each dtype holds exactly: a sum of ones up to this count is exact.
EXACT_INT = {"fp32": 2**24, "fp16": 2**11, "bf16": 2**8}


def check_sum(tensor: torch.Tensor, world_size: int, dtype_name: str) -> None:
    """One correctness check: every rank contributes ones, so every element must equal n."""
    if world_size > EXACT_INT[dtype_name]:
        return  # the sum itself would be rounded in this dtype; nothing exact to compare with
    tensor.fill_(1)
    dist.all_reduce(tensor)
    if not torch.all(tensor == world_size):
        raise RuntimeError(f"all_reduce returned a wrong sum: expected {world_size}, "
                           f"got {tensor.flatten()[:4].tolist()}")


def run(args: argparse.Namespace) -> list[dict]:
    rank, world_size = dist.get_rank(), dist.get_world_size()
    dtype, itemsize = getattr(torch, DTYPES[args.dtype]), ITEMSIZE[args.dtype]
    results = []
    for size in payload_sizes(args.min_size, args.max_size, itemsize):
        tensor = torch.empty(size // itemsize, dtype=dtype, device=args.device)
        check_sum(tensor, world_size, args.dtype)
        tensor.zero_()  # keep values finite however many times it is summed
        seconds = torch.tensor([time_all_reduce(tensor, args.warmup, args.iters)], dtype=torch.float64,
                               device=args.device)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the collective is as slow as its slowest rank
        seconds = seconds.item()
        algbw = size / seconds / GB
        busbw = algbw * 2 * (world_size - 1) / world_size
        row = {"size_bytes": size, "size": human_size(size), "elements": size // itemsize,
               "time_ms": seconds * 1e3, "algbw_GBps": algbw, "busbw_GBps": busbw}
        results.append(row)
        if rank == 0:
            print(format_row(row), flush=True)
        del tensor
    return results


HEADER = f"{'size':>6} {'size (bytes)':>14} {'elements':>12} {'time (ms)':>11} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}"


def format_row(row: dict) -> str:
    return (f"{row['size']:>6} {row['size_bytes']:>14} {row['elements']:>12} {row['time_ms']:>11.3f} "
            f"{row['algbw_GBps']:>13.3f} {row['busbw_GBps']:>13.3f}")


def write_plot(path: str, results: list[dict], meta: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size_bytes"] for r in results]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(sizes, [r["busbw_GBps"] for r in results], marker="o", label="busbw")
    ax.plot(sizes, [r["algbw_GBps"] for r in results], marker=".", linestyle="--", label="algbw")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([r["size"] for r in results], rotation=45)
    ax.minorticks_off()
    ax.set_xlabel("payload size (bytes; 1K = 1024 bytes)")
    ax.set_ylabel("bandwidth (GB/s, 1 GB = 1e9 bytes)")
    ax.set_title(f"all_reduce: {meta['backend']}, {meta['world_size']} ranks, {meta['dtype']}, {meta['device_name']}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    validate(parser, args)

    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=args.backend, device_id=torch.device("cuda", local_rank))
        device_name = torch.cuda.get_device_name(local_rank)
    else:
        dist.init_process_group(backend=args.backend)
        device_name = cpu_name()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    meta = {"benchmark": "all_reduce", "backend": args.backend, "device": args.device,
            "device_name": device_name, "world_size": world_size, "dtype": args.dtype,
            "warmup": args.warmup, "iters": args.iters, "torch_version": torch.__version__,
            "units": {"size_bytes": "bytes", "time_ms": "milliseconds per all_reduce (slowest rank)",
                      "algbw_GBps": "GB/s, 1 GB = 1e9 bytes", "busbw_GBps": "GB/s, 1 GB = 1e9 bytes"}}
    try:
        if rank == 0:
            print(f"all_reduce benchmark: backend={args.backend} device={args.device} ({device_name}) "
                  f"world_size={world_size} dtype={args.dtype} warmup={args.warmup} iters={args.iters}")
            print("units: size in bytes (1K = 1024 bytes), time in ms per all_reduce (slowest rank), "
                  "algbw and busbw in GB/s (1 GB = 1e9 bytes); busbw = algbw * 2(n-1)/n")
            if world_size == 1:
                print("note: with a single rank nothing crosses a link, so busbw is 0 by definition")
            print(HEADER, flush=True)
        results = run(args)
        if rank == 0:
            best = max(results, key=lambda r: r["busbw_GBps"])
            print(f"peak busbw: {best['busbw_GBps']:.3f} GB/s at {best['size']} ({best['size_bytes']} bytes)")
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({**meta, "results": results}, f, indent=2)
                print(f"wrote {args.json}")
            if args.plot:
                write_plot(args.plot, results, meta)
                print(f"wrote {args.plot}")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
