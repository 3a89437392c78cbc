"""Work on chapters in several processes when it pays: forked workers inherit the book's state, so only small
results travel back. Serial on one core or for a handful of chapters, so it is never slower than a plain loop."""
from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence, TypeVar

from .interrupt import Terminated, deferred, pending_signal

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
        chunk = max(1, len(items) // (jobs * 4))
        return pool_map(min(jobs, len(items)), _run, [(index,) for index in range(len(items))], chunk), True
    finally:
        _STATE = None


def _run_chunk(function: Callable, chunk: list[tuple]) -> list:
    return [function(*args) for args in chunk]


def pool_map(workers: int, function: Callable, calls: Sequence[tuple], chunksize: int = 1) -> list:
    """[function(*args) for args in calls] in `workers` forked processes (function: a module-level function).

    SIGINT and SIGTERM are held back while the pool runs (an exception raised inside the executor's own code can
    leave its threads waiting forever); the loop below looks for them every tenth of a second, ends the workers at
    once (they ignore SIGINT), and then lets the signal take effect. A failed call ends the pool the same way."""
    from concurrent.futures import FIRST_EXCEPTION, wait

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    failed = True
    with deferred():
        try:
            chunks = [list(calls[start:start + chunksize]) for start in range(0, len(calls), chunksize)]
            futures = [pool.submit(_run_chunk, function, chunk) for chunk in chunks]
            pending = set(futures)
            while pending and pending_signal() is None:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
                if any(future.exception() is not None for future in done):
                    break
            if pending_signal() is None:
                results = [value for future in futures for value in future.result()]
                failed = False
        finally:
            if failed:
                stop_pool(pool)
            else:
                pool.shutdown(wait=True)
    if failed:  # only a signal held back by an outer deferred() section gets here
        raise Terminated(pending_signal() or signal.SIGTERM)
    return results


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """End a pool's workers now (they ignore SIGINT, see tools/interrupt.py), then let the pool wind down."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        try:
            process.terminate()
        except (OSError, ValueError, AttributeError):
            pass
    for process in processes:
        try:
            process.join(5)
        except (OSError, ValueError, AssertionError):
            pass
    pool.shutdown(wait=True)
