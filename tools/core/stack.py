"""Deep recursion (WeasyPrint's layout) without CPython 3.11+'s stack-chunk thrashing.

CPython keeps Python frames in 16 KiB chunks and unmaps a chunk as soon as the first frame in it returns. A hot call
that lands on a chunk boundary therefore costs an mmap and a munmap every time: in a PDF layout that is a million
system calls and a fifth more wall time, depending only on how deep the caller happened to be. A chunk is sized for
the frame that opens it, rounded up to a power of two, so calling through a function whose frame is just over half a
megabyte opens a 1 MiB chunk, and the deeper frames fit in the rest of it."""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

_SLOTS = 70_000  # ~550 KB of frame: the chunk becomes 1 MiB, leaving ~470 KB (thousands of frames) for the callee


def _call(function, args, kwargs):
    return function(*args, **kwargs)


_roomy: Callable[..., Any]
try:
    _roomy = types.FunctionType(_call.__code__.replace(co_stacksize=_SLOTS), globals(), "_roomy")
except (AttributeError, TypeError, ValueError):  # an interpreter without these code objects: a plain call
    _roomy = _call


def roomy_stack(function: Callable[..., R], *args, **kwargs) -> R:
    """function(*args, **kwargs), with room for deep recursion in one frame chunk."""
    return _roomy(function, args, kwargs)
