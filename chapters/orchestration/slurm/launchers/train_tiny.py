#!/usr/bin/env python
"""A few data-parallel training steps of a tiny model on CPUs, to check that a Slurm launcher wires up ranks.

Every rank prints one line per step and a final line, for example

    rank=1 world_size=4 local_rank=1 node=n1 step=0 loss=1.234567
    DONE rank=1 world_size=4

so that a job's output file shows at a glance whether all ranks joined and trained. It runs with any of the four
launchers next to it:

    --framework torch       plain torch.distributed + DistributedDataParallel on the gloo backend. The rank comes
                            from RANK/WORLD_SIZE/LOCAL_RANK (set by torchrun, or by srun-launcher.slurm from
                            SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID); when those are missing it reads Slurm's
                            variables itself.
    --framework accelerate  Hugging Face Accelerate: `accelerate launch` sets the environment, Accelerator() reads it.
    --framework lightning   PyTorch Lightning: the Trainer detects Slurm (SLURM_NTASKS, SLURM_PROCID, ...) and
                            creates the process group itself; --devices and --num-nodes must match the sbatch request.

It needs no GPU, no network access and no dataset: the data are random tensors from a fixed seed.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

IN_FEATURES, OUT_FEATURES, BATCH = 16, 4, 8


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--framework", choices=["torch", "accelerate", "lightning"], default="torch",
                   help="which library creates the process group (default: torch)")
    p.add_argument("--steps", type=int, default=3, help="optimizer steps to run (default: 3)")
    p.add_argument("--devices", type=int, default=None,
                   help="lightning only: processes per node (default: $SLURM_NTASKS_PER_NODE or 1)")
    p.add_argument("--num-nodes", type=int, default=None,
                   help="lightning only: number of nodes (default: $SLURM_NNODES or 1)")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for the other ranks (default: 120)")
    return p.parse_args(argv)


def node_name() -> str:
    # On a real cluster the host name is the node; on the one-host test cluster both nodes share a host name,
    # so prefer the node name that slurmd exports to the tasks it starts.
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def say(line: str) -> None:
    # One write call per line, newline included: the ranks of a node share one output file, and with
    # unbuffered output print() would write the text and the newline separately, letting lines interleave.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def report(rank: int, world: int, local_rank: int, step: int, loss: float) -> None:
    say(f"rank={rank} world_size={world} local_rank={local_rank} node={node_name()} step={step} loss={loss:.6f}")


def batch_for(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    # Each rank gets its own shard of data, as a DistributedSampler would give it.
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, IN_FEATURES, generator=g)
    return x, x[:, :OUT_FEATURES] * 2.0


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list such as 'n[1-2]', expanded by scontrol."""
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def torch_env() -> tuple[int, int, int]:
    """Rank, world size and local rank from the launcher's variables, falling back to Slurm's own."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0))
    if "SLURM_PROCID" in env:
        rank, world, local = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]), int(env["SLURM_LOCALID"])
        env.setdefault("MASTER_ADDR", first_host(env["SLURM_JOB_NODELIST"]))
        env.setdefault("MASTER_PORT", str(20000 + int(env["SLURM_JOB_ID"]) % 10000))
        return rank, world, local
    return 0, 1, 0  # a plain `python train_tiny.py`: one process, still through the same code path


def run_torch(args: argparse.Namespace) -> None:
    rank, world, local_rank = torch_env()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts rank 0's
    model = nn.parallel.DistributedDataParallel(nn.Linear(IN_FEATURES, OUT_FEATURES))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch_for(rank, step)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        report(rank, world, local_rank, step, loss.item())
    # All ranks must hold identical weights after the all-reduced updates: check it.
    w = model.module.weight.detach().clone()
    w0 = w.clone()
    dist.broadcast(w0, src=0)
    if not torch.equal(w, w0):
        raise SystemExit(f"rank={rank}: weights differ from rank 0")
    dist.barrier()
    say(f"DONE rank={rank} world_size={world}")
    dist.destroy_process_group()


def run_accelerate(args: argparse.Namespace) -> None:
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=args.timeout))])
    rank, world, local_rank = acc.process_index, acc.num_processes, acc.local_process_index
    torch.manual_seed(0)
    model = nn.Linear(IN_FEATURES, OUT_FEATURES)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = acc.prepare(model, opt)  # wraps the model in DDP when more than one process runs
    for step in range(args.steps):
        x, y = batch_for(rank, step)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        report(rank, world, local_rank, step, loss.item())
    acc.wait_for_everyone()
    say(f"DONE rank={rank} world_size={world}")
    acc.end_training()


def run_lightning(args: argparse.Namespace) -> None:
    import lightning as L
    from torch.utils.data import DataLoader, TensorDataset

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(IN_FEATURES, OUT_FEATURES)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.mse_loss(self.layer(x), y)
            report(self.global_rank, self.trainer.world_size, self.local_rank, self.global_step, loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    devices = args.devices or int(os.environ.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0])
    num_nodes = args.num_nodes or int(os.environ.get("SLURM_NNODES", "1"))
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH * args.steps * devices * num_nodes, IN_FEATURES, generator=g)
    data = DataLoader(TensorDataset(x, x[:, :OUT_FEATURES] * 2.0), batch_size=BATCH)
    trainer = L.Trainer(
        accelerator="cpu", strategy="ddp", devices=devices, num_nodes=num_nodes, max_steps=args.steps,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    model = Tiny()
    trainer.fit(model, data)  # Lightning adds a DistributedSampler, so each rank sees its own shard
    say(f"DONE rank={trainer.global_rank} world_size={trainer.world_size}")
    if torch.distributed.is_initialized():  # Lightning leaves the group open; gloo's threads can abort at exit
        torch.distributed.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)  # several ranks share a few cores on the test cluster
    {"torch": run_torch, "accelerate": run_accelerate, "lightning": run_lightning}[args.framework](args)
    return 0


def leave(code: int) -> None:
    """Exit without tearing down the interpreter.

    Gloo runs each collective on a worker thread, and that thread releases the collective's tensors a moment
    after the caller has been told it finished. DistributedDataParallel keeps the process group alive past
    destroy_process_group(), so those threads are still running when Python shuts down; a thread that then
    asks for the interpreter lock aborts the whole process ("terminate called without an active exception",
    exit 134) after the work is done. On this script's CPU runs it hit about 1 run in 10. PyTorch describes the
    cause in https://github.com/pytorch/pytorch/pull/179291. Every rank has finished and synchronized by now,
    so flush what was printed and end the process directly.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main())
