"""Walk a chapter's tokens once: its headings and anchors, and every link with its exact place in the source."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from markdown_it.common.utils import unescapeAll
from markdown_it.token import Token

from .html_attrs import LINK_ATTRS, scan_html
from .links.model import Link, LinkKind
from .markdown import REF_DEFS
from .slug import Slugger


@dataclass
class Heading:
    level: int
    text: str  # the text content, as GitHub's slugger sees it
    anchor: str
    line: int


@dataclass
class Collected:
    headings: list[Heading] = field(default_factory=list)
    anchors: dict[str, int] = field(default_factory=dict)  # anchor -> 1-based line
    links: list[Link] = field(default_factory=list)


class _Locator:
    """Finds a destination of a block's text in the chapter's source lines, one place per destination."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.used: set[tuple[int, int]] = set()

    def locate(self, content: str, first_line: int, start: int, end: int) -> tuple[int, int, int | None]:
        """(1-based line, 1-based column or 0, offset in the text or None) of content[start:end]."""
        line_index = first_line + content.count("\n", 0, start)
        line_start = content.rfind("\n", 0, start) + 1
        needle = content[line_start:end].lstrip()
        length = end - start
        if 0 <= line_index < len(self.lines):
            source_line = self.lines[line_index]
            found = source_line.find(needle)
            while found >= 0:
                col = found + len(needle) - length
                if (line_index, col) not in self.used:
                    self.used.add((line_index, col))
                    return line_index + 1, col + 1, self.starts[line_index] + col
                found = source_line.find(needle, found + 1)
        return line_index + 1, 0, None


def heading_text(inline: Token) -> str:
    """A heading's text content as GitHub computes it: text and code kept, images and HTML tags dropped."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append("\n")
    return "".join(parts)


def _destination(raw: str) -> str:
    if raw.startswith("<") and raw.endswith(">"):
        raw = raw[1:-1]
    return unescapeAll(raw)


def collect(path: str, text: str, tokens: list[Token], env: dict) -> Collected:
    found = Collected()
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

    def add_html(token: Token, content: str, first_line: int, base: int) -> None:
        token.meta["html_attrs"] = scan_html(token.content)
        for attr in token.meta["html_attrs"]:
            value = html.unescape(attr.value)
            if attr.name in LINK_ATTRS:
                kind = LinkKind.HTML_HREF if attr.name == "href" else LinkKind.HTML_SRC
                start = base + attr.offset
                line, col, offset = locator.locate(content, first_line, start, start + len(attr.value))
                link = Link(path, line, col, kind, value, attr.value, offset)
                link.tokens.append((token, attr))
                found.links.append(link)
            elif value:
                found.anchors.setdefault(value, first_line + content.count("\n", 0, base + attr.offset) + 1)

    def walk_inline(inline: Token, first_line: int) -> None:
        content = inline.content
        search_from = 0
        for child in inline.children or []:
            if child.type in ("link_open", "image"):
                label = child.meta.get("label")
                if label is not None:
                    if label in definitions:
                        definitions[label].tokens.append(child)
                    continue
                attr = "src" if child.type == "image" else "href"
                if "dest" in child.meta:
                    start, end = child.meta["dest"]
                    raw = content[start:end]
                elif child.markup != "linkify":  # an empty destination, `[text]()`: it sits before the ')'
                    span_end = child.meta.get("span", (0, 0))[1]
                    start = end = span_end - 1 if span_end and content[span_end - 1 : span_end] == ")" else -1
                    raw = ""
                else:  # a `www.` link of the core linkify pass: look its shown text up
                    position = inline.children.index(child)
                    shown = inline.children[position + 1].content if position + 1 < len(inline.children) else ""
                    start = content.find(shown, search_from) if shown else -1
                    end = start + len(shown)
                    raw = shown if start >= 0 else child.attrs.get(attr, "")
                if start >= 0:
                    search_from = end
                    line, col, offset = locator.locate(content, first_line, start, end)
                else:
                    line, col, offset = first_line + 1, 0, None
                if child.type == "image":
                    kind = LinkKind.IMAGE
                elif child.markup in ("autolink", "linkify"):
                    kind = LinkKind.AUTOLINK
                else:
                    kind = LinkKind.INLINE
                href = child.attrs.get("href", raw) if kind is LinkKind.AUTOLINK else _destination(raw)
                link = Link(path, line, col, kind, href, raw, offset, title=child.attrs.get("title", "") or "")
                link.tokens.append(child)
                found.links.append(link)
            elif child.type == "html_inline" and "span" in child.meta:
                add_html(child, content, first_line, child.meta["span"][0])

    for index, token in enumerate(tokens):
        if token.type == "heading_open" and index + 1 < len(tokens):
            inline = tokens[index + 1]
            text_content = heading_text(inline)
            anchor = slugger.slug(text_content)
            line = (token.map[0] + 1) if token.map else 0
            found.headings.append(Heading(int(token.tag[1]), text_content.strip(), anchor, line))
            found.anchors.setdefault(anchor, line)
            token.meta["anchor"] = anchor
        if token.type == "inline" and token.map:
            walk_inline(token, token.map[0])
        elif token.type == "html_block" and token.map:
            add_html(token, token.content, token.map[0], 0)
    return found
