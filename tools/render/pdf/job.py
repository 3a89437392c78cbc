"""What every process needs to turn chapter i into a PDF part (`Job`), the cache keys of parts, and the loop a
forked worker serves requests in."""
from __future__ import annotations

import gc
import hashlib
import html as html_lib
import os
import traceback
import zlib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from markdown_it import MarkdownIt

from tools.book.diagrams import drawings_digest
from tools.book.model import Book
from tools.core import safe_io
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostics
from tools.markdown.parser import create_markdown
from tools.render.pdf.document import render_chapter
from tools.render.pdf.fetcher import root_only_fetcher, weasyprint_warnings
from tools.render.pdf.hooks import RAW_URL, FontSink, join_leaders, laid_out, margins_again, weasyprint_version
from tools.render.pdf.native import malloc_trim
from tools.render.pdf.parts import Layout, PrintPieces, Written, layout_of, local_file, to_objects


class PackedTexts(Mapping[str, str]):
    """Texts held compressed (zlib's fastest level), each unpacked when asked for: a long book's print HTML is tens
    of megabytes, which the main process would otherwise hold, and every PDF worker inherit, for the whole build."""

    def __init__(self, items: Iterable[tuple[str, str]]):
        self._packed = {key: zlib.compress(text.encode("utf-8", "surrogatepass"), 1) for key, text in items}

    def __getitem__(self, key: str) -> str:
        return zlib.decompress(self._packed[key]).decode("utf-8", "surrogatepass")

    def __contains__(self, key: object) -> bool:
        return key in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


class Job:
    """What every process needs to turn chapter i into a PDF part; built in the main process, inherited by forks."""

    def __init__(self, book: Book, pieces: PrintPieces, workdir: Path, cache: Cache | None,
                 chapter_html: Mapping[str, str] | None = None):
        self.book = book
        self.pieces = pieces
        self.chapter_html = chapter_html or {}  # bodies rendered before the PDF route (by chapter path)
        self.root = book.root.resolve()
        self.fonts = workdir / "fonts"
        self.fonts.mkdir(parents=True, exist_ok=True)
        self.cache = cache if cache is not None and cache.enabled else None
        self.version = weasyprint_version()
        self._md: MarkdownIt | None = None
        self._digests: dict[Path, str] = {}
        self._fonts_of = 0  # the process that made `_font_configuration`
        self._font_configuration = None

    def part_html(self, index: int) -> tuple[str, list]:
        """The chapter's own HTML document, and what rendering it reported (remote images)."""
        chapter = self.book.chapters[index]
        if chapter.path in self.chapter_html:  # what rendering it reported went to the build's diagnostics then
            return self.pieces.chapter(index, self.chapter_html[chapter.path]), []
        policy = self.pieces.policy
        own, saved = Diagnostics(), policy.diagnostics
        policy.diagnostics = own
        try:
            self._md = self._md or create_markdown()
            body = render_chapter(self._md, self.book, chapter, policy)
        finally:
            policy.diagnostics = saved
        return self.pieces.chapter(index, body), own.items

    def layout_key(self, index: int) -> str:
        """What the chapter's HTML document is made of, without making it: the chapter's text, the URL each of its
        links gets (other chapters' anchors and files are in them), its place in the template, and the bytes of
        every local file it draws. The tool's code and templates are in every key (`key_of`). A body rendered before
        the route is made of the same, so it shares the key: `build pdf` and `build all` share the cached parts."""
        chapter = self.book.chapters[index]
        urls = [self.pieces.policy.url_for(link) for link in chapter.links]
        files = []
        for url in urls + [html_lib.unescape(m.group(1)).strip("'\" ") for m in RAW_URL.finditer(chapter.text)]:
            path = local_file(self.root, url)
            if path is not None:
                if path not in self._digests:
                    try:
                        self._digests[path] = hashlib.sha256(safe_io.read_bytes(path, self.root, safe_io.ASSET_LIMIT)).hexdigest()
                    except safe_io.UnsafeFile:
                        self._digests[path] = "refused"
                files.append((url, self._digests[path]))
        return key_of("pdf-part-layout", self.version, chapter.path, hashlib.sha256(chapter.text.encode()).hexdigest(),
                      self.pieces.head, self.pieces.section(index, ""), self.pieces.end, urls, files, drawings_digest(chapter.drawings))

    def _font_config(self):
        """One font configuration per process: fonts are loaded and shaped once for all the parts it renders."""
        from weasyprint.text.fonts import FontConfiguration

        if self._fonts_of != os.getpid():
            self._fonts_of, self._font_configuration = os.getpid(), FontConfiguration()
        return self._font_configuration

    def render(self, html: str, defer: bool):
        """WeasyPrint's layout of `html`: (document, layout context, layout). With `defer`, the margin boxes are to be
        laid out again once the part's first page is known (the context keeps what that needs); without, the
        document is final as it is, and the context None."""
        from weasyprint import HTML

        with weasyprint_warnings() as messages:
            source = HTML(string=html, base_url=str(self.root) + "/", url_fetcher=root_only_fetcher(self.root))
            if defer:
                document, context = laid_out(source, self._font_config())
            else:
                document, context = source.render(font_config=self._font_config()), None
                join_leaders(document)  # the contents' dot leaders: one text box each, not one per dot
        layout = layout_of(document)
        layout.warnings = list(messages)
        return document, context, layout

    def write(self, document, context, first_page: int, layout: Layout) -> Written:
        """Lay the margin boxes out again with the page counter starting at `first_page` (with a `context`), paint,
        serialize."""
        if context is not None:
            margins_again(document, context, first_page)
        sink = FontSink(self.fonts)
        with weasyprint_warnings() as messages:
            objects = to_objects(document, layout.foreign, sink)
        return Written(objects, sink.result(document.fonts.values()), list(messages))


