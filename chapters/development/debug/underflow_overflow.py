#!/usr/bin/env python3
"""Find the first module whose weights, inputs or outputs hold inf or nan.

Mixed precision training fails quietly: one activation goes past the largest
value its dtype can hold (65504 for float16), becomes inf, and a few operations
later the loss is nan. By then the module that caused it is long gone from the
stack. `DetectOverflow` registers a forward hook on every module of a model and,
for each call, records the absolute min and max of the module's own weights, its
inputs and its outputs. It keeps the last few of these records ("frames") and,
at the first inf or nan, stops (raises `OverflowDetected`) or reports and goes on,
printing the module's path and the frames that led up to it.

    from underflow_overflow import DetectOverflow

    with DetectOverflow(model):            # action="raise" by default
        loss = model(batch).loss           # raises at the first inf/nan

    detector = DetectOverflow(model, action="report", frames=40)
    with detector:
        for batch in loader:
            train_step(batch)
    print(detector.summary())               # modules closest to the dtype's limit

Reading every tensor's min and max costs a device-to-host copy per tensor, so
use it to debug a few steps, not for a whole training run.

Run `python underflow_overflow.py --help` for a demo on a tiny model.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import sys
from typing import Any, Callable, Iterator

import torch
from torch import nn

__all__ = ["DetectOverflow", "OverflowDetected", "TensorStats", "tensor_stats"]


@dataclasses.dataclass
class TensorStats:
    """Summary of one floating point tensor."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    abs_min: float  # nan when the tensor holds only nan
    abs_max: float  # inf when the tensor holds an inf
    n_inf: int
    n_nan: int

    @property
    def bad(self) -> bool:
        return self.n_inf > 0 or self.n_nan > 0

    def line(self) -> str:
        flags = []
        if self.n_inf:
            flags.append(f"{self.n_inf} inf")
        if self.n_nan:
            flags.append(f"{self.n_nan} nan")
        mark = f"  <-- {', '.join(flags)}" if flags else ""
        dtype = str(self.dtype).replace("torch.", "")
        return f"  {self.abs_min:>10.3e} {self.abs_max:>10.3e}  {self.name} {dtype}{list(self.shape)}{mark}"


def tensor_stats(name: str, tensor: torch.Tensor) -> TensorStats:
    """Absolute min/max (ignoring nan) and inf/nan counts of a floating point tensor."""
    t = tensor.detach()
    if t.is_complex():
        t = t.abs()
    a = t.abs().float()
    nan_mask = torch.isnan(a)
    n_nan = int(nan_mask.sum())
    n_inf = int(torch.isinf(a).sum())
    valid = a[~nan_mask] if n_nan else a
    if valid.numel():
        abs_min, abs_max = float(valid.min()), float(valid.max())
    else:
        abs_min = abs_max = math.nan
    return TensorStats(name, tensor.dtype, tuple(tensor.shape), abs_min, abs_max, n_inf, n_nan)


