"""The PDF laid out chapter by chapter in parallel processes, then merged into one file (issue 7).

One WeasyPrint render of the whole print document runs on one core and holds every page until it is written. Here
each chapter becomes its own small document, cut out of the very document `print_document` makes (same template,
stylesheet, ids and links):

1. A worker (a forked process sharing the loaded book) renders the chapter's HTML and lays it out with its margin
   boxes (running header, page number) held back, so the layout does not depend on where the chapter starts. It
   reports the page count, the page and position of every anchor and the chapter's bookmarks, and goes on.
2. Once every earlier chapter has reported its page count, the chapter's first page number is known: the worker lays
   out the margin boxes with the page counter starting there, paints the chapter, and sends back the PDF objects
   WeasyPrint's `generate_pdf` made for it (numbered within the part) instead of a file.
3. A worker also lays out the cover and contents: first with placeholder numbers (to learn how many pages they
   take), then, once every page count is known, with literal page numbers (a `target-counter` would make WeasyPrint
   lay the document out again). The main process, which holds the book, writes it: the parts' objects renumbered
   (nothing is parsed back), one page tree, one name tree holding every anchor (a link to another chapter is a named destination),
   one outline (chapters at the top, their h2 and h3 below), the front matter's metadata and language, and each
   font program once. Workers embed a placeholder instead of a subset, so sixty parts do not carry sixty subsets of
   each font: the merge embeds one subset of the union of the glyphs all parts use, at the same glyph ids, made by
   WeasyPrint's own HarfBuzz subsetting. Objects without a stream go into compressed object streams, as WeasyPrint
   writes them. The pages print the same words at the same places as one render of the whole document.

Workers are forked only when two or more chapters need WeasyPrint; one does it in this process; none, nothing.

Cache (`tools/cache.py`), per chapter: its layout (page count, anchors, bookmarks) under a key of what its HTML is
made of (its text, the URL each of its links gets, its place in the template, the bytes of the local files it draws,
the WeasyPrint version; the tool's code and templates are in every key), and its written part under that key and
the page it starts on. An edit that keeps a chapter's page count lays out that chapter only; one that changes it
also rewrites the chapters after it (their page numbers moved). The cover and contents carry the build time, so
they are rendered on every build (a fraction of a second). System fonts are not in the keys: after changing the
installed fonts, build with the cache disabled once.

What cannot be reproduced one chapter at a time makes the build fall back to one render of the whole document
(`tools.render.pdf.build_pdf`): page selectors that depend on a page's place in the book (`:first`, `:left`,
`:right`, `:nth()`, `:blank`), `counter(pages)`, `target-counter`/`target-text` anywhere but in the contents, a
linked stylesheet, or a WeasyPrint whose internals differ from the ones this module hooks into (version 70:
`layout.make_margin_boxes`, `pdf.fonts.Font.clean`, `pdf.generate_pdf` and pydyf's objects).
"""
from __future__ import annotations

import copy
import gc
import hashlib
import html as html_lib
import io
import multiprocessing
import os
import re
import tempfile
import threading
import traceback
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..atomic import atomic_file
from ..book import Book
from ..cache import Cache, key_of
from ..errors import Diagnostics
from ..markdown import create_markdown
from ..gitinfo import revision
from ..stack import roomy_stack
from . import single
from .pdf import _root_only_fetcher, build_pdf, report_weasyprint_warnings, weasyprint_warnings
from .. import safe_io
from .single import readable

TESTED_WEASYPRINT = ("70",)  # major versions whose internals the hooks below were checked against
SCALE = 0.75  # PDF points per CSS pixel (WeasyPrint's zoom 1)
FONT_MARK = b"mlbook-shared-font:"  # what a part holds instead of a font program: 4 bytes of the font, mark, sha256
_MARKER = "<!--mlbook-pdf-part-{}-->"
_TOC_COUNTER = re.compile(r"target-counter\(\s*attr\(\s*href\s*\)\s*,\s*page\s*\)")
_UNSUPPORTED_CSS = re.compile(
    r"@page[^{]*:(?:first|left|right|blank|recto|verso|nth)\b|counter\(\s*pages\s*\)|target-(?:counters?|text)\(",
    re.IGNORECASE,
)
_META = re.compile(r"\s*<meta\s+name=\"[^\"]*\"\s+content=\"[^\"]*\"\s*/?>|\s*<title>.*?</title>", re.DOTALL)
_RAW_URL = re.compile(r"""(?:url\(|\sdata=)\s*("[^"]*"|'[^']*'|[^\s)'">]+)""", re.IGNORECASE)  # CSS and <object> in raw HTML
_HREF = re.compile(r"""(<a\b[^>]*?\shref=")#([^"]+)(")""", re.IGNORECASE)


