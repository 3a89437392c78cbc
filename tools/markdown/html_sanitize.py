"""Raw HTML of a chapter cleaned to what GitHub shows (tools/markdown/html_allowlist.py), one tag at a time.

A raw-HTML token is often a fragment (`<a href="x">` alone, its `</a>` in a later token), so nothing here builds a
tree: each tag is rebuilt from its allowed attributes, or escaped so its text shows, or left out; text between tags
keeps its entities and gets every `<` escaped, so the only markup that comes out is markup rebuilt here. Tags are
found with markdown-it's own raw-HTML grammar, in one pass (linear in the text).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from markdown_it.common import html_re

from tools.core.errors import Diagnostics
from tools.markdown.html_allowlist import ELEMENTS, PROTOCOLS, TAGFILTER, TEXT_ALIGN, XHTML_BOOLEAN, XHTML_INTEGER, allowed_attribute, html_elements, xhtml_attribute

_OPEN = re.compile(html_re.open_tag)
_CLOSE = re.compile(html_re.close_tag)
_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")
_ATTRIBUTE = re.compile(r"\s+(" + html_re.attr_name + r")(?:\s*=\s*(" + html_re.attr_value + "))?")
_VOID = frozenset({"br", "img", "hr", "source", "wbr"})
# Browsers drop ASCII tabs and newlines inside a URL and ignore leading blanks and controls: `java\tscript:` runs.
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_DATA_IMAGE = re.compile(r"data:image/(?:png|gif|jpeg|jpg|webp|svg\+xml)[;,]", re.IGNORECASE)
# Comments and the like: GitHub leaves them out. A processing instruction ends where HTML ends it, at its first `>`
# (a bogus comment): `<?php echo '>'; ?>` shows `'; ?>` in a browser, and on github.com.
_ENDS = {"<!--": "-->", "<?": ">", "<![CDATA[": "]]>"}


@dataclass(frozen=True)
class HtmlNote:
    offset: int  # of the tag in the text
    tag: str
    escaped: bool  # True: shown as text; False: left out, its content kept (an HTML element GitHub removes)


def safe_url(attribute: str, value: str) -> bool:
    """Whether a URL attribute's value (entities decoded) has no scheme, or one GitHub allows there."""
    bare = _URL_NOISE.sub("", value)
    match = _SCHEME.match(bare)
    if match is None:
        return True
    allowed = PROTOCOLS.get(attribute, frozenset())
    scheme = match.group(1).lower()
    if scheme == "data":
        return "data-image" in allowed and _DATA_IMAGE.match(bare) is not None
    return scheme in allowed


def _attributes(tag: str, text: str, xhtml: bool, keep_style: bool) -> str:
    out: list[str] = []
    seen: set[str] = set()
    style = ""
    for match in _ATTRIBUTE.finditer(text, 1 + len(tag)):
        name = match.group(1).lower()
        if name in seen:  # HTML keeps the first of a repeated attribute
            continue
        seen.add(name)
        raw = match.group(2)
        value = html.unescape(raw[1:-1] if raw and raw[0] in "\"'" else (raw or ""))
        if keep_style and name == "style":
            out.append(f' style="{html.escape(value)}"')
            continue
        if not allowed_attribute(tag, name) or (name in PROTOCOLS and not safe_url(name, value)):
            continue
        if name == "srcset" and not all(safe_url("srcset", part.split()[0]) for part in value.split(",") if part.split()):
            continue
        if xhtml:
            if name == "align" and tag in TEXT_ALIGN and value.lower() in ("left", "right", "center", "justify"):
                style = f"text-align: {value.lower()}"
            if not xhtml_attribute(tag, name) or (name in XHTML_INTEGER and not value.isdigit()):
                continue
            if name in XHTML_BOOLEAN:
                value = name
            if name == "dir" and value.lower() not in ("ltr", "rtl", "auto"):
                continue
        out.append(f' {name}="{html.escape(value)}"')
    if style:
        out.append(f' style="{style}"')
    if xhtml and tag == "source" and "type" not in seen and "srcset" in seen:
        out.append(_source_type(text))
    return "".join(out)


_IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml", "webp": "image/webp"}