def _walk(name: str, obj: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield (name, tensor) for every floating point tensor in nested containers."""
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() or obj.is_complex():
            yield name, obj
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from _walk(f"{name}[{i}]", item)
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from _walk(f"{name}[{key!r}]", item)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield from _walk(f"{name}.{field.name}", getattr(obj, field.name))


@dataclasses.dataclass
class Frame:
    """What one module saw during one forward call."""

    call: int
    batch: int
    path: str
    cls: str
    stats: list[TensorStats]

    def render(self) -> str:
        head = f"[call {self.call} | batch {self.batch}] {self.path} ({self.cls})"
        return "\n".join([head] + [s.line() for s in self.stats])


class OverflowDetected(RuntimeError):
    """Raised by DetectOverflow(action="raise") at the first inf/nan."""

    def __init__(self, message: str, module_path: str, where: str, batch: int, frames: list[Frame]):
        super().__init__(message)
        self.module_path = module_path
        self.where = where
        self.batch = batch
        self.frames = frames


class DetectOverflow:
    """Forward hooks that find the first module producing (or receiving) inf/nan.

    Args:
        model: the module to watch; every submodule gets a hook.
        frames: how many recent module calls to keep and print (default 20).
        action: "raise" to stop with OverflowDetected at the first inf/nan, or
            "report" to print the report once and continue.
        check_weights: also inspect each module's own parameters (not its children's).
        verbose: print every frame as it is recorded (a full trace, very long).
        log: where reports and traces go (default: print to stderr).
    """

    header = "     abs min    abs max  tensor"

    def __init__(
        self,
        model: nn.Module,
        frames: int = 20,
        action: str = "raise",
        check_weights: bool = True,
        verbose: bool = False,
        log: Callable[[str], None] | None = None,
    ):
        if action not in ("raise", "report"):
            raise ValueError(f"action must be 'raise' or 'report', got {action!r}")
        if frames < 1:
            raise ValueError(f"frames must be at least 1, got {frames}")
        self.model = model
        self.action = action
        self.check_weights = check_weights
        self.verbose = verbose
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self.frames: collections.deque[Frame] = collections.deque(maxlen=frames)
        self.detections: list[dict[str, Any]] = []
        self.peaks: dict[str, tuple[float, torch.dtype]] = {}
        self.batch = -1
        self.calls = 0
        self._handles: list[Any] = []
        self._paths = {module: (path or "<root>") for path, module in model.named_modules()}

    # ------------------------------------------------------------ hooks
    def attach(self) -> "DetectOverflow":
        if self._handles:
            return self
        self._handles.append(self.model.register_forward_pre_hook(self._count_batch))
        for module in self._paths:
            self._handles.append(module.register_forward_hook(self._inspect, with_kwargs=True))
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> "DetectOverflow":
        return self.attach()

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def _count_batch(self, module: nn.Module, args: Any) -> None:
        self.batch += 1

    def _inspect(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        self.calls += 1
        path = self._paths.get(module, type(module).__name__)
        stats: list[TensorStats] = []
        if self.check_weights:
            for name, param in module.named_parameters(recurse=False):
                stats.append(tensor_stats(name, param))
        for name, tensor in _walk("input", tuple(args)):
            stats.append(tensor_stats(name, tensor))
        for name, tensor in _walk("kwarg", dict(kwargs or {})):
            stats.append(tensor_stats(name, tensor))
        for name, tensor in _walk("output", output):
            stats.append(tensor_stats(name, tensor))
        frame = Frame(self.calls, max(self.batch, 0), path, type(module).__name__, stats)
        self.frames.append(frame)
        for s in stats:
            if s.name.startswith("output") and not math.isnan(s.abs_max):
                old = self.peaks.get(path)
                if old is None or s.abs_max > old[0]:
                    self.peaks[path] = (s.abs_max, s.dtype)
        if self.verbose:
            self.log(frame.render())

        bad = [s for s in stats if s.bad]
        if not bad:
            return
        first = bad[0]
        kind = "inf" if first.n_inf else "nan"
        where = first.name
        # Weights and inputs are checked before outputs: when an input is already
        # bad, the culprit ran before this module (possibly a plain torch function).
        origin = (
            "it was already there when the module was called (look at the frames above)"
            if not where.startswith("output")
            else "this module produced it from finite inputs and weights"
            if all(not s.bad for s in stats if not s.name.startswith("output"))
            else "its inputs or weights were already bad"
        )
        message = (
            f"{kind} detected in {where} of module '{path}' ({type(module).__name__}) "
            f"at batch {frame.batch}, call {frame.call}: {origin}"
        )
        self.detections.append({"path": path, "where": where, "kind": kind, "batch": frame.batch})
        if len(self.detections) > 1:
            return  # report mode: only the first detection is printed
        report = self.render_report(message)
        if self.action == "raise":
            raise OverflowDetected(report, path, where, frame.batch, list(self.frames))
        self.log(report)

    # ---------------------------------------------------------- reports
    def render_report(self, message: str = "") -> str:
        lines = []
        if message:
            lines.append(message)
        lines.append(f"last {len(self.frames)} module calls, oldest first:")
        lines.append(self.header)
        lines += [frame.render() for frame in self.frames]
        if message:
            lines.append(message)
        return "\n".join(lines)

    def summary(self, top: int = 10) -> str:
        """The modules with the largest output magnitude, against their dtype's max."""
        rows = sorted(self.peaks.items(), key=lambda kv: kv[1][0], reverse=True)[:top]
        lines = ["largest |output| per module (fraction of the dtype's max):"]
        for path, (peak, dtype) in rows:
            limit = torch.finfo(dtype).max if dtype.is_floating_point else math.inf
            frac = peak / limit if math.isfinite(peak) else math.inf
            lines.append(f"  {peak:>10.3e}  {frac:>9.2e}  {path} ({str(dtype).replace('torch.', '')})")
        return "\n".join(lines)