class _Unsupported(Exception):
    """This WeasyPrint or this stylesheet cannot be rendered a chapter at a time: use one render of the whole."""


# --- hooks into WeasyPrint (active only while a part is rendered in this process) -------------------------------

_HOOKS: dict = {}
# Per thread, so that a render in another thread of this process is left alone:
# `deferred`: margin boxes held back, as (context, page box, page state, page number in the part), or None;
# `sink`: the `_FontSink` that takes the fonts of the part being written, or None.
_ACTIVE = threading.local()


class _FontSink:
    """Collects the fonts a part uses; the part gets a placeholder, the font program is saved once for the merge."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.used: dict[str, list] = {}  # sha -> [set of glyph ids, whether some glyphs were missing]

    def take(self, font, to_unicode) -> None:
        data = font.file_content
        sha = hashlib.sha256(data).hexdigest()
        path = self.folder / sha
        if not path.exists():
            fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        entry = self.used.setdefault(sha, [set(), False])
        entry[0].update(int(gid) for gid in to_unicode)
        entry[1] = entry[1] or bool(font.missing)
        font.file_content = data[:4] + FONT_MARK + sha.encode()

    def result(self) -> dict[str, tuple[tuple[int, ...], bool]]:
        return {sha: (tuple(sorted(gids)), missing) for sha, (gids, missing) in self.used.items()}


def _shareable(font, to_unicode) -> bool:
    """Plain TrueType outlines: one subset with the glyph ids kept serves every part. Others keep WeasyPrint's subset."""
    data = font.file_content or b""
    return bool(to_unicode) and not font.bitmap and data[:4] in (b"\x00\x01\x00\x00", b"true") and font.index == 0 \
        and "glyf" in font.tables and "fvar" not in font.tables and not (font.png or font.svg or font.colr)


def _install_hooks() -> None:
    """Wrap WeasyPrint's margin-box layout and font cleaning; both wrappers do nothing unless a part is rendering."""
    if _HOOKS:
        return
    if _weasyprint_version().split(".")[0] not in TESTED_WEASYPRINT:
        raise _Unsupported(f"WeasyPrint {_weasyprint_version()}: this route hooks into the internals of {TESTED_WEASYPRINT}")
    try:
        import pydyf
        import weasyprint.layout as layout
        from weasyprint import DEFAULT_OPTIONS
        from weasyprint.pdf import generate_pdf
        from weasyprint.layout.background import layout_box_backgrounds
        from weasyprint.pdf import fonts
        original_margins = layout.make_margin_boxes
        original_clean = fonts.Font.clean
    except (ImportError, AttributeError) as exc:  # another WeasyPrint: its internals differ
        raise _Unsupported(str(exc)) from None

    def make_margin_boxes(context, page, state):
        deferred = getattr(_ACTIVE, "deferred", None)
        if deferred is None:
            return original_margins(context, page, state)
        deferred.append((context, page, state, context.current_page))
        return ()

    def clean(self, to_unicode, hinting):
        sink = getattr(_ACTIVE, "sink", None)
        if sink is not None and _shareable(self, to_unicode):
            return sink.take(self, to_unicode)
        return original_clean(self, to_unicode, hinting)

    layout.make_margin_boxes = make_margin_boxes
    fonts.Font.clean = clean
    _HOOKS.update(margins=original_margins, backgrounds=layout_box_backgrounds,
                  used=(pydyf.Dictionary, pydyf.Stream, pydyf.String, generate_pdf, DEFAULT_OPTIONS))


def _weasyprint_version() -> str:
    import weasyprint

    return weasyprint.__version__


# --- the print document, cut into parts ---------------------------------------------------------------------------


@dataclass
class _Cut:
    """The print document without its chapters' HTML: what every part and the front matter are made of."""

    head: str  # from the doctype to the opening <body>, without the build-time metadata (it would change every key)
    sections: list[tuple[str, str]]  # per chapter: its <section ...> opening, and its closing
    tail: str  # after the last chapter: </body></html>
    front: str  # the whole document without the chapters: cover and contents, with metadata
    policy: single.SingleDocumentPolicy
    render_chapter: object  # tools.render.single.render_chapter


