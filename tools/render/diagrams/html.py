"""A drawn mermaid diagram in a page: a `<figure class="mermaid-diagram">` holding its inline SVG, both themes' in
the site (style.css shows the one of the reader's theme, as it does theme images), the light one in the PDF and the
EPUB. A diagram that was not drawn stays a highlighted code block (tools/render/html.py).

Every id inside a drawing starts with its `ident` (tools/render/diagrams/browser.py); each occurrence replaces that string
with one of its own, so no id repeats on a page even when a diagram does. The EPUB's bodies go through ebooklib's
HTML parser, which would lower-case SVG's camel-case names (`viewBox`, `markerWidth`): `stash_svgs` takes each
drawing out of the body before, and `restore_svgs` puts it back into the XHTML ebooklib writes.
"""
from __future__ import annotations

import html as html_lib
import re

from tools.book.diagrams import Drawing, accessible_name

_START = "<!--mermaid-svg-->"
_END = "<!--/mermaid-svg-->"
_MARKED = re.compile(re.escape(_START) + "(.*?)" + re.escape(_END), re.DOTALL)
_SLOT = "<!--mermaid-svg:{}-->"
# mermaid gives a state diagram's start and end circles `width` and `height`, which SVG's <circle> does not have (the
# Nu HTML checker's error): its `r` sizes it, so they go.
_CIRCLE_SIZE = re.compile(r'(<circle\b[^>]*?)\s(?:width|height)="[^"]*"')


def _svg(svg: str, ident: str, own: str, theme: str | None) -> str:
    svg = svg.replace(ident, own)
    while _CIRCLE_SIZE.search(svg):
        svg = _CIRCLE_SIZE.sub(r"\1", svg)
    if theme is not None:  # the class goes on the root element, beside mermaid's own
        svg = re.sub(r'^<svg\b([^>]*?)\bclass="', rf'<svg\1class="gh-{theme}-mode-only ', svg, count=1) if re.match(
            r'^<svg\b[^>]*\bclass="', svg) else svg.replace("<svg", f'<svg class="gh-{theme}-mode-only"', 1)
    return svg


def diagram_html(source: str, drawing: Drawing, own: str, both_themes: bool, marked: bool) -> str:
    """The figure of one occurrence; `own`: the id it gets instead of the drawing's, unique on the page.
    `marked`: the SVG between markers that `stash_svgs` finds (the EPUB)."""
    name = html_lib.escape(accessible_name(source))
    if both_themes:
        inner = _svg(drawing.light, drawing.ident, own + "-light", "light") + _svg(drawing.dark, drawing.ident, own + "-dark", "dark")
    else:
        inner = _svg(drawing.light, drawing.ident, own, None)
        if not marked and not re.match(r"<svg\b[^>]*>\s*<title\b", inner):  # the PDF: a tagged Figure's alt text
            inner = re.sub(r"^(<svg\b[^>]*>)", lambda m: f"{m.group(1)}<title>{name}</title>", inner, count=1)
    if marked:
        inner = _START + inner + _END
    return f'<figure class="mermaid-diagram" role="img" aria-label="{name}">{inner}</figure>\n'


def stash_svgs(body: str) -> tuple[str, list[str]]:
    """The body with each marked drawing replaced by a comment ebooklib keeps as it is, and the drawings."""
    svgs: list[str] = []

    def take(match: re.Match) -> str:
        svgs.append(match.group(1))
        return _SLOT.format(len(svgs) - 1)

    return _MARKED.sub(take, body), svgs


def restore_svgs(xhtml: bytes, svgs: list[str]) -> bytes:
    for number, svg in enumerate(svgs):
        xhtml = xhtml.replace(_SLOT.format(number).encode(), svg.encode(), 1)
    return xhtml
