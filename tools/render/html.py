"""Markdown tokens to HTML, with links, images, raw-HTML attributes and heading ids rewritten for one output format.

The token stream is shared by every format and never mutated here: each format passes a `LinkPolicy` that maps a
resolved link to a URL and an anchor to an id, and the renderer applies it while writing HTML.
"""
from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from tools.book.collect import INLINE_DEPTH, html_too_deep
from tools.book.diagrams import Drawing, is_mermaid_fence
from tools.book.link_model import Link, theme_variant
from tools.markdown.html_attrs import LINK_ATTRS
from tools.markdown.html_sanitize import clean_html
from tools.markdown.math import INLINE_TYPES as INLINE_MATH, is_math_fence
from tools.render.alerts import alert_title_open
from tools.render.diagrams.html import diagram_html
from tools.render.footnotes_tasks import footnote_anchor, footnote_block_close, footnote_block_open, footnote_open, footnote_ref, is_task_checkbox, task_checkbox
from tools.render.math import math_html


@dataclass
class LinkPolicy:
    url_for: Callable[[Link], str | None]  # the href/src a link gets in this format; None: no link, keep the text
    id_for: Callable[[str], str]  # the id an anchor of the current chapter gets
    permalinks: bool = True
    max_depth: int | None = None  # PDF, EPUB: a chapter whose raw HTML nests deeper shows its HTML as text
    xhtml: bool = False  # EPUB: raw HTML keeps only attributes XHTML 5 allows
    print_style: bool = False  # PDF: raw HTML keeps `style` (WeasyPrint runs no script; its URL fetcher guards reads)
    dark_images: bool = True  # the site shows `#gh-dark-mode-only` images in its dark theme; print and EPUB leave them out
    math_svg: bool = False  # PDF: math as SVG images (WeasyPrint does not lay out MathML)
    checkbox_glyphs: bool = False  # PDF: task-list checkboxes as ☑/☐ (WeasyPrint lays an `<input>` out as a block)


_FORMATTER = HtmlFormatter(nowrap=True)
_LEXERS: dict[str, Lexer | Literal[False]] = {}  # False: no lexer has this name


_FENCE_INFO = re.compile(r"^[ \t>]{0,8}(?:`{3,}|~{3,})[ \t]*([^\s`]+)", re.M)  # the first word of a fence's info string


def _lexer(name: str) -> Lexer | Literal[False]:
    lexer = _LEXERS.get(name)
    if lexer is None:
        try:
            lexer = get_lexer_by_name(name, stripnl=False, ensurenl=False)  # a lexer's rules compile on its first use
        except ClassNotFound:
            lexer = False
        _LEXERS[name] = lexer
    return lexer


def warm_lexers(sources: Iterable[str]) -> None:
    """Look up the lexer of every fence language the markdown `sources` name. The chapter pool calls it before
    forking, so its workers share the compiled rules (the Python lexer's take 25-40 ms) instead of each compiling its
    own; a name that is no fence's, or no language's, only costs its lookup."""
    for text in sources:
        for name in set(_FENCE_INFO.findall(text)):
            _lexer(name.lower())


def highlight(code: str, lang: str) -> str:
    """Pygments highlighting at build time; an unknown language is shown as plain escaped text."""
    name = (lang or "").strip().split()[0].lower() if lang and lang.strip() else ""
    lexer = _lexer(name) if name else False
    body = pygments_highlight(code, lexer, _FORMATTER) if lexer else html_lib.escape(code)
    label = f' data-lang="{html_lib.escape(name)}"' if name else ""
    return f'<pre class="highlight"{label}><code>{body}</code></pre>\n'


def fixed_urls(links: list[Link], urls: Sequence[str | None]) -> Callable[[Link], str | None]:
    """A `url_for` that answers with URLs worked out beforehand, one per link of the chapter in order: the main
    process, which holds the whole book, works them out; a worker that holds the tokens renders with them."""
    if len(links) != len(urls):
        raise ValueError(f"{len(urls)} URLs for {len(links)} links")
    table = {id(link): url for link, url in zip(links, urls)}
    return lambda link: table[id(link)]


def _links_by_token(links: list[Link]) -> dict[int, Link]:
    table: dict[int, Link] = {}
    for link in links:
        for entry in link.tokens:
            token = entry[0] if isinstance(entry, tuple) else entry
            if isinstance(entry, tuple):
                table[id(entry[1])] = link
            else:
                table[id(token)] = link
    return table