def _cut(book: Book, diagnostics: Diagnostics) -> _Cut:
    """`print_document` with a marker where each chapter's HTML goes: the parts get exactly its template and ids.

    `single.render_chapter` is swapped for the marker while it runs (so that no chapter is rendered in this process):
    a `print_document` in another thread of this process at that moment would get markers too."""
    original = single.render_chapter
    index = {chapter.path: i for i, chapter in enumerate(book.chapters)}
    captured: dict = {}

    def marker(md, book_, chapter, policy):
        captured["policy"] = policy
        return _MARKER.format(index[chapter.path])

    single.render_chapter = marker
    try:
        document = single.print_document(book, diagnostics)
    finally:
        single.render_chapter = original
    if "policy" not in captured:
        raise _Unsupported("the print document has no chapters")
    spans = []
    for i in range(len(book.chapters)):
        mark = _MARKER.format(i)
        at = document.find(mark)
        start = document.rfind("<section", 0, at) if at >= 0 else -1
        end = document.find("</section>", at) if at >= 0 else -1
        if start < 0 or end < 0 or document.count(mark) != 1:
            raise _Unsupported("the print template does not put each chapter in its own <section>")
        spans.append((start, at, at + len(mark), end + len("</section>")))
    for (_, _, _, end), (start, _, _, _) in zip(spans, spans[1:]):
        if document[end:start].strip():
            raise _Unsupported("the print template puts something between chapters")
    body = re.search(r"<body\b[^>]*>", document)
    if body is None or body.end() > spans[0][0]:
        raise _Unsupported("the print template has no <body> before the chapters")
    head = _META.sub("", document[:body.end()])
    style = "".join(re.findall(r"<style\b[^>]*>(.*?)</style>", head, re.DOTALL | re.IGNORECASE))
    if re.search(r"<link\b[^>]*stylesheet", head, re.IGNORECASE):
        raise _Unsupported("the print template links a stylesheet; it is read inline only")
    if _UNSUPPORTED_CSS.search(_TOC_COUNTER.sub("", style)):
        raise _Unsupported("the print stylesheet depends on a page's place in the whole book")
    sections = [(document[start:at], document[after:end]) for start, at, after, end in spans]
    tail = document[spans[-1][3]:]
    front = document[:spans[0][0]] + tail
    return _Cut(head, sections, tail, front, captured["policy"], original)


# --- one part: render, lay out, hold back the margins, write ------------------------------------------------------


def _local_file(root: Path, url: str | None) -> Path | None:
    """The file under the book root that a URL of the print document names, if it names one."""
    if not url or url.startswith("#"):
        return None
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    try:
        return Path(safe_io.check_regular(root / unquote(parts.path), root, safe_io.ASSET_LIMIT))
    except safe_io.UnsafeFile:
        return None  # never drawn: the URL fetcher refuses it too


def _points(page, x: float, y: float) -> tuple[float, float]:
    """CSS pixels from the page's top left to PDF points from its bottom left (WeasyPrint's own transform)."""
    return x * SCALE, (page.height - y) * SCALE


def _link_foreign_anchors(document) -> list[str]:
    """Keep links to anchors of other parts: WeasyPrint drops a link whose anchor is not in its document, so such an
    anchor gets a stand-in on the first page. The link keeps its name (`/Dest (name)`); the merge's name tree, built
    from the real anchors only, sends it to the right page."""
    known = {name for page in document.pages for name in page.anchors}
    foreign = sorted({target for page in document.pages for kind, target, _, _ in page.links if kind == "internal"} - known)
    if foreign and document.pages:
        for name in foreign:
            document.pages[0].anchors[name] = (0, 0, 0, 0)
    return foreign


@dataclass
class _Layout:
    """What laying out one part tells the merge; cached under the part's layout key."""

    pages: int
    anchors: dict[str, tuple[int, float, float]]  # id -> (page in the part, x, y in PDF points)
    bookmarks: list  # WeasyPrint's bookmark tree: (label, (page in the part, x, y), children, state)
    foreign: list[str]  # link targets that are not anchors of this part
    warnings: list[str]


@dataclass
class _Objects:
    """One part as the PDF objects WeasyPrint made for it, numbered within the part (the merge renumbers them)."""

    objects: list[tuple[int, bytes, bytes | None]]  # (number, dictionary or value, stream data or None)
    pages: list[int]  # the page dictionaries, in order
    parent: int  # the part's page tree (each page's /Parent); not among the objects
    fonts: dict[int, str]  # font placeholder -> sha256 of the font it stands for; not among the objects
    links: dict[str, list[int]]  # link annotations to anchors of other parts, by anchor
    info: bytes = b""  # the document information dictionary (the front matter's is the book's)
    lang: bytes = b""  # the catalog's /Lang string


@dataclass
class _Written:
    """One part, written for the page it starts on; cached under its layout key and that page."""

    objects: _Objects
    fonts: dict[str, tuple[tuple[int, ...], bool]]  # shared font -> (glyph ids used, some glyphs missing)
    warnings: list[str]


