"""What the chapter-at-a-time PDF route uses of WeasyPrint's internals (version 70), without replacing any of them:
its layout in steps (so that the margin boxes can be laid out again once a part's first page is known), font
programs replaced by marks that the merge fills with one shared subset, leaders joined into one text box each,
and the version check that guards them."""
from __future__ import annotations

import copy
import hashlib
import io
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools.render.pdf.native import load_weasyprint

TESTED_WEASYPRINT = ("70",)  # major versions whose internals the code below was checked against
SCALE = 0.75  # PDF points per CSS pixel (WeasyPrint's zoom 1)
FONT_MARK = b"mlbook-shared-font:"  # what a part holds instead of a font program: the sfnt version, mark, face
TOC_COUNTER = re.compile(r"target-counter\(\s*attr\(\s*href\s*\)\s*,\s*page\s*\)")
UNSUPPORTED_CSS = re.compile(
    r"@page[^{]*:(?:first|left|right|blank|recto|verso|nth)\b|counter\(\s*pages\s*\)|target-(?:counters?|text)\(",
    re.IGNORECASE,
)
RAW_URL = re.compile(r"""(?:url\(|\sdata=)\s*("[^"]*"|'[^']*'|[^\s)'">]+)""", re.IGNORECASE)  # CSS and <object> in raw HTML


class Unsupported(Exception):
    """This WeasyPrint or this stylesheet cannot be rendered a chapter at a time: use one render of the whole."""


def check_weasyprint() -> None:
    """Raise `Unsupported` unless this WeasyPrint has the internals this module calls."""
    if weasyprint_version().split(".")[0] not in TESTED_WEASYPRINT:
        raise Unsupported(f"WeasyPrint {weasyprint_version()}: this route uses the internals of {TESTED_WEASYPRINT}")
    try:
        import pydyf  # noqa: F401
        from weasyprint import DEFAULT_OPTIONS, Document  # noqa: F401
        from weasyprint.css.counters import CounterStyle  # noqa: F401
        from weasyprint.document import DocumentMetadata, Page  # noqa: F401
        from weasyprint.formatting_structure.boxes import MarginBox, ParentBox, TextBox  # noqa: F401
        from weasyprint.formatting_structure.build import build_formatting_structure  # noqa: F401
        from weasyprint.html import get_html_metadata  # noqa: F401
        from weasyprint.layout import layout_document  # noqa: F401
        from weasyprint.layout.background import layout_box_backgrounds  # noqa: F401
        from weasyprint.layout.page import make_margin_boxes  # noqa: F401
        from weasyprint.pdf import generate_pdf  # noqa: F401
        from weasyprint.pdf.fonts import Font  # noqa: F401
        from weasyprint.text.line_break import create_layout  # noqa: F401
        Document._build_layout_context  # noqa: B018
    except (ImportError, AttributeError) as exc:  # another WeasyPrint: its internals differ
        raise Unsupported(str(exc)) from None


def join_leaders(document) -> int:
    """Make each laid-out `leader()` one text box. WeasyPrint 70 fills a leader with a copy of its text box per dot,
    placed side by side: the contents of a 470-chapter book held 70,000 of them (70 MiB laid out, 60 MiB more and
    5 s to paint and tag). The dots are the same text at the same pitch, so one box holding them all, at the first
    one's place and as wide as all of them, prints the same dots. Returns the number of leaders joined."""
    from weasyprint.formatting_structure.boxes import ParentBox, TextBox
    from weasyprint.text.line_break import create_layout

    joined = 0
    stack = [page._page_box for page in document.pages]
    while stack:
        box = stack.pop()
        if getattr(box, "is_leader", False):
            dots = box.children
            if len(dots) > 1 and all(type(dot) is TextBox and dot.text == dots[0].text for dot in dots):
                first = min(dots, key=lambda dot: dot.position_x)
                one = first.copy()
                one.text = first.text * len(dots)
                one.pango_layout = create_layout(one.text, one.style, None, None, first.justification_spacing)
                one.width = sum(dot.width for dot in dots)
                box.children = (one,)
                joined += 1
        elif isinstance(box, ParentBox):
            stack.extend(box.children)
    return joined


def laid_out(html, font_config):
    """`HTML.render()` in its steps (WeasyPrint 70's `Document._render`, default options), keeping the layout context:
    `(document, context)`. The context holds each page's counters and strings, with which `margins_again` lays the
    margin boxes out again for the page a part really starts on."""
    from weasyprint import DEFAULT_OPTIONS, Document
    from weasyprint.css.counters import CounterStyle
    from weasyprint.document import DocumentMetadata, Page
    from weasyprint.formatting_structure.build import build_formatting_structure
    from weasyprint.html import get_html_metadata
    from weasyprint.layout import layout_document

    options, counter_style = dict(DEFAULT_OPTIONS), CounterStyle()
    color_profiles: dict = {}
    context = Document._build_layout_context(html, font_config, counter_style, color_profiles, options)
    root_box = build_formatting_structure(html.etree_element, context.style_for, context.get_image_from_uri, html.base_url,
                                          context.target_collector, counter_style, context.footnotes)
    pages = [Page(page_box) for page_box in layout_document(html, root_box, context)]
    document = Document(pages, DocumentMetadata(**get_html_metadata(html)), html.url_fetcher, font_config, color_profiles,
                        options["output_intent"])
    document._html = html
    return document, context


