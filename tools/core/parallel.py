"""Work on chapters in several processes when it pays: forked workers inherit the book's state, so only small
results travel back. Serial on one core or for a handful of chapters, so it is never slower than a plain loop."""
from __future__ import annotations

import gc
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tools.core.interrupt import Terminated, deferred, pending_signal

MIN_ITEMS = 8  # below this the start-up of workers costs more than it saves


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Fork inside this block: the children's garbage collector never walks the objects they inherit (gc.freeze),
    which would cost them time and copy every page it touches out of the memory they share with this process. This
    process's objects stay collectable (unfreeze)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def can_fork() -> bool:
    import multiprocessing  # here, not at the top: a command that never forks does not pay for importing it

    return "fork" in multiprocessing.get_all_start_methods()


def _serve(conn, handler: Callable[[Any], Any], after: Callable[[], Any] | None = None) -> None:
    """A forked worker: answers each request with `handler(request)` until it is told to stop (None) or is ended;
    `after()` runs once each reply is sent (work the main process need not wait for; what fails there is dropped)."""
    import traceback

    try:
        while True:
            request = conn.recv()
            if request is None:
                return
            reply: tuple
            try:
                reply = (True, handler(request))
            except Exception as exc:  # noqa: BLE001 - handed to the main process, which raises it
                reply = (False, exc, traceback.format_exc())
            try:
                conn.send(reply)
            except Exception:  # noqa: BLE001 - an exception or result that cannot be pickled
                conn.send((False, RuntimeError(f"a worker's result could not be sent back:\n{traceback.format_exc()}"), ""))
            if after is not None:
                try:
                    after()
                except Exception:  # noqa: BLE001 - only what the reply did not need (a cache entry): it costs time later
                    pass
    except (EOFError, OSError):  # the main process went away
        return


class Workers:
    """Forked processes that answer requests with `handler(request)`, each keeping what its handler holds between
    requests (the pipeline's workers keep the tokens of the chapters they parsed).

    Each worker has its own pipe and no threads are involved, so ending the workers at any moment leaves nothing
    waiting (a ProcessPoolExecutor whose worker dies while writing a result blocks its manager thread for ever).
    Waiting holds SIGINT and SIGTERM back: the wait looks for them every tenth of a second, ends the workers at once
    (they ignore SIGINT, see tools/core/interrupt.py), and then lets the signal take effect. A failed request is raised
    in the main process. `close()` belongs in a `finally`: no worker outlives its pool."""

    def __init__(self, handler: Callable[[Any], Any], after: Callable[[], Any] | None = None):
        self.handler = handler
        self.after = after  # run by a worker after each reply it sends (see `_serve`)
        self.channels: list = []  # (process, connection) per worker
        self.stopped = False

    def start(self, count: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        with frozen_heap(), deferred():  # a signal while forking: every process started is in `channels` for close()
            for _ in range(count):
                conn, child = context.Pipe()
                process = context.Process(target=_serve, args=(child, self.handler, self.after), daemon=True)
                process.start()
                self.channels.append((process, conn))
                child.close()

    def __len__(self) -> int:
        return len(self.channels)

    def send(self, worker: int, request: Any) -> None:
        self.channels[worker][1].send(request)

    def _receive(self, conn) -> Any:
        try:
            reply = conn.recv()
        except EOFError:
            raise RuntimeError("a worker process ended unexpectedly") from None
        if not reply[0]:
            if reply[2] and hasattr(reply[1], "add_note"):
                reply[1].add_note(f"In the worker process:\n{reply[2]}")
            raise reply[1]
        return reply[1]

    def ready(self, busy: Iterable[int]) -> list[tuple[int, Any]]:
        """The replies of the `busy` workers that answered within a tenth of a second: (worker, reply)."""
        from multiprocessing.connection import wait

        conns = {self.channels[worker][1]: worker for worker in busy}
        return [(conns[conn], self._receive(conn)) for conn in wait(list(conns), timeout=0.1)]

    def gather(self, busy: Iterable[int]) -> dict[int, Any]:
        """The reply of each of the `busy` workers (each was sent one request), once all have answered."""
        waiting, replies = set(busy), {}
        with deferred():
            while waiting and pending_signal() is None:
                for worker, reply in self.ready(waiting):
                    replies[worker] = reply
                    waiting.discard(worker)
            if waiting:
                self.close(failed=True)  # a signal: the workers end now, the signal takes effect below
        if waiting:  # only a signal held back by an outer deferred() section gets here
            raise Terminated(pending_signal() or signal.SIGTERM)
        return replies

    def stop(self) -> None:
        """Tell every worker to end once it has answered (and done its `after`); `close` waits for them."""
        if not self.stopped:
            self.stopped = True
            for _, conn in self.channels:
                try:
                    conn.send(None)
                except (OSError, ValueError):
                    pass

    def close(self, failed: bool = False) -> None:
        """Stop the workers: told to stop after a success, ended at once otherwise; none outlives the pool."""
        if not failed:
            self.stop()
        for process, _ in self.channels:
            if failed and process.is_alive():
                process.terminate()
        for process, conn in self.channels:
            process.join(5 if failed else 60)
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
        self.channels = []
        self.stopped = False


class Background:
    """`function()` computed in a forked process while this one goes on; `result()` waits for it (and computes it
    here when there is one core or no fork). Like `Workers`, a signal ends it at once and its failure is raised
    here; `close()` belongs in a `finally` when `result()` may not be reached."""

    def __init__(self, function: Callable[[], Any]):
        self.function = function
        self.pool: Workers | None = None
        if default_jobs() > 1 and can_fork():
            self.pool = Workers(lambda _: function())
            self.pool.start(1)
            self.pool.send(0, 0)

    def result(self) -> Any:
        if self.pool is None:
            return self.function()
        failed = True
        try:
            value = self.pool.gather([0])[0]
            failed = False
            return value
        finally:
            self.close(failed)

    def close(self, failed: bool = True) -> None:
        if self.pool is not None:
            self.pool.close(failed)
            self.pool = None


def pool_map(workers: int, function: Callable, calls: Sequence[tuple], chunksize: int = 1) -> list:
    """[function(*args) for args in calls] in `workers` forked processes, in order, each worker taking the next
    chunk of calls as soon as it is free. An interrupt or a failed call ends the workers at once (see `Workers`)."""
    chunks = [list(calls[start:start + chunksize]) for start in range(0, len(calls), chunksize)]
    results: list = [None] * len(chunks)
    pool = Workers(lambda index: [function(*args) for args in chunks[index]])
    failed = True
    try:
        pool.start(min(workers, len(chunks)))
        todo = iter(range(len(chunks)))
        busy: dict[int, int] = {}  # worker -> the chunk it works on
        with deferred():
            for worker in range(len(pool)):
                index = next(todo, None)
                if index is not None:
                    pool.send(worker, index)
                    busy[worker] = index
            while busy and pending_signal() is None:
                for worker, reply in pool.ready(busy):
                    results[busy.pop(worker)] = reply
                    index = next(todo, None)
                    if index is not None:
                        pool.send(worker, index)
                        busy[worker] = index
            failed = bool(busy)
            if failed:
                pool.close(failed=True)  # a signal: the workers end now, the signal takes effect below
        if failed:  # only a signal held back by an outer deferred() section gets here
            raise Terminated(pending_signal() or signal.SIGTERM)
    finally:
        pool.close(failed)
    return [value for chunk in results for value in chunk]