def _layout_of(document) -> _Layout:
    anchors: dict[str, tuple[int, float, float]] = {}
    for number, page in enumerate(document.pages):
        for name, (x, y, _, _) in page.anchors.items():
            anchors.setdefault(name, (number, *_points(page, x, y)))
    bookmarks = document.make_bookmark_tree(SCALE, transform_pages=True)
    return _Layout(len(document.pages), anchors, bookmarks, _link_foreign_anchors(document), [])


def _to_objects(document, foreign: list[str], sink: _FontSink) -> _Objects:
    """Paint the document and return its PDF objects (WeasyPrint's own, serialized as WeasyPrint would write them)."""
    import pydyf
    from weasyprint import DEFAULT_OPTIONS
    from weasyprint.pdf import generate_pdf

    for page in document.pages:
        page.bookmarks = []  # the merge makes one outline for the book
    _ACTIVE.sink = sink
    try:
        pdf = generate_pdf(document, None, 1, **dict(DEFAULT_OPTIONS))
    finally:
        _ACTIVE.sink = None
    unknown = (set(pdf.catalog) - {"Type", "Pages", "Names", "Lang"}) | (set(pdf.catalog.get("Names", {})) - {"Dests"})
    if unknown:
        raise RuntimeError(f"WeasyPrint put {sorted(unknown)} into a part's catalog; the PDF merge does not carry them over")
    skip = {pdf.pages.number, pdf.catalog.number}
    wanted = set(foreign)
    objects: list[tuple[int, bytes, bytes | None]] = []
    fonts: dict[int, str] = {}
    links: dict[str, list[int]] = {}
    for obj in pdf.objects:
        if obj.number in skip or obj.free == "f":
            continue
        if isinstance(obj, pydyf.Stream):
            first = obj.stream[0] if obj.stream else b""
            if isinstance(first, bytes) and first[4:4 + len(FONT_MARK)] == FONT_MARK:
                fonts[obj.number] = first[4 + len(FONT_MARK):].decode("ascii")
                continue
            head, _, rest = obj.data.partition(b"\nstream\n")
            objects.append((obj.number, head, rest[:-len(b"\nendstream")]))
            continue
        if isinstance(obj, pydyf.Dictionary) and isinstance(obj.get("Dest"), pydyf.String) and obj["Dest"].string in wanted:
            links.setdefault(obj["Dest"].string, []).append(obj.number)
        objects.append((obj.number, obj.data, None))
    lang = pdf.catalog["Lang"].data if "Lang" in pdf.catalog else b""
    return _Objects(objects, [int(n) for n in pdf.pages["Kids"][::3]], pdf.pages.number, fonts, links, pdf.info.data if pdf.info else b"", lang)


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
        self._md = None
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


class _Local:
    """A worker in this process: a request is handled when it is sent."""

    def __init__(self, job: _Job):
        self.worker = _Worker(job)
        self.replies: deque = deque()

    def send(self, message: tuple) -> None:
        self.replies.append(self.worker.handle(message))

    def close(self, failed: bool = False) -> None:
        self.worker.held.clear()

    def kill(self) -> None:
        self.worker.held.clear()


class _Forked:
    """A forked worker process, which inherits the loaded book and this module's state."""

    def __init__(self, job: _Job, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, job), daemon=True)
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

    def __init__(self, job: _Job, jobs: int):
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
                context = multiprocessing.get_context("fork")
                for _ in range(min(self.jobs, max(2, waiting))):
                    forked.append(_Forked(self.job, context))
                    self.channels.append(forked[-1])  # at once: an interrupt right after must still end it
            except (ValueError, AssertionError, OSError):  # no fork here, or a daemonic process: work in this one
                self.cannot_fork = True
        if forked:
            return forked
        local = [channel for channel in self.channels if isinstance(channel, _Local)]
        if not local:
            local = [_Local(self.job)]
            self.channels += local
        return local

    def dispatch(self, requests: deque) -> None:
        """Hand waiting requests to workers that have room (two per process: the next one waits in its pipe)."""
        if not requests:
            return
        targets = self._targets(len(requests))
        depth = 2 if isinstance(targets[0], _Forked) else 1
        while requests:
            channel = min(targets, key=lambda c: self.busy.get(id(c), 0))
            if self.busy.get(id(channel), 0) >= depth:
                return
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
                ready.append((forked[conn], conn.recv()))
            except EOFError:
                raise RuntimeError("a PDF worker process ended unexpectedly") from None
        return ready

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
class _Parts:
    layouts: list
    first_pages: list[int]  # the page number each part starts on (1-based)
    written: list
    front: _Written | None = None
    front_layout: _Layout | None = None


