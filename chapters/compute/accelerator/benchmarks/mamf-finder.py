#!/usr/bin/env python
"""Find the Maximum Achievable Matmul FLOPS (MAMF) of an accelerator by sweeping matmul shapes.

A matmul of an (m x k) matrix by a (k x n) matrix performs 2*m*n*k floating-point
operations (one multiply and one add per term). For every (m, n, k) in the sweep
the script runs untimed warm-up matmuls, times --iters more, and reports

    TFLOPS = 2 * m * n * k / mean time per matmul / 1e12

It prints one progress line per shape and, at the end, the shape that reached the
highest TFLOPS: that number is the MAMF for this device and dtype, a realistic
ceiling to compare training throughput with (instead of the spec-sheet peak).

Shapes are given per dimension, either as an inclusive range
(--m-range START STOP STEP means START, START+STEP, ..., up to STOP) or as an
explicit list (--m 4096 8192). The sweep is the cartesian product m x n x k.

On CUDA/ROCm GPUs timing uses CUDA events; on CPU it uses time.perf_counter.
With --clear-cache a buffer (--flush-mib, chosen larger than the last-level
cache) is overwritten before every timed matmul and excluded from the time, so
operands come from memory rather than cache. --device cpu without shape options
uses tiny shapes, so the script can be tried, and tested, in seconds anywhere.

Examples:

    python mamf-finder.py --dtype bf16 --m 4096 8192 --n 4096 8192 --k 4096 8192
    python mamf-finder.py --dtype bf16 --m-range 1024 20480 1024 --n 4096 --k-range 1024 20480 1024
    python mamf-finder.py --device cpu --dtype fp32
"""
from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time

# torch is imported after the arguments are parsed, so --help and usage errors are instant.
torch = None

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32", "fp8": "float8_e4m3fn"}
GPU_DEFAULT_SHAPES = [1024, 2048, 4096, 8192, 16384]
CPU_DEFAULT_SHAPES = [64, 128, 256]


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
        epilog="Units: time in ms per matmul; throughput in TFLOPS (1 TFLOPS = 1e12 floating-point "
        "operations per second), counting 2*m*n*k operations per (m x k) @ (k x n) matmul. "
        f"Default shapes when none are given: {GPU_DEFAULT_SHAPES} for each of m, n, k on a GPU, "
        f"{CPU_DEFAULT_SHAPES} on CPU.",
    )
    for dim in ("m", "n", "k"):
        group = parser.add_mutually_exclusive_group()
        group.add_argument(f"--{dim}-range", type=positive_int, nargs=3, metavar=("START", "STOP", "STEP"),
                           help=f"{dim} values START, START+STEP, ... up to and including STOP")
        group.add_argument(f"--{dim}", type=positive_int, nargs="+", metavar=dim.upper(),
                           help=f"explicit list of {dim} values")
    parser.add_argument("--dtype", choices=list(DTYPES), default="bf16",
                        help="operand dtype (default: bf16); tf32 = fp32 operands on NVIDIA TF32 tensor cores "
                        "(GPU only); fp8 uses torch._scaled_mm with e4m3 operands, bf16 output, and needs m, n, k "
                        "divisible by 16")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto = cuda when available, else cpu (default: auto)")
    parser.add_argument("--warmup", type=non_negative_int, default=10,
                        help="untimed matmuls per shape before timing (default: 10)")
    parser.add_argument("--iters", type=positive_int, default=50, help="timed matmuls per shape (default: 50)")
    parser.add_argument("--clear-cache", action="store_true",
                        help="overwrite a buffer larger than the cache before each timed matmul (not timed)")
    parser.add_argument("--flush-mib", type=positive_int, default=None,
                        help="size of the --clear-cache buffer in MiB; make it larger than the device's last-level "
                        "cache (default: 256 on GPU, 32 on CPU)")
    parser.add_argument("--top", type=positive_int, default=5, help="how many best shapes to list at the end")
    parser.add_argument("--json", metavar="PATH", help="write every shape's result and the best one to PATH")
    return parser


