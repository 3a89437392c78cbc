#!/usr/bin/env python3
"""Train a tiny transformer-like MLP model on a DeviceMesh that composes tensor parallelism (TP), FSDP2 and,
optionally, pipeline parallelism (PP), and check its losses against a single-process reference.

The mesh has three named dimensions, ("pp", "dp", "tp"), with TP innermost (neighbouring ranks, the fastest
links on a real node) and PP outermost. Each rank

1. builds the whole model from the same seed (so every rank starts from the same weights as the reference);
2. keeps only its pipeline stage's blocks when --pp > 1 (stage 0 also keeps the embedding, the last stage the
   final norm and the output head);
3. applies `parallelize_module` on the "tp" sub-mesh: each block's first linear layer is split by output
   columns (ColwiseParallel), its second by input rows (RowwiseParallel), so one all-reduce per block completes
   the MLP;
4. applies FSDP2 `fully_shard` on the "dp" sub-mesh, block by block and then at the stage's root, which
   shards every parameter (already a TP DTensor or not) once more along the data-parallel ranks;
5. trains --steps optimizer steps on its data-parallel slice of a fixed global batch, through a GPipe schedule
   of `torch.distributed.pipelining` when --pp > 1.

Rank 0 also trains an unsharded copy of the model on the whole global batch, one process, same optimizer, and
prints both loss sequences; the script exits with status 1 if any step differs by more than --tol.

    torchrun --standalone --nproc_per_node=4 devicemesh_tp_fsdp.py                  # dp=2 x tp=2
    torchrun --standalone --nproc_per_node=4 devicemesh_tp_fsdp.py --pp 2 --tp 2     # pp=2 x dp=1 x tp=2
    torchrun --standalone --nproc_per_node=2 devicemesh_tp_fsdp.py --tp 2            # TP only, dp=1
    python devicemesh_tp_fsdp.py                       # not under torchrun: the single-process reference only

Everything runs on CPU with the gloo backend (pass --device cuda under torchrun on a GPU node for NCCL).
The output contains no timings and is the same on every run with the same arguments.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="The data-parallel degree is the world size divided by --tp and --pp.")
    p.add_argument("--tp", type=positive, default=None,
                   help="tensor-parallel degree (default: 2 if the world size is even, else 1)")
    p.add_argument("--pp", type=positive, default=1, help="pipeline stages (default: 1, no pipeline)")
    p.add_argument("--microbatches", type=positive, default=2,
                   help="micro-batches per step in the pipeline schedule when --pp > 1 (default: 2)")
    p.add_argument("--steps", type=positive, default=5, help="optimizer steps (default: 5)")
    p.add_argument("--layers", type=positive, default=4, help="MLP blocks (default: 4; a multiple of --pp)")
    p.add_argument("--dim", type=positive, default=32, help="model width (default: 32)")
    p.add_argument("--hidden", type=positive, default=128, help="MLP width (default: 128; a multiple of --tp)")
    p.add_argument("--vocab", type=positive, default=64, help="vocabulary size (default: 64)")
    p.add_argument("--seq", type=positive, default=8, help="tokens per sequence (default: 8)")
    p.add_argument("--batch", type=positive, default=8,
                   help="global batch in sequences (default: 8; a multiple of dp x microbatches)")
    p.add_argument("--lr", type=positive_float, default=1e-2, help="AdamW learning rate (default: 0.01)")
    p.add_argument("--tol", type=positive_float, default=1e-4,
                   help="largest allowed |parallel - reference| loss difference (default: 1e-4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the data (default: 0)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu uses gloo, cuda uses nccl (default: cpu)")
    args = p.parse_args(argv)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.tp is None:
        args.tp = 2 if world % 2 == 0 else 1
    if world % (args.tp * args.pp):
        p.error(f"the world size {world} is not divisible by tp x pp = {args.tp} x {args.pp}")
    args.dp = world // (args.tp * args.pp)
    if args.hidden % args.tp:
        p.error(f"--hidden {args.hidden} is not a multiple of --tp {args.tp}")
    if args.layers % args.pp:
        p.error(f"--layers {args.layers} is not a multiple of --pp {args.pp}")
    per_step = args.dp * (args.microbatches if args.pp > 1 else 1)
    if args.batch % per_step:
        p.error(f"--batch {args.batch} is not a multiple of dp x microbatches = {per_step}")
    return args


# ----------------------------------------------------------------------------- model and data

def build_model(args: argparse.Namespace):
    import torch
    from torch import nn

    class Block(nn.Module):
        """Pre-norm residual MLP block: x + down(gelu(up(norm(x)))), the MLP half of a transformer layer."""

        def __init__(self, dim: int, hidden: int):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.up = nn.Linear(dim, hidden)
            self.down = nn.Linear(hidden, dim)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    class TinyModel(nn.Module):
        """Embedding, blocks, final norm and output head; a stage of a pipeline sets the parts it lacks to None."""

        def __init__(self, vocab: int, dim: int, hidden: int, layers: int):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleDict({str(i): Block(dim, hidden) for i in range(layers)})
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, x):
            h = self.embed(x) if self.embed is not None else x
            for block in self.layers.values():
                h = block(h)
            if self.head is None:
                return h
            # logits as (tokens, vocab): a 2-D matmul output, not a view, which FSDP2's output hook prefers
            return self.head(self.norm(h).flatten(0, 1))

    torch.manual_seed(args.seed)
    return TinyModel(args.vocab, args.dim, args.hidden, args.layers)


def make_batches(args: argparse.Namespace):
    """A fixed global batch per step: random tokens, and as targets a fixed permutation of the vocabulary."""
    import torch

    gen = torch.Generator().manual_seed(args.seed + 1)
    perm = torch.randperm(args.vocab, generator=gen)
    out = []
    for _ in range(args.steps):
        x = torch.randint(0, args.vocab, (args.batch, args.seq), generator=gen)
        out.append((x, perm[x]))
    return out


def loss_fn(logits, target):
    import torch

    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def reference_losses(model, batches, args: argparse.Namespace) -> list[float]:
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, foreach=False)
    losses = []
    for x, y in batches:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# ----------------------------------------------------------------------------- the parallel run

def describe(name: str, param) -> str:
    from torch.distributed.tensor import DTensor

    if isinstance(param, DTensor):
        return (f"{name}: global {tuple(param.shape)}, local {tuple(param.to_local().shape)}, "
                f"mesh dims {param.device_mesh.mesh_dim_names}, placements {param.placements}")
    return f"{name}: plain tensor {tuple(param.shape)}"


def parallel_run(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.set_num_threads(1)
    backend = "nccl" if args.device == "cuda" else "gloo"
    if args.device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh(args.device, (args.pp, args.dp, args.tp), mesh_dim_names=("pp", "dp", "tp"))
    pp_rank, dp_rank, tp_rank = (mesh.get_local_rank(d) for d in ("pp", "dp", "tp"))

    model = build_model(args)
    reference = copy.deepcopy(model) if rank == 0 else None
    batches = make_batches(args)

    # 1. pipeline stage: keep this stage's blocks, the embedding on the first stage, norm and head on the last.
    per_stage = args.layers // args.pp
    keep = {str(i) for i in range(pp_rank * per_stage, (pp_rank + 1) * per_stage)}
    for name in list(model.layers):
        if name not in keep:
            del model.layers[name]
    if pp_rank != 0:
        model.embed = None
    if pp_rank != args.pp - 1:
        model.norm = None
        model.head = None
    model.to(args.device)

    # 2. tensor parallelism inside each block, on the "tp" sub-mesh.
    for block in model.layers.values():
        parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})

    # 3. FSDP2 on the "dp" sub-mesh: one all-gather unit per block, then the stage's root (embedding, head).
    for block in model.layers.values():
        fully_shard(block, mesh=mesh["dp"], reshard_after_forward=True)
    fully_shard(model, mesh=mesh["dp"])

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, foreach=False)
    schedule = None
    if args.pp > 1:
        from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

        stage = PipelineStage(model, stage_index=pp_rank, num_stages=args.pp, device=torch.device(args.device),
                              group=mesh["pp"].get_group())
        schedule = ScheduleGPipe(stage, n_microbatches=args.microbatches, loss_fn=loss_fn)

    if rank == 0:
        print(f"torch {torch.__version__}, backend {backend}, world size {world}, "
              f"mesh (pp, dp, tp) = ({args.pp}, {args.dp}, {args.tp})")
        print(f"rank layout (rank = pp_index x {args.dp * args.tp} + dp_index x {args.tp} + tp_index):")
        print(f"  {mesh.mesh.tolist()}")
        first = next(iter(model.layers))
        for pname in ("up.weight", "down.weight", "norm.weight"):
            print("  rank 0, block " + describe(f"{first}.{pname}", model.layers[first].get_parameter(pname)))
        if model.embed is not None:
            print("  rank 0, " + describe("embed.weight", model.embed.weight))

    last_stage = pp_rank == args.pp - 1
    local = args.batch // args.dp
    parallel = []
    for x, y in batches:
        xs = x[dp_rank * local:(dp_rank + 1) * local].to(args.device)
        ys = y[dp_rank * local:(dp_rank + 1) * local].to(args.device)
        optimizer.zero_grad()
        if schedule is None:
            loss = loss_fn(model(xs), ys)
            loss.backward()
            value = loss.detach()
        else:
            mb_losses: list = []
            if pp_rank == 0 and last_stage:
                schedule.step(xs, target=ys, losses=mb_losses)
            elif pp_rank == 0:
                schedule.step(xs)
            elif last_stage:
                schedule.step(target=ys, losses=mb_losses)
            else:
                schedule.step()
            value = torch.stack(mb_losses).mean().detach() if last_stage else torch.zeros((), device=args.device)
        optimizer.step()
        # Global mean loss on every rank: only the last stage's tp-rank-0 ranks contribute, each its dp slice.
        share = value / args.dp if (last_stage and tp_rank == 0) else torch.zeros((), device=args.device)
        share = share.float().reshape(1)
        dist.all_reduce(share)
        parallel.append(share.item())

    status = 0
    if rank == 0:
        ref = reference_losses(reference, batches, args)
        print()
        print(f"| step | reference loss (1 process) | parallel loss ({world} ranks) | abs. difference |")
        print("|---:|---:|---:|---:|")
        worst = 0.0
        for i, (a, b) in enumerate(zip(ref, parallel), 1):
            worst = max(worst, abs(a - b))
            print(f"| {i} | {a:.6f} | {b:.6f} | {abs(a - b):.1e} |")
        print()
        verdict = "OK" if worst <= args.tol else "MISMATCH"
        print(f"{verdict}: largest difference {worst:.1e} (tolerance {args.tol:g}); "
              f"loss {ref[0]:.4f} -> {ref[-1]:.4f} over {args.steps} steps")
        status = 0 if worst <= args.tol else 1
    flag = torch.tensor([status], device=args.device)
    dist.all_reduce(flag)
    dist.destroy_process_group()
    return int(flag.item() > 0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "RANK" not in os.environ:
        import torch

        torch.set_num_threads(1)
        losses = reference_losses(build_model(args), make_batches(args), args)
        print("not launched by torchrun: the single-process reference only "
              "(torchrun --standalone --nproc_per_node=N for the parallel run)")
        print("| step | reference loss (1 process) |")
        print("|---:|---:|")
        for i, value in enumerate(losses, 1):
            print(f"| {i} | {value:.6f} |")
        return 0
    return parallel_run(args)


if __name__ == "__main__":
    sys.exit(main())