def _front_html(job: _Job, numbers: dict[str, int] | None) -> str:
    """The cover and contents; each link carries its target's page number as `data-page` (None: a three-digit
    placeholder, to learn how many pages the front matter takes before any chapter is laid out)."""
    def number(match: re.Match) -> str:
        name = unquote(html_lib.unescape(match.group(2)))
        value = "000" if numbers is None else str(numbers.get(name, ""))
        return f'{match.group(1)}#{match.group(2)}" data-page="{value}{match.group(3)}'

    return _HREF.sub(number, _TOC_COUNTER.sub("attr(data-page)", job.cut.front))


def _page_numbers(layouts: list[_Layout], first_pages: list[int]) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for layout, first in zip(layouts, first_pages):
        for name, (page, _, _) in layout.anchors.items():
            numbers.setdefault(name, first + page)
    return numbers


def _front_key(job: _Job) -> str:
    """The front matter with placeholder numbers, without what changes with every build (dates, revision)."""
    html = _META.sub("", _front_html(job, None))
    html = re.sub(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}Z)?", "", html)
    return key_of("pdf-front-pages", job.version, html.replace(revision(job.root), ""))


def _render_parts(job: _Job, diagnostics: Diagnostics, jobs: int, front_pages: int | None, progress=None) -> tuple[_Parts, int, int]:
    """Lay out and write every part that the cache does not have, in parallel when it pays.

    `front_pages`: how many pages the cover and contents take; None: as many as last time, or as a render with
    placeholder page numbers shows. Returns the parts, the front matter's length the chapters were numbered after,
    and its real length (the caller numbers again if they differ)."""
    count = len(job.book.chapters)
    cache = job.cache
    progress = progress or (lambda path: None)
    parts = _Parts([None] * count, [0] * count, [None] * count)
    keys = [job.layout_key(index) for index in range(count)]
    state = ["cached"] * count  # cached (layout known) | queued -> held (laid out, waiting) -> writing -> done
    requests: deque = deque()
    for index, key in enumerate(keys):
        cached = cache.get("pdf-layout", key) if cache is not None else None
        if isinstance(cached, _Layout):
            parts.layouts[index] = cached
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
                    written = cache.get("pdf-part", _part_key(keys[index], first)) if cache is not None else None
                    if isinstance(written, _Written):
                        state[index], parts.written[index] = "done", written
                        progress(job.book.chapters[index].path)
                    else:
                        state[index] = "rendering"
                        requests.append(("render", index, first))
                first += layout.pages
            if not front_asked and front_pages is not None and all(layout is not None for layout in parts.layouts):
                # every page count is known: the contents gets its numbers while the last parts are written
                front_asked = True
                requests.appendleft(("front", -1, _front_html(job, _page_numbers(parts.layouts, parts.first_pages)), True))
            pool.dispatch(requests)
            if parts.front is not None and all(s == "done" for s in state):
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
                        parts.front, parts.front_layout = written, layout
                        if cache is not None:
                            cache.put("pdf-front-pages", front_key, layout.pages)
                elif kind == "laid_out":
                    _, _, layout, problems = reply
                    parts.layouts[index], state[index] = layout, "held"
                    pool.answered(channel)
                    if cache is not None:
                        cache.put("pdf-layout", keys[index], layout)
                else:
                    _, _, pages, written, problems = reply
                    if state[index] == "rendering":
                        pool.answered(channel)
                    if pages != parts.layouts[index].pages:  # type: ignore[union-attr]
                        raise RuntimeError(f"{job.book.chapters[index].path}: {pages} pages written where {parts.layouts[index].pages} were laid out")  # type: ignore[union-attr]
                    state[index], parts.written[index] = "done", written
                    progress(job.book.chapters[index].path)
                    if cache is not None:
                        cache.put("pdf-part", _part_key(keys[index], parts.first_pages[index]), written)
                for problem in problems:
                    diagnostics.add(problem)
        failed = False
    finally:
        pool.close(failed)
    assert parts.front_layout is not None
    return parts, front_pages, parts.front_layout.pages


# --- fonts ---------------------------------------------------------------------------------------------------------


