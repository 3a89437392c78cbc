"""Each chapter's own print document, made of the print template's pieces (`PrintPieces`), and what a laid-out part
reports back: its page count, anchors and bookmarks (`Layout`) and the PDF objects WeasyPrint made for it
(`Objects`)."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markupsafe import Markup

from tools.book.model import Book
from tools.core import safe_io
from tools.core.errors import Diagnostics
from tools.render.pdf.document import SingleDocumentPolicy, chapter_entry, print_variables
from tools.render.pdf.hooks import FONT_MARK, SCALE, TOC_COUNTER, UNSUPPORTED_CSS, FontSink, FontUse, SharedFonts, Unsupported
from tools.render.pdf.tags import PDF_VARIANT, TAGGED_CATALOG, StructPart, finish_tags, struct_of
from tools.render.templates import environment

MACROS = ("head", "front", "chapter_section", "end")  # what tools/render/theme/print.html offers to render one piece


class PrintPieces:
    """The print template's macros, ready to make one chapter's document or the cover and contents; built in the main
    process from the same variables one render of the whole book gets, inherited by forked workers."""

    def __init__(self, book: Book, diagnostics: Diagnostics, template: str = "print.html"):
        if not book.chapters:
            raise Unsupported("the print document has no chapters")
        self.policy = SingleDocumentPolicy(book, diagnostics)
        self.entries = [chapter_entry(chapter, self.policy, "") for chapter in book.chapters]
        variables = print_variables(book, self.entries)
        loaded = environment().get_template(template)
        self.macros = _macros(loaded.make_module(variables))
        self.head = str(self.macros["head"](False))  # without the build-time metadata (it would change every key)
        self.end = str(self.macros["end"]())
        style = "".join(re.findall(r"<style\b[^>]*>(.*?)</style>", self.head, re.DOTALL | re.IGNORECASE))
        if re.search(r"<link\b[^>]*stylesheet", self.head, re.IGNORECASE):
            raise Unsupported("the print template links a stylesheet; it is read inline only")
        if UNSUPPORTED_CSS.search(TOC_COUNTER.sub("", style)):
            raise Unsupported("the print stylesheet depends on a page's place in the whole book")
        # The cover and contents are laid out once every chapter's first page is known: the contents' page numbers are
        # literal (`data-page`), as a `target-counter` would make WeasyPrint lay the document out again.
        numbered = dict(variables, stylesheet=Markup(TOC_COUNTER.sub("attr(data-page)", str(variables["stylesheet"]))))
        self.front_macros = _macros(loaded.make_module(numbered))
        # what the front matter's length depends on, without what changes with every build (dates, revision)
        self.front_key_macros = _macros(loaded.make_module(dict(numbered, date="", timestamp="", revision="")))

    def chapter(self, index: int, body: str) -> str:
        """Chapter `index` as its own document, `body` being what `single.render_chapter` made of it."""
        return self.head + self.section(index, body) + self.end

    def section(self, index: int, body: str) -> str:
        return str(self.macros["chapter_section"](dict(self.entries[index], html=Markup(body))))

    def front(self, pages: Mapping[str, int] | None) -> str:
        """The cover and contents, each contents line carrying its chapter's first page (None: a three-digit
        placeholder, to learn how many pages the front matter takes before any chapter is laid out)."""
        return self._front(self.front_macros, pages)

    def front_key(self) -> str:
        return self._front(self.front_key_macros, None)

    def _front(self, macros: dict[str, Callable[..., str]], pages: Mapping[str, int] | None) -> str:
        ids = [entry["id"] for entry in self.entries] + [entry["part"]["id"] for entry in self.entries if entry["part"]]
        numbers = dict.fromkeys(ids, "000") if pages is None else pages
        return str(macros["head"](True)) + str(macros["front"](numbers)) + str(macros["end"]())


def _macros(module: object) -> dict[str, Callable[..., str]]:
    """The print template's four macros, or `Unsupported` when it lacks one (a template of one document only)."""
    found = {name: getattr(module, name, None) for name in MACROS}
    if not all(callable(macro) for macro in found.values()):
        raise Unsupported(f"the print template has no macros {', '.join(MACROS)}")
    return {name: macro for name, macro in found.items() if callable(macro)}


# --- one part: render, lay out, hold back the margins, write ------------------------------------------------------


def local_file(root: Path, url: str | None) -> Path | None:
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
class Layout:
    """What laying out one part tells the merge; cached under the part's layout key."""

    pages: int
    anchors: dict[str, tuple[int, float, float]]  # id -> (page in the part, x, y in PDF points)
    bookmarks: list  # WeasyPrint's bookmark tree: (label, (page in the part, x, y), children, state)
    foreign: list[str]  # link targets that are not anchors of this part
    warnings: list[str]


