#!/usr/bin/env python
"""Pick a SwiGLU intermediate size for a hidden size and benchmark the candidate matmul shapes.

A classic transformer MLP has two matrices, h x 4h and 4h x h: 8*h**2 weights.
A SwiGLU MLP has three (gate and up, h x f each, and down, f x h): 3*h*f weights.
The same parameter count needs f = 8h/3, which is rarely a friendly number, so
models round it up to a multiple of 64, 128 or 256 (LLaMA's reference code
rounds int(8h/3) up to `multiple_of`; h=4096 gives 11008 with 256).

For each rounding multiple in `--multiples` the script prints f, the parameter
count relative to the 4h MLP, and -- unless `--no-bench` -- the measured speed
of the two matmul shapes of the MLP for `--tokens` tokens:

* gate/up: [tokens, h] @ [h, f]
* down:    [tokens, f] @ [f, h]

in TFLOPS (1e12 floating-point operations per second, counting 2*M*N*K per
matmul) and the time of one SwiGLU forward's three matmuls in ms. The unrounded
int(8h/3) and the 4h MLP are measured too as references.

Example (seconds on a CPU; use bigger --tokens on a GPU):

    python swiglu_maths.py --hidden 1024 --tokens 256 --multiples 64,128,256
"""
from __future__ import annotations

import argparse
import sys
import time


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def multiple_list(text: str) -> list[int]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--multiples takes comma-separated positive integers such as 64,128,256; got {text!r}"
            ) from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"a rounding multiple must be > 0, got {value}")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("--multiples needs at least one value, e.g. 64,128,256")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="SwiGLU intermediate size with the parameter count of a 4h MLP (8h/3), rounded "
        "up to a multiple, and the matmul TFLOPS of each candidate shape.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--hidden", type=positive_int, default=4096, help="model hidden size h")
    parser.add_argument("--multiples", type=multiple_list, default=multiple_list("64,128,256"),
                        help="comma-separated rounding multiples")
    parser.add_argument("--tokens", type=positive_int, default=None,
                        help="rows of the activation matrix (batch x sequence); default 8192 on a GPU, 256 on a CPU")
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=None,
                        help="matmul dtype; default bf16 on a GPU, fp32 on a CPU")
    parser.add_argument("--iters", type=positive_int, default=10, help="timed repetitions per matmul")
    parser.add_argument("--warmup", type=int, default=3, help="untimed repetitions per matmul")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--no-bench", action="store_true", help="print the sizes only, measure nothing")
    args = parser.parse_args(argv)
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")
    return args


def round_up(value: int, multiple: int) -> int:
    return multiple * ((value + multiple - 1) // multiple)


def candidates(hidden: int, multiples: list[int]) -> list[tuple[str, int]]:
    """(label, f) rows; roundings that land on the same f share one row (measured once)."""
    exact = (8 * hidden) // 3
    labels: dict[int, list[str]] = {exact: ["int(8h/3), unrounded"]}
    for m in multiples:
        labels.setdefault(round_up(exact, m), []).append(f"round up to x{m}")
    rows = [("4h MLP (reference)", 4 * hidden)]
    rows += [(" = ".join(names), f) for f, names in sorted(labels.items())]
    return rows


def bench_matmul(m: int, k: int, n: int, dtype, device: str, iters: int, warmup: int) -> float:
    """Seconds for one [m, k] @ [k, n] matmul."""
    import torch

    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    out = torch.empty(m, n, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        torch.matmul(a, b, out=out)
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b, out=out)
    sync()
    return (time.perf_counter() - start) / iters


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    h = args.hidden
    exact = 8 * h / 3
    mlp_params = 8 * h * h
    print(f"hidden h = {h}; a 4h MLP has 2 x h x 4h = {mlp_params:,} weights; "
          f"SwiGLU has 3 x h x f, equal when f = 8h/3 = {exact:.2f}")
    rows = candidates(h, args.multiples)

    if args.no_bench:
        print()
        print("| candidate | f | f / h | weights (M) | vs 4h MLP |")
        print("|:---|---:|---:|---:|---:|")
        for name, f in rows:
            params = mlp_params if name.startswith("4h") else 3 * h * f
            print(f"| {name} | {f} | {f / h:.3f} | {params / 1e6:.2f} | {params / mlp_params * 100:.2f}% |")
        return 0

    try:
        import torch
    except ImportError:
        print("error: benchmarking needs PyTorch (pip install torch); use --no-bench for the sizes only",
              file=sys.stderr)
        return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: --device {device} was asked for but CUDA is not available", file=sys.stderr)
        return 2
    on_gpu = device.startswith("cuda")
    dtype_name = args.dtype or ("bf16" if on_gpu else "fp32")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    tokens = args.tokens or (8192 if on_gpu else 256)
    where = torch.cuda.get_device_name() if on_gpu else f"cpu ({torch.get_num_threads()} threads)"
    print(f"benchmark: torch {torch.__version__} on {where}, dtype {dtype_name}, tokens = {tokens}, "
          f"{args.iters} timed iterations; TFLOPS = 1e12 FLOP/s with 2*M*N*K FLOP per matmul")
    print()
    print("| candidate | f | f / h | weights (M) | vs 4h MLP | gate/up TFLOPS | down TFLOPS | MLP fwd ms |")
    print("|:---|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in rows:
        up_s = bench_matmul(tokens, h, f, dtype, device, args.iters, args.warmup)
        down_s = bench_matmul(tokens, f, h, dtype, device, args.iters, args.warmup)
        flop = 2 * tokens * h * f
        if name.startswith("4h"):
            params, mlp_ms = mlp_params, (up_s + down_s) * 1e3  # two matmuls: up and down
        else:
            params, mlp_ms = 3 * h * f, (2 * up_s + down_s) * 1e3  # gate, up and down
        print(f"| {name} | {f} | {f / h:.3f} | {params / 1e6:.2f} | {params / mlp_params * 100:.2f}% | "
              f"{flop / up_s / 1e12:.3f} | {flop / down_s / 1e12:.3f} | {mlp_ms:.3f} |", flush=True)
    print()
    print("MLP fwd ms counts the matmuls only (2 for the 4h MLP, 3 for SwiGLU), not the activation function")
    return 0


if __name__ == "__main__":
    sys.exit(main())