def give_back_memory(collect: bool = True) -> None:
    """Free what the last layout left (Python's cycles, unless not `collect`, then glibc's free pages, which
    WeasyPrint's Pango and HarfBuzz objects leave behind) to the system; nothing where glibc is not the C library."""
    if collect:
        gc.collect()
    trim = malloc_trim()
    if trim is not None:
        trim(0)


IDLE_TRIM_SECONDS = 0.2  # a worker with no request for this long gives back what its last layouts freed


def part_key(layout_key: str, first_page: int) -> str:
    return key_of("pdf-part", layout_key, first_page)


# --- workers --------------------------------------------------------------------------------------------------------


class Worker:
    """Handles the main process's requests: ("layout", i), ("finish", i, first page), ("render", i, first page),
    ("front", -1, html, final)."""

    def __init__(self, job: Job):
        self.job = job
        self.held: dict[int, tuple] = {}  # laid-out parts waiting for their first page number

    def handle(self, message: tuple) -> tuple:
        kind, index = message[0], message[1]
        job = self.job
        if kind == "front":  # the cover and contents: ("front", -1, html, final); a placeholder only measures
            document, _, layout = job.render(message[2], defer=False)
            written = job.write(document, None, 1, layout) if message[3] else None
            del document
            give_back_memory()  # the contents of a long book is the largest layout: its memory is not kept for the chapters
            return ("front", index, layout, written, [])
        if kind == "finish":
            document, context, layout = self.held.pop(index)
            problems: list = []
        else:
            html, problems = job.part_html(index)
            document, context, layout = job.render(html, defer=True)
            if kind == "layout":
                self.held[index] = (document, context, layout)
                return ("laid_out", index, layout, problems)
        written = job.write(document, context, message[2], layout)  # "finish", or "render" (layout was cached)
        return ("done", index, layout.pages, written, problems)


def serve(conn, job: Job) -> None:
    """A worker process. Writing a held part comes before laying out the next one: less memory is held."""
    gc.freeze()  # what the main process had (the book, the imports) is never garbage here: not scanned, pages stay shared
    worker = Worker(job)
    inbox: deque = deque()
    trimmed = True
    try:
        while True:
            if not inbox:
                if not trimmed and not conn.poll(IDLE_TRIM_SECONDS):
                    give_back_memory()  # idle (the end of the book, or waiting on a long chapter): hold no freed memory meanwhile
                    trimmed = True
                inbox.append(conn.recv())
            while conn.poll():
                inbox.append(conn.recv())
            if any(m[0] == "stop" for m in inbox):
                return
            message = next((m for m in inbox if m[0] in ("finish", "render", "front")), inbox[0])
            inbox.remove(message)
            trimmed = False
            try:
                reply = worker.handle(message)
            except Exception:  # noqa: BLE001 - handed to the main process, which names the chapter
                conn.send(("error", message[1], traceback.format_exc()))
                return
            conn.send(reply)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):  # the main process went away, or stops the build
        return
