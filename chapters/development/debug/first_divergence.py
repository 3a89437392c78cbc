#!/usr/bin/env python
"""Run two versions of a model on the same input and find the first module whose output differs.

    python first_divergence.py --variant missing-key   # one LayerNorm not loaded: a jump at that module
    python first_divergence.py --variant bf16          # the same weights in bfloat16: a gradual drift
    python first_divergence.py --variant same          # identical copies: no difference at all

"The loss of the new code is a bit different" is either rounding (a change of dtype,
kernel or summation order) or a bug, and the two look alike at the loss. They differ
inside the model: rounding grows a little at every layer, a bug appears at one module,
whose inputs agree and whose outputs do not. compare() registers a forward hook on every
module of both models, runs both on the same input, and prints per module, in the order
model A ran them, the relative difference ||b - a|| / ||a|| of the first input and of the
output, computed in float64. The first module whose output differs by more than
--threshold while its input differs by less is where the two versions part.
"""
from __future__ import annotations

import argparse
import copy
import sys

import torch
from torch import nn


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        return next((t for t in map(first_tensor, value) if t is not None), None)
    return None


def record(model: nn.Module, inputs: tuple) -> tuple[list[str], dict[str, tuple]]:
    """Run the model; return the module names in call order and name -> (first input, output) in float64."""
    order, seen, handles = [], {}, []
    for name, module in model.named_modules():
        if not name:
            continue

        def hook(mod, args, out, name=name):
            i, o = first_tensor(args), first_tensor(out)
            if o is not None and name not in seen:
                order.append(name)
                seen[name] = (None if i is None else i.detach().double(), o.detach().double())
        handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return order, seen


def rel(a: torch.Tensor | None, b: torch.Tensor | None) -> float:
    if a is None or b is None or a.shape != b.shape:
        return float("nan")
    return float((b - a).norm() / a.norm().clamp_min(1e-30))


def compare(model_a: nn.Module, model_b: nn.Module, inputs_a: tuple, inputs_b: tuple, threshold: float) -> str:
    order, rec_a = record(model_a, inputs_a)
    _, rec_b = record(model_b, inputs_b)
    lines = [f"{'module':<22} {'input rel. diff':>16} {'output rel. diff':>17}"]
    first = None
    for name in order:
        if name not in rec_b:
            lines.append(f"{name:<22} {'(not run by B)':>34}")
            continue
        d_in = rel(rec_a[name][0], rec_b[name][0])
        d_out = rel(rec_a[name][1], rec_b[name][1])
        mark = ""
        if first is None and d_out > threshold and not d_in > threshold:
            first, mark = name, "  <-- first divergence"
        lines.append(f"{name:<22} {d_in:16.2e} {d_out:17.2e}{mark}")
    if first:
        lines.append(f"first module whose output differs by more than {threshold:g} while its input does not: {first}")
    else:
        worst = max((rel(rec_a[n][1], rec_b[n][1]) for n in order if n in rec_b), default=0.0)
        lines.append(f"no module jumps past {threshold:g}; the largest output difference is {worst:.2e}")
    return "\n".join(lines)


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm, self.fc1, self.act, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def make_pair(variant: str, dim: int = 64, layers: int = 4) -> tuple[nn.Module, nn.Module, tuple, tuple]:
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(dim, dim), *[Block(dim) for _ in range(layers)], nn.LayerNorm(dim))
    for module in a.modules():  # trained LayerNorms are not at their initial values
        if isinstance(module, nn.LayerNorm):
            nn.init.normal_(module.weight, 1.0, 0.3)
            nn.init.normal_(module.bias, 0.0, 0.1)
    b = copy.deepcopy(a)
    x = torch.randn(8, 16, dim, generator=torch.Generator().manual_seed(1))
    xb = x
    if variant == "missing-key":  # as if a renamed key made load_state_dict(strict=False) skip this one
        b[3].norm.reset_parameters()
    elif variant == "bf16":
        b, xb = b.to(torch.bfloat16), x.to(torch.bfloat16)
    return a, b, (x,), (xb,)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="first_divergence.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=("missing-key", "bf16", "same"), default="missing-key",
                        help="what differs in model B (default: missing-key)")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="relative difference that counts as a divergence (default: 0.05)")
    args = parser.parse_args(argv)
    if not args.threshold > 0:
        parser.error("--threshold must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    a, b, xa, xb = make_pair(args.variant)
    print(f"variant {args.variant}:")
    print(compare(a, b, xa, xb, args.threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