def expand(args: argparse.Namespace, parser: argparse.ArgumentParser, dim: str, default: list[int]) -> list[int]:
    rng, values = getattr(args, f"{dim}_range"), getattr(args, dim)
    if rng is not None:
        start, stop, step = rng
        return list(range(start, stop + 1, step))
    return sorted(set(values)) if values else list(default)


def resolve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Validate arguments, import torch, and pick the device and shapes."""
    global torch
    for dim in ("m", "n", "k"):
        rng = getattr(args, f"{dim}_range")
        if rng is not None and rng[0] > rng[1]:
            parser.error(f"--{dim}-range: START ({rng[0]}) must not exceed STOP ({rng[1]})")
    if args.flush_mib is not None and not args.clear_cache:
        parser.error("--flush-mib only makes sense together with --clear-cache")
    if args.dtype == "fp8":
        for dim in ("m", "n", "k"):
            explicit = getattr(args, dim) or []
            rng = getattr(args, f"{dim}_range")
            if any(v % 16 for v in explicit) or (rng and (rng[0] % 16 or rng[2] % 16)):
                parser.error(f"--dtype fp8 needs every {dim} divisible by 16 (a _scaled_mm requirement)")
    import torch as _torch

    torch = _torch
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False on this machine; use --device cpu")
    if args.dtype == "fp8":
        if args.device == "cuda" and torch.version.hip is None and torch.cuda.get_device_capability() < (8, 9):
            parser.error("--dtype fp8 needs an NVIDIA GPU of compute capability 8.9 or newer (Ada, Hopper, "
                         f"Blackwell); this one is {torch.cuda.get_device_capability()}")
        if not hasattr(torch, "_scaled_mm"):
            parser.error("--dtype fp8: this PyTorch has no torch._scaled_mm")
        if args.device == "cuda" and torch.version.hip is not None:
            # MI300-series GPUs compute in the 'fnuz' flavour of e4m3; newer ROCm parts use the OCP one.
            if "gfx94" in torch.cuda.get_device_properties(0).gcnArchName:
                DTYPES["fp8"] = "float8_e4m3fnuz"
    if args.dtype == "tf32":
        if args.device != "cuda":
            parser.error("--dtype tf32 is a GPU tensor-core mode; on CPU use --dtype fp32")
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 matmuls may now run on TF32 tensor cores
    default = GPU_DEFAULT_SHAPES if args.device == "cuda" else CPU_DEFAULT_SHAPES
    args.ms = expand(args, parser, "m", default)
    args.ns = expand(args, parser, "n", default)
    args.ks = expand(args, parser, "k", default)


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, torch threads={torch.get_num_threads()}"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, torch threads={torch.get_num_threads()}"


class Timer:
    """Times a sequence of calls with CUDA events on GPU and time.perf_counter on CPU."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, start, end) -> float:
        """Seconds between two marks; call after sync()."""
        if self.cuda:
            return start.elapsed_time(end) / 1e3
        return end - start


def make_matmul(m: int, n: int, k: int, dtype_name: str, device: str):
    """Allocate random operands and return a zero-argument function that runs one matmul."""
    if dtype_name == "fp8":
        fp8 = getattr(torch, DTYPES["fp8"])
        a = torch.randn(m, k, device=device).to(fp8)
        b = torch.randn(n, k, device=device).to(fp8).t()  # _scaled_mm wants the second operand column-major
        scale = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    dtype = getattr(torch, DTYPES[dtype_name])
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    c = torch.empty(m, n, device=device, dtype=dtype)
    return lambda: torch.mm(a, b, out=c)


def measure(matmul, timer: Timer, warmup: int, iters: int, flush_buffer) -> float:
    """Mean seconds per matmul."""
    for _ in range(warmup):
        matmul()
    timer.sync()
    if flush_buffer is None:
        start = timer.mark()
        for _ in range(iters):
            matmul()
        end = timer.mark()
        timer.sync()
        return timer.seconds(start, end) / iters
    marks = []
    for _ in range(iters):
        flush_buffer.zero_()  # evict the operands from the cache; not part of the timed region
        start = timer.mark()
        matmul()
        marks.append((start, timer.mark()))
    timer.sync()
    return sum(timer.seconds(s, e) for s, e in marks) / iters


