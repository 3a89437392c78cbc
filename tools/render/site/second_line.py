"""The site's second line of defence: every chapter's page body goes through nh3 (ammonia, the maintained Rust
HTML sanitizer) after the tool's own raw-HTML cleaning (tools/markdown/html_sanitize.py), the first line.

The allowlist below covers what the renderer writes into a body (tools/render/html.py): GitHub's raw-HTML elements
(tools/markdown/html_allowlist.py), headings with their permalinks, highlighted code (`pre.highlight`, Pygments'
`span` classes), tables with `text-align` styles, footnotes (`section.footnotes`, `data-footnote-*`), task lists (a
disabled checkbox `<input>`), alerts (their octicon as inline SVG), math (MathML), drawn mermaid diagrams (inline SVG,
whose `<style>` the drawing stage made inert: tools/render/diagrams/browser.py, svg_check.py), `<details>` and
`<picture>`. The page around the body (tools/render/theme/) is the tool's own template, whose every value Jinja
escapes; its scripts are the tool's files. Nothing else needs an allowlist: the body is the one place where what the
author wrote becomes markup.

It changes nothing on legitimate output: nh3 serializes what it parses (entities, quotes, void tags), so its output
is compared with the same body put through nh3 with everything that body holds allowed; when the two are the same,
nh3 removed nothing and the body keeps its own bytes. When they differ, the page gets nh3's cleaned body and the
build names what was removed (a script, an event handler, a `javascript:` URL that the first line missed, which is a
bug of the tool's), so nothing the author wrote disappears without a word.
"""
from __future__ import annotations

import html
import re
from collections import Counter
from functools import lru_cache
from html.parser import HTMLParser

import nh3

from tools.core.errors import Diagnostics
from tools.markdown.html_allowlist import ELEMENT_ATTRIBUTES, ELEMENTS, GLOBAL_ATTRIBUTES
from tools.render.diagrams.svg_check import LOADING_STYLE, SVG_ELEMENTS

# What the renderer adds to GitHub's elements: the task-list checkbox, inline SVG (alert icons, mermaid drawings:
# their `<style>` too), MathML (latex2mathml's elements, and the rest of MathML Core).
MATHML_ELEMENTS = frozenset("""
    math semantics annotation maction menclose merror mfenced mfrac mi mmultiscripts mn mo mover mpadded mphantom
    mprescripts mroot mrow ms mspace msqrt mstyle msub msubsup msup mtable mtd mtext mtr munder munderover none
""".split())
TAGS = frozenset(ELEMENTS | {"input", "label"} | SVG_ELEMENTS | {name.lower() for name in SVG_ELEMENTS} | MATHML_ELEMENTS)
# Never kept, nor their content (the first line escapes them so their text shows; here they go).
REMOVED_WITH_CONTENT = frozenset("script noscript template iframe object embed applet frame frameset noembed noframes xmp plaintext textarea".split())

_ANY = frozenset(GLOBAL_ATTRIBUTES | {"class", "id", "style", "role", "title", "lang", "dir", "hidden", "xmlns", "tabindex"})
SVG_ATTRIBUTES = frozenset("""
    viewBox preserveAspectRatio x y x1 x2 y1 y2 cx cy r rx ry dx dy d points width height transform fill fill-opacity
    fill-rule clip-rule clip-path mask opacity stroke stroke-width stroke-dasharray stroke-dashoffset stroke-linecap
    stroke-linejoin stroke-miterlimit stroke-opacity marker-start marker-mid marker-end markerWidth markerHeight
    markerUnits orient refX refY gradientUnits gradientTransform spreadMethod offset stop-color stop-opacity
    patternUnits patternContentUnits patternTransform maskUnits maskContentUnits clipPathUnits filterUnits
    primitiveUnits stdDeviation flood-color flood-opacity in in2 result mode operator values type k1 k2 k3 k4 radius
    text-anchor dominant-baseline alignment-baseline baseline-shift font-family font-size font-style font-weight
    font-variant letter-spacing word-spacing text-decoration textLength lengthAdjust startOffset method spacing
    href rotate visibility display overflow color vector-effect shape-rendering text-rendering paint-order
""".split())
MATHML_ATTRIBUTES = frozenset("""
    display mathvariant mathsize mathcolor mathbackground stretchy fence separator separators form lspace rspace
    maxsize minsize largeop movablelimits symmetric accent accentunder linethickness columnalign rowalign
    columnlines rowlines columnspacing rowspacing columnwidth frame framespacing equalrows equalcolumns align
    bevelled numalign denomalign notation open close width height depth voffset displaystyle scriptlevel encoding
    linebreak rowspan columnspan
""".split())


