#!/usr/bin/env python
"""Keep the last N module calls of a model and save them with torch.save when something goes wrong.

    python activation_dump.py --out dump.pt                 # demo: a NaN injected at batch 3
    python activation_dump.py --out dump.pt --inject error  # demo: an exception inside the model

`ActivationRecorder` registers a forward hook on every module. Each call's inputs and
outputs are copied (detached, on the CPU) into a ring buffer of the last `keep` calls,
with their statistics. When an output holds a NaN or an inf, or when the `with` block
raises, the buffer is written with torch.save (to a temporary file, then renamed) and
the error goes on. Load the file with torch.load(path) to inspect the real tensors.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import deque
from pathlib import Path

import torch
from torch import nn


class NonFiniteActivation(RuntimeError):
    """An output with a NaN or an inf; the recent calls are already saved."""


def tensors_of(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_of(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_of(item)]
    return []


def stats(tensor: torch.Tensor) -> dict:
    data = tensor.detach().float()
    finite = data[torch.isfinite(data)]
    return {"shape": tuple(tensor.shape), "dtype": str(tensor.dtype),
            "nan": int(torch.isnan(data).sum()), "inf": int(torch.isinf(data).sum()),
            "min": float(finite.min()) if finite.numel() else None,
            "max": float(finite.max()) if finite.numel() else None}


class ActivationRecorder:
    def __init__(self, model: nn.Module, path: str | Path, keep: int = 8, keep_tensors: bool = True):
        self.model, self.path, self.keep_tensors = model, Path(path), keep_tensors
        self.records: deque[dict] = deque(maxlen=keep)
        self.calls = 0
        self.open_calls: list[dict] = []  # modules entered and not yet returned: where an exception happened
        self.handles: list = []

    def __enter__(self) -> ActivationRecorder:
        for name, module in self.model.named_modules():
            self.handles.append(module.register_forward_pre_hook(self._pre_hook(name or "<model>")))
            self.handles.append(module.register_forward_hook(self._hook(name or "<model>")))
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        if exc is not None and not isinstance(exc, NonFiniteActivation):
            self.dump(f"{type(exc).__name__}: {exc}")
        return False  # never swallow the error

    def _pre_hook(self, name: str):
        def pre_hook(module, inputs):
            entry = {"module": name, "type": type(module).__name__, "inputs": [stats(t) for t in tensors_of(inputs)]}
            if self.keep_tensors:
                entry["input_tensors"] = [t.detach().cpu().clone() for t in tensors_of(inputs)]
            self.open_calls.append(entry)
        return pre_hook

    def _hook(self, name: str):
        def hook(module, inputs, output):
            self.open_calls.pop()
            self.calls += 1
            ins, outs = tensors_of(inputs), tensors_of(output)
            record = {"call": self.calls, "module": name, "type": type(module).__name__,
                      "inputs": [stats(t) for t in ins], "outputs": [stats(t) for t in outs]}
            if self.keep_tensors:
                record["input_tensors"] = [t.detach().cpu().clone() for t in ins]
                record["output_tensors"] = [t.detach().cpu().clone() for t in outs]
            self.records.append(record)
            bad = [s for s in record["outputs"] if s["nan"] or s["inf"]]
            if bad:
                reason = f"non-finite output of {name} ({record['type']}) at call {self.calls}"
                raise NonFiniteActivation(f"{reason}; last {len(self.records)} calls saved to {self.dump(reason)}")
        return hook

    def dump(self, reason: str) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        torch.save({"reason": reason, "records": list(self.records), "open_calls": list(self.open_calls)}, partial)
        os.replace(partial, self.path)  # never a half-written dump under the real name
        return self.path


def describe(path: Path) -> str:
    saved = torch.load(path, weights_only=False)
    lines = [f"{path}: {saved['reason']}", "call  module             in nan/inf  out nan/inf  out min .. max"]
    for r in saved["records"]:
        ins = sum(s["nan"] + s["inf"] for s in r["inputs"])
        outs = sum(s["nan"] + s["inf"] for s in r["outputs"])
        lo, hi = (r["outputs"][0]["min"], r["outputs"][0]["max"]) if r["outputs"] else (None, None)
        span = f"{lo:.3g} .. {hi:.3g}" if lo is not None else "no finite value"
        lines.append(f"{r['call']:>4}  {r['module']:<18} {ins:>10}  {outs:>11}  {span}")
    for entry in saved["open_calls"]:
        shapes = ", ".join(str(list(s["shape"])) for s in entry["inputs"])
        lines.append(f"   -  {entry['module']:<18} entered with inputs {shapes}, never returned")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="activation_dump.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("activations-dump.pt"), help="dump file (default: activations-dump.pt)")
    parser.add_argument("--keep", type=int, default=6, help="module calls kept (default: 6)")
    parser.add_argument("--inject", choices=("nan", "error", "none"), default="nan",
                        help="what goes wrong at --at-batch (default: nan)")
    parser.add_argument("--at-batch", type=int, default=3, help="batch where it goes wrong (default: 3)")
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args(argv)
    if args.keep < 1:
        parser.error("--keep must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.LayerNorm(16), nn.Linear(16, 2))
    try:
        with ActivationRecorder(model, args.out, keep=args.keep):
            for batch in range(args.batches):
                x = torch.randn(4, 8)
                if batch == args.at_batch and args.inject == "nan":
                    x[1, 5] = float("nan")  # one bad input value
                if batch == args.at_batch and args.inject == "error":
                    x = torch.randn(4, 7)  # a wrong width: the first Linear raises
                model(x)
    except (NonFiniteActivation, RuntimeError) as exc:
        print(f"stopped: {type(exc).__name__}: {exc}")
        print(describe(args.out))
        return 0
    print(f"no problem in {args.batches} batches; nothing saved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
