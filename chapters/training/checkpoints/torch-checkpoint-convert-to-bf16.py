#!/usr/bin/env python
"""Convert the floating-point tensors of a torch.save checkpoint to bfloat16.

Every tensor in the checkpoint (found in nested dicts, lists and tuples) whose
dtype is float64, float32 or float16 becomes bfloat16; integer and boolean
tensors (step counters, token ids, masks) and tensors that are already bf16 or
narrower (float8) are left exactly as they are. Tensors whose dotted name
matches a `--keep REGEX` are not converted either, so you can keep, say, the
optimizer states or the norms in full precision. Zero-dimensional floating
tensors (scalars such as Adam's `step` counter or a loss scale) are kept too,
because bf16 holds integers exactly only up to 256 and converting a scalar
saves nothing; `--convert-scalars` converts them anyway.

Tensors that are the very same view of the same storage (tied weights such as
input and output embeddings) stay shared after the conversion, so the file does
not grow a second copy. Each converted tensor is written compactly, so a tensor
that was a small view of a large storage no longer drags that storage along.

The script reports the number of tensors and their size per dtype before and
after, and the file sizes, in MB (1 MB = 1e6 bytes).

Examples:

    python torch-checkpoint-convert-to-bf16.py model.pt -o model-bf16.pt
    python torch-checkpoint-convert-to-bf16.py ckpt.pt -o ckpt-bf16.pt --keep '^optimizer\\.'
    python torch-checkpoint-convert-to-bf16.py model.pt --dry-run

bf16 keeps float32's exponent range with an 8-bit significand: a converted
checkpoint is fine for inference or as a starting point for fine-tuning, but do
not resume a training run from bf16 optimizer states.

Loading uses `torch.load(..., weights_only=True)`; checkpoints holding other
Python objects need `--unsafe-load`, for trusted files only.
"""
from __future__ import annotations

import argparse
import copy
import io
import os
import re
import sys
import tempfile

MB = 1e6


def regex(text: str):
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"--keep {text!r} is not a valid regular expression: {exc}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Convert the float64/float32/float16 tensors of a torch.save checkpoint to bfloat16, "
        "leaving integer and bool tensors untouched; reports sizes in MB (1e6 bytes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("checkpoint", help="a file written by torch.save")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", help="where to write the converted checkpoint")
    where.add_argument("--inplace", action="store_true", help="replace the input file (atomically)")
    where.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")
    parser.add_argument("--keep", type=regex, action="append", default=[], metavar="REGEX",
                        help="leave tensors whose dotted name matches REGEX (re.search) unconverted; repeatable")
    parser.add_argument("--convert-scalars", action="store_true",
                        help="also convert 0-dimensional floating tensors (step counters, loss scales)")
    parser.add_argument("--unsafe-load", action="store_true",
                        help="torch.load with weights_only=False (runs pickle code: trusted files only)")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.checkpoint):
        parser.error(f"checkpoint {args.checkpoint!r} does not exist or is not a file")
    if args.output and os.path.abspath(args.output) == os.path.abspath(args.checkpoint):
        parser.error("--output is the input file; use --inplace to overwrite it")
    return args


def load(path: str, unsafe: bool):
    import pickle

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=not unsafe)
    except pickle.UnpicklingError as exc:
        if unsafe:
            raise
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
        what = f"it contains an object of type {found.group(1)}" if found else "it holds more than tensors and plain containers"
        raise SystemExit(
            f"error: torch.load(weights_only=True) refused {path}: {what}. "
            "If you trust the file, run again with --unsafe-load."
        ) from None
    except (RuntimeError, EOFError) as exc:
        raise SystemExit(f"error: could not read {path} as a torch.save checkpoint: {exc}") from None