@dataclass
class Objects:
    """One part as the PDF objects WeasyPrint made for it, numbered within the part (the merge renumbers them)."""

    objects: list[tuple[int, bytes, bytes | None]]  # (number, dictionary or value, stream data or None)
    pages: list[int]  # the page dictionaries, in order
    parent: int  # the part's page tree (each page's /Parent); not among the objects
    fonts: dict[int, str]  # font dictionary of a shared face -> the face (`FontSink`); not among the objects
    links: dict[str, list[int]]  # link annotations to anchors of other parts, by anchor
    info: bytes = b""  # the document information dictionary (the front matter's is the book's)
    lang: bytes = b""  # the catalog's /Lang string
    tags: StructPart | None = None  # the part's structure tree (tagged PDF)


@dataclass
class Written:
    """One part, written for the page it starts on; cached under its layout key and that page."""

    objects: Objects
    fonts: dict[str, FontUse]  # shared face -> what this part uses of it
    warnings: list[str]


def layout_of(document) -> Layout:
    anchors: dict[str, tuple[int, float, float]] = {}
    for number, page in enumerate(document.pages):
        for name, (x, y, _, _) in page.anchors.items():
            anchors.setdefault(name, (number, *_points(page, x, y)))
    bookmarks = document.make_bookmark_tree(SCALE, transform_pages=True)
    return Layout(len(document.pages), anchors, bookmarks, _link_foreign_anchors(document), [])


def to_objects(document, foreign: list[str], sink: FontSink) -> Objects:
    """Paint the document and return its PDF objects (WeasyPrint's own, serialized as WeasyPrint would write them)."""
    import pydyf
    from weasyprint import DEFAULT_OPTIONS
    from weasyprint.pdf import generate_pdf

    for page in document.pages:
        page.bookmarks = []  # the merge makes one outline for the book
    document.fonts = SharedFonts(sink)  # filled while painting: shareable fonts go to the sink
    pdf = generate_pdf(document, None, 1, **dict(DEFAULT_OPTIONS, pdf_variant=PDF_VARIANT))
    unlabelled = finish_tags(pdf) if "StructTreeRoot" in pdf.catalog else 0  # before the objects are serialized
    unknown = (set(pdf.catalog) - {"Type", "Pages", "Names", "Lang", *TAGGED_CATALOG}) | (set(pdf.catalog.get("Names", {})) - {"Dests"})
    if unknown:
        raise RuntimeError(f"WeasyPrint put {sorted(unknown)} into a part's catalog; the PDF merge does not carry them over")
    skip = {pdf.pages.number, pdf.catalog.number}
    fonts = _shared_font_objects(pdf, skip)
    wanted = set(foreign)
    objects: list[tuple[int, bytes, bytes | None]] = []
    links: dict[str, list[int]] = {}
    for obj in pdf.objects:
        if obj.number in skip or obj.free == "f":
            continue
        if isinstance(obj, pydyf.Stream):
            head, _, rest = obj.data.partition(b"\nstream\n")
            objects.append((obj.number, head, rest[:-len(b"\nendstream")]))
            continue
        if isinstance(obj, pydyf.Dictionary) and isinstance(obj.get("Dest"), pydyf.String) and obj["Dest"].string in wanted:
            links.setdefault(obj["Dest"].string, []).append(obj.number)
        objects.append((obj.number, obj.data, None))
    lang = pdf.catalog["Lang"].data if "Lang" in pdf.catalog else b""
    tags = struct_of(pdf)
    if tags is not None:
        tags.unlabelled = unlabelled
    return Objects(objects, [int(n) for n in pdf.pages["Kids"][::3]], pdf.pages.number, fonts, links,
                   pdf.info.data if pdf.info else b"", lang, tags)


def _shared_font_objects(pdf, skip: set[int]) -> dict[int, str]:
    """The font dictionaries (`/Type0`) whose program is a shared face's placeholder -> that face; they and the
    objects only they use (CID font, descriptor, program, ToUnicode and encoding maps) are added to `skip`: the
    merge writes one set of them per face for the whole book."""
    import pydyf

    def number(reference) -> int | None:
        return int(reference.split()[0]) if isinstance(reference, bytes) and reference.endswith(b" 0 R") else None

    faces: dict[int, str] = {}
    for obj in pdf.objects:
        first = obj.stream[0] if isinstance(obj, pydyf.Stream) and obj.stream else b""
        if isinstance(first, bytes) and first[4:4 + len(FONT_MARK)] == FONT_MARK:
            faces[obj.number] = first[4 + len(FONT_MARK):].decode("ascii")
    fonts: dict[int, str] = {}
    for obj in pdf.objects:
        if not (isinstance(obj, pydyf.Dictionary) and obj.get("Type") == "/Font" and obj.get("Subtype") == "/Type0"):
            continue
        cid_font = number(obj["DescendantFonts"][0])
        descriptor = number(pdf.objects[cid_font]["FontDescriptor"]) if cid_font else None
        if descriptor is None:
            continue
        owned = pdf.objects[descriptor]
        program = number(owned.get("FontFile2") or owned.get("FontFile3"))
        if cid_font is not None and program is not None and program in faces:
            fonts[obj.number] = faces[program]
            extra = (number(obj.get("ToUnicode")), number(obj.get("Encoding")), number(owned.get("CIDSet")))
            skip.update({obj.number, cid_font, descriptor, program, *(n for n in extra if n is not None)})
    return fonts