class BookRenderer(RendererHTML):
    """markdown-it's HTML renderer with the book's rewrites; one instance per chapter render."""

    def __init__(self, links: list[Link], policy: LinkPolicy, raw_html: bool = True, drawings: Mapping[str, Drawing] | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.by_token = _links_by_token(links)
        self.raw_html = raw_html
        self.drawings = drawings or {}  # mermaid sources drawn by the build (tools/render/diagrams/stage.py); the others stay code
        self.diagrams_shown = 0
        self.label_math = False  # inside a header cell that holds only math (th_open)
        self.empty_header = False  # an empty header cell, written as a <td>

    def renderInline(self, tokens, options, env):  # noqa: N802 (markdown-it's name)
        if self.policy.max_depth is not None and any(t.level >= INLINE_DEPTH for t in tokens):
            tokens = [t for t in tokens if not (t.nesting and t.level >= INLINE_DEPTH)]  # their text stays
        return super().renderInline(tokens, options, env)

    def _url(self, token: Token, fallback: str) -> str | None:
        link = self.by_token.get(id(token))
        return self.policy.url_for(link) if link is not None else fallback

    def heading_open(self, tokens, idx, options, env):
        token = tokens[idx]
        anchor = token.meta.get("anchor")
        if anchor is None:
            return self.renderToken(tokens, idx, options, env)
        ident = html_lib.escape(self.policy.id_for(anchor))
        return f'<{token.tag} id="{ident}">' if ident else f"<{token.tag}>"  # GitHub's empty id (`## 🎉`): HTML has none

    def heading_close(self, tokens, idx, options, env):
        opener = tokens[idx - 2] if idx >= 2 and tokens[idx - 2].type == "heading_open" else None  # open, inline, close
        if self.policy.permalinks and opener is not None and "anchor" in opener.meta:
            ident = html_lib.escape(self.policy.id_for(opener.meta["anchor"]))
            return f'<a class="permalink" href="#{ident}" aria-label="Permalink to this section">#</a></{tokens[idx].tag}>\n'
        return f"</{tokens[idx].tag}>\n"

    def link_open(self, tokens, idx, options, env):
        token = tokens[idx]
        href = self._url(token, token.attrs.get("href", ""))
        title = token.attrs.get("title")
        attrs = f' href="{html_lib.escape(href)}"' if href is not None else ""
        if title:
            attrs += f' title="{html_lib.escape(str(title))}"'
        return f"<a{attrs}>"

    def alert_title_open(self, tokens, idx, options, env):
        return alert_title_open(tokens, idx, self.policy.xhtml, icon=not self.policy.print_style)

    def image(self, tokens, idx, options, env):
        token = tokens[idx]
        variant = theme_variant(str(token.attrs.get("src", "")))
        if variant == "dark" and not self.policy.dark_images:
            return ""
        src = self._url(token, token.attrs.get("src", ""))
        alt = self.renderInlineAsText(token.children or [], options, env)
        if src is None:
            return f'<span class="missing-image">{html_lib.escape(alt)}</span>'
        title = token.attrs.get("title")
        extra = f' title="{html_lib.escape(str(title))}"' if title else ""
        if variant and self.policy.dark_images:  # shown in the matching theme only (style.css)
            extra += f' class="gh-{variant}-mode-only"'
        return f'<img src="{html_lib.escape(src)}" alt="{html_lib.escape(alt)}"{extra}>'

    def footnote_ref(self, tokens, idx, options, env):
        return footnote_ref(tokens[idx], self.policy.id_for)

    def footnote_block_open(self, tokens, idx, options, env):
        return footnote_block_open(heading=not self.policy.xhtml)

    def footnote_block_close(self, tokens, idx, options, env):
        return footnote_block_close()

    def footnote_open(self, tokens, idx, options, env):
        return footnote_open(tokens[idx], self.policy.id_for)

    def footnote_anchor(self, tokens, idx, options, env):
        return footnote_anchor(tokens[idx], self.policy.id_for)

    def _raw_html(self, token: Token) -> str:
        """The token's HTML with link and id attributes rewritten, then cleaned to what GitHub shows (the one place
        every format's raw HTML goes through: tools/markdown/html_sanitize.py)."""
        return clean_html(self._rewritten(token), xhtml=self.policy.xhtml, style=self.policy.print_style)

    def _rewritten(self, token: Token) -> str:
        """The token's HTML with each link and id attribute rewritten; the start tag of an image shown only in the
        dark theme (`<img src="x.png#gh-dark-mode-only">`, a `<picture>`'s dark `<source>`) is left out where the
        format has no dark theme (PDF, EPUB)."""
        attrs = token.meta.get("html_attrs")
        if not attrs:
            return token.content
        dropped = set()  # start tags left out
        for attr in attrs:
            link = self.by_token.get(id(attr)) if attr.name in LINK_ATTRS else None
            if link is not None and link.theme == "dark" and not self.policy.dark_images:
                dropped.add(attr.tag_span)
        edits = [(start, end, "") for start, end in dropped]
        for attr in attrs:
            if attr.tag_span in dropped:
                continue
            if attr.name in LINK_ATTRS:
                link = self.by_token.get(id(attr))
                if link is None:
                    continue
                url = self.policy.url_for(link) or ""
                if url and link.theme and not link.media_theme and self.policy.dark_images:
                    url = url.partition("#")[0] + f"#gh-{link.theme}-mode-only"  # as on GitHub: style.css shows it in that theme only
                value = html_lib.escape(url)
            else:
                value = html_lib.escape(self.policy.id_for(html_lib.unescape(attr.value)))
            edits.append((attr.offset, attr.offset + len(attr.value), value))
        text = token.content
        for start, end, value in sorted(edits, reverse=True):
            text = text[:start] + value + text[end:]
        return text

    def html_block(self, tokens, idx, options, env):
        if not self.raw_html:
            return f'<pre class="raw-html">{html_lib.escape(tokens[idx].content)}</pre>\n'
        return self._raw_html(tokens[idx])

    def html_inline(self, tokens, idx, options, env):
        if is_task_checkbox(tokens, idx):
            return task_checkbox(tokens[idx], self.policy.xhtml, self.policy.checkbox_glyphs)
        return self._raw_html(tokens[idx]) if self.raw_html else html_lib.escape(tokens[idx].content)

    def fence(self, tokens, idx, options, env):
        token = tokens[idx]
        if is_math_fence(token):
            return math_html(token.content, True, self.policy.math_svg)
        drawing = self.drawings.get(token.content) if is_mermaid_fence(token) else None
        if drawing is not None:
            self.diagrams_shown += 1  # each occurrence's ids its own, also in the PDF's one document (`id_for`)
            own = self.policy.id_for(f"{drawing.ident}-{self.diagrams_shown}")
            return diagram_html(token.content, drawing, own, both_themes=self.policy.dark_images, marked=self.policy.xhtml)
        return highlight(token.content, token.info)

    def th_open(self, tokens, idx, options, env):
        """A header cell holding only math: each formula is named by its text (role="math", aria-label), so that the
        header has a name every reader finds, MathML or not (axe's and Ace's `empty-table-header`; XHTML allows no
        aria-label on `<math>` itself). An empty header cell (`| | a | b |`'s corner) heads nothing: it is a `<td>`."""
        inline = tokens[idx + 1] if idx + 1 < len(tokens) else None
        children = (inline.children or []) if inline is not None and inline.type == "inline" else []
        blank = [child for child in children if not (child.type == "text" and not child.content.strip())]
        self.label_math = bool(blank) and all(child.type in INLINE_MATH for child in blank)
        self.empty_header = not blank and inline is not None and not inline.content.strip()
        if self.empty_header:
            token = tokens[idx].copy()  # the tokens are shared by every format's render
            token.tag = "td"
            return self.renderToken([token], 0, options, env)
        return self.renderToken(tokens, idx, options, env)

    def th_close(self, tokens, idx, options, env):
        self.label_math = False
        if self.empty_header:
            self.empty_header = False
            token = tokens[idx].copy()
            token.tag = "td"
            return self.renderToken([token], 0, options, env)
        return self.renderToken(tokens, idx, options, env)

    def math_inline(self, tokens, idx, options, env):
        return math_html(tokens[idx].content, False, self.policy.math_svg, labelled=self.label_math)

    def math_inline_double(self, tokens, idx, options, env):  # `$$...$$` inside a paragraph: display math
        return math_html(tokens[idx].content, True, self.policy.math_svg, in_paragraph=True, labelled=self.label_math)

    def math_block(self, tokens, idx, options, env):
        return math_html(tokens[idx].content, True, self.policy.math_svg)

    def code_block(self, tokens, idx, options, env):
        return highlight(tokens[idx].content, "")


def render_chapter_html(md, tokens: list[Token], links: list[Link], policy: LinkPolicy, env: dict,
                        drawings: Mapping[str, Drawing] | None = None) -> str:
    """HTML of one chapter; `env` may carry `docId`, which the footnote plugin puts into its ids; `drawings`: its
    mermaid diagrams that were drawn."""
    raw_html = policy.max_depth is None or html_too_deep(tokens, policy.max_depth) is None  # collect reported it
    renderer = BookRenderer(links, policy, raw_html, drawings)
    for name, rule in md.renderer.rules.items():  # plugins' rules (footnotes, front matter)
        renderer.rules.setdefault(name, rule)
    return renderer.render(tokens, md.options, dict(env))


@lru_cache(maxsize=1)  # the same for the whole process: a running `tools serve` asks at every rebuild
def pygments_css() -> str:
    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style="monokai").get_style_defs('[data-theme="dark"] .highlight')
    return f"{light}\n{dark}\n"
