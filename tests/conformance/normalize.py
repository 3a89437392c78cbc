"""HTML normalised for comparison, the way cmark's own `test/normalize.py` does it, minus what the tool adds on purpose.

As in cmark's normaliser (written again here; its rules, not its code):
- white space: runs collapse to one space outside `<pre>`, and white space next to a block tag goes;
- attributes: sorted by name; `href`/`src` percent-encoding made canonical (decoded, then encoded again);
- self-closing tags: `<br />` is `<br>`;
- entities and character references: decoded, then only `<`, `>`, `&` and `"` written as entities.

Ignored, because the tool adds them on purpose (each is a documented feature of its output):
- heading ids (`<h2 id="...">`, GitHub gives them too, through the slugger suite, which tests them on their own) and
  the permalink anchor in every site heading (`<a class="permalink">#</a>`);
- highlighting: Pygments' `<span>`s inside `<pre>`, and the `data-lang` that names the fence's language;
- wrapper and screen-reader-only elements: the alert box (`div.markdown-alert`, with its title), the footnotes'
  hidden "Footnotes" label (`.sr-only`) and the copy button's wrapper (`div.code-block`, added by script only);
- `class` and `aria-*` attributes, and the footnotes' `data-footnote*` markers (github.com's own markup has those);
- the footnotes' id scheme: `fn-1`/`fnref-1` (github.com's, which the tool writes) and `fn1`/`fnref1` (the spec's,
  from an older cmark-gfm) are the same ids;
- how a table cell says its alignment: `style="text-align: center"` (the tool; the EPUB's XHTML has no `align`) and
  `align="center"` (the spec) look the same;
- a boolean attribute's value: `disabled=""` and `disabled="disabled"` are the same attribute;
- a `<strong>` whose parent is a `<strong>` (CommonMark's `__foo __bar__ baz__`; cmark-gfm's renderer leaves its
  tags out): bold inside bold looks the same, so the inner one's tags go;
- an address's host in punycode (`xn--ei8h.ga`, markdown-it's) and in percent-encoded UTF-8 (`%F0%9F%8D%84.ga`,
  cmark's) name the same host.

The reference (the spec's HTML, or cmark-gfm's) is read as github.com shows it (`github=True`): github.com passes
cmark-gfm's HTML through its sanitiser, which leaves out comments, processing instructions, declarations and CDATA,
the tags of elements it does not allow (their text stays) and attributes it does not allow. tools/markdown/html_allowlist.py
records that allowlist (html-pipeline's, with what github.com keeps besides); the tool's own output is compared as it
is, so an element or attribute it lets through that github.com removes still shows as a difference. github.com's
sanitiser also drops a link's address when its scheme is not one it allows (`ftp:`, `foo:`), in markdown links too;
the tool keeps them (tools/markdown/parser.py validates links as markdown-it does), and they are compared as written.
"""
from __future__ import annotations

import re
from html.entities import name2codepoint
from html.parser import HTMLParser
from urllib.parse import quote, unquote

from tools.markdown.html_allowlist import ELEMENTS, allowed_attribute, html_elements

BLOCK_TAGS = frozenset("""
    article header aside hgroup blockquote hr iframe body li map button object canvas ol caption output col p colgroup
    pre dd progress section dl table td dt tbody embed textarea fieldset tfoot figcaption th figure thead footer tr form
    ul h1 h2 h3 h4 h5 h6 video script style div details summary
""".split())
_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
BOOLEAN = frozenset({"disabled", "checked", "open", "hidden", "reversed", "selected", "multiple", "readonly", "required"})
TOOL_DATA = frozenset({"data-lang", "data-footnote-ref", "data-footnote-backref", "data-footnote-backref-idx", "data-footnotes"})
_FOOTNOTE_ID = re.compile(r"^(#?)(?:user-content-)?(fn|fnref)-?(\d+)(?:-(\d+))?$")
_ALIGN = re.compile(r"^\s*text-align\s*:\s*(left|right|center)\s*;?\s*$", re.I)
_SPACE = re.compile(r"\s+")