def _subset(data: bytes, gids: set[int], missing: bool) -> bytes:
    """One subset for every part: the glyphs they use, at their own glyph ids. WeasyPrint's own HarfBuzz subsetting
    (what one render of the whole book would embed); fontTools where that is not available."""
    try:
        return _harfbuzz_subset(data, gids, missing)
    except Exception:  # another WeasyPrint or HarfBuzz: the slower, equivalent path
        pass
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options(retain_gids=True, passthrough_tables=True, ignore_missing_glyphs=True, hinting=False,
                             desubroutinize=True, notdef_outline=missing)
    options.drop_tables += ["BASE", "DSIG", "EBDT", "EBLC", "EBSC", "GPOS", "GSUB", "JSTF", "LTSH", "PCLT", "SVG "]
    subsetter = subset.Subsetter(options)
    subsetter.populate(gids=sorted(gids))
    font = TTFont(io.BytesIO(data))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _harfbuzz_subset(data: bytes, gids: set[int], missing: bool) -> bytes:
    from types import SimpleNamespace

    from weasyprint.pdf.fonts import Font
    from weasyprint.text.ffi import ffi, harfbuzz, harfbuzz_subset

    if not harfbuzz_subset:
        raise RuntimeError("HarfBuzz's subsetter is not installed")
    if not hasattr(harfbuzz, "hb_face_create"):
        ffi.cdef("hb_blob_t * hb_blob_create (const char *data, unsigned int length, int mode, void *user_data, void *destroy);"
                 "hb_face_t * hb_face_create (hb_blob_t *blob, unsigned int index);")
    buffer = ffi.from_buffer(data)
    blob = harfbuzz.hb_blob_create(buffer, len(data), 1, ffi.NULL, ffi.NULL)  # 1: read-only, not copied
    face = ffi.gc(harfbuzz.hb_face_create(blob, 0), harfbuzz.hb_face_destroy)
    harfbuzz.hb_blob_destroy(blob)
    font = SimpleNamespace(hb_face=face, missing={0: 0} if missing else {}, family="shared font", file_content=data)
    Font._harfbuzz_subset(font, set(gids), False)
    del face, buffer
    if font.file_content is data:
        raise RuntimeError("HarfBuzz could not subset the font")
    return font.file_content


class _MissingFont(Exception):
    """A cached part uses a font whose program is neither in the cache nor written in this build."""


def _shared_fonts(job: _Job, parts: _Parts) -> dict[str, bytes]:
    used: dict[str, list] = {}
    for written in [parts.front, *parts.written]:
        for sha, (gids, missing) in written.fonts.items():
            entry = used.setdefault(sha, [set(), False])
            entry[0].update(gids)
            entry[1] = entry[1] or missing
    cache = job.cache
    subsets: dict[str, bytes] = {}
    for sha, (gids, missing) in sorted(used.items()):
        path = job.fonts / sha
        if cache is not None and path.exists() and cache.get("pdf-font-kept", sha) is None:
            cache.put("pdf-font", sha, path.read_bytes())  # for later builds that reuse parts using this font
            cache.put("pdf-font-kept", sha, True)
        key = key_of("pdf-font-subset", sha, tuple(sorted(gids)), missing)
        data = cache.get("pdf-font-subset", key) if cache is not None else None
        if not isinstance(data, bytes):
            full = path.read_bytes() if path.exists() else (cache.get("pdf-font", sha) if cache is not None else None)
            if not isinstance(full, bytes) or hashlib.sha256(full).hexdigest() != sha:
                raise _MissingFont(sha)
            data = _subset(full, gids, missing)
            if cache is not None:
                cache.put("pdf-font-subset", key, data)
        subsets[sha] = data
    return subsets


# --- merge: renumber the parts' objects and write one PDF ------------------------------------------------------------

