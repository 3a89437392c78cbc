#!/usr/bin/env python3
"""Catch silent corruption of model weights by comparing exact fingerprints across data-parallel replicas.

In data-parallel training every replica applies the same averaged gradient to the
same weights, so after each optimizer step the replicas hold bitwise identical
parameters. A bit that flips on one GPU (a silent data corruption, or a bug that
makes one rank diverge) breaks that identity, and a cheap check finds it: each rank
reads every parameter tensor as integers of the same width (float32 as int32, bf16
as int16) and sums them in int64. Integer addition is exact, so the sum does not
depend on the order of the reduction, and any single flipped bit changes it by a
power of two. The ranks all-gather one int64 per tensor and compare.

This script trains a small model with DistributedDataParallel on the gloo backend
(CPU), checks the fingerprints every --check-every steps, and can flip one bit in a
weight of one rank (--flip-bit RANK:STEP) to show the detection. With three or more
replicas the odd one is named by majority; with two the check proves that one of
them is wrong but not which.

    torchrun --standalone --nproc_per_node=2 replica_fingerprint.py
    torchrun --standalone --nproc_per_node=2 replica_fingerprint.py --flip-bit 1:7

Exit status: 0 when all checks agree, 1 when a mismatch is found (training stops at
the check that found it), 2 for a usage error.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

INT_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
MASK = (1 << 64) - 1  # print int64 fingerprints as unsigned 64-bit numbers


def fingerprint(named_tensors, torch):
    """One exact int64 per tensor: the tensor's bytes read as integers of its element size, summed."""
    sums = []
    for _, t in named_tensors:
        as_int = t.detach().contiguous().view(getattr(torch, INT_OF_SIZE[t.element_size()]))
        sums.append(as_int.sum(dtype=torch.int64))
    return torch.stack(sums)


def flip_bit(tensor, bit: int, torch) -> None:
    """Flip one bit of the first element of a float32 tensor, in place."""
    view = tensor.detach().view(-1).view(torch.int32)
    view[0] ^= 1 << bit


def compare(names: list[str], per_rank: list[list[int]]) -> list[str]:
    """Lines describing every tensor whose fingerprint differs between ranks; empty when all agree."""
    lines = []
    for i, name in enumerate(names):
        values = [row[i] for row in per_rank]
        if len(set(values)) == 1:
            continue
        counts = Counter(values)
        top, n = counts.most_common(1)[0]
        if n > len(values) / 2:
            odd = [r for r, v in enumerate(values) if v != top]
            lines.append(f"  {name}: rank(s) {odd} differ from the majority of {n} of {len(values)}")
        else:
            lines.append(f"  {name}: no majority among {len(values)} replicas: "
                         + ", ".join(f"rank {r} {v & MASK:#018x}" for r, v in enumerate(values)))
    return lines


def _flip(text: str) -> tuple[int, int]:
    try:
        rank, step = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:STEP, got {text!r}") from None
    if rank < 0 or step < 1:
        raise argparse.ArgumentTypeError(f"RANK must be >= 0 and STEP >= 1, got {text!r}")
    return rank, step


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=_positive, default=20, help="training steps (default 20)")
    parser.add_argument("--check-every", type=_positive, default=5, help="steps between checks (default 5)")
    parser.add_argument("--flip-bit", type=_flip, metavar="RANK:STEP",
                        help="after optimizer step STEP, flip bit --bit of the first weight on rank RANK")
    parser.add_argument("--bit", type=int, default=20, choices=range(32), metavar="0-31",
                        help="which bit of the float32 to flip (default 20, a mantissa bit)")
    parser.add_argument("--width", type=_positive, default=64, help="hidden width of the model (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the model and the data (default 0)")
    args = parser.parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        parser.error("launch with torchrun, for example: torchrun --standalone --nproc_per_node=2 "
                     "replica_fingerprint.py")

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.flip_bit and args.flip_bit[0] >= world:
        if rank == 0:
            print(f"error: --flip-bit rank {args.flip_bit[0]} does not exist with {world} ranks", file=sys.stderr)
        dist.barrier()
        dist.destroy_process_group()
        return 2
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(16, args.width), torch.nn.GELU(), torch.nn.Linear(args.width, 1))
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(args.seed + 1 + rank)  # different data on every rank
    names = [n for n, _ in model.named_parameters()]
    status = 0
    for step in range(1, args.steps + 1):
        x = torch.randn(32, 16, generator=data)
        loss = torch.nn.functional.mse_loss(ddp(x), x.sum(dim=1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.flip_bit and args.flip_bit == (rank, step):
            flip_bit(model[0].weight, args.bit, torch)
            print(f"rank {rank}: flipped bit {args.bit} of {names[0]}[0] after step {step}", flush=True)
        if step % args.check_every and step != args.steps:
            continue
        mine = fingerprint(model.named_parameters(), torch)
        gathered = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(gathered, mine)
        per_rank = [g.tolist() for g in gathered]
        problems = compare(names, per_rank)
        if rank == 0:
            if problems:
                print(f"step {step}: MISMATCH between the {world} replicas in {len(problems)} of "
                      f"{len(names)} tensors", flush=True)
                print("\n".join(problems), flush=True)
            else:
                total = sum(per_rank[0]) & MASK
                print(f"step {step}: {world} replicas agree on all {len(names)} tensors "
                      f"(combined fingerprint {total:#018x}), loss {loss.item():.4f}", flush=True)
        if problems:
            status = 1
            break
    dist.barrier()  # leave together: a rank that tears gloo down while its peer still talks can abort
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
