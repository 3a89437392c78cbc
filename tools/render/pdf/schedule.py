"""Scheduling the parts: this process or forked workers, each chapter finished once the chapters before it have
reported their page counts; the cover and contents laid out twice (placeholder, then real page numbers)."""
from __future__ import annotations

import multiprocessing
from collections import Counter, deque
from dataclasses import dataclass
from typing import Protocol

from tools.core.cache import key_of
from tools.core.errors import Diagnostics
from tools.core.interrupt import deferred
from tools.render.pdf.job import Job, Worker, give_back_memory, part_key, serve
from tools.render.pdf.parts import Layout, Written

TRIM_EVERY = 16  # parts written between two trims of this process's free memory (each part passes through it)
MAX_HELD = 2  # laid-out parts a worker holds while they wait for their first page number (each is a whole layout)


class _Local:
    """A worker in this process: a request is handled when it is sent."""

    def __init__(self, job: Job):
        self.worker = Worker(job)
        self.replies: deque = deque()

    def send(self, message: tuple) -> None:
        self.replies.append(self.worker.handle(message))

    def close(self, failed: bool = False) -> None:
        self.worker.held.clear()

    def kill(self) -> None:
        self.worker.held.clear()


class _Forked:
    """A forked worker process, which inherits the loaded book and this module's state."""

    def __init__(self, job: Job, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, job), daemon=True)
        self.process.start()
        child.close()

    def send(self, message: tuple) -> None:
        self.conn.send(message)

    def close(self, failed: bool = False) -> None:
        """Stop the worker: when idle it ends at once; after a failure it is not waited for."""
        try:
            self.conn.send(("stop", -1))
        except (OSError, ValueError):
            pass
        self.process.join(timeout=0.5 if failed else 10)
        self.kill()

    def kill(self) -> None:
        """End the worker now (it ignores SIGINT: a Ctrl-C reaches the main process, which ends its workers)."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self.conn.close()


class _Pool:
    """Workers for the parts: none while everything comes from the cache, this process for a single part, forked
    processes (`jobs` of them) as soon as two requests wait."""

    def __init__(self, job: Job, jobs: int):
        self.job = job
        self.jobs = jobs
        self.channels: list = []
        self.busy: dict[int, int] = {}  # layouts and renders asked of a channel and not answered yet
        self.owner: dict[int, object] = {}  # part -> the channel that holds its layout
        self.cannot_fork = False

    def _targets(self, waiting: int) -> list:
        forked = [channel for channel in self.channels if isinstance(channel, _Forked)]
        if not forked and self.jobs > 1 and waiting >= 2 and not self.cannot_fork:
            try:
                give_back_memory()  # what loading the book freed is not inherited by every worker
                context = multiprocessing.get_context("fork")
                for _ in range(min(self.jobs, max(2, waiting))):
                    # A signal between the fork and the append would leave a worker nobody ends (it ignores
                    # SIGINT): hold signals until the worker is in `channels`, where close() finds it.
                    with deferred():
                        forked.append(_Forked(self.job, context))
                        self.channels.append(forked[-1])
            except (ValueError, AssertionError, OSError):  # no fork here, or a daemonic process: work in this one
                self.cannot_fork = True
        if forked:
            return forked
        local = [channel for channel in self.channels if isinstance(channel, _Local)]
        if not local:
            local = [_Local(self.job)]
            self.channels += local
        return local

    def dispatch(self, requests: deque, state: list[str], first_unknown: int | None = None) -> None:
        """Hand waiting requests to workers that have room (two per process: the next one waits in its pipe). A
        worker holding MAX_HELD laid-out parts (`state`: "held" or "writing") is asked for no other layout than that
        of the first part whose layout is unknown, `first_unknown`, which the others wait for: while one chapter is
        long, the other worker does not pile up laid-out chapters that cannot be written yet."""
        if not requests:
            return
        targets = self._targets(len(requests))
        depth = 2 if isinstance(targets[0], _Forked) else 1
        while requests:
            room = [c for c in targets if self.busy.get(id(c), 0) < depth]
            if requests[0][0] == "layout" and requests[0][1] != first_unknown:
                held = Counter(id(self.owner[i]) for i, s in enumerate(state) if s in ("held", "writing"))
                room = [c for c in room if held[id(c)] < MAX_HELD]
            if not room:
                return
            channel = min(room, key=lambda c: self.busy.get(id(c), 0))
            message = requests.popleft()
            self.busy[id(channel)] = self.busy.get(id(channel), 0) + 1
            self.owner[message[1]] = channel
            channel.send(message)

    def finish(self, index: int, first_page: int) -> None:
        self.owner[index].send(("finish", index, first_page))  # type: ignore[attr-defined]

    def answered(self, channel) -> None:
        self.busy[id(channel)] -= 1

    def replies(self) -> list:
        """The next replies of any worker (waiting for one if none is there)."""
        from multiprocessing.connection import wait

        local = [(c, c.replies.popleft()) for c in self.channels if isinstance(c, _Local) and c.replies]
        if local:
            return local
        forked = {c.conn: c for c in self.channels if isinstance(c, _Forked)}
        if not forked:
            raise RuntimeError("the PDF build waits for a part that no worker is making")
        ready = []
        for conn in wait(list(forked)):
            try:
                ready.append((forked[conn], forked[conn].conn.recv()))
            except EOFError:
                raise RuntimeError("a PDF worker process ended unexpectedly") from None
        return ready

    def release_idle(self, state: list[str]) -> None:
        """End each worker that will get no more work: called once nothing is left to ask (the contents is asked
        last), for a worker with no request open and no laid-out part of its own still to write. At the end of a
        long book the contents is the largest layout, and the other workers' memory is not kept beside it."""
        mine = {id(self.owner[index]) for index, s in enumerate(state) if s in ("held", "writing")}
        for channel in [c for c in self.channels if isinstance(c, _Forked)]:
            if not self.busy.get(id(channel), 0) and id(channel) not in mine:
                self.channels.remove(channel)
                channel.close()

    def close(self, failed: bool = False) -> None:
        try:
            for channel in self.channels:
                channel.close(failed)
        except BaseException:  # interrupted while closing: no worker outlives the build
            for channel in self.channels:
                channel.kill()
            raise


