#!/usr/bin/env python
"""Shrink a torch.save checkpoint whose tensors are small views of large storages.

`torch.save` writes every tensor's whole *storage*, not just the elements the
tensor shows. A tensor sliced out of a bigger one (`big[:10]`, one chunk of a
fused QKV weight, a row of an embedding, a tensor that was once part of a flat
buffer) therefore drags the complete buffer into the file, and a checkpoint can
end up many times larger than its tensors.

This script loads a checkpoint on the CPU, walks the nested dicts, lists and
tuples in it, and for every storage measures how many of its bytes are used by
at least one tensor of the checkpoint. When the storage is more than
`--min-ratio` times larger than the bytes in use, every tensor on it is replaced
by a compact copy (`tensor.clone()`); tensors that were the very same view
(tied weights) stay shared. It then saves the result and reports the file size
before and after in MB (1 MB = 1e6 bytes).

Examples:

    python torch-checkpoint-shrink.py model.pt -o model-small.pt
    python torch-checkpoint-shrink.py model.pt --inplace
    python torch-checkpoint-shrink.py model.pt --dry-run      # report only

The checkpoint is loaded with `torch.load(..., weights_only=True)`, which only
accepts tensors and plain containers. A checkpoint holding other Python objects
needs `--unsafe-load`; use it only for files you trust, because unpickling can
run arbitrary code.
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


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text!r}") from None
    if value < 1.0:
        raise argparse.ArgumentTypeError(f"--min-ratio must be >= 1 (storage bytes / bytes in use), got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Clone tensors that are small views of large storages so a torch.save "
        "checkpoint shrinks; reports sizes in MB (1e6 bytes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("checkpoint", help="a file written by torch.save")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", help="where to write the shrunk checkpoint")
    where.add_argument("--inplace", action="store_true", help="replace the input file (atomically)")
    where.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")
    parser.add_argument("--min-ratio", type=positive_float, default=1.0,
                        help="clone when a storage is more than this many times larger than the bytes in use")
    parser.add_argument("--unsafe-load", action="store_true",
                        help="torch.load with weights_only=False (runs pickle code: trusted files only)")
    parser.add_argument("--quiet", action="store_true", help="do not list the cloned tensors")
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


def walk(obj, path: str = ""):
    """Yield (path, tensor) for every tensor in nested dicts, lists and tuples."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield path or "<root>", obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from walk(value, f"{path}.{i}" if path else str(i))


def rebuild(obj, replace):
    """A copy of the container structure of obj with every tensor t replaced by replace(t)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return replace(obj)
    if isinstance(obj, dict):
        new = copy.copy(obj)  # keeps the class (OrderedDict) and attributes such as a state_dict's _metadata
        for key, value in obj.items():
            new[key] = rebuild(value, replace)
        return new
    if isinstance(obj, list):
        return [rebuild(v, replace) for v in obj]
    if isinstance(obj, tuple):
        items = [rebuild(v, replace) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def tensor_nbytes(t) -> int:
    return t.nelement() * t.element_size()


def byte_span(t) -> tuple[int, int]:
    """[start, end) bytes of t's storage that t can touch."""
    es = t.element_size()
    start = t.storage_offset() * es
    if t.nelement() == 0:
        return start, start
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return start, start + (last + 1) * es


def used_bytes(spans: list[tuple[int, int]]) -> int:
    total, cur_start, cur_end = 0, None, None
    for start, end in sorted(spans):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def view_key(t):
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def compact(t):
    import torch

    new = t.detach().clone()
    if isinstance(t, torch.nn.Parameter):
        return torch.nn.Parameter(new, requires_grad=t.requires_grad)
    if t.requires_grad and new.is_floating_point():
        new.requires_grad_(True)
    return new


def file_mode(like: str | None) -> int:
    """The permission bits of `like`, or those a new file gets under the current umask."""
    if like is not None:
        return os.stat(like).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def change(before: int, after: int) -> str:
    if not before:
        return "the input was empty"
    ratio = (1 - after / before) * 100
    return f"{ratio:.1f}% smaller" if ratio >= 0 else f"{-ratio:.1f}% larger"


def saved_size(obj) -> int:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.tell()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: this script needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    before = os.path.getsize(args.checkpoint)
    obj = load(args.checkpoint, args.unsafe_load)
    tensors = list(walk(obj))
    if not tensors:
        print(f"{args.checkpoint}: no tensors found; nothing to do")
        return 0

    by_storage: dict[int, list] = {}
    storage_bytes: dict[int, int] = {}
    for name, t in tensors:
        ptr = t.untyped_storage().data_ptr()
        by_storage.setdefault(ptr, []).append((name, t))
        storage_bytes[ptr] = t.untyped_storage().nbytes()

    to_clone: set = set()
    report = []
    for ptr, members in by_storage.items():
        in_use = used_bytes([byte_span(t) for _, t in members])
        if storage_bytes[ptr] > in_use * args.min_ratio and storage_bytes[ptr] > 0:
            for name, t in members:
                to_clone.add(view_key(t))
                report.append((name, tuple(t.shape), str(t.dtype).replace("torch.", ""),
                               tensor_nbytes(t), storage_bytes[ptr]))

    clones: dict = {}

    def replace(t):
        key = view_key(t)
        if key not in to_clone:
            return t
        if key not in clones:  # identical views (tied weights) share one compact copy
            clones[key] = compact(t)
        return clones[key]

    new_obj = rebuild(obj, replace) if to_clone else obj
    print(f"{args.checkpoint}: {len(tensors)} tensors on {len(by_storage)} storages; "
          f"{len(report)} tensors sit on storages larger than they need (MB = 1e6 bytes)")
    if report and not args.quiet:
        print()
        print("| tensor | shape | dtype | tensor MB | storage MB |")
        print("|:---|:---|:---|---:|---:|")
        for name, shape, dtype, tb, sb in report:
            print(f"| {name} | {list(shape)} | {dtype} | {tb / MB:.3f} | {sb / MB:.3f} |")
        print()

    if args.dry_run:
        after = saved_size(new_obj)
        print(f"dry run: {before / MB:.3f} MB -> {after / MB:.3f} MB would be written "
              f"({change(before, after)}); nothing written")
        return 0

    target = args.checkpoint if args.inplace else args.output
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        print(f"error: the output directory {directory} does not exist", file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(prefix="shrink-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:  # write next to the target, then rename: never a half-written file
            torch.save(new_obj, fh)
        os.chmod(tmp, file_mode(args.checkpoint if args.inplace else None))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    after = os.path.getsize(target)
    print(f"before: {before / MB:.3f} MB  {args.checkpoint}")
    print(f"after:  {after / MB:.3f} MB  {target}")
    print(f"saved:  {(before - after) / MB:.3f} MB ({change(before, after)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