# ---------------------------------------------------------------- demo
class Block(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc_in = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.fc_out = nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc_out(self.act(self.fc_in(self.norm(x))))


class TinyNet(nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(Block(hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "Demo: run a tiny model under DetectOverflow after scaling up the weights of one "
            "block so that its activations overflow, and print where the first inf/nan appeared."
        )
    )
    parser.add_argument("--layers", type=_positive, default=4, help="number of blocks (default: 4)")
    parser.add_argument("--hidden", type=_positive, default=16, help="hidden size (default: 16)")
    parser.add_argument("--vocab", type=_positive, default=64, help="vocabulary size (default: 64)")
    parser.add_argument("--batches", type=_positive, default=3, help="forward passes to run (default: 3)")
    parser.add_argument(
        "--inject",
        type=int,
        default=2,
        metavar="BLOCK",
        help="index of the block whose fc_out weights get multiplied by --scale; -1 injects nothing (default: 2)",
    )
    parser.add_argument(
        "--scale", type=float, default=1e5, help="factor applied to the injected weights (default: 1e5)"
    )
    parser.add_argument(
        "--dtype", choices=("float16", "bfloat16", "float32"), default="float16", help="model dtype (default: float16)"
    )
    parser.add_argument(
        "--action", choices=("raise", "report"), default="raise", help="stop at the first inf/nan or report and go on"
    )
    parser.add_argument("--frames", type=_positive, default=6, help="recent module calls to print (default: 6)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = parser.parse_args(argv)
    if not -1 <= args.inject < args.layers:
        parser.error(f"--inject must be between -1 and {args.layers - 1} (the model has {args.layers} blocks)")

    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    model = TinyNet(args.vocab, args.hidden, args.layers).to(dtype)
    if args.inject >= 0:
        with torch.no_grad():
            model.blocks[args.inject].fc_out.weight.mul_(args.scale)
        print(f"injected: blocks.{args.inject}.fc_out.weight *= {args.scale:g} ({args.dtype}, max {torch.finfo(dtype).max:.4g})")

    out = sys.stdout
    detector = DetectOverflow(model, frames=args.frames, action=args.action, log=lambda t: print(t, file=out))
    try:
        with detector, torch.no_grad():
            for _ in range(args.batches):
                ids = torch.randint(0, args.vocab, (2, 8))
                model(ids)
    except OverflowDetected as exc:
        print(exc)
        print(f"stopped: first bad value in {exc.where} of '{exc.module_path}' at batch {exc.batch}")
        return 0
    print(detector.summary(top=5))
    if detector.detections:
        first = detector.detections[0]
        print(f"{len(detector.detections)} module calls saw inf/nan; the first was {first['where']} of '{first['path']}'")
    else:
        print(f"no inf/nan in {detector.calls} module calls over {args.batches} batches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