def _attributes() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {"*": set(_ANY)}
    for tag, names in ELEMENT_ATTRIBUTES.items():
        table.setdefault(tag, set()).update(names)
    table.setdefault("a", set()).update({"href", "aria-label"})
    table.setdefault("img", set()).update({"src", "alt", "srcset", "sizes", "loading"})
    table["input"] = {"type", "disabled", "checked"}
    table["ol"] = {"start", "reversed"}
    table["details"] = {"open"}
    for tag in SVG_ELEMENTS:
        table.setdefault(tag, set()).update(SVG_ATTRIBUTES)
        table.setdefault(tag.lower(), set()).update(SVG_ATTRIBUTES)
    for tag in MATHML_ELEMENTS:
        table.setdefault(tag, set()).update(MATHML_ATTRIBUTES)
    for tag in ("th", "td"):
        table.setdefault(tag, set()).update({"colspan", "rowspan", "headers", "scope", "abbr", "align"})
    return table


ATTRIBUTES = _attributes()
PREFIXES = frozenset({"data-", "aria-"})  # inert: footnotes' `data-footnote-ref`, mermaid's `data-id`, `aria-*`
# GitHub's link schemes and ammonia's default list (tel:, ftp:, ...); `data:` only for images (`_filter`).
URL_SCHEMES = frozenset(nh3.ALLOWED_URL_SCHEMES | {"http", "https", "mailto", "xmpp", "irc", "ircs", "data"})
# What the first line refuses (markdown-it's `validateLink`; `data:` but an image's): any other scheme an author
# writes (`<made-up-scheme://x>` is a CommonMark autolink) is kept, so nh3 gets it added to its list (`_schemes`).
DENIED_SCHEMES = frozenset({"javascript", "vbscript", "file", "data"})
_DATA_IMAGE = re.compile(r"\s*data:image/(?:png|gif|jpeg|jpg|webp|avif|svg\+xml)[;,]", re.IGNORECASE)
_SCHEME = re.compile(r"[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-\t\n\r]*):")
_URL_ATTRIBUTES = frozenset({"href", "src", "srcset", "cite", "longdesc", "itemtype", "action", "formaction", "poster", "background"})
_URL_SCHEME = re.compile(r"""\b(?:{})\s*=\s*["']?[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-]*):""".format("|".join(sorted(_URL_ATTRIBUTES))), re.IGNORECASE)
_TAG_START = re.compile(r"<([A-Za-z][^\s/>]*)")
# An attribute's name, found in the reversed text: `=`, blanks, the name, then what may come before a name (a blank,
# a `/`, a quote). A search that starts at a literal `=` runs eight times faster than one that starts at every blank.
_ATTRIBUTE_NAME = re.compile(r"""=\s*([^\s"'<>/=&;]+)(?=[\s/"'])""")
_STYLE_VALUE = re.compile(r'\sstyle="([^"]*)"')
_STYLE_ELEMENT = re.compile(r"(<style\b[^>]*>)(.*?)(</style>)", re.DOTALL)


def _url_allowed(tag: str, value: str) -> bool:
    """A URL nh3 would keep for its scheme, narrowed: `data:` only as an image's source."""
    match = _SCHEME.match(value)
    if match is None:
        return True
    scheme = re.sub(r"[\t\n\r]", "", match.group(1)).lower()
    if scheme == "data":
        return tag in ("img", "source") and _DATA_IMAGE.match(value) is not None
    return scheme not in DENIED_SCHEMES


