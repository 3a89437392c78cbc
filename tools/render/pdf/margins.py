"""A chapter's part in two layers, so that its costly layout is made once and serves every PDF that shows it.

The body (`paint_body`) is the chapter's pages without their margin boxes: it depends on the chapter's print document
only, not on the page the chapter starts on, nor on the book around it. A translation's PDF shows a chapter it has
not translated with the original's body, taken from the cache (tools/book/translations.py). The margins (`paint_margins`)
are the running header and the page number: a small document of as many pages, each with the page's name and the
strings its content set (`margin_pages`, recorded when the chapter is laid out), laid out with the book's stylesheet
and its page counter starting where the chapter starts. In a translation's PDF, the first page of a chapter shown
untranslated carries the "not translated yet" notice there, above the chapter's text, in the translation's language.
`compose` lays the margins over the body: each margin page becomes a form XObject drawn, as a pagination artifact,
after the body page's own content. What comes out prints every word where one render of the whole book prints it.

A stylesheet whose margin boxes show running elements (`element()`) is not made in two layers: such a part is
written whole, for the page it starts on (`parts.split_margins`)."""
from __future__ import annotations

import html as html_lib
import re
from dataclasses import replace

from tools.render.pdf.hooks import FontUse
from tools.render.pdf.parts import Written

