"""Walk a chapter's tokens once: its headings and anchors, and every link with its exact place in the source."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tools.book.link_model import Link, LinkKind
from tools.markdown.slug import Slugger

if TYPE_CHECKING:
    from markdown_it.token import Token

    from tools.markdown.html_sanitize import HtmlNote

# The parser's modules (markdown-it, the raw-HTML scanner and cleaner) are imported by the functions that walk tokens,
# not here: a book whose chapters all come from the cache (`check-links` run again) never imports markdown-it.


@dataclass
class Heading:
    level: int
    text: str  # the text content a reader sees (its id is made from the same text with emoji shortcodes as written)
    anchor: str
    line: int


@dataclass
class Collected:
    headings: list[Heading] = field(default_factory=list)
    anchors: dict[str, int] = field(default_factory=dict)  # anchor -> 1-based line
    links: list[Link] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (1-based line, sentence): content shown degraded
    html_notes: list[tuple[int, HtmlNote]] = field(default_factory=list)  # raw-HTML tags escaped or left out, by line
    math_errors: list[tuple[int, str, str]] = field(default_factory=list)  # (line, LaTeX, what is wrong): shown as code
    diagrams: list[tuple[int, str]] = field(default_factory=list)  # ```mermaid fences: (1-based line, source)
    images_without_alt: list[tuple[int, int, str]] = field(default_factory=list)  # (line, col, source as written): `image-alt`
    raw_ids: list[tuple[int, str, str]] = field(default_factory=list)  # (1-based line, attribute, value): raw `id`, `<a name>`

    def ids_of_headings_too(self) -> list[tuple[int, str, str, int]]:
        """(line, attribute, value, the heading's line) of each raw-HTML `id` or `<a name>` that a heading of the
        chapter has as its id: a page may hold an id once (the EPUB's XHTML makes a `name` an `id`), so the outputs
        keep the heading's (tools/render/html.py, `BookRenderer.heading_ids`)."""
        headings: dict[str, int] = {}
        for heading in self.headings:
            headings.setdefault(heading.anchor, heading.line)
        return [(line, name, value, headings[value]) for line, name, value in self.raw_ids if value in headings]


class _Locator:
    """Finds a destination of a block's text in the chapter's source lines, one place per destination.

    Linear in the text: a block's line starts are computed once, and each of its lines is found in its source line
    once; a paragraph of 20,000 links costs 20,000 lookups, not 20,000 scans of the paragraph.
    """

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.used: set[tuple[int, int]] = set()
        self._content: str | None = None
        self._breaks: list[int] = []  # offsets of the current content's newlines
        self._placed: dict[tuple[int, int], int] = {}  # (source line, content line start) -> column of that line

    def _line_of(self, content: str, start: int) -> tuple[int, int]:
        """(newlines before `start`, offset where its line begins) in `content`."""
        if content is not self._content:
            self._content, self._placed = content, {}
            self._breaks = [i for i, char in enumerate(content) if char == "\n"] if "\n" in content else []
        before = bisect.bisect_left(self._breaks, start)
        return before, (self._breaks[before - 1] + 1 if before else 0)

    def place(self, content: str, first_line: int, start: int) -> tuple[int, int]:
        """(1-based line, 1-based column or 0) of content[start], without taking the place from `locate`."""
        before, line_start = self._line_of(content, start)
        line_index = first_line + before
        if not 0 <= line_index < len(self.lines):
            return line_index + 1, 0
        line_end = content.find("\n", line_start)
        shown = content[line_start : line_end if line_end >= 0 else len(content)]
        stripped = shown.lstrip()
        found = self.lines[line_index].find(stripped)
        return line_index + 1, (found - (len(shown) - len(stripped)) + start - line_start + 1 if found >= 0 else 0)

    def locate(self, content: str, first_line: int, start: int, end: int) -> tuple[int, int, int | None]:
        """(1-based line, 1-based column or 0, offset in the text or None) of content[start:end]."""
        before, line_start = self._line_of(content, start)
        line_index = first_line + before
        if not 0 <= line_index < len(self.lines):
            return line_index + 1, 0, None
        source_line = self.lines[line_index]
        key = (line_index, line_start)
        if key not in self._placed:  # where this line of the block sits in its source line (after any `> ` or indent)
            line_end = content.find("\n", line_start)
            shown = content[line_start : line_end if line_end >= 0 else len(content)]
            stripped = shown.lstrip()
            found = source_line.find(stripped)
            self._placed[key] = found - (len(shown) - len(stripped)) if found >= 0 else -1
        if self._placed[key] >= 0:
            col = self._placed[key] + start - line_start
            if (line_index, col) not in self.used and source_line[col : col + end - start] == content[start:end]:
                self.used.add((line_index, col))
                return line_index + 1, col + 1, self.starts[line_index] + col
        needle = content[line_start:end].lstrip()
        length = end - start
        found = source_line.find(needle)
        while found >= 0:
            col = found + len(needle) - length
            if (line_index, col) not in self.used:
                self.used.add((line_index, col))
                return line_index + 1, col + 1, self.starts[line_index] + col
            found = source_line.find(needle, found + 1)
        return line_index + 1, 0, None


# WeasyPrint's layout runs out of Python stack near 135 nested elements, and lxml (ebooklib) drops everything past
# 255: the parser keeps markdown within 100 block and 20 inline levels; raw HTML may not take a page deeper than this.
ELEMENT_DEPTH = 120
INLINE_DEPTH = 20  # emphasis and links inside one another (`***...***` nests thousands deep): deeper ones lose their tags
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)\b[^>]*?(/?)>")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def html_too_deep(tokens: list[Token], limit: int = ELEMENT_DEPTH) -> int | None:
    """The 1-based line of the first raw HTML that nests elements deeper than `limit` (with the markdown around
    it), or None. Linear: each tag is looked at once."""
    open_tags = 0  # raw-HTML elements still open; a `<div>` may close in a later block

    def scan(token: Token, level: int, line: int) -> int | None:
        nonlocal open_tags
        for match in _TAG.finditer(token.content):
            if match.group(1):
                open_tags = max(open_tags - 1, 0)
            elif not match.group(3) and match.group(2).lower() not in _VOID:
                open_tags += 1
                if level + open_tags > limit:
                    return line
        return None

    for token in tokens:
        line = (token.map[0] + 1) if token.map else 0
        if token.type == "html_block" and scan(token, token.level, line) is not None:
            return line
        if token.type == "inline":
            for child in token.children or []:
                if child.type == "html_inline" and scan(child, token.level + child.level, line) is not None:
                    return line
    return None


def heading_text(inline: Token, shortcodes: bool = False) -> str:
    """A heading's text content as GitHub computes it: text and code kept, images and HTML tags dropped. With
    `shortcodes`, the text github.com makes its id from: each emoji as its shortcode was written (`:rocket:`)."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.meta.get("shortcode", child.content) if shortcodes else child.content)
        elif child.type == "softbreak":
            parts.append("\n")
    return "".join(parts)


def _destination(raw: str) -> str:
    from markdown_it.common.utils import unescapeAll

    if raw.startswith("<") and raw.endswith(">"):
        raw = raw[1:-1]
    return unescapeAll(raw)


def collect(path: str, text: str, tokens: list[Token], env: dict) -> Collected:
    from html import unescape

    from tools.book.diagrams import is_mermaid_fence
    from tools.markdown.html_attrs import LINK_ATTRS, has_attribute, scan_html
    from tools.markdown.html_sanitize import clean_html
    from tools.markdown.math import math_problems
    from tools.markdown.parser import REF_DEFS, too_deep_messages

    found = Collected(problems=too_deep_messages(env), math_errors=math_problems(tokens))
    locator = _Locator(text)
    slugger = Slugger()
    definitions: dict[str, Link] = {}
    for definition in env.get(REF_DEFS, []):
        start, end = definition["dest"]
        raw = definition["text"][start:end]
        line, col, offset = locator.locate(definition["text"], definition["line"], start, end)
        link = Link(path, line, col, LinkKind.REFERENCE, _destination(raw), raw, offset)
        found.links.append(link)
        definitions.setdefault(definition["label"], link)

    noted: set[tuple[int, str]] = set()

    def add_html(token: Token, content: str, first_line: int, base: int) -> None:
        token.meta["html_attrs"] = scan_html(token.content)
        notes: list[HtmlNote] = []
        clean_html(token.content, notes=notes)
        for note in notes:  # once per tag and line
            line = first_line + locator._line_of(content, base + note.offset)[0] + 1
            if (line, note.tag) not in noted:
                noted.add((line, note.tag))
                found.html_notes.append((line, note))
        for attr in token.meta["html_attrs"]:
            value = unescape(attr.value)
            if attr.name in LINK_ATTRS:
                kind = LinkKind.HTML_HREF if attr.name == "href" else LinkKind.HTML_SRC
                start = base + attr.offset
                line, col, offset = locator.locate(content, first_line, start, start + len(attr.value))
                link = Link(path, line, col, kind, value, attr.value, offset, media_theme=attr.theme)
                link.tokens.append((token, attr))
                found.links.append(link)
                if attr.tag == "img" and attr.name == "src" and not has_attribute(token.content[attr.tag_span[0] : attr.tag_span[1]], "alt"):  # alt="": decorative
                    found.images_without_alt.append((*locator.place(content, first_line, base + attr.tag_span[0]), token.content[attr.tag_span[0] : attr.tag_span[1]]))
            elif value:
                line = first_line + content.count("\n", 0, base + attr.offset) + 1
                found.anchors.setdefault(value, line)
                found.raw_ids.append((line, attr.name, value))

    def walk_inline(inline: Token, first_line: int) -> None:
        content = inline.content
        for child in inline.children or []:
            if child.type == "image" and not child.content.strip() and "span" in child.meta:  # `![](chart.png)`: markdownlint's MD045
                start, end = child.meta["span"]
                found.images_without_alt.append((*locator.place(content, first_line, start), content[start:end]))
            if child.type in ("link_open", "image"):
                label = child.meta.get("label")
                if label is not None:
                    if label in definitions:
                        definitions[label].tokens.append(child)
                    continue
                if "dest" in child.meta:
                    start, end = child.meta["dest"]
                    raw = content[start:end]
                else:  # an empty destination, `[text]()`: it sits before the ')'
                    span_end = child.meta.get("span", (0, 0))[1]
                    start = end = span_end - 1 if span_end and content[span_end - 1 : span_end] == ")" else -1
                    raw = ""
                if start >= 0:
                    line, col, offset = locator.locate(content, first_line, start, end)
                else:
                    line, col, offset = first_line + 1, 0, None
                if child.type == "image":
                    kind = LinkKind.IMAGE
                elif child.markup in ("autolink", "linkify"):
                    kind = LinkKind.AUTOLINK
                else:
                    kind = LinkKind.INLINE
                href = str(child.attrs.get("href", raw)) if kind is LinkKind.AUTOLINK else _destination(raw)
                link = Link(path, line, col, kind, href, raw, offset, title=str(child.attrs.get("title", "") or ""))
                link.tokens.append(child)
                found.links.append(link)
            elif child.type == "html_inline" and "span" in child.meta:
                add_html(child, content, first_line, child.meta["span"][0])

    for index, token in enumerate(tokens):
        if token.type == "heading_open" and index + 1 < len(tokens):
            inline = tokens[index + 1]
            text_content = heading_text(inline)
            anchor = slugger.slug(heading_text(inline, shortcodes=True))
            line = (token.map[0] + 1) if token.map else 0
            found.headings.append(Heading(int(token.tag[1]), text_content.strip(), anchor, line))
            found.anchors.setdefault(anchor, line)
            token.meta["anchor"] = anchor
        if token.type == "inline" and token.map:
            walk_inline(token, token.map[0])
        elif token.type == "html_block" and token.map:
            add_html(token, token.content, token.map[0], 0)
        elif is_mermaid_fence(token):
            found.diagrams.append(((token.map[0] + 1) if token.map else 0, token.content))
    for token in tokens:
        if token.type == "inline" and token.map and any(child.level >= INLINE_DEPTH for child in token.children or []):
            found.problems.append((token.map[0] + 1, f"emphasis or links here nest more than {INLINE_DEPTH} deep; the PDF and the EPUB show the deeper ones as plain text."))
    deep = html_too_deep(tokens)
    if deep is not None:
        found.problems.append((deep, f"raw HTML here nests elements more than {ELEMENT_DEPTH} deep; the PDF and the EPUB show this chapter's HTML as text."))
    return found
