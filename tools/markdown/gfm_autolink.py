"""GitHub's autolinks (the GFM spec's "Autolinks (extension)") as a markdown-it inline rule, by the rules of
cmark-gfm's `extensions/autolink.c`, the parser github.com runs:

- `www.` after the start of a line, white space, `*`, `_`, `~` or `(`, then a domain (segments of letters, digits,
  `-` and `_`, at least one dot, no `_` in the last two segments), then anything up to white space or `<`: the link
  gets `http://`; `http://`, `https://` and `ftp://` where a letter does not come just before the scheme;
- e-mail addresses (letters, digits, `.`, `+`, `-`, `_` before the `@`; letters, digits, `-` and `_` in segments after
  it, at least one dot, ending in a letter or a dot that is left out) get `mailto:`, and `mailto:`/`xmpp:` addresses
  keep their scheme (an `xmpp:` address may have a `/resource`);
- trailing `?`, `!`, `.`, `,`, `:`, `*`, `_`, `~`, `'` and `"` are left out, a `)` only when the link holds more
  closing than opening parentheses, a `;` with the entity-like `&name` before it (`&hl;`);
- not inside a link's text or a `[`...`]` that is not (yet) a link; never across a strikethrough delimiter, since
  the link ends before trailing tildes (`~~http://google.com~~` is struck text holding a link).

cmark-gfm finds `www.` and scheme links while it reads the inline text (so they take part in emphasis and
strikethrough as text does) and e-mail addresses in a pass over the text nodes afterwards. Here all three are found
by one inline rule: the candidates of an inline text are worked out once (linear in the text), markdown-it's `text`
rule stops at each one's first character, and the rule makes the link when it is reached outside brackets and links.
Each link token records where its text sits in the inline source (`token.meta["dest"]`), as the link model needs.
The scanners on plain strings (the domain check, the trailing delimiters, the e-mail pass) are
`tools/markdown/gfm_autolink_scan.py`'s.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from tools.markdown.gfm_autolink_scan import ALPHA, domain_ok, emails_in, host_char, trimmed_end

_SPACE = frozenset(" \t\n\v\f\r")  # cmark's ASCII white space
_WWW_AFTER = frozenset("*_~(")
_SCHEMES = ("http://", "https://", "ftp://")
_LINK_END = re.compile(r"[ \t\n\v\f\r<]")


@dataclass
class _Candidates:
    """An inline text's possible autolinks, found once: where `www.` and scheme links may start, and the e-mail
    links of cmark-gfm's text pass, by their start."""

    starts: list[int]
    kinds: dict[int, str]  # start -> "www" or "url"
    emails: dict[int, tuple[int, str, str]]  # start -> (end, href, shown text)
    brackets: list[bool] = field(default_factory=list)  # open `[`s that are not links: True while active
    run: tuple[int, int] = (-1, -1)  # (from, to): src[from:to] holds no white space or `<`, src[to] does (or ends)
    terminator: tuple[int, int] = (-1, -1)  # (from, to): src[from:to] holds no character of markdown-it's terminators

    def link_end(self, src: str, pos: int) -> int:
        """The first white space or `<` at or after `pos`, remembered for the run (a line of 50,000 `(www.` stays
        linear)."""
        low, high = self.run
        if low <= pos <= high:
            return high
        found = _LINK_END.search(src, pos)
        end = found.start() if found else len(src)
        self.run = (pos, end)
        return end


def candidates(src: str) -> _Candidates:
    kinds: dict[int, str] = {}
    position = src.find("www.")
    while position != -1:
        before = src[position - 1] if position else " "
        if before in _WWW_AFTER or before in _SPACE:
            kinds[position] = "www"
        position = src.find("www.", position + 1)
    position = src.find("://")
    while position != -1:
        begin = position
        while begin > 0 and src[begin - 1] in ALPHA:
            begin -= 1
        if src[begin:position].lower() in ("http", "https", "ftp"):
            kinds.setdefault(begin, "url")
        position = src.find("://", position + 1)
    emails = emails_in(src) if "@" in src else {}
    return _Candidates(sorted(set(kinds) | set(emails)), kinds, emails)


def _state_candidates(state: StateInline) -> _Candidates:
    try:
        return state._gfm_autolinks  # type: ignore[attr-defined]
    except AttributeError:
        found = state._gfm_autolinks = candidates(state.src)  # type: ignore[attr-defined]
        return found


def www_link(src: str, pos: int, found: _Candidates) -> tuple[int, str] | None:
    """cmark-gfm's `www_match` at `pos` (already a `www.` after an allowed character): (end, href) or None."""
    if not domain_ok(src, pos, len(src), allow_short=False):
        return None
    end = trimmed_end(src, pos, found.link_end(src, pos))
    return (end, "http://" + src[pos:end]) if end > pos else None


