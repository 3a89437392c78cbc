#!/usr/bin/env python
"""Measure how DataLoader throughput changes with `num_workers`.

The dataset is synthetic: every item costs a fixed time (`--item-cost-ms`) and
returns a tensor of `--item-size` float32 values. With `--cost-kind cpu` (the
default) the time is spent in a busy loop that holds the GIL the way
Python-level decoding, tokenization or augmentation does; with
`--cost-kind sleep` the item waits instead, as a read from remote storage does,
and uses no CPU. For each value in `--num-workers` the script builds a fresh
DataLoader, iterates over `--items` items and reports:

* samples/s   -- items delivered per second of wall-clock time, worker start-up included
* first batch -- seconds until the first batch arrived (worker start-up cost)
* speed-up    -- samples/s relative to the first value in the list
* ideal       -- the throughput a perfect pool would reach: 1000 / item-cost-ms * max(1, workers),
                 for CPU-bound items capped by the number of CPU cores this process may use

Example (runs in a few seconds on a laptop):

    python dataloader_num_workers_bench.py --num-workers 0,1,2,4 --items 512 --item-cost-ms 2

The table is printed in markdown so it can be pasted into notes as is.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def worker_list(text: str) -> list[int]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--num-workers takes comma-separated integers >= 0 such as 0,2,4; got {text!r}"
            ) from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"num_workers must be >= 0, got {value}")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("--num-workers needs at least one value, e.g. 0,2,4")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="DataLoader throughput (samples/s) for several num_workers values over a "
        "synthetic dataset with a fixed CPU cost per item.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--num-workers", type=worker_list, default=worker_list("0,1,2,4"),
                        help="comma-separated num_workers values to try")
    parser.add_argument("--items", type=positive_int, default=512, help="items per measurement")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="DataLoader batch size")
    parser.add_argument("--item-cost-ms", type=non_negative_float, default=2.0,
                        help="CPU time spent producing one item, in milliseconds")
    parser.add_argument("--cost-kind", choices=["cpu", "sleep"], default="cpu",
                        help="cpu: busy loop holding the GIL (decoding, augmenting); sleep: waiting, no CPU (remote I/O)")
    parser.add_argument("--item-size", type=positive_int, default=1024,
                        help="float32 values in each item")
    parser.add_argument("--prefetch-factor", type=positive_int, default=2,
                        help="batches each worker loads ahead (ignored for num_workers=0)")
    parser.add_argument("--repeats", type=positive_int, default=1,
                        help="measure each setting this many times and keep the fastest")
    return parser.parse_args(argv)


class CostlyDataset:
    """A map-style dataset whose items each cost `cost_s` seconds, of CPU time or of waiting."""

    def __init__(self, length: int, item_size: int, cost_s: float, kind: str = "cpu"):
        self.length = length
        self.item_size = item_size
        self.cost_s = cost_s
        self.kind = kind

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        import torch

        if index < 0 or index >= self.length:
            raise IndexError(index)
        if self.kind == "sleep":
            time.sleep(self.cost_s)  # waiting for I/O: the GIL is released, no CPU is used
        else:
            deadline = time.perf_counter() + self.cost_s
            spins = 0
            while time.perf_counter() < deadline:  # busy work, as Python-side decoding would be
                spins += 1
        return torch.full((self.item_size,), float(index % 251), dtype=torch.float32)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no sched_getaffinity
        return os.cpu_count() or 1


def measure(dataset: CostlyDataset, num_workers: int, batch_size: int, prefetch_factor: int):
    from torch.utils.data import DataLoader

    kwargs = {}
    if num_workers > 0:
        kwargs["prefetch_factor"] = prefetch_factor
    start = time.perf_counter()
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, shuffle=False, **kwargs)
    seen = 0
    first_batch_s = None
    for batch in loader:
        if first_batch_s is None:
            first_batch_s = time.perf_counter() - start
        seen += batch.shape[0]
    total_s = time.perf_counter() - start
    if seen != len(dataset):
        raise RuntimeError(f"expected {len(dataset)} items, got {seen}")
    return seen / total_s, first_batch_s or 0.0, total_s


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: this benchmark needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    # we print our own note about oversubscription below, without the traceback-like warning
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    cpus = usable_cpus()
    dataset = CostlyDataset(args.items, args.item_size, args.item_cost_ms / 1000.0, args.cost_kind)
    print(f"torch {torch.__version__}, {cpus} usable CPU cores, items={args.items}, "
          f"batch_size={args.batch_size}, item cost={args.item_cost_ms} ms ({args.cost_kind}), "
          f"item size={args.item_size * 4 / 1e3:.1f} kB (kB = 1000 bytes)")
    if max(args.num_workers) > cpus and args.cost_kind == "cpu":
        print(f"note: more workers than the {cpus} usable cores; the extra workers compete for the same cores")
    print()
    print("| num_workers | samples/s | first batch (s) | total (s) | speed-up | ideal samples/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    baseline = None
    for workers in args.num_workers:
        best = None
        for _ in range(args.repeats):
            result = measure(dataset, workers, args.batch_size, args.prefetch_factor)
            if best is None or result[0] > best[0]:
                best = result
        rate, first_s, total_s = best
        if baseline is None:
            baseline = rate
        if args.item_cost_ms > 0:
            pool = max(1, workers) if args.cost_kind == "sleep" else min(max(1, workers), cpus)
            ideal = f"{1000.0 / args.item_cost_ms * pool:,.0f}"
        else:
            ideal = "n/a"
        print(f"| {workers} | {rate:,.0f} | {first_s:.3f} | {total_s:.3f} | {rate / baseline:.2f}x | {ideal} |",
              flush=True)
    print()
    cap = "max(1, workers)" if args.cost_kind == "sleep" else "min(max(1, workers), usable cores)"
    print(f"samples/s includes worker start-up; 'ideal' = 1000 / item-cost-ms x {cap}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
