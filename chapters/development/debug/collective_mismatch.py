#!/usr/bin/env python
"""Make two ranks disagree about a collective, on purpose, and show what each rank sees.

    python collective_mismatch.py --mismatch shape --debug detail   # shapes differ: DETAIL names them
    python collective_mismatch.py --mismatch op --debug off         # all_reduce vs broadcast, no checks
    python collective_mismatch.py --mismatch skip --timeout 30      # rank 1 never joins: a hang

Without a launcher the script starts its own two ranks (one subprocess each, with
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, as torchrun would); under torchrun
it is one of the ranks. It uses gloo on CPU; with --backend nccl it needs one GPU per rank.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta

MISMATCHES = ("shape", "op", "skip")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="collective_mismatch.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mismatch", choices=MISMATCHES, default="shape",
                        help="shape: all_reduce of 4 vs 5 elements; op: all_reduce vs broadcast; "
                             "skip: rank 1 never calls the collective (default: shape)")
    parser.add_argument("--debug", choices=("detail", "off"), default="detail",
                        help="value of TORCH_DISTRIBUTED_DEBUG for the ranks (default: detail)")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds a collective waits before it fails (default: 20)")
    return parser.parse_args(argv)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch_two_ranks(argv: list[str], args: argparse.Namespace) -> int:
    """Start rank 0 and rank 1 of this script and wait for both."""
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               TORCH_DISTRIBUTED_DEBUG=args.debug.upper())
    ranks = [subprocess.Popen([sys.executable, __file__, *argv], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)})
             for r in range(2)]
    codes = [p.wait() for p in ranks]
    print(f"launcher: ranks exited with {codes} (mismatch={args.mismatch}, TORCH_DISTRIBUTED_DEBUG={args.debug.upper()})",
          flush=True)
    return 0 if all(code in (0, 1) for code in codes) else 1


def busy_elsewhere(seconds: float) -> None:
    """Rank 1 in --mismatch skip: doing something else while rank 0 waits in the collective."""
    time.sleep(seconds)


def run_rank(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.timeout))
    say(f"[rank {rank}] ready, pid {os.getpid()}, "
        f"TORCH_DISTRIBUTED_DEBUG={os.environ.get('TORCH_DISTRIBUTED_DEBUG', 'OFF')}")
    tensor = torch.ones(4, device=device)
    try:
        if args.mismatch == "shape":
            tensor = torch.ones(4 + rank, device=device)  # rank 1 sends 5 elements
            dist.all_reduce(tensor)
        elif args.mismatch == "op":
            dist.all_reduce(tensor) if rank == 0 else dist.broadcast(tensor, src=0)
        elif rank == 0:
            dist.all_reduce(tensor)  # waits for rank 1, which never comes
        else:
            busy_elsewhere(args.timeout * 3)
        say(f"[rank {rank}] no error raised; result {tensor.tolist()}")
        code = 0
    except RuntimeError as exc:
        message = str(exc)
        say(f"[rank {rank}] caught {type(exc).__name__}: {message}")
        code = 1
    if code == 0 or "Detected mismatch" in message:
        dist.destroy_process_group()  # the group is still usable after a caught mismatch
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if "RANK" not in os.environ:
        return launch_two_ranks(argv, args)
    return run_rank(args)


def say(line: str) -> None:
    # One write per line: both ranks share the launcher's stdout, and print() may split a line in two writes.
    os.write(1, (line.replace("\n", " ") + "\n").encode())


if __name__ == "__main__":
    sys.exit(main())
