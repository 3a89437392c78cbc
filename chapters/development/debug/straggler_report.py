#!/usr/bin/env python
"""Time the compute and the collective wait of every rank, step by step, and name the straggler.

    python straggler_report.py --ranks 4 --slow-rank 2 --extra-ms 30   # starts its own ranks (gloo, CPU)
    torchrun --nproc_per_node 2 straggler_report.py --slow-rank -1     # as one rank of a launcher, no straggler

In data parallel training every step ends in a collective that nobody leaves before the
last rank arrives, so one slow rank makes every rank slow, and the time moves to an
unexpected place: the slow rank computes longer and waits less, the healthy ranks wait
in the collective for it. A profiler on a healthy rank then shows a long all-reduce and
points at the network. This script measures, on every rank, the compute time before the
all-reduce and the time spent inside it, gathers the numbers on rank 0, and prints one
line per rank: the straggler is the rank with the longest compute and the shortest wait.

The compute is a fixed number of float32 matrix multiplications; --slow-rank adds
--extra-ms of sleep to one rank's compute, standing in for a throttled GPU, a slow data
loader or a noisy neighbour. Use --slow-rank -1 for none.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="straggler_report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4, help="ranks to start without a launcher, 2 to 8 (default: 4)")
    parser.add_argument("--slow-rank", type=int, default=2, help="rank made slow, -1 for none (default: 2)")
    parser.add_argument("--extra-ms", type=float, default=30.0, help="extra compute time of the slow rank (default: 30)")
    parser.add_argument("--steps", type=int, default=12, help="steps to time, after 2 warm-up steps (default: 12)")
    parser.add_argument("--matmuls", type=int, default=4, help="256x256 matmuls per step (default: 4)")
    parser.add_argument("--size-mib", type=float, default=1.0, help="all-reduce size in MiB (default: 1)")
    args = parser.parse_args(argv)
    if not 2 <= args.ranks <= 8:
        parser.error("--ranks must be between 2 and 8")
    if not -1 <= args.slow_rank < args.ranks and "RANK" not in os.environ:
        parser.error(f"--slow-rank must be -1 or a rank below --ranks ({args.ranks})")
    if args.steps < 1 or args.matmuls < 0 or args.extra_ms < 0 or args.size_mib <= 0:
        parser.error("--steps must be >= 1; --matmuls, --extra-ms >= 0; --size-mib > 0")
    return args


def launch(argv: list[str], args: argparse.Namespace) -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, *argv], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)})
             for r in range(args.ranks)]
    codes = [p.wait() for p in procs]
    return 0 if not any(codes) else 1


def run_rank(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    a = torch.randn(256, 256)
    grads = torch.ones(int(args.size_mib * 2**20 / 4))
    compute, wait = [], []
    for step in range(args.steps + 2):
        t0 = time.perf_counter()
        for _ in range(args.matmuls):
            a = torch.tanh(a @ a)  # tanh keeps the values bounded
        if rank == args.slow_rank:
            time.sleep(args.extra_ms / 1000)
        # on a GPU, call torch.cuda.synchronize() here, or the time of the kernels lands in the wait
        t1 = time.perf_counter()
        dist.all_reduce(grads)
        t2 = time.perf_counter()
        if step >= 2:  # the first steps pay for connection set-up
            compute.append((t1 - t0) * 1000)
            wait.append((t2 - t1) * 1000)
    mine = {"rank": rank, "compute": statistics.median(compute), "wait": statistics.median(wait),
            "host": socket.gethostname()}
    everyone: list = [None] * world
    dist.all_gather_object(everyone, mine)
    if rank == 0:
        print(report(everyone, args))
    dist.destroy_process_group()
    return 0


def report(rows: list[dict], args: argparse.Namespace) -> str:
    lines = [f"median over {args.steps} steps, ms: compute before the all-reduce, time inside it ({args.size_mib:g} MiB)",
             f"{'rank':>4}  {'host':<12} {'compute':>8} {'in all-reduce':>14} {'step':>7}"]
    for r in rows:
        lines.append(f"{r['rank']:>4}  {r['host'][:12]:<12} {r['compute']:8.1f} {r['wait']:14.1f} "
                     f"{r['compute'] + r['wait']:7.1f}")
    slowest = max(rows, key=lambda r: r["compute"])
    others = [r for r in rows if r is not slowest]
    typical = statistics.median(r["compute"] for r in others)
    gap = slowest["compute"] - typical
    if gap > max(2.0, 0.2 * typical):
        waits = statistics.median(r["wait"] for r in others)
        lines.append(f"straggler: rank {slowest['rank']} computes {gap:.1f} ms longer than the median of the others; "
                     f"they wait {waits:.1f} ms in the all-reduce, it waits {slowest['wait']:.1f} ms")
        lines.append("a profile of any other rank shows that wait as a slow all-reduce: the network is not the cause")
    else:
        lines.append(f"no straggler: the slowest compute (rank {slowest['rank']}) is within {gap:.1f} ms of the median")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if "RANK" not in os.environ:
        return launch(argv, args)
    return run_rank(args)


if __name__ == "__main__":
    sys.exit(main())
