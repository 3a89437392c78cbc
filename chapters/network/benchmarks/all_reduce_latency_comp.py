#!/usr/bin/env python
"""Measure all-reduce latency for small payloads, and one large all-reduce against many small ones.

Part 1, latency sweep: for payloads from --min-size to --max-size (powers of two)
the script times --iters back-to-back all-reduces and prints the time per call
in microseconds. For small payloads this time hardly changes with the size: it is
the fixed cost of a collective (launch, synchronization between ranks, link
latency), not the cost of moving bytes.

Part 2, same total, different split: --total-size bytes are all-reduced as
1, 2, 4, ... --max-chunks separate tensors, one call per tensor, and the time of
the whole batch is compared with a single call on one tensor of the total size.
A third column flattens the chunks into one buffer (torch.cat), all-reduces that
once and copies the result back, which is the idea behind gradient bucketing.

Times are the slowest rank's average. Units: bytes for sizes (1K = 1024 bytes),
microseconds (us) per call, milliseconds (ms) per batch, slowdown as a factor (x).
NCCL on GPUs with CUDA-event timing, gloo on CPU with time.perf_counter.

Launch with torchrun, e.g.:

    torchrun --nproc_per_node 8 all_reduce_latency_comp.py
    torchrun --nproc_per_node 2 all_reduce_latency_comp.py --backend gloo --total-size 1M --max-chunks 64
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

# torch is imported after the arguments are parsed, so --help and usage errors are instant.
torch = dist = None

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}
SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """Parse '4', '1K', '16M' (binary suffixes, 1K = 1024 bytes) into bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not match or int(match.group(1)) < 1:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: use a positive number of bytes with an optional K, M or G suffix, e.g. 64K"
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
        epilog="Units: sizes in bytes (1K = 1024 bytes); latency in us per all_reduce; batch times in ms; "
        "slowdown = many calls / one call. Launch with: torchrun --nproc_per_node N all_reduce_latency_comp.py",
    )
    parser.add_argument("--min-size", type=parse_size, default=4,
                        help="smallest payload of the latency sweep in bytes (default: 4)")
    parser.add_argument("--max-size", type=parse_size, default=parse_size("64K"),
                        help="largest payload of the latency sweep in bytes (default: 64K)")
    parser.add_argument("--total-size", type=parse_size, default=parse_size("4M"),
                        help="total bytes for the one-vs-many comparison (default: 4M)")
    parser.add_argument("--max-chunks", type=counted_int(1), default=256,
                        help="split the total into 1, 2, 4, ... up to this many tensors (default: 256)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32", help="element type (default: fp32)")
    parser.add_argument("--warmup", type=counted_int(0), default=5, help="untimed repetitions (default: 5)")
    parser.add_argument("--iters", type=counted_int(1), default=20, help="timed repetitions (default: 20)")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto",
                        help="auto = nccl when CUDA is available, else gloo")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH (rank 0)")
    return parser


def validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    global torch, dist
    itemsize = ITEMSIZE[args.dtype]
    if args.min_size > args.max_size:
        parser.error(f"--min-size ({args.min_size} bytes) must not exceed --max-size ({args.max_size} bytes)")
    if args.min_size < itemsize:
        parser.error(f"--min-size must be at least one {args.dtype} element ({itemsize} bytes)")
    if args.max_chunks & (args.max_chunks - 1):
        parser.error(f"--max-chunks must be a power of two, got {args.max_chunks}")
    if args.total_size % (args.max_chunks * itemsize):
        parser.error(f"--total-size ({args.total_size} bytes) must split into --max-chunks ({args.max_chunks}) "
                     f"chunks of whole {args.dtype} elements: it must be a multiple of {args.max_chunks * itemsize}")
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


def timed(fn, device: str, warmup: int, iters: int) -> float:
    """Mean seconds per fn() call on this rank; the slowest rank's value is taken later."""
    for _ in range(warmup):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - begin) / iters