def _filter(tag: str, attribute: str, value: str) -> str | None:
    """What nh3 keeps of an allowed attribute: URLs of allowed schemes (each of a `srcset`), styles that load nothing."""
    if attribute in _URL_ATTRIBUTES:
        urls = [part.split()[0] for part in value.split(",") if part.split()] if attribute == "srcset" else [value]
        return value if all(_url_allowed(tag, url) for url in urls) else None
    if attribute == "style":
        return None if LOADING_STYLE.search(value) or "javascript:" in value.lower() else value
    return value


@lru_cache(maxsize=16)
def _cleaner(checked: bool, schemes: frozenset[str] = frozenset()) -> nh3.Cleaner:
    """nh3 with the allowlist, made once per process: `nh3.clean` converts the allowlist again at every call (6 ms,
    more than cleaning a chapter). `checked`: with `_filter` (a Python call per attribute, twice the time), else with
    no `data:` URL at all (nh3 cannot tell an image's from a page's) and no look into styles and `srcset`s.
    `schemes`: the body's other schemes that the first line keeps (`_schemes`)."""
    return nh3.Cleaner(tags=set(TAGS), clean_content_tags=set(REMOVED_WITH_CONTENT), attributes=ATTRIBUTES, generic_attribute_prefixes=set(PREFIXES),
                       attribute_filter=_filter if checked else None, url_schemes=set(URL_SCHEMES if checked else URL_SCHEMES - {"data"}) | schemes,
                       strip_comments=True, link_rel=None)


def _clean(body: str, checked: bool) -> str:
    return _cleaner(checked, _schemes(body)).clean(body)


def _schemes(body: str) -> frozenset[str]:
    """The schemes of the body's URLs that neither nh3's list nor the first line's refusals name (an over-count,
    from text that only looks like an attribute, adds a harmless scheme)."""
    if ":" not in body:
        return frozenset()
    found = {name.lower() for name in _URL_SCHEME.findall(body)}
    return frozenset(found - URL_SCHEMES - DENIED_SCHEMES)


def _needs_filter(cleaned: str) -> bool:
    """Whether nh3's output has what only `_filter` and `_inert_styles` look into: a `srcset`, a style (attribute or
    element) that would load something. In nh3's serialization every attribute is `name="value"`, with only `&`,
    `"` and no-break spaces escaped."""
    if "srcset=" in cleaned or any(_loads(value) for value in _STYLE_VALUE.findall(cleaned)):
        return True
    return "<style" in cleaned and any(_loads(match.group(2)) for match in _STYLE_ELEMENT.finditer(cleaned))


def _loads(style: str) -> bool:
    return LOADING_STYLE.search(style) is not None or "javascript:" in style.lower()


def _inert_styles(cleaned: str) -> tuple[str, int]:
    """Each `<style>` (a drawing's) that would load something, emptied (nh3 keeps an allowed element's text as it
    is), and how many were. In nh3's serialization a `<style>` inside SVG has its `<` escaped: none ends early."""
    emptied = 0

    def inert(match: re.Match) -> str:
        nonlocal emptied
        if not _loads(match.group(2)):
            return match.group(0)
        emptied += 1
        return match.group(1) + match.group(3)

    return (_STYLE_ELEMENT.sub(inert, cleaned) if "<style" in cleaned else cleaned), emptied


def _markup(text: str) -> Counter[str]:
    """The start tags (`<img`), attribute names (`onerror=`) and comments of `text`, counted without regard to case.
    An over-count (the same words in the text) is harmless: the test is that the cleaned body has each at least as
    often. A name is counted where HTML's tokenizer could start one: after a blank, a `/` or a quote; never inside
    an entity (`&#39;a=1`), which nh3 writes out (`'a=1`)."""
    found = Counter(name.lower() for name in _TAG_START.findall(text))
    found.update(name[::-1].lower() + "=" for name in _ATTRIBUTE_NAME.findall(text[::-1]))
    found["<!--"] += text.count("<!--")
    return found


_URL_VALUE = re.compile(r'(\s({})=")([^"]*)(")'.format("|".join(sorted(_URL_ATTRIBUTES))), re.IGNORECASE)


