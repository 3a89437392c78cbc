"""The one process pool of a build: each worker parses a fixed share of the chapters, keeps their tokens (up to
`TOKENS_KEPT` of markdown as they are, past it pickled and compressed), and later
renders those same chapters for every format, once the main process has resolved the links and worked out what each
chapter's rendering needs (tools/build/pipeline.py). Tokens never travel between processes: the light model goes back after
parsing, a rendered body after rendering. With one job, a handful of chapters or no `fork`, the same store works in
this process, with the tokens kept in memory."""
from __future__ import annotations

import os
import pickle
import zlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from tools.book.diagrams import Drawing
from tools.book.load import parse_new_chapter
from tools.book.model import Book, Chapter, parse_text
from tools.core import safe_io
from tools.core.cache import Cache
from tools.core.errors import Diagnostic, Diagnostics
from tools.core.parallel import MIN_ITEMS, Workers, can_fork
from tools.markdown.math import load_converter
from tools.markdown.parser import create_markdown
from tools.render.protocol import Format

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

# (format name, the context its render_chapter needs, the cache key of its result or None) for one chapter
Asks = list[tuple[str, Any, str | None]]
# Markdown (in characters) whose tokens one process keeps as they are between parsing and rendering: tokens take
# about 18 times the text's size, so a book many times the upstream one (1.19 MB) would hold 230 MiB of them. The
# chapters past it are kept pickled and zlib-compressed (about 1.4 times the text's size; undoing it costs about a
# third of a parse), so every chapter is still parsed once, however big the book.
TOKENS_KEPT = 1_500_000


class ChapterStore:
    """What one process holds of the chapters it parsed: each one's tokens, until every format has rendered it."""

    def __init__(self, root: Path, entries: list[tuple[str, int]], formats: Mapping[str, Format], cache: Cache | None):
        self.root = root
        self.entries = entries
        self.formats = formats
        self.cache = cache
        self.light: dict[int, Chapter] = {}  # chapters the cache held, without tokens (known before any fork)
        self.held: dict[int, Chapter] = {}  # chapters parsed in this process, with their tokens
        self.kept = 0  # characters of markdown whose tokens `held` keeps (at most TOKENS_KEPT)
        self.packed: dict[int, bytes] = {}  # chapters parsed here past TOKENS_KEPT, pickled and compressed
        self._md: MarkdownIt | None = None
        self.last = ""  # the kind of the last request a worker handled

    def markdown(self):
        self._md = self._md or create_markdown()
        return self._md

    def parse(self, index: int) -> tuple[Chapter, list[Diagnostic]]:
        """Parse chapter `index` (the cache lacks it) and keep it; returns it and what parsing it reported."""
        path, line = self.entries[index]
        found = Diagnostics()
        chapter = parse_new_chapter(self.root, path, line, found, self.markdown(), self.cache)
        if self.kept + len(chapter.text) <= TOKENS_KEPT:
            self.held[index] = chapter
            self.kept += len(chapter.text)
        else:
            self.packed[index] = zlib.compress(pickle.dumps(chapter, protocol=pickle.HIGHEST_PROTOCOL), 1)
        return chapter, found.items

    def render(self, index: int, asks: Asks, drawings: Mapping[str, Drawing]) -> list[Any]:
        """Chapter `index` rendered for each format asked, with its diagrams' `drawings`; its tokens are let go
        afterwards (nothing asks twice). A chapter taken from the cache is parsed here, once, for the formats whose
        results the cache lacks."""
        chapter = self.held.pop(index, None)
        packed = self.packed.pop(index, None)
        if chapter is not None:
            self.kept -= len(chapter.text)
        elif packed is not None:
            chapter = pickle.loads(zlib.decompress(packed))  # noqa: S301 - bytes this process pickled itself
        else:
            light = self.light[index]
            tokens, env, found = parse_text(light.path, light.text, self.markdown())
            chapter = replace(light, parsed=tokens, env=env, links=found.links)  # the main process's model stays as it is
        chapter.drawings = dict(drawings)
        results = []
        for name, context, key in asks:
            fmt = self.formats[name]
            results.append(fmt.render_chapter(chapter, chapter.parsed or [], context))
            if key and self.cache is not None:
                self.cache.put(fmt.cache_namespace, key, results[-1])
        return results

    def handle(self, request: tuple[str, list]) -> list:
        """A worker's request: ("parse", [index, ...]) or ("render", [(index, asks, drawings), ...]). What it puts in
        the cache is written once the reply is sent (`after_reply`), while the main process works on the reply."""
        if self.cache is not None:
            self.cache.hold()
        kind, items = request
        self.last = kind
        if kind == "parse":
            replies = []
            for index in items:
                chapter, problems = self.parse(index)
                replies.append((index, chapter.without_tokens(), problems))  # the model goes back, the tokens stay
            return replies
        return [(index, self.render(index, asks, drawings)) for index, asks, drawings in items]

    def after_reply(self) -> None:
        """A worker's cache entries of its last request, written once its reply is sent, while the main process works
        on the reply (nothing the worker holds changes them). After the render, its last request, the worker yields
        the cores to the main process and the search index's (`os.nice`): they are what the build waits for."""
        if self.cache is None:
            return
        if self.cache.held and self.last == "render" and hasattr(os, "nice"):
            try:
                os.nice(10)
            except OSError:
                pass
        self.cache.flush()


