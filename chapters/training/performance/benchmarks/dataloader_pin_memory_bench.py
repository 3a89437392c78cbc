#!/usr/bin/env python
"""Time host-to-device copies from pageable and from pinned (page-locked) host memory.

Two measurements, for each size in `--sizes-mb`:

1. A raw copy: a preallocated device tensor is filled with `dst.copy_(src)` from
   a pageable host tensor, then from a pinned one (`non_blocking=True`). The
   script reports milliseconds per copy and GB/s (GB = 1e9 bytes).
2. A DataLoader loop (`--loader-batches`, 0 turns it off): batches of
   `--loader-batch-mb` are produced by a DataLoader with `pin_memory=False`,
   then `pin_memory=True`, and each is moved to the device with
   `.to(device, non_blocking=True)`; the script reports batches/s and GB/s.

On a machine without an accelerator there is no device to copy to and pinned
memory cannot be allocated. The script still runs: it says that the device copy
is skipped and measures a host-to-host copy of pageable memory instead, which
gives the memory-bandwidth baseline of the machine.

Example:

    python dataloader_pin_memory_bench.py --sizes-mb 1,16,256 --iters 20
"""
from __future__ import annotations

import argparse
import sys
import time


def size_list(text: str) -> list[float]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--sizes-mb takes comma-separated positive numbers such as 1,16,256; got {text!r}"
            ) from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"sizes must be > 0 MB, got {value}")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("--sizes-mb needs at least one size, e.g. 1,16,256")
    return values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Host-to-device copy time with and without pinned host memory "
        "(MB = 1e6 bytes, GB/s = 1e9 bytes per second).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--sizes-mb", type=size_list, default=size_list("1,16,256"),
                        help="comma-separated tensor sizes in MB for the raw copy")
    parser.add_argument("--iters", type=positive_int, default=20, help="timed copies per size")
    parser.add_argument("--warmup", type=non_negative_int, default=3, help="untimed copies per size")
    parser.add_argument("--loader-batches", type=non_negative_int, default=16,
                        help="batches in the DataLoader measurement (0 skips it)")
    parser.add_argument("--loader-batch-mb", type=positive_float, default=16.0,
                        help="size of one DataLoader batch in MB")
    parser.add_argument("--device", choices=["auto", "cpu"], default="auto",
                        help="'auto' uses the current accelerator (cuda, xpu, ...) when there is one; "
                        "'cpu' forces the host-copy fallback")
    return parser.parse_args(argv)


def find_device(choice: str):
    """Return (device type or None, why) for the accelerator to copy to."""
    import torch

    if choice == "cpu":
        return None, "--device cpu was given"
    accel = getattr(torch, "accelerator", None)
    if accel is not None and accel.is_available():
        return accel.current_accelerator().type, ""
    if torch.cuda.is_available():  # older torch without torch.accelerator
        return "cuda", ""
    return None, "no accelerator is available"


def synchronize(device_type: str | None) -> None:
    import torch

    if device_type is None:
        return
    accel = getattr(torch, "accelerator", None)
    if accel is not None:
        accel.synchronize()
    else:
        torch.cuda.synchronize()


def time_copies(dst, src, iters: int, warmup: int, non_blocking: bool, device_type: str | None) -> float:
    """Seconds per copy of src into dst, averaged over iters copies."""
    for _ in range(warmup):
        dst.copy_(src, non_blocking=non_blocking)
    synchronize(device_type)
    start = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src, non_blocking=non_blocking)
    synchronize(device_type)
    return (time.perf_counter() - start) / iters


class BatchDataset:
    """Every item is one ready-made batch of uint8 bytes (the loader uses batch_size=None)."""

    def __init__(self, batches: int, nbytes: int):
        import torch

        self.batches = batches
        self.template = torch.ones(nbytes, dtype=torch.uint8)

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, index: int):
        if index >= self.batches:
            raise IndexError(index)
        return self.template.clone()


def loader_run(dataset: BatchDataset, pin: bool, device_type: str) -> float:
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=None, num_workers=0, pin_memory=pin)
    synchronize(device_type)
    start = time.perf_counter()
    for batch in loader:
        batch.to(device_type, non_blocking=True)
    synchronize(device_type)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: this benchmark needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    device_type, why = find_device(args.device)
    print(f"torch {torch.__version__}; MB = 1e6 bytes, GB/s = 1e9 bytes/s")
    if device_type is None:
        print(f"{why}: the host-to-device copy is skipped and pinned memory cannot be allocated;")
        print("measuring a host-to-host copy of pageable memory instead (a memory-bandwidth baseline).")
    else:
        print(f"copying host -> {device_type}")
    print()
    print("## raw copy (dst.copy_(src))")
    print()
    if device_type is None:
        print("| size (MB) | host->host ms | host->host GB/s | pinned |")
        print("|---:|---:|---:|:---|")
    else:
        print("| size (MB) | pageable ms | pageable GB/s | pinned ms | pinned GB/s | pinned speed-up |")
        print("|---:|---:|---:|---:|---:|---:|")
    for size_mb in args.sizes_mb:
        nbytes = max(1, int(size_mb * 1e6))
        src = torch.ones(nbytes, dtype=torch.uint8)  # ones, not empty: the pages are really allocated
        if device_type is None:
            dst = torch.empty_like(src)
            seconds = time_copies(dst, src, args.iters, args.warmup, False, None)
            print(f"| {size_mb:g} | {seconds * 1e3:.3f} | {nbytes / seconds / 1e9:.2f} | skipped (no accelerator) |",
                  flush=True)
            continue
        dst = torch.empty(nbytes, dtype=torch.uint8, device=device_type)
        pageable_s = time_copies(dst, src, args.iters, args.warmup, False, device_type)
        pinned_src = src.pin_memory()
        pinned_s = time_copies(dst, pinned_src, args.iters, args.warmup, True, device_type)
        print(f"| {size_mb:g} | {pageable_s * 1e3:.3f} | {nbytes / pageable_s / 1e9:.2f} | "
              f"{pinned_s * 1e3:.3f} | {nbytes / pinned_s / 1e9:.2f} | {pageable_s / pinned_s:.2f}x |", flush=True)
        del dst, pinned_src

    if args.loader_batches:
        print()
        print(f"## DataLoader: {args.loader_batches} batches of {args.loader_batch_mb:g} MB, "
              "each moved with .to(device, non_blocking=True)")
        print()
        if device_type is None:
            print("skipped: there is no device to move the batches to (pin_memory=True would have no effect)")
        else:
            nbytes = max(1, int(args.loader_batch_mb * 1e6))
            dataset = BatchDataset(args.loader_batches, nbytes)
            loader_run(dataset, False, device_type)  # warm-up: allocator, page faults
            print("| pin_memory | total s | batches/s | GB/s |")
            print("|:---|---:|---:|---:|")
            for pin in (False, True):
                seconds = loader_run(dataset, pin, device_type)
                rate = args.loader_batches / seconds
                print(f"| {pin} | {seconds:.3f} | {rate:.1f} | {rate * nbytes / 1e9:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
