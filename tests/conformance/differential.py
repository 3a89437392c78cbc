"""What a reader gets from a page, element by element, to compare the tool with github.com's parser (cmarkgfm).

From normalised HTML (tests/conformance/normalize.py) this reads the links (address and text, footnote links by their
kind only), the emphasis (`em`, `strong`, `del` and their text) and the text a reader sees, white space collapsed.
Before the comparison, what github.com adds on top of cmark-gfm is added to cmark-gfm's side (emoji shortcodes become
their emoji, alerts lose their `[!NOTE]` marker), and what the tool draws differently on purpose is taken out of both
(math, whose LaTeX github.com typesets in the browser and the tool at build time, and YAML front matter), and a
tag that is no HTML element is text on cmark-gfm's side too (the tool shows it on purpose: chapters/building).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from .normalize import normalize
from .render import github_html

_SPACE = re.compile(r"\s+")
_FOOTNOTE = re.compile(r"^#(?:user-content-)?(fnref|fn)")
_ALERT = re.compile(r"(<blockquote>\s*<p>)\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", re.IGNORECASE)
_CODE = re.compile(r"(<code>.*?</code>|<pre>.*?</pre>)", re.S)
_SHORTCODE = re.compile(r":([a-z0-9_+-]+):")


@dataclass
class Page:
    links: list[tuple[str, str]] = field(default_factory=list)
    emphasis: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.parts: list[str] = []
        self.open: list[tuple[str, str, int]] = []  # (tag, href, where its text starts in parts)
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "math" or (tag == "span" and "math" in (attributes.get("class") or "")):
            self.skip += 1
        if tag in ("a", "em", "strong", "del"):
            self.open.append((tag, attributes.get("href") or "", len(self.parts)))
        elif tag in ("p", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "br", "tr"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag == "math":
            self.skip = max(self.skip - 1, 0)
        for index in range(len(self.open) - 1, -1, -1):
            if self.open[index][0] == tag:
                _, href, start = self.open.pop(index)
                text = _SPACE.sub(" ", "".join(self.parts[start:])).strip()
                if tag == "a":
                    kind = _FOOTNOTE.match(href)
                    self.page.links.append((f"#{kind.group(1)}" if kind else href, text))
                else:
                    self.page.emphasis.append((tag, text))
                break

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def read(html: str) -> Page:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader.page.text = _SPACE.sub(" ", "".join(reader.parts)).strip()
    return reader.page


def _with_emoji(html: str) -> str:
    """cmark-gfm's HTML with what github.com adds: shortcodes as emoji (not in code), alerts without their marker."""
    from tools.markdown.emoji import shortcodes

    table = shortcodes()
    pieces = _CODE.split(html)
    for index in range(0, len(pieces), 2):
        pieces[index] = _SHORTCODE.sub(lambda match: table.get(match.group(1), match.group(0)), pieces[index])
    return _ALERT.sub(r"\1", "".join(pieces))


def comparable(markdown: str, md) -> str:
    """The markdown without what github.com does not leave to cmark-gfm and the tool draws its own way, found by the
    tool's parser: math (typeset by both, github.com in the browser) and YAML front matter (github.com shows it as a
    table above the text, the tool leaves it out). Both sides are given this same text."""
    lines = markdown.split("\n")
    for token in md.parse(markdown, {}):
        if token.map and (token.type in ("front_matter", "math_block", "math_block_eqno") or (token.type == "fence" and token.info.strip() == "math")):
            for index in range(*token.map):
                if index < len(lines):
                    lines[index] = ""
        elif token.type == "inline" and token.map:
            for child in token.children or []:
                if child.type.startswith("math_inline"):
                    written = f"{child.markup}{child.content}{child.markup}"
                    for index in range(*token.map):
                        if written in lines[index]:
                            lines[index] = lines[index].replace(written, " ", 1)
                            break
    return "\n".join(lines)


def pages(tool_html: str, markdown: str) -> tuple[Page, Page]:
    """(the tool's page, github.com's page) for one document."""
    return read(normalize(tool_html)), read(normalize(_with_emoji(github_html(markdown)), github=True, unknown_as_text=True))


def first_difference(ours: Page, theirs: Page) -> str:
    """A sentence naming the first element that differs, or ''."""
    for kind in ("links", "emphasis"):
        mine, github = getattr(ours, kind), getattr(theirs, kind)
        for index, (a, b) in enumerate(zip(mine, github)):
            if a != b:
                return f"{kind[:-1] if kind == 'links' else kind} {index + 1}: the tool has {a!r}, github.com {b!r}"
        if len(mine) != len(github):
            index = min(len(mine), len(github))
            extra = mine[index] if len(mine) > index else github[index]
            return f"{kind}: the tool has {len(mine)}, github.com {len(github)} (first unmatched: {extra!r})"
    if ours.text != theirs.text:
        at = next((i for i, (a, b) in enumerate(zip(ours.text, theirs.text)) if a != b), min(len(ours.text), len(theirs.text)))
        return f"text at character {at}: the tool shows {ours.text[max(0, at - 60) : at + 60]!r}, github.com {theirs.text[max(0, at - 60) : at + 60]!r}"
    return ""