# A reference `12 0 R`, outside literal and hexadecimal strings (pydyf escapes every parenthesis inside a string).
_REFERENCE = re.compile(rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>|(?<![\w.])(\d+) 0 R\b", re.DOTALL)


def _pdf_string(name: str) -> bytes:
    """The bytes of a PDF string as pydyf writes them (ASCII, or UTF-16 with a byte order mark): name tree keys
    are compared with the links' destination names byte for byte."""
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return b"\xfe\xff" + name.encode("utf-16-be")


class _Book:
    """The merged PDF's objects, numbered from 1 as they are added."""

    def __init__(self) -> None:
        self.objects: list[tuple[bytes, bytes | None] | None] = []

    def reserve(self) -> int:
        self.objects.append(None)
        return len(self.objects)

    def set(self, number: int, value: bytes, stream: bytes | None = None) -> None:
        self.objects[number - 1] = (value, stream)

    def add(self, value: bytes, stream: bytes | None = None) -> int:
        self.objects.append((value, stream))
        return len(self.objects)

    def add_part(self, part: _Objects, tree: int, fonts: dict[str, int], dropped: set[int]) -> list[int]:
        """Renumber a part's objects into the book; returns its pages' numbers."""
        mapping: dict[int, int] = {part.parent: tree}
        for local, sha in part.fonts.items():
            mapping[local] = fonts[sha]
        kept = []
        for local, value, stream in part.objects:
            if local not in dropped:
                mapping[local] = len(self.objects) + 1 + len(kept)
                kept.append((value, stream))

        def swap(match: re.Match) -> bytes:
            local = match.group(1)
            if local is None:
                return match.group(0)
            if int(local) in dropped:
                return b""  # a link that lands nowhere, removed from its page's /Annots
            return b"%d 0 R" % mapping[int(local)]

        for value, stream in kept:
            self.objects.append((_REFERENCE.sub(swap, value), stream))
        return [mapping[page] for page in part.pages]

    def write(self, handle, root: int, info: int | None) -> None:
        """Streams as they are; the other objects in compressed object streams; a cross-reference stream."""
        position = 0

        def emit(data: bytes) -> None:
            nonlocal position
            handle.write(data)
            position += len(data)

        entries: list[tuple[int, int, int]] = [(0, 0, 65535)] + [(0, 0, 0)] * len(self.objects)
        emit(b"%PDF-1.7\n%\xf0\x9f\x96\xa4\n")
        packed = []
        for number, (value, stream) in enumerate(self.objects, 1):  # type: ignore[misc]
            if stream is None:
                packed.append(number)
                continue
            entries[number] = (1, position, 0)
            emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, value, stream))
        number = len(self.objects) + 1
        for start in range(0, len(packed), 1000):
            chunk = packed[start:start + 1000]
            index, body, offset = [], [], 0
            for slot, packed_number in enumerate(chunk):
                value = self.objects[packed_number - 1][0]  # type: ignore[index]
                index.append(b"%d %d" % (packed_number, offset))
                body.append(value)
                offset += len(value) + 1
                entries[packed_number] = (2, number, slot)
            head = b" ".join(index)
            content = zlib.compress(head + b"\n" + b"\n".join(body), 6)
            entries.append((1, position, 0))
            emit(b"%d 0 obj\n<</Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d>>\nstream\n%s\nendstream\nendobj\n"
                 % (number, len(chunk), len(head) + 1, len(content), content))
            number += 1
        entries.append((1, position, 0))  # the cross-reference stream itself
        wide = max(1, (position.bit_length() + 7) // 8)
        table = zlib.compress(b"".join(kind.to_bytes(1, "big") + where.to_bytes(wide, "big") + extra.to_bytes(2, "big")
                                       for kind, where, extra in entries), 6)
        trailer = b"<</Type /XRef /Size %d /W [1 %d 2] /Root %d 0 R%s /Filter /FlateDecode /Length %d>>" % (
            number + 1, wide, root, b" /Info %d 0 R" % info if info else b"", len(table))
        xref = position
        emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, trailer, table))
        emit(b"startxref\n%d\n%%%%EOF\n" % xref)


def _outline(book: _Book, nodes: list, pages: list[int]) -> int | None:
    """The outline dictionaries (as WeasyPrint writes them) for bookmarks whose page is an index into `pages`."""
    import pydyf

    def add(nodes: list, parent: int) -> tuple[list[int], int]:
        count = len(nodes)
        numbers, items = [], []
        for title, (page, x, y), children, status in nodes:
            number = book.reserve()
            item = pydyf.Dictionary({"Title": pydyf.String(title), "Parent": b"%d 0 R" % parent,
                                     "Dest": pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])})
            child_numbers, child_count = add(children, number)
            item["Count"] = -child_count if status == "closed" else child_count
            if status != "closed":
                count += child_count
            if child_numbers:
                item["First"], item["Last"] = b"%d 0 R" % child_numbers[0], b"%d 0 R" % child_numbers[-1]
            if numbers:
                item["Prev"] = b"%d 0 R" % numbers[-1]
                items[-1]["Next"] = b"%d 0 R" % number
            numbers.append(number)
            items.append(item)
        for number, item in zip(numbers, items):
            book.set(number, item.data)
        return numbers, count

    if not nodes:
        return None
    root = book.reserve()
    numbers, count = add(nodes, root)
    book.set(root, b"<</Type /Outlines /Count %d /First %d 0 R /Last %d 0 R>>" % (count, numbers[0], numbers[-1]))
    return root


def _global_bookmarks(nodes: list, first_index: int) -> list:
    return [(title, (first_index + page, x, y), _global_bookmarks(children, first_index), status)
            for title, (page, x, y), children, status in nodes]