def _source_type(tag_text: str) -> str:
    """A `type` for an EPUB `<source>` whose images are all of one kind: epubcheck (OPF-013) wants it."""
    match = re.search(r"\ssrcset\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", tag_text, re.IGNORECASE)
    value = html.unescape(match.group(1).strip("\"'")) if match else ""
    kinds = {_IMAGE_TYPES.get(part.split()[0].rsplit(".", 1)[-1].lower()) for part in value.split(",") if part.split()}
    return f' type="{kinds.pop()}"' if len(kinds) == 1 and None not in kinds else ""


class _Ends:
    """Where the next `-->` (or `?>`, `]]>`, `>`) is, found once per terminator and reused: linear over the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: dict[str, int] = {}

    def after(self, needle: str, start: int) -> int:
        """The offset just past the first `needle` at or after `start`, or -1."""
        known = self.found.get(needle)
        if known is None or (known != -1 and known < start):
            known = self.text.find(needle, start)
            self.found[needle] = known
        return -1 if known == -1 else known + len(needle)


def clean_html(text: str, xhtml: bool = False, notes: list[HtmlNote] | None = None, style: bool = False) -> str:
    """`text` with only the HTML GitHub shows; with `xhtml`, attributes also valid in XHTML 5 (the EPUB); with
    `style`, `style` attributes are kept (the PDF only). Every tag escaped or left out is added to `notes`."""
    out: list[str] = []
    ends = _Ends(text)
    position = 0
    size = len(text)
    while position < size:
        start = text.find("<", position)
        if start == -1:
            out.append(text[position:])
            break
        out.append(text[position:start])
        position = start + 1
        special = next((opener for opener in _ENDS if text.startswith(opener, start)), None)
        if special is not None or text.startswith("<!", start) and start + 2 < size and text[start + 2].isalpha():
            stop = ends.after(_ENDS.get(special or "", ">"), start + 2)  # `<!-->` is a whole comment
            if stop != -1:
                position = stop  # left out, as GitHub does
                continue
            out.append("&lt;")
            continue
        closing = text.startswith("</", start)
        match = (_CLOSE if closing else _OPEN).match(text, start)  # fails at the first character out of the grammar
        if match is None:
            out.append("&lt;")
            continue
        position = match.end()
        raw = match.group(0)
        tag = _NAME.match(raw).group(1).lower()  # type: ignore[union-attr]
        if tag in ELEMENTS or (style and tag == "style"):  # the PDF keeps the book's CSS, as tools/render/pdf/fetcher.py guards it
            if closing:
                out.append("" if tag in _VOID else f"</{tag}>")
            else:
                slash = "/" if xhtml and tag in _VOID else ""  # lxml's HTML parser knows no void <source>
                out.append(f"<{tag}{_attributes(tag, raw, xhtml, style)}{slash}>")
            continue
        escaped = tag in TAGFILTER or tag not in html_elements()
        if notes is not None:
            notes.append(HtmlNote(start, tag, escaped))
        if escaped:
            out.append(html.escape(raw, quote=False))
    return "".join(out)


def report_note(diagnostics: Diagnostics, path: str, line: int, note: HtmlNote) -> None:
    """A warning at `path:line` for a tag GitHub does not show as HTML."""
    tag = note.tag
    if tag in TAGFILTER:
        applied = " (only the PDF applies it)" if tag == "style" else ""
        diagnostics.warning(path, line, f"GitHub shows the raw HTML tag <{tag}> and what follows it as text, and so does the book{applied}.",
                            suggestion=f"Remove it, or write it as `<{tag}>` in backticks.", code="html-escaped")
    elif note.escaped:
        diagnostics.warning(path, line, f"<{tag}> is not an HTML element GitHub shows; it is shown as text.",
                            suggestion=f"Write it as `<{tag}>` in backticks, or &lt;{tag}&gt;.", code="html-escaped")
    else:
        diagnostics.warning(path, line, f"GitHub leaves out the raw HTML tag <{tag}> and keeps its text; so does the book.",
                            suggestion="Remove the tag, or use one GitHub keeps (<div>, <span>, <b>, <details>, ...).", code="html-removed")