def _masked_urls(body: str) -> str:
    """The body with each URL that `_url_allowed` keeps (its scheme, as a browser reads it after entities and
    blanks, is no refused one) put as `#`: nh3 also drops a URL whose host the URL standard rejects
    (`https://example.com%5Bx%5D(y)`, an autolink GitHub makes), which is inert, not unsafe. In the serialized body
    every attribute is `name="value"` (the renderer's and the first line's output)."""

    def mask(match: re.Match) -> str:
        start = body.rfind("<", 0, match.start())
        tag = _TAG_START.match(body, start)
        value = html.unescape(match.group(3))
        urls = [part.split()[0] for part in value.split(",") if part.split()] if match.group(2).lower() == "srcset" else [value]
        if tag is None or not all(_url_allowed(tag.group(1).lower(), url) for url in urls):
            return match.group(0)
        return f"{match.group(1)}#{match.group(4)}"

    return _URL_VALUE.sub(mask, body)


def second_line(body: str) -> tuple[str, list[str]]:
    """The body itself when nh3 removes nothing from it; else nh3's cleaned body and what it removed (`removed`).
    nh3's parse also drops on its own what it cannot place (a `<style>` it finds in MathML's text, a URL it cannot
    read): that too is a removal, so the test is made on the body's own markup, not on another nh3 output."""
    if "<" not in body:
        return body, []
    before = _markup(body)
    cleaned = _clean(body, checked=False)
    if not before - _markup(cleaned) and not _needs_filter(cleaned):
        return body, []
    cleaned, emptied = _inert_styles(_clean(body, checked=True))
    if not before - _markup(cleaned) and not emptied:
        return body, []
    masked = _masked_urls(body)
    if masked != body:
        kept, emptied_masked = _inert_styles(_clean(masked, checked=True))
        if not _markup(masked) - _markup(kept) and not emptied_masked:
            return body, []  # nh3 only dropped URLs it cannot read (a host with `[`), which the first line's rule allows
    gone = removed(body, cleaned) + (["a <style> that would load something"] if emptied else [])
    return cleaned, gone or ["markup it could not place"]


class _Markup(HTMLParser):
    """Each start tag, attribute (with its value) and comment of a serialized body, counted."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.seen: Counter[str] = Counter()

    def handle_starttag(self, tag, attrs):
        self.seen[f"<{tag}>"] += 1
        for name, value in attrs:
            shown = f"{name}=\"{_short(value or '')}\"" if name in _URL_ATTRIBUTES or name == "style" else name
            self.seen[f"{shown} on <{tag}>"] += 1

    def handle_comment(self, data):
        self.seen["an HTML comment"] += 1


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def removed(before: str, after: str) -> list[str]:
    """What `before` holds that `after` lacks: elements, attributes, comments (at most a few, the rest counted)."""
    counted = []
    for text in (before, after):
        parser = _Markup()
        parser.feed(text)
        parser.close()
        counted.append(parser.seen)
    return sorted((counted[0] - counted[1]).keys())


def report_removed(chapter, removed: list[str], diagnostics: Diagnostics) -> None:
    """One sentence for a page from which nh3 removed something the tool's own cleaning let through: at the first
    line of the chapter that names something removed (`<script`, `onerror`), else at its first line."""
    words = ["<!--" if item == "an HTML comment" else "<style" if item.startswith("a <style>") else item.split()[0].split("=")[0].rstrip(">") for item in removed]
    lines = chapter.text.lower().splitlines()
    found = next((number for number, line in enumerate(lines, 1) if any(word.lower() in line for word in words)), 1)
    shown = ", ".join(removed[:8]) + (f" and {len(removed) - 8} more" if len(removed) > 8 else "")
    diagnostics.error(chapter.path, found, f"the site's second HTML sanitizer (nh3) removed {shown} from this chapter's page, which the tool's own cleaning let through.",
                      suggestion="Take what it names out of the chapter, and report this to the tool's maintainers: the first cleaning should have shown or removed it.", code="unsafe-html")
