"""Attributes of raw HTML in markdown (`<a href>`, `<img src>`, `id=`, `name=`) with their offsets in the HTML text."""
from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

LINK_ATTRS = {
    "href": ("a", "area", "link"),
    "src": ("img", "source", "video", "audio", "iframe", "embed", "script", "track"),
    "srcset": ("img", "source"),  # `<picture><source srcset=dark.png>`: GitHub shows it; each URL is one link
}
ANCHOR_ATTRS = {"id": None, "name": ("a",)}  # None: any tag
_COLOR_SCHEME = re.compile(r"prefers-color-scheme\s*:\s*(dark|light)", re.IGNORECASE)
# One attribute inside a start tag as HTML lexes it: name, then an optional quoted or bare value.
_ATTRIBUTE = re.compile(r"""[\s/]([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"'=<`]+)))?""")


@dataclass(frozen=True)
class HtmlAttr:
    tag: str
    name: str
    value: str  # as written (entities not decoded)
    offset: int  # where the value starts in the HTML text
    line: int  # 0-based line within the HTML text
    tag_span: tuple[int, int] = (0, 0)  # where its whole start tag sits in the HTML text
    theme: str = ""  # "dark"/"light": a `<source media="(prefers-color-scheme: dark)">`, shown in that theme only


class _StartTags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.tags: list[tuple[str, int, int, str]] = []  # tag, line (1-based), column, raw text

    def handle_starttag(self, tag, attrs):
        line, col = self.getpos()
        self.tags.append((tag, line, col, self.get_starttag_text() or ""))

    handle_startendtag = handle_starttag


def scan_html(html: str) -> list[HtmlAttr]:
    """Every link and anchor attribute in `html`, in order."""
    parser = _StartTags()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed HTML yields what was found before the error
        pass
    line_starts = [0]
    for index, char in enumerate(html):
        if char == "\n":
            line_starts.append(index + 1)
    found: list[HtmlAttr] = []
    for tag, line, col, raw in parser.tags:
        tag_offset = line_starts[line - 1] + col
        span = (tag_offset, tag_offset + len(raw))
        theme = _source_theme(raw) if tag == "source" else ""
        for match in _ATTRIBUTE.finditer(raw, len(tag) + 1):
            name = match.group(1).lower()
            allowed = LINK_ATTRS.get(name, ANCHOR_ATTRS.get(name, ()))
            if name not in LINK_ATTRS and name not in ANCHOR_ATTRS:
                continue
            if allowed is not None and tag not in allowed:
                continue
            group = next((g for g in (2, 3, 4) if match.group(g) is not None), None)
            if group is None:
                continue
            offset = tag_offset + match.start(group)
            if name == "srcset":
                for start, url in srcset_urls(match.group(group)):
                    found.append(HtmlAttr(tag, name, url, offset + start, html.count("\n", 0, offset + start), span, theme))
                continue
            found.append(HtmlAttr(tag, name, match.group(group), offset, html.count("\n", 0, offset), span, theme))
    return found


def has_attribute(start_tag: str, name: str) -> bool:
    """Whether a start tag as written (`<img src=a.png alt="">`) has the attribute `name`, with or without a value."""
    tag = re.match(r"<\s*[^\s/>]+", start_tag)
    return any(match.group(1).lower() == name for match in _ATTRIBUTE.finditer(start_tag, tag.end() if tag else 0))


def _source_theme(raw: str) -> str:
    """'dark' or 'light' for a `<picture>` source GitHub shows in one colour scheme only (its `media`), else ''."""
    for match in _ATTRIBUTE.finditer(raw, len("source") + 1):
        if match.group(1).lower() == "media":
            value = next((g for g in match.group(2, 3, 4) if g is not None), "")
            scheme = _COLOR_SCHEME.search(value)
            return scheme.group(1).lower() if scheme else ""
    return ""


def srcset_urls(value: str) -> list[tuple[int, str]]:
    """(offset, URL) of each image candidate of a `srcset` ("a.png 1x, b.png 2x"), as HTML splits it: a URL runs to
    the next blank, a comma ending it ends the candidate, descriptors run to the next comma outside parentheses."""
    found: list[tuple[int, str]] = []
    index, size = 0, len(value)
    while index < size:
        while index < size and (value[index].isspace() or value[index] == ","):
            index += 1
        start = index
        while index < size and not value[index].isspace():
            index += 1
        url = value[start:index]
        bare = url.rstrip(",")
        if bare:
            found.append((start, bare))
        if bare != url:
            continue
        depth = 0
        while index < size:
            char = value[index]
            index += 1
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(0, depth - 1)
            elif char == "," and depth == 0:
                break
    return found
