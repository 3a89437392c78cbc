"""Work on chapters in several processes when it pays: forked workers inherit the book's state, so only small
results travel back. Serial on one core or for a handful of chapters, so it is never slower than a plain loop."""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")
MIN_ITEMS = 8  # below this the start-up of workers costs more than it saves

_STATE: tuple[Callable, Sequence] | None = None


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _run(index: int):
    function, items = _STATE  # type: ignore[misc]
    return function(items[index])


def map_in_processes(function: Callable[[T], R], items: Sequence[T], jobs: int) -> tuple[list[R], bool]:
    """[function(item) for item in items], in forked processes when jobs > 1; also says whether it forked."""
    global _STATE
    if jobs <= 1 or len(items) < MIN_ITEMS or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items], False
    _STATE = (function, items)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=context) as pool:
            chunk = max(1, len(items) // (jobs * 4))
            return list(pool.map(_run, range(len(items)), chunksize=chunk)), True
    finally:
        _STATE = None
