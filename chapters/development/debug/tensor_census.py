#!/usr/bin/env python
"""Count the live tensors and the autograd graphs they keep alive, step by step, to find a leak.

    python tensor_census.py --leak none          # a healthy loop: flat numbers
    python tensor_census.py --leak eval-list     # eval losses kept with their graphs: saved activations pile up
    python tensor_census.py --leak train-sum     # total = total + loss after backward: graph nodes pile up

census() walks the garbage collector's objects for tensors (each storage counted once),
then walks the autograd graph behind every live tensor that has a grad_fn and adds up
the tensors the graph's nodes saved for their backward pass (attributes named _saved_*,
as in PyTorch's autograd notes), leaving out parameters. Those saved activations are what
makes a retained graph expensive: the intermediate results of a whole forward pass. After
a backward pass they are freed, and only the nodes remain.

The demo trains or evaluates a two-layer MLP (1024 -> 4096 -> 1024, batch 64, float32)
for --steps steps on the CPU (or on the GPU with --device cuda, where the allocator's
own count is printed too) and prints the census after every step.
"""
from __future__ import annotations

import argparse
import gc
import sys
import warnings

import torch
from torch import nn

MiB = 2**20


def storage_key(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage()
    return t.device.type, storage.data_ptr(), storage.nbytes()


def live_tensors() -> tuple[dict[tuple, int], set[tuple], list]:
    """Storages of the tensors the garbage collector knows about -> bytes (views share their base's),
    the storages of parameters, and the grad_fn of every tensor that has one."""
    out: dict[tuple, int] = {}
    params, roots = set(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on some deprecated torch objects warns
        for obj in gc.get_objects():
            try:
                if not isinstance(obj, torch.Tensor) or obj.is_meta:
                    continue
                key = storage_key(obj)
            except Exception:  # noqa: BLE001 - tensor subclasses without storage, freed objects
                continue
            out[key] = key[2]
            if isinstance(obj, nn.Parameter):
                params.add(key)
            if obj.grad_fn is not None:
                roots.append(obj.grad_fn)
    return out, params, roots


def saved_tensors(node) -> list[torch.Tensor]:
    """The tensors one autograd node saved for backward; empty once a backward pass freed them."""
    found = []
    for name in dir(node):
        if not name.startswith("_saved_"):
            continue
        try:
            value = getattr(node, name)
        except RuntimeError:  # "... saved tensors after they have already been freed"
            continue
        values = value if isinstance(value, (tuple, list)) else (value,)
        found += [v for v in values if isinstance(v, torch.Tensor)]
    return found


def graph_census(roots: list) -> tuple[int, dict[tuple, int]]:
    """(number of nodes reachable from the roots, storages saved by those nodes -> bytes)."""
    seen, saved, stack = set(), {}, [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for t in saved_tensors(node):
            key = storage_key(t)
            saved[key] = key[2]
        stack += [n for n, _ in getattr(node, "next_functions", ()) if n is not None]
    return len(seen), saved


def census() -> dict[str, float]:
    gc.collect()
    live, params, roots = live_tensors()
    nodes, saved = graph_census(roots)
    activations = {k: v for k, v in saved.items() if k not in params}  # a saved weight is no extra cost
    return {"tensors": len(live), "tensor_mib": sum(live.values()) / MiB,
            "param_mib": sum(live[k] for k in params) / MiB, "nodes": nodes,
            "saved_mib": sum(activations.values()) / MiB}


def run(leak: str, steps: int, device: str) -> list[dict[str, float]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    kept, total, rows = [], torch.zeros((), device=device), []
    for step in range(1, steps + 1):
        x = torch.randn(64, 1024, device=device)
        target = torch.randn(64, 1024, device=device)
        if leak == "eval-list":  # an evaluation loop that forgot torch.no_grad()
            loss = nn.functional.mse_loss(model(x), target)
            kept.append(loss)  # for a mean at the end; keeps the whole graph of this step
        else:
            loss = nn.functional.mse_loss(model(x), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if leak == "train-sum":
                total = total + loss  # keeps the (already freed) graph's nodes, step after step
            else:
                total = total + loss.item()
        del x, target, loss
        row = census()
        if device == "cuda":
            row["cuda_allocated_mib"] = torch.cuda.memory_allocated() / MiB
        rows.append(row)
        extra = f", cuda allocated {row['cuda_allocated_mib']:.2f} MiB" if device == "cuda" else ""
        print(f"step {step}: {row['tensors']} tensor storages, {row['tensor_mib']:.2f} MiB "
              f"(parameters {row['param_mib']:.2f}); {row['nodes']} autograd nodes reachable, "
              f"saving {row['saved_mib']:.2f} MiB of activations{extra}", flush=True)
    first, last = rows[0], rows[-1]
    if steps > 1:
        per_step = {k: (last[k] - first[k]) / (steps - 1) for k in ("tensors", "nodes", "saved_mib")}
        per_step["tensor_mib"] = (last["tensor_mib"] - first["tensor_mib"]) / (steps - 1)
        print(f"growth per step: {per_step['tensors']:+.1f} storages ({per_step['tensor_mib']:+.2f} MiB), "
              f"{per_step['nodes']:+.1f} nodes, {per_step['saved_mib']:+.2f} MiB of saved activations")
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tensor_census.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--leak", choices=("none", "eval-list", "train-sum"), default="eval-list",
                        help="none: healthy; eval-list: keep eval losses with graphs; "
                             "train-sum: total = total + loss (default: eval-list)")
    parser.add_argument("--steps", type=int, default=4, help="steps to run, 1 to 100 (default: 4)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)
    if not 1 <= args.steps <= 100:
        parser.error("--steps must be between 1 and 100")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available here")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    run(args.leak, args.steps, args.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
