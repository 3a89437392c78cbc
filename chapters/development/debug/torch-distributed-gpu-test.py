#!/usr/bin/env python3
"""Check that every rank of a torch.distributed job can talk to every other one.

Launch it the way you launch training, with torchrun:

    # one node, all its GPUs
    torchrun --nproc_per_node gpu torch-distributed-gpu-test.py
    # two nodes (run on each, with the first node's address)
    torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d \\
        --rdzv_endpoint $MASTER_ADDR:29500 torch-distributed-gpu-test.py
    # no GPU: the same checks over gloo on CPU
    torchrun --nproc_per_node 2 torch-distributed-gpu-test.py --backend gloo

Each rank reports its host, device and global/local rank, then the job goes
through four steps: init (rendezvous and communicator set-up), barrier,
all-reduce (every rank contributes 1, so the sum must equal the world size) and
shutdown. A rank that fails prints which step failed and what to check next,
and exits with status 1. When every rank passes, rank 0 prints one OK line.

The backend defaults to NCCL when CUDA is available and to gloo otherwise.
"""
from __future__ import annotations

import argparse
import datetime
import fcntl
import os
import socket
import sys
import time
import traceback

STEPS = ("init", "barrier", "all-reduce", "shutdown")

# What to look at when a given step fails, per backend. Printed by the failing rank.
HINTS = {
    "init": [
        "Every node must reach MASTER_ADDR:MASTER_PORT (or the --rdzv_endpoint): check that the "
        "address resolves from each node (`getent hosts $MASTER_ADDR`) and that a firewall does "
        "not block the port (`nc -zv $MASTER_ADDR $MASTER_PORT` from another node).",
        "All nodes must be started with the same --nnodes/--nproc_per_node; a missing or late "
        "node shows up as a timeout here.",
        "Another job may already use the port: pick a free one with --master_port / the rdzv endpoint.",
    ],
    "barrier": [
        "The rendezvous worked but the ranks could not exchange data: the communicator picked a "
        "network interface the other nodes cannot reach.",
    ],
    "all-reduce": [
        "The collective started but did not finish or returned the wrong value.",
    ],
    "shutdown": [
        "All checks passed; a failure here is usually harmless, but re-run with "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL to see which rank lagged.",
    ],
}
BACKEND_HINTS = {
    "nccl": [
        "Re-run with NCCL_DEBUG=INFO (add NCCL_DEBUG_SUBSYS=INIT,NET for set-up details) and read "
        "which interfaces and transports NCCL chose on each rank.",
        "Pin the interface with NCCL_SOCKET_IFNAME=<iface> (see `ip -br addr`); on InfiniBand "
        "check `ibstat` and try NCCL_IB_DISABLE=1 once to see whether IB is the culprit.",
        "Inside one node, NCCL_P2P_DISABLE=1 or NCCL_SHM_DISABLE=1 tell a broken peer-to-peer "
        "path apart from the rest; check `nvidia-smi topo -m` and that CUDA_VISIBLE_DEVICES is "
        "what you expect.",
        "Make sure TCP ports between the nodes are open (NCCL also opens ephemeral ports for its "
        "bootstrap, not only MASTER_PORT).",
    ],
    "gloo": [
        "Pin the interface with GLOO_SOCKET_IFNAME=<iface> (see `ip -br addr`); by default gloo "
        "uses the address the host name resolves to, which may be unreachable.",
        "Make sure TCP ports between the nodes are open, not only MASTER_PORT.",
        "Re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL and TORCH_CPP_LOG_LEVEL=INFO for more details.",
    ],
}


def locked_print(*args: object, file=None) -> None:
    """print() under an flock on this file so that the ranks' lines don't interleave."""
    with open(os.path.abspath(__file__), "r") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            print(*args, file=file or sys.stdout, flush=True)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value}")
    return number


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(
            "Check that all ranks of a torch.distributed job can rendezvous, pass a barrier "
            "and all-reduce correctly. Launch with torchrun, e.g. "
            "`torchrun --nproc_per_node 2 torch-distributed-gpu-test.py --backend gloo`."
        ),
        epilog="Set TORCH_DISTRIBUTED_GPU_TEST_TRACEBACK=1 to add the full traceback to a failure report.",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "nccl", "gloo"),
        default="auto",
        help="communication backend; auto = nccl when CUDA is available, else gloo (default: auto)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=120.0,
        help="seconds a collective may wait for the other ranks before failing (default: 120)",
    )
    parser.add_argument(
        "--corrupt-rank",
        type=int,
        default=None,
        metavar="RANK",
        help="make RANK contribute 0 instead of 1 to the all-reduce, to see what a failed check looks like",
    )
    return parser.parse_args(argv)


