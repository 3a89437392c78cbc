#!/usr/bin/env python
"""Find the module whose forward or backward pass made the first NaN or inf, with module hooks.

    python nan_locator.py --case where          # masked log: finite loss, NaN gradients
    python nan_locator.py --case sqrt           # distance of a duplicated pair: same story
    python nan_locator.py --case sqrt --anomaly # what autograd's anomaly mode says instead
    python nan_locator.py --case none           # a clean step, for comparison

NanLocator(model) registers, on every submodule, a forward hook that checks the outputs
and a full backward hook that checks the gradients flowing through the module. A module
is blamed when what came into it was finite and what came out was not: in the forward
pass finite inputs and a non-finite output, in the backward pass a finite gradient with
respect to its output and a non-finite gradient with respect to its input. Hooks fire
when a module finishes, so the first blamed module is the innermost one, in the order
the values were computed.

The demo is a small encoder with two ways of producing NaN gradients from a finite
loss, the kind a forward-only detector never sees: a masked log whose masked branch is
log(0) (--case where), and a Euclidean distance between two identical embeddings, the
derivative of sqrt at 0 (--case sqrt). CPU only, float32, deterministic.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass

import torch
from torch import nn


def bad_count(value) -> tuple[int, int]:
    """(NaN count, inf count) over every floating point tensor in value (nested tuples and lists too)."""
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            return 0, 0
        return int(torch.isnan(value).sum()), int(torch.isinf(value).sum())
    if isinstance(value, (tuple, list)):
        counts = [bad_count(v) for v in value]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)
    return 0, 0


def show(counts: tuple[int, int]) -> str:
    return " and ".join(f"{n} {kind}" for n, kind in zip(counts, ("NaN", "inf")) if n) or "finite"


@dataclass
class Finding:
    phase: str       # "forward" or "backward"
    module: str      # qualified name, "<model>" for the top level
    kind: str        # class name
    detail: str

    def __str__(self) -> str:
        return f"{self.phase}: '{self.module}' ({self.kind}) {self.detail}"


class NanLocator:
    """Context manager: hooks on every submodule; findings in the order the hooks fired."""

    def __init__(self, model: nn.Module, backward: bool = True):
        self.model, self.backward = model, backward
        self.names = {m: (n or "<model>") for n, m in model.named_modules()}
        self.findings: list[Finding] = []
        self.bad_param_grads: list[str] = []
        self.handles: list = []

    def __enter__(self) -> "NanLocator":
        for module in self.names:
            self.handles.append(module.register_forward_hook(self._forward))
            if self.backward:
                self.handles.append(module.register_full_backward_hook(self._backward))
        if self.backward:
            for name, param in self.model.named_parameters():
                self.handles.append(param.register_post_accumulate_grad_hook(
                    lambda p, name=name: self._param(name, p)))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self.handles:
            handle.remove()

    def _forward(self, module: nn.Module, inputs, output) -> None:
        out = bad_count(output)
        if sum(out) and not sum(bad_count(inputs)):
            self.findings.append(Finding("forward", self.names[module], type(module).__name__,
                                         f"made {show(out)} in its output from finite inputs"))

    def _backward(self, module: nn.Module, grad_input, grad_output) -> None:
        into, out_of = bad_count(grad_output), bad_count(grad_input)
        if sum(out_of) and not sum(into):
            self.findings.append(Finding("backward", self.names[module], type(module).__name__,
                                         f"received a finite gradient and passed on {show(out_of)}"))

    def _param(self, name: str, param: torch.Tensor) -> None:
        if param.grad is not None and sum(bad_count(param.grad)):
            self.bad_param_grads.append(name)

    def first(self, phase: str | None = None) -> Finding | None:
        return next((f for f in self.findings if phase in (None, f.phase)), None)


# ------------------------------------------------------------------------------------ the demo model
class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm, self.fc1, self.act, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class PairDistance(nn.Module):
    """Euclidean distance between two embeddings, written out by hand: d/ds sqrt(s) is infinite at s = 0."""

    def forward(self, a, b):
        return torch.sqrt(((a - b) ** 2).sum(-1))


class MaskedEntropy(nn.Module):
    """Entropy over the allowed classes; disallowed ones get logit -inf, so p = 0 and log(p) = -inf there."""

    def forward(self, logits, allowed):
        p = torch.softmax(logits.masked_fill(~allowed, float("-inf")), dim=-1)
        return torch.where(allowed, -p * torch.log(p), torch.zeros_like(p)).sum(-1)


class Toy(nn.Module):
    def __init__(self, dim: int = 16, classes: int = 6, layers: int = 2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, dim), *[Block(dim) for _ in range(layers)])
        self.head = nn.Linear(dim, classes)
        self.distance = PairDistance()
        self.entropy = MaskedEntropy()

    def forward(self, x, y, allowed):
        za, zb = self.encoder(x), self.encoder(y)
        logits = self.head(za)
        return self.distance(za, zb), self.entropy(logits, allowed), logits


def make_batch(case: str, batch: int = 8, dim: int = 16, classes: int = 6):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, dim, generator=gen)
    y = torch.randn(batch, dim, generator=gen)
    allowed = torch.ones(batch, classes, dtype=torch.bool)
    if case == "sqrt":
        y[3] = x[3]  # a duplicated pair: its distance is exactly 0
    if case == "where":
        allowed[:, -2:] = False  # two classes are never allowed: their probability is exactly 0
    return x, y, allowed


def step(model: Toy, case: str):
    x, y, allowed = make_batch(case)
    dist, ent, logits = model(x, y, allowed)
    margin = torch.ones_like(dist)
    return (torch.relu(margin - dist) ** 2).mean() - 0.1 * ent.mean() + 0.01 * logits.pow(2).mean()


def run(case: str, anomaly: bool) -> int:
    torch.manual_seed(0)
    model = Toy()
    if anomaly:
        return run_anomaly(model, case)
    with NanLocator(model) as locator, warnings.catch_warnings():
        # the first Linear's input needs no gradient, and PyTorch says so once per backward hook call
        warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed")
        loss = step(model, case)
        print(f"case {case}: loss {loss.item():.4f} ({show(bad_count(loss))})")
        loss.backward()
    grads = [n for n, p in model.named_parameters() if p.grad is not None]
    print(f"parameter gradients with NaN or inf: {len(locator.bad_param_grads)} of {len(grads)}")
    if not locator.findings:
        print("no module made a NaN or inf, forward or backward")
        return 0
    print(f"first: {locator.first()}")
    rest = locator.findings[1:]
    if rest:
        print("then (consequences further up the chain, or other origins):")
        for finding in rest[:5]:
            print(f"  {finding}")
        if len(rest) > 5:
            print(f"  ... and {len(rest) - 5} more")
    return 0


def run_anomaly(model: Toy, case: str) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly():
                loss = step(model, case)
                loss.backward()
            print("anomaly mode raised nothing")
        except RuntimeError as exc:
            print(f"anomaly mode: RuntimeError: {exc}")
    for w in caught:
        text = str(w.message)
        if "Traceback of forward call" in text:
            frames = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("File ")]
            mine = [f for f in frames if "nan_locator.py" in f]
            print(text.splitlines()[0])
            for frame in mine[-2:]:
                print(f"  {frame}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="nan_locator.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=("where", "sqrt", "none"), default="where",
                        help="where: masked log(0); sqrt: distance of a duplicated pair; none: clean (default: where)")
    parser.add_argument("--anomaly", action="store_true",
                        help="run the step under torch.autograd.detect_anomaly() instead of the hooks")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    return run(args.case, args.anomaly)


if __name__ == "__main__":
    sys.exit(main())
