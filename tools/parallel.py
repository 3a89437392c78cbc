"""Work on chapters in several processes when it pays: forked workers inherit the book's state, so only small
results travel back. Serial on one core or for a handful of chapters, so it is never slower than a plain loop."""
from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

from .interrupt import Terminated, deferred, pending_signal

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

T = TypeVar("T")
R = TypeVar("R")
MIN_ITEMS = 8  # below this the start-up of workers costs more than it saves


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def map_in_processes(function: Callable[[T], R], items: Sequence[T], jobs: int) -> tuple[list[R], bool]:
    """[function(item) for item in items], in forked processes when jobs > 1; also says whether it forked."""
    if jobs <= 1 or len(items) < MIN_ITEMS or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items], False
    chunk = max(1, len(items) // (jobs * 4))
    return pool_map(min(jobs, len(items)), function, [(item,) for item in items], chunk), True


def _worker(conn, function: Callable, chunks: list[list[tuple]]) -> None:
    """A forked worker: runs the chunks the main process names, until it is told to stop (None) or is ended."""
    import traceback

    try:
        while True:
            index = conn.recv()
            if index is None:
                return
            try:
                reply: tuple = (True, [function(*args) for args in chunks[index]])
            except Exception as exc:  # noqa: BLE001 - handed to the main process, which raises it
                reply = (False, exc, traceback.format_exc())
            try:
                conn.send(reply)
            except Exception:  # noqa: BLE001 - an exception or result that cannot be pickled
                conn.send((False, RuntimeError(f"a worker's result could not be sent back:\n{traceback.format_exc()}"), ""))
    except (EOFError, OSError):  # the main process went away
        return


def pool_map(workers: int, function: Callable, calls: Sequence[tuple], chunksize: int = 1) -> list:
    """[function(*args) for args in calls] in `workers` forked processes, in order.

    Each worker has its own pipe and no threads are involved, so ending the workers at any moment leaves nothing
    waiting (a ProcessPoolExecutor whose worker dies while writing a result blocks its manager thread for ever).
    SIGINT and SIGTERM are held back while the pool runs: the loop looks for them every tenth of a second, ends the
    workers at once (they ignore SIGINT, see tools/interrupt.py), and then lets the signal take effect. A failed
    call ends the pool the same way and is raised here."""
    from multiprocessing.connection import wait

    chunks = [list(calls[start:start + chunksize]) for start in range(0, len(calls), chunksize)]
    context = multiprocessing.get_context("fork")
    results: list = [None] * len(chunks)
    channels: list = []
    failed = True
    with deferred():
        try:
            for _ in range(min(workers, len(chunks))):
                conn, child = context.Pipe()
                process = context.Process(target=_worker, args=(child, function, chunks), daemon=True)
                channels.append((process, conn))
                process.start()
                child.close()
            todo = iter(range(len(chunks)))
            busy: dict = {}
            for _process, conn in channels:
                index = next(todo, None)
                if index is not None:
                    conn.send(index)
                    busy[conn] = index
            while busy and pending_signal() is None:
                for conn in cast("list[Connection]", wait(list(busy), timeout=0.1)):
                    try:
                        reply = conn.recv()
                    except EOFError:
                        raise RuntimeError("a worker process ended unexpectedly") from None
                    if not reply[0]:
                        if reply[2] and hasattr(reply[1], "add_note"):
                            reply[1].add_note(f"In the worker process:\n{reply[2]}")
                        raise reply[1]
                    results[busy.pop(conn)] = reply[1]
                    index = next(todo, None)
                    if index is not None:
                        conn.send(index)
                        busy[conn] = index
            failed = bool(busy)
        finally:
            _stop(channels, failed)
    if failed:  # only a signal held back by an outer deferred() section gets here
        raise Terminated(pending_signal() or signal.SIGTERM)
    return [value for chunk in results for value in chunk]


def _stop(channels: list, failed: bool) -> None:
    """Stop the workers: told to stop after a success, ended at once otherwise; none outlives the pool."""
    for process, conn in channels:
        if not failed:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        elif process.is_alive():
            process.terminate()
    for process, conn in channels:
        process.join(5 if failed else 60)
        if process.is_alive():
            process.kill()
            process.join()
        conn.close()