def pick_backend(requested: str, cuda_available: bool) -> str:
    """'auto' means NCCL when CUDA is available, gloo otherwise."""
    if requested != "auto":
        return requested
    return "nccl" if cuda_available else "gloo"


def read_launch_env() -> tuple[int, int, int, int]:
    """(rank, local_rank, world_size, local_world_size) as set by torchrun."""
    missing = [k for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        sys.stderr.write(
            f"error: environment variable(s) {', '.join(missing)} not set: this script must be started by "
            "a launcher that sets them, e.g.\n"
            f"  torchrun --nproc_per_node 2 {os.path.basename(__file__)} --backend gloo\n"
        )
        sys.exit(2)
    world = int(os.environ["WORLD_SIZE"])
    return (
        int(os.environ["RANK"]),
        int(os.environ["LOCAL_RANK"]),
        world,
        int(os.environ.get("LOCAL_WORLD_SIZE", world)),
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, local_rank, world_size, local_world_size = read_launch_env()
    if args.corrupt_rank is not None and not 0 <= args.corrupt_rank < world_size:
        sys.stderr.write(f"error: --corrupt-rank must be between 0 and {world_size - 1}, got {args.corrupt_rank}\n")
        return 2
    host = socket.gethostname()
    who = f"[{host} rank {rank}/{world_size} local {local_rank}/{local_world_size}]"

    import torch
    import torch.distributed as dist

    backend = pick_backend(args.backend, torch.cuda.is_available())
    if backend == "nccl":
        if not torch.cuda.is_available():
            sys.stderr.write(f"{who} error: --backend nccl needs CUDA, but torch.cuda.is_available() is False; "
                             "check `nvidia-smi` and that this torch build has CUDA, or use --backend gloo\n")
            return 2
        if local_rank >= torch.cuda.device_count():
            sys.stderr.write(f"{who} error: local rank {local_rank} but only {torch.cuda.device_count()} GPU(s) "
                             "are visible; lower --nproc_per_node or check CUDA_VISIBLE_DEVICES\n")
            return 2
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        device_name = f"{device} ({torch.cuda.get_device_name(device)})"
    else:
        device = torch.device("cpu")
        device_name = "cpu"

    step = "init"
    started = time.perf_counter()
    try:
        kwargs = {"backend": backend, "timeout": datetime.timedelta(seconds=args.timeout)}
        if backend == "nccl":
            kwargs["device_id"] = device  # binds the communicator to this GPU up front
        dist.init_process_group(**kwargs)
        locked_print(f"{who} device={device_name} backend={backend} init ok")

        step = "barrier"
        dist.barrier()

        step = "all-reduce"
        value = 0.0 if args.corrupt_rank == rank else 1.0
        tensor = torch.tensor([value], dtype=torch.float32, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        got = tensor.item()
        if got != world_size:
            # Find out whose contribution went wrong: gather what every rank sent.
            sent = torch.tensor([value], dtype=torch.float32, device=device)
            gathered = [torch.zeros_like(sent) for _ in range(world_size)]
            dist.all_gather(gathered, sent)
            odd = {r: t.item() for r, t in enumerate(gathered) if t.item() != 1.0}
            culprits = ", ".join(f"rank {r} sent {v:g}" for r, v in odd.items()) or "every rank sent 1"
            raise AssertionError(
                f"all-reduce sum is {got:g}, expected world_size={world_size} ({culprits})"
            )

        # A second barrier so that no rank reports success before all have checked.
        step = "barrier"
        dist.barrier()

        step = "shutdown"
        dist.destroy_process_group()
    except Exception as exc:  # report, then exit non-zero so torchrun reports the failure too
        report_failure(who, step, backend, exc)
        return 1

    if rank == 0:
        elapsed = time.perf_counter() - started
        versions = f"torch {torch.__version__}"
        if backend == "nccl":
            versions += f", NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}"
        locked_print(
            f"OK: all {world_size} ranks passed init, barrier and all-reduce "
            f"(backend={backend}, {versions}, {elapsed:.2f}s)"
        )
    return 0


def report_failure(who: str, step: str, backend: str, exc: BaseException) -> None:
    lines = [f"{who} FAILED at step '{step}' ({STEPS.index(step) + 1}/{len(STEPS)}): "
             f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"]
    if isinstance(exc, AssertionError):
        lines.append("  what to check next:")
        lines.append("  - A wrong sum means that some rank sent or received bad data: run again to see if it "
                     "repeats, then test the GPUs and links of the nodes in this job one pair at a time.")
    else:
        lines.append("  what to check next:")
        lines += [f"  - {hint}" for hint in HINTS[step] + BACKEND_HINTS[backend]]
    if os.environ.get("TORCH_DISTRIBUTED_GPU_TEST_TRACEBACK"):
        lines.append(traceback.format_exc())
    locked_print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