def url_link(src: str, pos: int, found: _Candidates) -> tuple[int, str] | None:
    """cmark-gfm's `url_match` for the scheme that starts at `pos`: (end, href) or None."""
    colon = src.find(":", pos)
    scheme = src[pos : colon + 3].lower()
    after = colon + 3
    if scheme not in _SCHEMES or after >= len(src) or not host_char(src[after]):
        return None
    if not domain_ok(src, after, len(src), allow_short=True):
        return None
    end = trimmed_end(src, colon, found.link_end(src, after))
    return (end, src[pos:end]) if end > colon else None


def _in_bracket(found: _Candidates) -> bool:
    return any(found.brackets)


def autolink_rule(state: StateInline, silent: bool) -> bool:
    if silent or state.linkLevel > 0:
        return False  # silent: inside a link's brackets, where cmark-gfm makes no autolink either
    pos = state.pos
    found = _state_candidates(state)
    if not found.starts:
        return False
    kind = found.kinds.get(pos)
    email = found.emails.get(pos)
    if kind is None and email is None:
        return False
    link = None
    if kind is not None and not _in_bracket(found):
        link = www_link(state.src, pos, found) if kind == "www" else url_link(state.src, pos, found)
    shown = None
    if link is None and email is not None:
        link, shown = email[:2], email[2]
    if link is None:
        return False
    end, href = link
    if end > state.posMax:
        return False
    url = state.md.normalizeLink(href)
    if not state.md.validateLink(url):
        return False
    opener = state.push("link_open", "a", 1)
    opener.attrs = {"href": url}
    opener.markup, opener.info = "linkify", "auto"
    opener.meta["dest"] = (pos, end)
    text = state.push("text", "", 0)
    text.content = state.src[pos:end] if shown is None else shown
    closer = state.push("link_close", "a", -1)
    closer.markup, closer.info = "linkify", "auto"
    state.pos = end
    return True


def text_rule(state: StateInline, silent: bool) -> bool:
    """markdown-it's `text` rule, which also stops where an autolink may start. The next terminator found is
    remembered: when the rule stops at autolinks, it is asked again before it, and a search to the end of the text
    each time would make a paragraph of 20,000 `www.` links quadratic."""
    pos = state.pos
    found = _state_candidates(state)
    low, high = found.terminator
    if not low <= pos <= high:
        terminator = state.md.inline.terminator_re.search(state.src, pos)
        high = terminator.start() if terminator else len(state.src)
        found.terminator = (pos, high)
    stop = min(high, state.posMax)
    starts = found.starts
    if starts:
        after = bisect.bisect_right(starts, pos)
        if after < len(starts) and starts[after] < stop:
            stop = starts[after]
    if stop <= pos:
        return False
    if not silent:
        state.append_pending(state.src[pos:stop])
    state.pos = stop
    return True


def _tracks_brackets(rule):
    """Wrap the `link` or `image` rule: while it reads a `[`'s label the bracket is open (no autolink inside, as in
    cmark-gfm), and a link closes every earlier `[` (cmark-gfm deactivates them)."""

    def wrapped(state: StateInline, silent: bool) -> bool:
        found = _state_candidates(state)
        start = state.pos
        found.brackets.append(True)
        try:
            made = rule(state, silent)
        finally:
            found.brackets.pop()
        if made and not silent and state.src[start] == "[":
            found.brackets[:] = [False] * len(found.brackets)
        return made

    return wrapped


def bracket_text_rule(state: StateInline, silent: bool) -> bool:
    """The last inline rule: a `[` or `]` that reaches it is text (no link, footnote or other rule took it). A `[`
    stays open until a `]` closes it (cmark-gfm's bracket stack); it stays text either way."""
    if not silent:
        char = state.src[state.pos]
        if char == "[":
            _state_candidates(state).brackets.append(True)
        elif char == "]":
            found = _state_candidates(state)
            if found.brackets:
                found.brackets.pop()
    return False


def gfm_autolink_plugin(md: MarkdownIt) -> None:
    """GitHub's autolinks instead of markdown-it's linkify (linkify-it's list of domain endings)."""
    md.options["linkify"] = False
    md.inline.ruler.at("text", text_rule)
    md.inline.ruler.before("text", "gfm_autolink", autolink_rule)
    md.inline.ruler.push("gfm_brackets", bracket_text_rule)
    for name in ("link", "image"):
        md.inline.ruler.at(name, _tracks_brackets(_rule(md.inline.ruler, name)))


def _rule(ruler, name: str):
    return next(rule.fn for rule in ruler.__rules__ if rule.name == name)