# --- the main process: schedule the parts, render the front matter --------------------------------------------------


@dataclass
class Parts:
    layouts: list
    first_pages: list[int]  # the page number each part starts on (1-based)
    front_layout: Layout | None = None  # the cover and contents, once written with their page numbers


class PartSink(Protocol):
    """Where the written parts go as they come (`write.BookWriter`): the main process keeps none of them."""

    def know(self, layout: Layout) -> None: ...

    def add(self, index: int, written: Written, pages: int) -> None: ...


def _front_html(job: Job, numbers: dict[str, int] | None) -> str:
    """The cover and contents; each contents line carries its chapter's page number as `data-page` (None: a
    placeholder, to learn how many pages the front matter takes before any chapter is laid out)."""
    return job.pieces.front(numbers)


def _page_numbers(layouts: list[Layout], first_pages: list[int]) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for layout, first in zip(layouts, first_pages):
        for name, (page, _, _) in layout.anchors.items():
            numbers.setdefault(name, first + page)
    return numbers


def _front_key(job: Job) -> str:
    """The front matter with placeholder numbers, without what changes with every build (dates, revision)."""
    return key_of("pdf-front-pages", job.version, job.pieces.front_key())


def render_parts(job: Job, diagnostics: Diagnostics, jobs: int, front_pages: int | None, sink: PartSink,
                 progress=None) -> tuple[Parts, int, int]:
    """Lay out and write every part that the cache does not have, in parallel when it pays; each written part goes
    to `sink` as it comes (part 0 is the cover and contents, part i + 1 chapter i).

    `front_pages`: how many pages the cover and contents take; None: as many as last time, or as a render with
    placeholder page numbers shows. Returns the parts, the front matter's length the chapters were numbered after,
    and its real length (the caller numbers again if they differ)."""
    count = len(job.book.chapters)
    cache = job.cache
    progress = progress or (lambda path: None)
    parts = Parts([None] * count, [0] * count)
    # The keys (each reads and hashes the files its chapter draws) serve the cache alone: none without one.
    keys = [job.layout_key(index) for index in range(count)] if cache is not None else [""] * count
    state = ["cached"] * count  # cached (layout known) | queued -> held (laid out, waiting) -> writing -> done
    requests: deque = deque()
    for index, key in enumerate(keys):
        cached = cache.get("pdf-layout", key) if cache is not None else None
        if isinstance(cached, Layout):
            parts.layouts[index] = cached
            sink.know(cached)
        else:
            state[index] = "queued"
            requests.append(("layout", index))
    front_key = _front_key(job)
    if front_pages is None and cache is not None:
        guess = cache.get("pdf-front-pages", front_key)
        front_pages = guess if isinstance(guess, int) else None
    pool = _Pool(job, jobs)
    front_asked = False  # the final contents (with page numbers) is requested once every page count is known
    if front_pages is None:  # measured first, by whichever worker is free first: the workers hold the memory
        requests.appendleft(("front", -1, _front_html(job, None), False))
    failed = True
    added = 0
    try:
        while True:
            # every part whose first page is known is written, or taken from the cache
            first = (front_pages or 0) + 1
            for index in range(count if front_pages is not None else 0):
                layout = parts.layouts[index]
                if layout is None:
                    break
                parts.first_pages[index] = first
                if state[index] == "held":
                    state[index] = "writing"
                    pool.finish(index, first)
                elif state[index] == "cached":
                    written = cache.get("pdf-part", part_key(keys[index], first)) if cache is not None else None
                    if isinstance(written, Written):
                        state[index] = "done"
                        sink.add(index + 1, written, layout.pages)
                        progress(job.book.chapters[index].path)
                    else:
                        state[index] = "rendering"
                        requests.append(("render", index, first))
                first += layout.pages
            if not front_asked and front_pages is not None and all(layout is not None for layout in parts.layouts):
                # every page count is known: the contents gets its numbers while the last parts are written
                front_asked = True
                requests.appendleft(("front", -1, _front_html(job, _page_numbers(parts.layouts, parts.first_pages)), True))
            pool.dispatch(requests, state, next((i for i, layout in enumerate(parts.layouts) if layout is None), None))
            if front_asked and not requests:
                pool.release_idle(state)
            if parts.front_layout is not None and all(s == "done" for s in state):
                break
            for channel, reply in pool.replies():
                kind, index = reply[0], reply[1]
                if kind == "error":
                    what = "the contents" if index < 0 else job.book.chapters[index].path
                    raise RuntimeError(f"the PDF part of {what} failed:\n{reply[2]}")
                if kind == "front":
                    _, _, layout, written, problems = reply
                    pool.answered(channel)
                    if written is None:
                        front_pages = layout.pages
                    else:
                        sink.know(layout)
                        sink.add(0, written, layout.pages)
                        parts.front_layout = layout
                        if cache is not None:
                            cache.put("pdf-front-pages", front_key, layout.pages)
                elif kind == "laid_out":
                    _, _, layout, problems = reply
                    parts.layouts[index], state[index] = layout, "held"
                    sink.know(layout)
                    pool.answered(channel)
                    if cache is not None:
                        cache.put("pdf-layout", keys[index], layout)
                else:
                    _, _, pages, written, problems = reply
                    if state[index] == "rendering":
                        pool.answered(channel)
                    if pages != parts.layouts[index].pages:
                        raise RuntimeError(f"{job.book.chapters[index].path}: {pages} pages written where {parts.layouts[index].pages} were laid out")
                    state[index] = "done"
                    sink.add(index + 1, written, pages)
                    progress(job.book.chapters[index].path)
                    added += 1
                    if added % TRIM_EVERY == 0:
                        give_back_memory(collect=False)
                    if cache is not None:
                        cache.put("pdf-part", part_key(keys[index], parts.first_pages[index]), written)
                for problem in problems:
                    diagnostics.add(problem)
        failed = False
    finally:
        pool.close(failed)
    assert parts.front_layout is not None and front_pages is not None
    return parts, front_pages, parts.front_layout.pages
