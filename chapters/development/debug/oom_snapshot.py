#!/usr/bin/env python
"""Record a CUDA memory snapshot around a few training steps, and keep it when memory runs out.

    python oom_snapshot.py --out snapshot.pickle               # record 3 steps, save the snapshot
    python oom_snapshot.py --out oom.pickle --force-oom        # also ask for too much memory, keep the evidence

Open the .pickle file at https://pytorch.org/memory_viz (the page reads it in the
browser). Snapshots record PyTorch's CUDA caching allocator, so they need a GPU.
Without one the script says so and runs the same steps on the CPU under
torch.profiler(profile_memory=True), which reports the memory each operator allocated.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="oom_snapshot.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("snapshot.pickle"), help="snapshot file (default: snapshot.pickle)")
    parser.add_argument("--steps", type=int, default=3, help="training steps to record (default: 3)")
    parser.add_argument("--hidden", type=int, default=1024, help="width of the toy model (default: 1024)")
    parser.add_argument("--max-entries", type=int, default=100_000,
                        help="allocation events kept in the ring buffer (default: 100000)")
    parser.add_argument("--force-oom", action="store_true", help="after the steps, allocate more than the GPU has")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.hidden < 1:
        parser.error("--steps and --hidden must be at least 1")
    return args


def train(steps: int, hidden: int, device: torch.device) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)).to(device)
    optimizer = torch.optim.AdamW(model.parameters())  # its two states per parameter appear at the first step
    for _ in range(steps):
        loss = model(torch.randn(64, hidden, device=device)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def on_gpu(args: argparse.Namespace) -> int:
    device = torch.device("cuda")
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries)
    try:
        train(args.steps, args.hidden, device)
        if args.force_oom:
            free, total = torch.cuda.mem_get_info()
            torch.empty(2 * total, dtype=torch.uint8, device=device)  # twice the whole GPU: always fails
    except torch.OutOfMemoryError as exc:
        torch.cuda.memory._dump_snapshot(str(args.out))
        print(f"out of memory: {str(exc).splitlines()[0]}")
        print(torch.cuda.memory_summary(abbreviated=True))
        print(f"snapshot of the moments before the failure: {args.out}; open it at https://pytorch.org/memory_viz")
        return 1
    finally:
        peak = torch.cuda.max_memory_allocated() / 2**20
    torch.cuda.memory._dump_snapshot(str(args.out))
    torch.cuda.memory._record_memory_history(enabled=None)
    print(f"{args.steps} steps, peak allocated {peak:.1f} MiB; snapshot: {args.out}; open it at https://pytorch.org/memory_viz")
    return 0


def on_cpu(args: argparse.Namespace) -> int:
    from torch.profiler import ProfilerActivity, profile

    print("CUDA is not available: no snapshot (it records the CUDA caching allocator only).")
    print(f"Running the same {args.steps} steps on the CPU under torch.profiler(profile_memory=True) instead.")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        train(args.steps, args.hidden, torch.device("cpu"))
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_memory_usage, reverse=True)
    print("operator                  allocated by itself   calls")
    for event in events[:8]:
        print(f"{event.key:<25} {event.self_cpu_memory_usage / 2**20:>15.2f} MiB {event.count:>7}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return on_gpu(args) if torch.cuda.is_available() else on_cpu(args)


if __name__ == "__main__":
    sys.exit(main())