def margins_again(document, context, first_page: int) -> None:
    """Lay each page's margin boxes (running header, page number) out again with the page counter starting at
    `first_page`, as WeasyPrint's layout did with it starting at 1, in place of those."""
    from weasyprint.formatting_structure.boxes import MarginBox
    from weasyprint.layout.background import layout_box_backgrounds
    from weasyprint.layout.page import make_margin_boxes

    for number, page in enumerate(document.pages, 1):
        box = page._page_box
        state = copy.deepcopy(context.page_maker[number][3])  # the counters after the page, as layout_document has them
        counters = state[1]
        if "page" in counters:
            counters["page"] = [value + first_page - 1 for value in counters["page"]]
        context.current_page = number
        margins = list(make_margin_boxes(context, box, state))
        for margin in margins:
            layout_box_backgrounds(box, margin, context.get_image_from_uri)
        box.children = (*(child for child in box.children if not isinstance(child, MarginBox)), *margins)


@dataclass
class FontUse:
    """What one part uses of a shared font face: glyph ids, their widths (thousandths of an em) and text, and the
    descriptor WeasyPrint gave the face (name, family, flags, ascent, descent), for the merge's one font dictionary."""

    gids: tuple[int, ...]
    widths: dict[int, int]
    to_unicode: dict[int, str]
    name: bytes
    family: str
    flags: int
    ascent: int
    descent: int


class FontSink:
    """Collects the fonts a part uses; the part gets a placeholder, the font program is saved once for the merge.
    A face is named by the sha256 of its file, plus `-N` for face N of a collection (`.ttc`)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.faces: dict[str, str] = {}  # WeasyPrint's font hash (its resource name) -> face

    def take(self, font, to_unicode) -> None:
        data = font.file_content
        sha = hashlib.sha256(data).hexdigest()
        path = self.folder / sha
        if not path.exists():
            fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        face = f"{sha}-{font.index}" if data[:4] == b"ttcf" else sha
        self.faces[font.hash] = face
        font.file_content = face_version(data, font.index) + FONT_MARK + face.encode()

    def result(self, fonts) -> dict[str, FontUse]:
        """The faces taken, from every `Font` of the part (several may share one face and resource name)."""
        used: dict[str, FontUse] = {}
        for font in fonts:
            face = self.faces.get(font.hash)
            if face is None:
                continue
            use = used.setdefault(face, FontUse((), {}, {}, font.name, font.family, font.flags, font.ascent, font.descent))
            for gid, width in font.widths.items():
                use.widths.setdefault(int(gid), int(width))
            for gid, text in font.to_unicode.items():
                use.to_unicode.setdefault(int(gid), text)
        for use in used.values():
            use.gids = tuple(sorted(use.to_unicode))
        return used


def face_version(data: bytes, index: int) -> bytes:
    """The sfnt version of the face (`OTTO` for CFF outlines), also inside a collection, whose header lists the
    faces' offsets."""
    if data[:4] != b"ttcf":
        return data[:4]
    count = int.from_bytes(data[8:12], "big")
    if not 0 <= index < count or len(data) < 12 + 4 * count:
        return b""
    offset = int.from_bytes(data[12 + 4 * index:16 + 4 * index], "big")
    return data[offset:offset + 4]


def shareable(font, to_unicode, fonts) -> bool:
    """Static TrueType or CFF outlines, alone or in a collection, with a glyph for every character in each `Font` of
    this face (`fonts`): one subset and one font dictionary serve every part. Others keep WeasyPrint's subset."""
    data = font.file_content or b""
    version = face_version(data, font.index)
    outlines = "glyf" if version in (b"\x00\x01\x00\x00", b"true") else "CFF " if version == b"OTTO" else None
    return bool(to_unicode) and not font.bitmap and outlines is not None and outlines in font.tables \
        and "fvar" not in font.tables and not (font.png or font.svg or font.colr) \
        and not any(other.missing for other in fonts if other.hash == font.hash) \
        and (outlines == "glyf" or cids_are_glyph_ids(data, font.index))


_CIDS_ARE_GLYPH_IDS: dict[tuple[str, int], bool] = {}  # per process: a face is read once for all its parts


def cids_are_glyph_ids(data: bytes, index: int) -> bool:
    """A CFF face the merge can share: name-keyed (its glyphs found by glyph id), or CID-keyed with CIDs equal to
    glyph ids, which WeasyPrint writes as the CIDs of the text."""
    from fontTools.ttLib import TTFont

    key = (hashlib.sha256(data).hexdigest(), index)
    if key not in _CIDS_ARE_GLYPH_IDS:
        font = TTFont(io.BytesIO(data), fontNumber=index, lazy=True)
        top = font["CFF "].cff.topDictIndex[0]
        _CIDS_ARE_GLYPH_IDS[key] = not hasattr(top, "ROS") or all(
            name == f"cid{gid:05d}" for gid, name in enumerate(font.getGlyphOrder()) if gid)
    return _CIDS_ARE_GLYPH_IDS[key]


class SharedFonts(dict):
    """`Document.fonts` for a part being written: each font WeasyPrint adds while painting cleans itself into the
    `FontSink` when it is shareable (instead of being subset for this part alone), as WeasyPrint's own otherwise."""

    def __init__(self, sink: FontSink):
        super().__init__()
        self.sink = sink

    def __setitem__(self, key, font) -> None:
        own_clean, sink = font.clean, self.sink

        def clean(to_unicode, hinting):
            if shareable(font, to_unicode, list(self.values())):
                return sink.take(font, to_unicode)
            return own_clean(to_unicode, hinting)

        font.clean = clean  # this Font object only: WeasyPrint's class is left as it is
        super().__setitem__(key, font)


def weasyprint_version() -> str:
    load_weasyprint()
    import weasyprint

    return weasyprint.__version__