def slowest(seconds: float, device: str) -> float:
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def many_calls(chunks) -> None:
    for chunk in chunks:
        dist.all_reduce(chunk)


def flatten_one_call(chunks) -> None:
    flat = torch.cat(chunks)
    dist.all_reduce(flat)
    for chunk, piece in zip(chunks, flat.split(chunks[0].numel())):
        chunk.copy_(piece)


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
    dtype, itemsize = getattr(torch, DTYPES[args.dtype]), ITEMSIZE[args.dtype]
    say = print if rank == 0 else (lambda *a, **k: None)
    try:
        say(f"all_reduce latency: backend={args.backend} device={args.device} world_size={world_size} "
            f"dtype={args.dtype} warmup={args.warmup} iters={args.iters}")
        say("units: sizes in bytes (1K = 1024 bytes), latency in us per all_reduce (slowest rank)")
        say(f"{'size':>6} {'size (bytes)':>13} {'elements':>10} {'latency (us)':>13}", flush=True)
        latency = []
        size = args.min_size
        while size <= args.max_size:
            nbytes = size // itemsize * itemsize
            tensor = torch.zeros(nbytes // itemsize, dtype=dtype, device=args.device)
            us = slowest(timed(lambda: dist.all_reduce(tensor), args.device, args.warmup, args.iters),
                         args.device) * 1e6
            latency.append({"size": human_size(nbytes), "size_bytes": nbytes, "elements": tensor.numel(),
                            "latency_us": us})
            say(f"{human_size(nbytes):>6} {nbytes:>13} {tensor.numel():>10} {us:>13.1f}", flush=True)
            size *= 2

        say()
        say(f"one all_reduce of {human_size(args.total_size)} ({args.total_size} bytes) vs the same bytes "
            f"split into N tensors")
        say("units: batch times in ms (all N calls), per-call time in us, slowdown = N calls / 1 call")
        say(f"{'N':>6} {'chunk (bytes)':>14} {'N calls (ms)':>13} {'per call (us)':>14} "
            f"{'flatten+1 call (ms)':>20} {'slowdown':>9}", flush=True)
        split, one_call, chunks_n = [], None, 1
        while chunks_n <= args.max_chunks:
            flat = torch.zeros(args.total_size // itemsize, dtype=dtype, device=args.device)
            chunks = [c.clone() for c in flat.chunk(chunks_n)]
            many = slowest(timed(lambda: many_calls(chunks), args.device, args.warmup, args.iters), args.device)
            flattened = slowest(timed(lambda: flatten_one_call(chunks), args.device, args.warmup, args.iters),
                                args.device)
            one_call = many if one_call is None else one_call
            row = {"chunks": chunks_n, "chunk_bytes": args.total_size // chunks_n, "many_calls_ms": many * 1e3,
                   "per_call_us": many / chunks_n * 1e6, "flatten_one_call_ms": flattened * 1e3,
                   "slowdown": many / one_call}
            split.append(row)
            say(f"{chunks_n:>6} {row['chunk_bytes']:>14} {row['many_calls_ms']:>13.3f} {row['per_call_us']:>14.1f} "
                f"{row['flatten_one_call_ms']:>20.3f} {row['slowdown']:>8.1f}x", flush=True)
            chunks_n *= 2
        if rank == 0 and args.json:
            meta = {"benchmark": "all_reduce_latency_comp", "backend": args.backend, "device": args.device,
                    "world_size": world_size, "dtype": args.dtype, "warmup": args.warmup, "iters": args.iters,
                    "total_size_bytes": args.total_size, "torch_version": torch.__version__,
                    "units": {"size_bytes": "bytes", "latency_us": "microseconds per all_reduce",
                              "many_calls_ms": "milliseconds for all N calls", "per_call_us": "microseconds",
                              "flatten_one_call_ms": "milliseconds", "slowdown": "N calls / 1 call"}}
            with open(args.json, "w") as f:
                json.dump({**meta, "latency": latency, "split": split}, f, indent=2)
            say(f"wrote {args.json}")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