def _dropped_element(tag: str, attrs: dict[str, str | None]) -> bool:
    """Elements the tool adds whose whole content goes too: permalinks, hidden labels."""
    classes = (attrs.get("class") or "").split()
    return (tag == "a" and "permalink" in classes) or "sr-only" in classes or (tag == "p" and "markdown-alert-title" in classes)


def _unwrapped(tag: str, attrs: dict[str, str | None]) -> bool:
    """Wrapper elements the tool adds whose content stays: the alert box, the copy button's block."""
    classes = (attrs.get("class") or "").split()
    return tag == "div" and ("markdown-alert" in classes or "code-block" in classes)


def _footnote_id(value: str) -> str:
    match = _FOOTNOTE_ID.match(value)
    if match is None:
        return value
    hash_, kind, number, sub = match.groups()
    return f"{hash_}{kind}{number}" + (f"-{sub}" if sub else "")


def _host_unicode(url: str) -> str:
    """The URL with each punycode label of its host (`xn--...`) decoded."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)$", url, re.S)
    if match is None or "xn--" not in match.group(2).lower():
        return url
    labels = []
    for label in match.group(2).split("."):
        try:
            labels.append(label[4:].encode("ascii").decode("punycode") if label.lower().startswith("xn--") else label)
        except (UnicodeError, ValueError):
            labels.append(label)
    return match.group(1) + ".".join(labels) + match.group(3)


class _Normaliser(HTMLParser):
    def __init__(self, github: bool = False, unknown_as_text: bool = False) -> None:
        super().__init__(convert_charrefs=False)
        self.github = github
        self.unknown_as_text = unknown_as_text
        self.out: list[str] = []
        self.last = "starttag"
        self.last_tag = ""
        self.in_pre = 0
        self.skipping: list[str] = []  # the stack of a dropped element's open tags
        self.unwrapped: list[int] = []  # depths of wrapper divs whose end tag goes too
        self.divs = 0
        self.tags_written = 0
        self.open: list[str] = []  # the open elements, innermost last
        self.strong: list[bool] = []  # open <strong>s: whether each was written (False: inside another, left out)

    # what comes out
    def _text(self) -> str:
        return "".join(self.out)

    def _rstrip(self) -> None:
        text = self._text().rstrip()
        self.out = [text]

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        after_tag = self.last in ("starttag", "endtag")
        if after_tag and self.last_tag == "br":
            data = data.lstrip("\n")
        if not self.in_pre:
            data = _SPACE.sub(" ", data)
        if after_tag and self.last_tag in BLOCK_TAGS and not self.in_pre:
            data = data.lstrip() if self.last == "starttag" else data.strip()
        if data and not self.in_pre and data[0] == " " and self.last == "data" and self.out and self.out[-1].endswith(" "):
            data = data[1:]  # white space on both sides of a tag left out is one space
        if data:
            self.out.append(_escape(data))
            self.last = "data"

    def _char(self, char: str | None, fallback: str) -> None:
        if self.skipping:
            return
        self.out.append({"<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;"}.get(char, char) if char is not None else fallback)
        self.last = "ref"

    def handle_entityref(self, name: str) -> None:
        code = name2codepoint.get(name)
        self._char(chr(code) if code is not None else None, f"&{name};")

    def handle_charref(self, name: str) -> None:
        try:
            char: str | None = chr(int(name[1:], 16) if name[:1] in "xX" else int(name))
        except (ValueError, OverflowError):
            char = None
        self._char(char if char != "\0" else "\ufffd", f"&#{name};")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if self.skipping:
            self.skipping.append(tag)
            return
        if _dropped_element(tag, named):
            self.skipping.append(tag)
            return
        if tag == "div":
            self.divs += 1
            if _unwrapped(tag, named):
                self.unwrapped.append(self.divs)
                return
        if tag == "pre":
            self.in_pre += 1
        if self.in_pre and tag == "span":
            return
        if self.unknown_as_text and tag not in html_elements():
            self.handle_data(self.get_starttag_text() or f"<{tag}>")
            return
        if self.github and tag not in ELEMENTS and tag != "input":
            return
        if tag not in _VOID:
            self.open.append(tag)
        if tag == "strong":
            written = len(self.open) < 2 or self.open[-2] != "strong"  # cmark-gfm: not when its parent is a strong
            self.strong.append(written)
            if not written:
                return
        if self.github:
            attrs = [(name, value) for name, value in attrs if _github_keeps(tag, name, value)]
        if tag in BLOCK_TAGS:
            self._rstrip()
        self.out.append(f"<{tag}{self._attributes(tag, attrs)}>")
        self.last_tag, self.last = tag, "starttag"
        self.tags_written += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        before = self.tags_written
        self.handle_starttag(tag, attrs)
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()
        if tag not in _VOID and self.open and self.open[-1] == tag:
            self.open.pop()  # `<a/>`: nothing is inside it
        if self.tags_written > before:
            self.last_tag, self.last = tag, "endtag"

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag in self.skipping:
                while self.skipping and self.skipping.pop() != tag:
                    pass
            return
        if tag == "div":
            if self.unwrapped and self.unwrapped[-1] == self.divs:
                self.unwrapped.pop()
                self.divs -= 1
                return
            self.divs = max(self.divs - 1, 0)
        if self.in_pre and tag == "span":
            return
        if self.unknown_as_text and tag not in html_elements():
            self.handle_data(f"</{tag}>")
            return
        if self.github and tag not in ELEMENTS and tag != "input":
            return
        if tag in self.open:
            while self.open.pop() != tag:
                pass
        if tag == "strong" and self.strong and not self.strong.pop():
            return
        if tag == "pre":
            self.in_pre = max(self.in_pre - 1, 0)
        elif tag in BLOCK_TAGS:
            self._rstrip()
        self.out.append(f"</{tag}>")
        self.last_tag, self.last = tag, "endtag"

    def handle_comment(self, data: str) -> None:
        if not self.skipping and not self.github:
            self.out.append(f"<!--{data}-->")
            self.last = "comment"

    def handle_decl(self, decl: str) -> None:
        if not self.skipping and not self.github:
            self.out.append(f"<!{decl}>")
            self.last = "decl"

    def unknown_decl(self, data: str) -> None:
        if not self.skipping and not self.github:
            self.out.append(f"<![{data}]]>")
            self.last = "decl"

    def handle_pi(self, data: str) -> None:
        if not self.skipping and not self.github:
            self.out.append(f"<?{data}>")
            self.last = "pi"

    @staticmethod
    def _attributes(tag: str, attrs: list[tuple[str, str | None]]) -> str:
        kept: dict[str, str | None] = {}
        for name, value in attrs:
            if name == "class" or name.startswith("aria-") or name in TOOL_DATA or name in kept:
                continue
            if name == "id" and tag in HEADINGS:
                continue
            if name == "style" and tag in ("th", "td") and value is not None and (align := _ALIGN.match(value)):
                name, value = "align", align.group(1).lower()
            if name in BOOLEAN and (value is None or value in ("", name)):
                value = None
            if name in ("id", "href") and value:
                value = _footnote_id(value)
            kept[name] = value
        parts = []
        for name in sorted(kept):
            value = kept[name]
            if value is None:
                parts.append(f" {name}")
            elif name in ("href", "src"):
                value = _host_unicode(value)
                parts.append(f' {name}="{_escape(quote(unquote(value), safe="/:?#=&;%@+$,!~*()[]-._"))}"')
            else:
                parts.append(f' {name}="{_escape(value)}"')
        return "".join(parts)


def _github_keeps(tag: str, name: str, value: str | None) -> bool:
    if name == "class" or name.startswith("aria-") or name in TOOL_DATA:
        return True  # ignored on both sides anyway
    if tag == "input":
        return name in ("type", "checked", "disabled")
    return allowed_attribute(tag, name)


def _escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def normalize(html: str, github: bool = False, unknown_as_text: bool = False) -> str:
    """`html` normalised for comparison; with `github`, as github.com's sanitiser would leave it (the reference);
    with `unknown_as_text`, a tag that is no HTML element is text, as the tool shows it on purpose (documented)."""
    parser = _Normaliser(github, unknown_as_text)
    parser.feed(html)
    parser.close()
    return parser._text().strip()
