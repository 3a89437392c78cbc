"""Attributes of raw HTML in markdown (`<a href>`, `<img src>`, `id=`, `name=`) with their offsets in the HTML text."""
from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

LINK_ATTRS = {"href": ("a", "area", "link"), "src": ("img", "source", "video", "audio", "iframe", "embed", "script", "track")}
ANCHOR_ATTRS = {"id": None, "name": ("a",)}  # None: any tag
# One attribute inside a start tag as HTML lexes it: name, then an optional quoted or bare value.
_ATTRIBUTE = re.compile(r"""[\s/]([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"'=<`]+)))?""")


@dataclass(frozen=True)
class HtmlAttr:
    tag: str
    name: str
    value: str  # as written (entities not decoded)
    offset: int  # where the value starts in the HTML text
    line: int  # 0-based line within the HTML text


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
            found.append(HtmlAttr(tag, name, match.group(group), offset, html.count("\n", 0, offset)))
    return found