def rebuild(obj, replace, path: str = ""):
    """A copy of obj's container structure with every tensor t at `path` replaced by replace(path, t)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return replace(path or "<root>", obj)
    if isinstance(obj, dict):
        new = copy.copy(obj)  # keeps the class (OrderedDict) and attributes such as a state_dict's _metadata
        for key, value in obj.items():
            new[key] = rebuild(value, replace, f"{path}.{key}" if path else str(key))
        return new
    if isinstance(obj, (list, tuple)):
        items = [rebuild(v, replace, f"{path}.{i}" if path else str(i)) for i, v in enumerate(obj)]
        if isinstance(obj, list):
            return items
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def file_mode(like: str | None) -> int:
    if like is not None:
        return os.stat(like).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: this script needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    convertible = {torch.float64, torch.float32, torch.float16}
    before_file = os.path.getsize(args.checkpoint)
    obj = load(args.checkpoint, args.unsafe_load)

    stats_before: dict[str, list[int]] = {}
    stats_after: dict[str, list[int]] = {}
    kept_by_regex: list[str] = []
    kept_scalars: list[str] = []
    converted: dict = {}

    def count(stats, t):
        entry = stats.setdefault(dtype_name(t.dtype), [0, 0])
        entry[0] += 1
        entry[1] += t.nelement() * t.element_size()

    def replace(name, t):
        count(stats_before, t)
        new = t
        if t.dtype in convertible:
            if any(p.search(name) for p in args.keep):
                kept_by_regex.append(name)
            elif t.dim() == 0 and not args.convert_scalars:
                kept_scalars.append(name)
            else:
                key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
                if key not in converted:  # identical views (tied weights) share one converted tensor
                    out = t.detach().to(torch.bfloat16)
                    if isinstance(t, torch.nn.Parameter):
                        out = torch.nn.Parameter(out, requires_grad=t.requires_grad)
                    converted[key] = out
                new = converted[key]
        count(stats_after, new)
        return new

    new_obj = rebuild(obj, replace)
    n_tensors = sum(c for c, _ in stats_before.values())
    if n_tensors == 0:
        print(f"{args.checkpoint}: no tensors found; nothing to do")
        return 0

    print(f"{args.checkpoint}: {n_tensors} tensors; {len(converted)} distinct tensors converted to bfloat16 "
          f"(MB = 1e6 bytes, tensor sizes counted per name)")
    if kept_by_regex:
        shown = ", ".join(kept_by_regex[:5]) + (" ..." if len(kept_by_regex) > 5 else "")
        print(f"kept by --keep: {len(kept_by_regex)} tensors ({shown})")
    if kept_scalars:
        shown = ", ".join(kept_scalars[:5]) + (" ..." if len(kept_scalars) > 5 else "")
        print(f"kept as 0-dimensional scalars (see --convert-scalars): {len(kept_scalars)} tensors ({shown})")
    print()
    print("| dtype | tensors before | MB before | tensors after | MB after |")
    print("|:---|---:|---:|---:|---:|")
    for name in sorted(set(stats_before) | set(stats_after)):
        cb, bb = stats_before.get(name, [0, 0])
        ca, ba = stats_after.get(name, [0, 0])
        print(f"| {name} | {cb} | {bb / MB:.3f} | {ca} | {ba / MB:.3f} |")
    print()

    if args.dry_run:
        buffer = io.BytesIO()
        torch.save(new_obj, buffer)
        after_file = buffer.tell()
        print(f"dry run: file {before_file / MB:.3f} MB -> {after_file / MB:.3f} MB would be written; nothing written")
        return 0

    target = args.checkpoint if args.inplace else args.output
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        print(f"error: the output directory {directory} does not exist", file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(prefix="to-bf16-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:  # write next to the target, then rename: never a half-written file
            torch.save(new_obj, fh)
        os.chmod(tmp, file_mode(args.checkpoint if args.inplace else None))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    after_file = os.path.getsize(target)
    print(f"file before: {before_file / MB:.3f} MB  {args.checkpoint}")
    print(f"file after:  {after_file / MB:.3f} MB  {target} "
          f"({after_file / before_file * 100 if before_file else 0:.1f}% of the original)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
