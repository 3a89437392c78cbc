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
   of `torch.distributed.pipelining` when --pp > 1, clipping the global gradient norm to --clip. The TP-split
   weights are DTensors on the 2-D ("dp", "tp") mesh and the other parameters on the 1-D "dp" mesh, a mix that
   `torch.nn.utils.clip_grad_norm_` rejects in torch 2.13, so the norm is computed from the local shards with
   one all-reduce over all ranks (which also sums it over pipeline stages).

Rank 0 also trains an unsharded copy of the model on the whole global batch, one process, same optimizer and
clipping, and prints both loss and gradient-norm sequences; the script exits with status 1 if any loss differs
by more than --tol or any gradient norm by more than --tol relative to it.

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
    p.add_argument("--clip", type=positive_float, default=1.0, help="gradient-norm clipping threshold (default: 1)")
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


def reference_run(model, batches, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Losses and gradient norms (before clipping) of the unsharded model on the whole global batch."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses, norms = [], []
    for x, y in batches:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip).item())
        opt.step()
        losses.append(loss.item())
    return losses, norms


def clip_grad_norm_by_mesh(parameters, max_norm: float, ranks_per_stage: int):
    """Clip to the global L2 norm of all gradients, whatever mesh (and pipeline stage) each one lives on.

    Every rank adds the squares of its local gradient shards, each divided by the number of ranks of its
    pipeline stage that hold the same shard (ranks outside the shard's mesh, and mesh dimensions whose
    placement is Replicate, such as the bias of a RowwiseParallel layer), and one all-reduce over all ranks
    sums the distinct shards of every stage exactly once. The coefficient is that of torch.nn.utils.clip_grad_norm_.
    """
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor, Replicate

    params = [p for p in parameters if p.grad is not None]
    squares = torch.zeros((), dtype=torch.float32)
    for p in params:
        g = p.grad
        if isinstance(g, DTensor):
            local, mesh = g.to_local(), g.device_mesh
            # ranks of the stage outside the mesh hold copies, and so do the mesh dimensions that replicate
            replicas = ranks_per_stage // mesh.size()
            for dim, placement in enumerate(g.placements):
                if isinstance(placement, Replicate):
                    replicas *= mesh.size(dim)
                elif placement.is_partial():
                    raise RuntimeError("a partial gradient cannot be clipped from its local shards")
        else:
            local, replicas = g, ranks_per_stage
        squares += local.detach().float().pow(2).sum().cpu() / replicas
    dist.all_reduce(squares)
    total = squares.sqrt()
    coef = min(1.0, max_norm / (total.item() + 1e-6))
    for p in params:
        p.grad.mul_(coef)
    return total


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

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
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
        for pname in ("up.weight", "down.weight", "down.bias", "norm.weight"):
            print("  rank 0, block " + describe(f"{first}.{pname}", model.layers[first].get_parameter(pname)))
        if model.embed is not None:
            print("  rank 0, " + describe("embed.weight", model.embed.weight))

    last_stage = pp_rank == args.pp - 1
    local = args.batch // args.dp
    parallel, parallel_norms = [], []
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
        parallel_norms.append(clip_grad_norm_by_mesh(model.parameters(), args.clip, args.dp * args.tp).item())
        optimizer.step()
        # Global mean loss on every rank: only the last stage's tp-rank-0 ranks contribute, each its dp slice.
        share = value / args.dp if (last_stage and tp_rank == 0) else torch.zeros((), device=args.device)
        share = share.float().reshape(1)
        dist.all_reduce(share)
        parallel.append(share.item())

    status = 0
    if rank == 0:
        ref, ref_norms = reference_run(reference, batches, args)
        print()
        print(f"| step | reference loss (1 process) | parallel loss ({world} ranks) | abs. difference "
              f"| reference grad norm | parallel grad norm |")
        print("|---:|---:|---:|---:|---:|---:|")
        worst, worst_norm = 0.0, 0.0
        for i, (a, b, na, nb) in enumerate(zip(ref, parallel, ref_norms, parallel_norms), 1):
            worst = max(worst, abs(a - b))
            worst_norm = max(worst_norm, abs(na - nb) / max(na, 1e-12))
            print(f"| {i} | {a:.6f} | {b:.6f} | {abs(a - b):.1e} | {na:.5f} | {nb:.5f} |")
        print()
        ok = worst <= args.tol and worst_norm <= args.tol
        print(f"{'OK' if ok else 'MISMATCH'}: largest loss difference {worst:.1e}, largest relative grad-norm "
              f"difference {worst_norm:.1e} (tolerance {args.tol:g}); "
              f"loss {ref[0]:.4f} -> {ref[-1]:.4f} over {args.steps} steps")
        status = 0 if ok else 1
    flag = torch.tensor([status], device=args.device)
    dist.all_reduce(flag)
    dist.destroy_process_group()
    return int(flag.item() > 0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "RANK" not in os.environ:
        import torch

        torch.set_num_threads(1)
        losses, norms = reference_run(build_model(args), make_batches(args), args)
        print("not launched by torchrun: the single-process reference only "
              "(torchrun --standalone --nproc_per_node=N for the parallel run)")
        print("| step | reference loss (1 process) | reference grad norm |")
        print("|---:|---:|---:|")
        for i, (value, norm) in enumerate(zip(losses, norms), 1):
            print(f"| {i} | {value:.6f} | {norm:.5f} |")
        return 0
    return parallel_run(args)


if __name__ == "__main__":
    sys.exit(main())