# (page name, ((string name, (values assigned on the page, in order)), ...)) for each page of a part
MarginPages = list[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]]
_NAME = re.compile(r"-?[^\W\d][\w-]*\Z")  # a CSS identifier, as a page or string name is written
_REFERENCE = re.compile(rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>|(?<![\w.])(\d+) 0 R\b", re.DOTALL)  # as tools/render/pdf/write.py reads them
_CONTENTS = re.compile(rb"/Contents (\d+) 0 R")
_RESOURCES = re.compile(rb"/Resources (\d+) 0 R")
_MEDIA_BOX = re.compile(rb"/MediaBox \[([^\]]*)\]")
_XOBJECTS = b"/XObject <<"
FORM = "mlbookMargins"  # the name of a page's margins in its resources


def margin_pages(document, context) -> MarginPages:
    """What the margin boxes of each page of a laid-out part show besides its page number: the page's name and each
    named string assigned on it (`string-set`), as WeasyPrint's layout context holds them."""
    pages: MarginPages = []
    for number, page in enumerate(document.pages, 1):
        strings = tuple((name, tuple(str(value) for value in by_page[number])) for name, by_page in sorted(context.string_set.items())
                        if by_page.get(number))
        pages.append((page._page_box.page_type.name or "", strings))
    return pages


def strip_margins(document) -> None:
    """The part's pages without their margin boxes (the body layer)."""
    from weasyprint.formatting_structure.boxes import MarginBox

    for page in document.pages:
        box = page._page_box
        box.children = tuple(child for child in box.children if not isinstance(child, MarginBox))


def margins_html(head: str, end: str, pages: MarginPages, notice: str = "", notice_language: str = "", first: int = 0) -> str | None:
    """The margins layer's document: one page per page of the part, each with the part's page name and strings, so
    that the stylesheet's margin boxes show what they show in the part; `notice` on page `first` (0-based), where the
    chapter begins. None when a page or string name is not one this document can write."""
    body = []
    for index, (name, strings) in enumerate(pages):
        if name and not _NAME.match(name) or not all(_NAME.match(string) for string, _ in strings):
            return None
        rows = max((len(values) for _, values in strings), default=1)
        for row in range(max(rows, 1)):
            style = ["break-before: page" if row == 0 else "", f"page: {name or 'auto'}" if row == 0 else ""]
            attributes, assigned = [], []
            for number, (string, values) in enumerate(strings):
                if row < len(values):
                    attributes.append(f' data-s{number}="{html_lib.escape(values[row])}"')
                    assigned.append(f"{string} attr(data-s{number})")
            if assigned:
                style.append("string-set: " + ", ".join(assigned))
            inner = ""
            if notice and index == first and row == 0:
                inner = f'<p class="not-translated-page" lang="{html_lib.escape(notice_language)}">{html_lib.escape(notice)}</p>'
            body.append(f'<div class="margins" style="{"; ".join(part for part in style if part)}"{"".join(attributes)}>{inner}</div>')
    return head + "\n".join(body) + end


def clear_backgrounds(document) -> None:
    """The margins layer draws only its margin boxes (with their own backgrounds) and the notice: the page's and
    the root element's backgrounds are the body layer's, which lies below."""
    from weasyprint.formatting_structure.boxes import MarginBox

    for page in document.pages:
        box = page._page_box
        box.background = None
        box.canvas_background = None
        stack = [child for child in box.children if not isinstance(child, MarginBox)]
        while stack:
            child = stack.pop()
            if getattr(child, "element_tag", "") == "p":
                continue  # the notice keeps its own look
            if hasattr(child, "background"):
                child.background = None
            stack.extend(getattr(child, "children", ()))


def _union(first: dict[str, FontUse], second: dict[str, FontUse]) -> dict[str, FontUse]:
    fonts = {face: replace(use, widths=dict(use.widths), to_unicode=dict(use.to_unicode)) for face, use in first.items()}
    for face, use in second.items():
        union = fonts.setdefault(face, replace(use, widths={}, to_unicode={}))
        for gid, width in use.widths.items():
            union.widths.setdefault(gid, width)
        for gid, text in use.to_unicode.items():
            union.to_unicode.setdefault(gid, text)
        union.gids = tuple(sorted(union.to_unicode))
    return fonts


def compose(body: Written, margins: Written) -> Written:
    """The part: the body's pages, each drawing its margin page (a form XObject with the margins' own resources)
    after its own content, between a save and a restore of the graphics state, marked as a pagination artifact."""
    lower, upper = body.objects, margins.objects
    if len(lower.pages) != len(upper.pages):
        raise RuntimeError(f"a PDF part has {len(lower.pages)} pages and its margins {len(upper.pages)}")
    shift = max([number for number, _, _ in lower.objects] + [lower.parent, *lower.fonts]) + 1
    moved = lambda value: _REFERENCE.sub(lambda m: m.group(0) if m.group(1) is None else b"%d 0 R" % (int(m.group(1)) + shift), value)  # noqa: E731
    margin_pages = {number: value for number, value, _ in upper.objects if number in set(upper.pages)}
    forms: dict[int, int] = {}  # margin page content stream (own number) -> its margin page
    frames: list[tuple[int, bytes]] = []  # per margin page: its content stream and its form's extra keys
    for page, number in enumerate(upper.pages):
        value = margin_pages[number]
        contents, resources, box = _CONTENTS.search(value), _RESOURCES.search(value), _MEDIA_BOX.search(value)
        if contents is None or resources is None or box is None:
            raise RuntimeError("a margins page has no single content stream, resources or media box")
        forms[int(contents.group(1))] = page
        frames.append((int(contents.group(1)), b"/Type /XObject /Subtype /Form /BBox [%s] /Resources %d 0 R" % (box.group(1), int(resources.group(1)) + shift)))
    objects: list[tuple[int, bytes, bytes | None]] = []
    for number, value, stream in upper.objects:
        if number in margin_pages:
            continue  # its page becomes a form drawn on the body's page
        value = moved(value)
        if number in forms:
            value = b"<<" + frames[forms[number]][1] + value[2:]
        objects.append((number + shift, value, stream))
    following = max([number for number, _, _ in upper.objects] + [upper.parent, *upper.fonts]) + shift + 1
    save = following
    objects.append((save, b"<</Length 2>>", b"q\n"))
    following += 1
    drawn: dict[int, list[bytes]] = {}  # the body's resources -> the forms its pages draw
    pages = {number: page for page, number in enumerate(lower.pages)}
    for number, value, stream in lower.objects:
        if number not in pages:
            objects.append((number, value, stream))
            continue
        page = pages[number]
        form = frames[page][0] + shift
        own = b"Q\n/Artifact <</Type /Pagination>> BDC\nq /%s%d Do Q\nEMC\n" % (FORM.encode(), page)
        objects.append((following, b"<</Length %d>>" % len(own), own))
        listed = b"/Contents [%d 0 R \\1 0 R %d 0 R]" % (save, following)
        value, count = _CONTENTS.subn(listed, value, count=1)
        resources = _RESOURCES.search(value)
        if count != 1 or resources is None:
            raise RuntimeError("a PDF part's page has no single content stream or resources")
        drawn.setdefault(int(resources.group(1)), []).append(b"/%s%d %d 0 R" % (FORM.encode(), page, form))
        objects.append((number, value, stream))
        following += 1
    for index, (number, value, stream) in enumerate(objects):
        if number in drawn:
            if _XOBJECTS not in value:
                raise RuntimeError("a PDF part's resources have no XObject dictionary")
            head, _, rest = value.partition(_XOBJECTS)
            objects[index] = (number, head + _XOBJECTS + b"".join(drawn[number]) + rest, stream)
    fonts = dict(lower.fonts) | {number + shift: face for number, face in upper.fonts.items()}
    merged = replace(lower, objects=objects, fonts=fonts)
    return Written(merged, _union(body.fonts, margins.fonts), [*body.warnings, *margins.warnings])