def fmt_tflops(x: float) -> str:
    """Three decimals for accelerators, six for the tiny numbers a CPU run with tiny shapes gives."""
    return f"{x:.3f}" if x >= 1 else f"{x:.6f}"


def fmt_shape(r: dict) -> str:
    return f"m={r['m']} n={r['n']} k={r['k']}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    resolve(parser, args)

    shapes = list(itertools.product(args.ms, args.ns, args.ks))
    timer = Timer(args.device)
    flush, flush_mib = None, None
    if args.clear_cache:
        flush_mib = args.flush_mib or (256 if args.device == "cuda" else 32)
        flush = torch.empty(flush_mib * 2**20, dtype=torch.uint8, device=args.device)
    name = device_name(args.device)
    versions = f"torch={torch.__version__}" + (f" cuda={torch.version.cuda}" if torch.version.cuda else "") + (
        f" hip={torch.version.hip}" if torch.version.hip else "")
    print(f"MAMF finder: device={args.device} ({name}) dtype={args.dtype} {versions} "
          f"warmup={args.warmup} iters={args.iters} clear_cache={args.clear_cache}"
          + (f" (flush {flush_mib} MiB)" if flush_mib else ""))
    print(f"sweep: {len(shapes)} shapes, m in {args.ms}, n in {args.ns}, k in {args.ks}")
    print("units: time in ms per matmul, TFLOPS = 2*m*n*k / time / 1e12", flush=True)

    results, best, began = [], None, time.perf_counter()
    width = len(str(len(shapes)))
    for i, (m, n, k) in enumerate(shapes, 1):
        try:
            seconds = measure(make_matmul(m, n, k, args.dtype, args.device), timer, args.warmup, args.iters, flush)
        except torch.OutOfMemoryError:
            print(f"[{i:>{width}}/{len(shapes)}] m={m} n={n} k={k}: out of memory, skipped", flush=True)
            torch.cuda.empty_cache()
            continue
        except RuntimeError as error:  # e.g. a dtype the device or library cannot multiply
            print(f"error: {args.dtype} matmul m={m} n={n} k={k} failed on {name}: {error}", file=sys.stderr)
            return 1
        tflops = 2 * m * n * k / seconds / 1e12
        row = {"m": m, "n": n, "k": k, "time_ms": seconds * 1e3, "tflops": tflops}
        results.append(row)
        if best is None or tflops > best["tflops"]:
            best = row
        elapsed = time.perf_counter() - began
        eta = elapsed / i * (len(shapes) - i)
        print(f"[{i:>{width}}/{len(shapes)}] m={m} n={n} k={k}: {seconds * 1e3:.4f} ms, {fmt_tflops(tflops)} TFLOPS "
              f"| best {fmt_tflops(best['tflops'])} TFLOPS ({fmt_shape(best)}) | elapsed {elapsed:.1f}s, eta {eta:.1f}s",
              flush=True)

    if best is None:
        print("error: no shape could be measured", file=sys.stderr)
        return 1
    total = time.perf_counter() - began
    print()
    print(f"top {min(args.top, len(results))} shapes by TFLOPS:")
    for r in sorted(results, key=lambda r: r["tflops"], reverse=True)[:args.top]:
        print(f"  {fmt_shape(r):<28} {r['time_ms']:>10.4f} ms {fmt_tflops(r['tflops']):>10} TFLOPS")
    print()
    print(f"Best shape: {fmt_shape(best)} ({args.dtype} on {name})")
    print(f"Maximum achievable matmul FLOPS (MAMF): {fmt_tflops(best['tflops'])} TFLOPS "
          f"(mean of {args.iters} timed matmuls, {best['time_ms']:.4f} ms each)")
    print(f"sweep of {len(results)} shapes took {total:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "mamf-finder", "device": args.device, "device_name": name,
                       "dtype": args.dtype, "warmup": args.warmup, "iters": args.iters,
                       "clear_cache": args.clear_cache, "flush_mib": flush_mib, "torch_version": torch.__version__,
                       "cuda_version": torch.version.cuda, "hip_version": torch.version.hip,
                       "units": {"time_ms": "milliseconds per matmul", "tflops": "1e12 FLOP/s, 2*m*n*k per matmul"},
                       "best": best, "results": results}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