def _merge(out: Path, parts: _Parts, subsets: dict[str, bytes]) -> int:
    import pydyf

    assert parts.front is not None and parts.front_layout is not None
    sources = [(parts.front.objects, parts.front_layout, 1)] + [
        (written.objects, layout, first) for written, layout, first in zip(parts.written, parts.layouts, parts.first_pages)]
    destinations: dict[str, tuple[int, float, float]] = {}  # anchor -> (page index in the book, x, y)
    for _, layout, first in sources:
        for name, (page, x, y) in layout.anchors.items():
            destinations.setdefault(name, (first - 1 + page, x, y))

    book = _Book()
    catalog, tree = book.reserve(), book.reserve()
    info = book.add(parts.front.objects.info) if parts.front.objects.info else None
    fonts = {}
    for sha, data in subsets.items():
        program = zlib.compress(data, 6)
        fonts[sha] = book.add(b"<</Length1 %d /Filter /FlateDecode /Length %d>>" % (len(data), len(program)), program)
    pages: list[int] = []
    for objects, layout, first in sources:
        if len(objects.pages) != layout.pages or len(pages) != first - 1:
            raise RuntimeError(f"a PDF part has {len(objects.pages)} pages where {layout.pages} were laid out from page {first}")
        dropped = {number for name, numbers in objects.links.items() if name not in destinations for number in numbers}
        pages += book.add_part(objects, tree, fonts, dropped)
    book.set(tree, pydyf.Dictionary({"Type": "/Pages", "Count": len(pages), "Kids": pydyf.Array(b"%d 0 R" % n for n in pages)}).data)

    names = pydyf.Array()
    for _, name in sorted((_pdf_string(name), name) for name in destinations):
        page, x, y = destinations[name]
        names.extend([pydyf.String(name), pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])])
    dests = book.add(pydyf.Dictionary({"Names": names}).data)
    bookmarks = [node for _, layout, first in sources for node in _global_bookmarks(layout.bookmarks, first - 1)]
    outlines = _outline(book, bookmarks, pages)
    entries = {"Type": "/Catalog", "Pages": b"%d 0 R" % tree, "Names": pydyf.Dictionary({"Dests": b"%d 0 R" % dests})}
    if outlines:
        entries["Outlines"] = b"%d 0 R" % outlines
    if parts.front.objects.lang:
        entries["Lang"] = parts.front.objects.lang
    book.set(catalog, pydyf.Dictionary(entries).data)
    with atomic_file(out) as temp:
        with open(temp, "wb") as handle:
            book.write(handle, catalog, info)
        readable(temp)
    return len(pages)


# --- entry point ---------------------------------------------------------------------------------------------------


def build_pdf_parallel(book: Book, out: Path, diagnostics: Diagnostics, cache: Cache | None = None, jobs: int = 2,
                       progress=None) -> int:
    """Write the PDF atomically, laying chapters out in `jobs` processes; returns its page count.

    The PDF has what one render of the print document has (`tools.render.pdf.build_pdf`): cover, contents with page
    numbers, each chapter's title in the running header, page numbers continuous across chapters, internal links
    landing on their anchors, an outline of chapters with their h2 and h3, metadata and language. Only files under
    the book's root are read. With a `cache`, a rebuild lays out only the chapters whose HTML (or a file it draws)
    changed, and writes again only those and the ones whose first page moved. `progress(path)` is called as each
    chapter's part is ready (again for every chapter if the contents' length forces a second numbering).
    """
    try:
        _install_hooks()
        cut = _cut(book, diagnostics)
    except _Unsupported:
        return build_pdf(book, out, diagnostics)
    return roomy_stack(_build, book, cut, out, diagnostics, cache, jobs, progress)  # forked workers inherit the room


def _build(book: Book, cut: _Cut, out: Path, diagnostics: Diagnostics, cache: Cache | None, jobs: int, progress) -> int:
    with tempfile.TemporaryDirectory(prefix="mlbook-pdf-") as temp:
        job = _Job(book, cut, Path(temp), cache)
        front_pages = None
        for attempt in range(4):
            parts, used, actual = _render_parts(job, diagnostics, jobs, front_pages, progress)
            if actual == used:
                try:
                    subsets = _shared_fonts(job, parts)
                    break
                except _MissingFont:  # a font program is missing from the cache: render every part again
                    job.cache = None
            front_pages = actual  # the contents took more or fewer pages than with placeholders: number again
        else:
            raise RuntimeError("the PDF's contents do not settle on a number of pages")
        warnings = {message for layout in [parts.front_layout, *parts.layouts] for message in layout.warnings}
        for written in [parts.front, *parts.written]:
            warnings.update(written.warnings)
        report_weasyprint_warnings(sorted(warnings), diagnostics, job.book)
        return _merge(out, parts, subsets)
