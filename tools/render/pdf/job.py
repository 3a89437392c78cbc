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
from tools.render.pdf.margins import clear_backgrounds, compose, margin_pages, margins_html, strip_margins
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
                      self.pieces.head_of(index), self.pieces.section(index, ""), self.pieces.end, urls, files, drawings_digest(chapter.drawings))

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

    def lay_out(self, index: int, key: str) -> tuple[object, Layout, list]:
        """Chapter `index` laid out: (what is kept until its first page is known, its layout, what rendering it
        reported). In two layers (margins.py), the body is painted at once and kept (and cached under `key`): it
        does not depend on the first page; else the laid-out document itself is kept."""
        html, problems = self.part_html(index)
        document, context, layout = self.render(html, defer=True)
        if not self.pieces.split:
            return (document, context), layout, problems
        layout.margins = margin_pages(document, context)
        body = self.paint_body(document, layout)
        if self.cache is not None and key:
            self.cache.put("pdf-body", key, body)
        return body, layout, problems

    def paint_body(self, document, layout: Layout) -> Written:
        """The part's body: its pages without their margin boxes."""
        strip_margins(document)
        sink = FontSink(self.fonts)
        with weasyprint_warnings() as messages:
            objects = to_objects(document, layout.foreign, sink)
        return Written(objects, sink.result(document.fonts.values()), list(messages))

    def paint_margins(self, index: int, layout: Layout, first_page: int) -> Written:
        """The margins of chapter `index`'s part, its page counter starting at `first_page`; in a translation, the
        notice of a chapter shown untranslated on the page where the chapter begins."""
        pieces = self.pieces
        begins = layout.anchors.get(pieces.entries[index]["id"], (0, 0.0, 0.0))[0]
        html = margins_html(pieces.head_of(index), pieces.end, layout.margins, pieces.notices[index], pieces.language, begins)
        if html is None:
            raise RuntimeError("the part's page or string names cannot be written into its margins' document")
        document, context, _ = self.render(html, defer=True)
        if len(document.pages) != layout.pages:
            raise RuntimeError(f"the margins of a {layout.pages}-page part took {len(document.pages)} pages")
        margins_again(document, context, first_page)
        clear_backgrounds(document)
        sink = FontSink(self.fonts)
        with weasyprint_warnings() as messages:
            objects = to_objects(document, [], sink, tagged=False)
        return Written(objects, sink.result(document.fonts.values()), list(messages))

    def finish(self, index: int, kept, layout: Layout, first_page: int) -> Written:
        """The part of chapter `index` for `first_page`, from what `lay_out` kept."""
        if not self.pieces.split:
            document, context = kept
            return self.write(document, context, first_page, layout)
        return compose(kept, self.paint_margins(index, layout, first_page))

    def cached_body(self, key: str) -> Written | None:
        body = self.cache.get("pdf-body", key) if self.cache is not None and key and self.pieces.split else None
        return body if isinstance(body, Written) else None

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


def part_key(layout_key: str, first_page: int, notice: tuple = ()) -> str:
    """The key of a written part: its layout's, the page it starts on and the notice its margins carry (a chapter
    that a translation shows untranslated has the original's layout, not its margins)."""
    return key_of("pdf-part", layout_key, first_page, notice)


# --- workers --------------------------------------------------------------------------------------------------------


class Worker:
    """Handles the main process's requests: ("layout", i, key), ("finish", i, first page), ("render", i, first page,
    key, cached layout), ("front", -1, html, final)."""

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
            kept, layout = self.held.pop(index)
            problems: list = []
        elif kind == "layout":
            kept, layout, problems = job.lay_out(index, message[2])
            self.held[index] = (kept, layout)
            return ("laid_out", index, layout, problems)
        else:  # "render": the layout was cached, and maybe the body too (a translation shows the original's chapter)
            kept, layout, problems = job.cached_body(message[3]), message[4], []
            if kept is None or layout is None:
                kept, layout, problems = job.lay_out(index, message[3])
        written = job.finish(index, kept, layout, message[2])
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