def _shares(items: list[int], weight: Mapping[int, int], count: int) -> list[list[int]]:
    """`items` in `count` shares of about equal weight (the heaviest first, each to the lightest share)."""
    shares: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for item in sorted(items, key=lambda item: -weight[item]):
        lightest = totals.index(min(totals))
        shares[lightest].append(item)
        totals[lightest] += weight[item] + 1
    return [sorted(share) for share in shares]


class ChapterPool:
    """Parses chapters and renders them where they were parsed: in `jobs` forked workers when there are enough
    chapters for it to pay, else in this process. Use it as a context manager: the workers end with the block."""

    def __init__(self, book: Book, entries: list[tuple[str, int]], formats: Mapping[str, Format], cache: Cache | None, jobs: int):
        self.book = book
        self.store = ChapterStore(book.root, entries, formats, cache)
        self.jobs = jobs
        self.workers = Workers(lambda request: self.store.handle(request), after=lambda: self.store.after_reply())
        self.owner: dict[int, int] = {}  # chapter index -> the worker that holds its tokens

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.workers.close(failed=kind is not None)

    def release(self) -> None:
        """Nothing more will be asked: the workers write their last cache entries and end while this process goes
        on (the block's end waits for them)."""
        self.workers.stop()

    def _fork(self, todo: list[int]) -> bool:
        """Start the workers (once) when the chapters `todo` are worth them; whether there are workers."""
        if not len(self.workers) and self.jobs > 1 and len(todo) >= MIN_ITEMS and can_fork():
            self._preload(todo)
            self.workers.start(min(self.jobs, len(todo)))
        return len(self.workers) > 0

    def _preload(self, todo: list[int]) -> None:
        """Import the renderers and make the parser before forking: the workers inherit them, instead of each
        importing them again (this process imports them anyway, to prepare and write the outputs). So too the
        Pygments lexers and the LaTeX converter the chapters `todo` will use, which this process would not load."""
        sources = self._sources(todo)
        self.store.markdown()
        load_converter(sources)
        for fmt in self.store.formats.values():
            preload = getattr(fmt, "preload", None)  # optional: a format from a package may have none
            if preload is not None:
                preload(sources)

    def _meanwhile(self, markdown_bytes: int) -> None:
        """What the formats will need in this process later, done while the workers parse `markdown_bytes` of
        chapters (Format's `meanwhile`)."""
        for fmt in self.store.formats.values():
            hook = getattr(fmt, "meanwhile", None)
            if hook is not None:
                try:
                    hook(markdown_bytes)
                except Exception:  # noqa: BLE001 - the format does it again where it needs it, and reports what fails
                    pass

    def _sources(self, todo: list[int]) -> list[str]:
        """The markdown of the chapters `todo`, for `_preload` only (it guides what is imported): a file that cannot be
        read safely is left out here, and its parse reports it."""
        sources = []
        for index in todo:
            try:
                data = safe_io.read_bytes(self.book.root / self.store.entries[index][0], self.book.root)
            except (OSError, safe_io.UnsafeFile):
                continue
            sources.append(data.decode("utf-8", "replace"))
        return sources

    def _size(self, index: int) -> int:
        path = self.store.entries[index][0]
        try:
            return os.stat(self.book.root / path).st_size
        except OSError:
            return 0

    def parse(self, todo: list[int], light: dict[int, Chapter]) -> dict[int, tuple[Chapter, list[Diagnostic]]]:
        """Parse the chapters `todo` (indexes into the chapter list); `light`: those the cache held, which a
        worker may have to parse later. Returns each parsed chapter (without tokens when a worker parsed it)."""
        self.store.light = light
        if not self._fork(todo):
            return {index: self.store.parse(index) for index in todo}
        sizes = {index: self._size(index) for index in todo}
        shares = _shares(todo, sizes, len(self.workers))
        for worker, share in enumerate(shares):
            self.workers.send(worker, ("parse", share))
            self.owner.update((index, worker) for index in share)
        self._meanwhile(sum(sizes.values()))
        parsed: dict[int, tuple[Chapter, list[Diagnostic]]] = {}
        for replies in self.workers.gather(range(len(shares))).values():
            parsed.update((index, (chapter, problems)) for index, chapter, problems in replies)
        return parsed

    def render(self, asks: dict[int, Asks], drawings: Mapping[int, Mapping[str, Drawing]]) -> dict[int, list[Any]]:
        """Each chapter rendered for the formats asked (by chapter index), in the process that holds its tokens, with
        its diagrams' `drawings` (made after the workers forked). The chapters nobody holds (they came from the
        cache) are parsed by the workers, or here when few."""
        unheld = [index for index in asks if index not in self.owner and index not in self.store.held and index not in self.store.packed]
        if unheld and self._fork(unheld):
            weight = {index: len(self.store.light[index].text) for index in unheld}
            for worker, share in enumerate(_shares(unheld, weight, len(self.workers))):
                self.owner.update((index, worker) for index in share)
        requests: dict[int, list] = {}
        for index, wanted in asks.items():
            if index in self.owner:
                requests.setdefault(self.owner[index], []).append((index, wanted, drawings.get(index, {})))
        for worker, items in requests.items():  # the workers render while this process renders its own
            self.workers.send(worker, ("render", items))
        rendered = {index: self.store.render(index, wanted, drawings.get(index, {})) for index, wanted in asks.items() if index not in self.owner}
        for replies in self.workers.gather(requests).values():
            rendered.update(replies)
        return rendered
