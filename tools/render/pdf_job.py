"""What every process needs to turn chapter i into a PDF part (`_Job`), the cache keys of parts, and the loop a
forked worker serves requests in."""
from __future__ import annotations

import copy
import gc
import hashlib
import html as html_lib
import os
import traceback
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from .. import safe_io
from ..book import Book
from ..cache import Cache, key_of
from ..errors import Diagnostics
from ..markdown import create_markdown
from .pdf import _root_only_fetcher, weasyprint_warnings
from .pdf_cut import _Cut, _Layout, _layout_of, _local_file, _to_objects, _Written
from .pdf_hooks import _ACTIVE, _HOOKS, _RAW_URL, _FontSink, _weasyprint_version

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


class _Job:
    """What every process needs to turn chapter i into a PDF part; built in the main process, inherited by forks."""

    def __init__(self, book: Book, cut: _Cut, workdir: Path, cache: Cache | None):
        self.book = book
        self.cut = cut
        self.root = book.root.resolve()
        self.fonts = workdir / "fonts"
        self.fonts.mkdir(parents=True, exist_ok=True)
        self.cache = cache if cache is not None and cache.enabled else None
        self.version = _weasyprint_version()
        self._md: MarkdownIt | None = None
        self._digests: dict[Path, str] = {}
        self._fonts_of = 0  # the process that made `_font_configuration`
        self._font_configuration = None

    def part_html(self, index: int) -> tuple[str, list]:
        """The chapter's own HTML document, and what rendering it reported (remote images)."""
        chapter = self.book.chapters[index]
        policy = self.cut.policy
        own, saved = Diagnostics(), policy.diagnostics
        policy.diagnostics = own
        try:
            self._md = self._md or create_markdown()
            body = self.cut.render_chapter(self._md, self.book, chapter, policy)
        finally:
            policy.diagnostics = saved
        opening, closing = self.cut.sections[index]
        return f"{self.cut.head}\n{opening}{body}{closing}{self.cut.tail}", own.items

    def layout_key(self, index: int) -> str:
        """What the chapter's HTML document is made of, without making it: the chapter's text, the URL each of its
        links gets (other chapters' anchors and files are in them), its place in the template, and the bytes of
        every local file it draws. The tool's code and templates are in every key (`key_of`)."""
        chapter = self.book.chapters[index]
        urls = [self.cut.policy.url_for(link) for link in chapter.links]
        files = []
        for url in urls + [html_lib.unescape(m.group(1)).strip("'\" ") for m in _RAW_URL.finditer(chapter.text)]:
            path = _local_file(self.root, url)
            if path is not None:
                if path not in self._digests:
                    try:
                        self._digests[path] = hashlib.sha256(safe_io.read_bytes(path, self.root, safe_io.ASSET_LIMIT)).hexdigest()
                    except safe_io.UnsafeFile:
                        self._digests[path] = "refused"
                files.append((url, self._digests[path]))
        return key_of("pdf-part-layout", self.version, chapter.path, hashlib.sha256(chapter.text.encode()).hexdigest(),
                      self.cut.head, self.cut.sections[index], self.cut.tail, urls, files)

    def _font_config(self):
        """One font configuration per process: fonts are loaded and shaped once for all the parts it renders."""
        from weasyprint.text.fonts import FontConfiguration

        if self._fonts_of != os.getpid():
            self._fonts_of, self._font_configuration = os.getpid(), FontConfiguration()
        return self._font_configuration

    def render(self, html: str, defer: bool):
        """WeasyPrint's layout of `html`; with `defer`, the margin boxes are held back: (document, held back, layout)."""
        from weasyprint import HTML

        deferred: list = []
        with weasyprint_warnings() as messages:
            _ACTIVE.deferred = deferred if defer else None
            try:
                document = HTML(string=html, base_url=str(self.root) + "/", url_fetcher=_root_only_fetcher(self.root)).render(
                    font_config=self._font_config())
            finally:
                _ACTIVE.deferred = None
        layout = _layout_of(document)
        layout.warnings = list(messages)
        return document, deferred, layout

    def write(self, document, deferred: list, first_page: int, layout: _Layout) -> _Written:
        """Lay out the held-back margin boxes with the page counter starting at `first_page`, paint, serialize."""
        margins, backgrounds = _HOOKS["margins"], _HOOKS["backgrounds"]
        for context, page, state, number in deferred:
            state = copy.deepcopy(state)
            counters = state[1]
            if "page" in counters:
                counters["page"] = [value + first_page - 1 for value in counters["page"]]
            context.current_page = number
            boxes = list(margins(context, page, state))
            for box in boxes:
                backgrounds(page, box, context.get_image_from_uri)
            page.children = (*page.children, *boxes)
        sink = _FontSink(self.fonts)
        with weasyprint_warnings() as messages:
            objects = _to_objects(document, layout.foreign, sink)
        return _Written(objects, sink.result(), list(messages))


def _part_key(layout_key: str, first_page: int) -> str:
    return key_of("pdf-part", layout_key, first_page)


# --- workers --------------------------------------------------------------------------------------------------------


class _Worker:
    """Handles the main process's requests: ("layout", i), ("finish", i, first page), ("render", i, first page),
    ("front", -1, html, final)."""

    def __init__(self, job: _Job):
        self.job = job
        self.held: dict[int, tuple] = {}  # laid-out parts waiting for their first page number

    def handle(self, message: tuple) -> tuple:
        kind, index = message[0], message[1]
        job = self.job
        if kind == "front":  # the cover and contents: ("front", -1, html, final); a placeholder only measures
            document, _, layout = job.render(message[2], defer=False)
            return ("front", index, layout, job.write(document, [], 1, layout) if message[3] else None, [])
        if kind == "finish":
            document, deferred, layout = self.held.pop(index)
            problems: list = []
        else:
            html, problems = job.part_html(index)
            document, deferred, layout = job.render(html, defer=True)
            if kind == "layout":
                self.held[index] = (document, deferred, layout)
                return ("laid_out", index, layout, problems)
        written = job.write(document, deferred, message[2], layout)  # "finish", or "render" (layout was cached)
        return ("done", index, layout.pages, written, problems)


def _serve(conn, job: _Job) -> None:
    """A worker process. Writing a held part comes before laying out the next one: less memory is held."""
    gc.freeze()  # what the main process had (the book, the imports) is never garbage here: not scanned, pages stay shared
    worker = _Worker(job)
    inbox: deque = deque()
    try:
        while True:
            if not inbox:
                inbox.append(conn.recv())
            while conn.poll():
                inbox.append(conn.recv())
            if any(m[0] == "stop" for m in inbox):
                return
            message = next((m for m in inbox if m[0] in ("finish", "render", "front")), inbox[0])
            inbox.remove(message)
            try:
                reply = worker.handle(message)
            except Exception:
                conn.send(("error", message[1], traceback.format_exc()))
                return
            conn.send(reply)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):  # the main process went away, or stops the build
        return
