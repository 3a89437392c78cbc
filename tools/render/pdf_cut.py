"""The print document cut into one small document per chapter, and what a laid-out part reports back: its page
count, anchors and bookmarks (`_Layout`) and the PDF objects WeasyPrint made for it (`_Objects`)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import safe_io
from ..book import Book
from ..errors import Diagnostics
from . import single
from .pdf_hooks import _ACTIVE, _MARKER, _META, _TOC_COUNTER, _UNSUPPORTED_CSS, FONT_MARK, SCALE, _FontSink, _Unsupported


@dataclass
class _Cut:
    """The print document without its chapters' HTML: what every part and the front matter are made of."""

    head: str  # from the doctype to the opening <body>, without the build-time metadata (it would change every key)
    sections: list[tuple[str, str]]  # per chapter: its <section ...> opening, and its closing
    tail: str  # after the last chapter: </body></html>
    front: str  # the whole document without the chapters: cover and contents, with metadata
    policy: single.SingleDocumentPolicy
    render_chapter: Callable[..., str]  # tools.render.single.render_chapter


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
