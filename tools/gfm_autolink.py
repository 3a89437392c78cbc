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
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

# cmark's ASCII white space, and the code points utf8proc counts as white space
_SPACE = frozenset(" \t\n\v\f\r")
_UNICODE_SPACE = frozenset([9, 10, 12, 13, 32, 160, 5760, *range(8192, 8203), 8239, 8287, 12288])
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ALPHA = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TRAILING = frozenset("?!.,:*_~'\"")
_WWW_AFTER = frozenset("*_~(")
_SCHEMES = ("http://", "https://", "ftp://")
_LINK_END = re.compile(r"[ \t\n\v\f\r<]")


def _hostchar(char: str) -> bool:
    """cmark-gfm's `is_valid_hostchar`: not white space, not punctuation (ASCII punctuation and symbols, or a
    Unicode P* character)."""
    code = ord(char)
    if code in _UNICODE_SPACE:
        return False
    if code < 128:
        return char not in _ASCII_PUNCTUATION
    return not unicodedata.category(char).startswith("P")


def _bytes_at_least(src: str, pos: int, end: int, count: int) -> bool:
    """Whether src[pos:end] is at least `count` bytes long in UTF-8 (cmark-gfm counts bytes)."""
    total = 0
    for char in src[pos : min(end, pos + count)]:
        total += 1 if ord(char) < 0x80 else 2 if ord(char) < 0x800 else 3 if ord(char) < 0x10000 else 4
        if total >= count:
            return True
    return False


def _domain_ok(src: str, start: int, end: int, allow_short: bool) -> bool:
    """cmark-gfm's `check_domain` on src[start:end] (the rest of the inline text): no `_` in the last two segments
    (unless there are more than 10), and for `www.` at least one dot. It reads bytes, from the second one, and stops
    before the text's last byte or at the first byte that is no host character (so after a non-ASCII character)."""
    if ord(src[start]) >= 0x80:
        return allow_short  # its second byte is a continuation byte, which is no host character
    dots = underscores_before = underscores = 0
    index = start + 1
    while _bytes_at_least(src, index, end, 2):  # `i < size - 1`
        char = src[index]
        if char == "\\" and _bytes_at_least(src, index, end, 3):
            index += 1
            char = src[index]
        if char == "_":
            underscores += 1
        elif char == ".":
            underscores_before, underscores = underscores, 0
            dots += 1
        elif char != "-" and not _hostchar(char):
            break
        if ord(char) >= 0x80:
            break
        index += 1
    if (underscores_before or underscores) and dots <= 10:
        return False
    return allow_short or dots > 0


def trimmed_end(src: str, start: int, end: int) -> int:
    """cmark-gfm's `autolink_delim`: where a link that runs over src[start:end] ends once `<`, trailing punctuation,
    unbalanced closing parentheses and a trailing entity-like `&name;` are left out."""
    less = src.find("<", start, end)
    if less != -1:
        end = less
    opening = src.count("(", start, end)
    closing = src.count(")", start, end)
    while end > start:
        char = src[end - 1]
        if char == ")":
            if closing <= opening:
                return end
            closing -= 1
            end -= 1
        elif char in _TRAILING:
            end -= 1
        elif char == ";":
            new_end = end - 2
            while new_end > start and src[new_end] in _ALPHA:
                new_end -= 1
            if new_end >= start and new_end < end - 2 and src[new_end] == "&":
                end = new_end
            else:
                end -= 1
        else:
            return end
    return end


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


def _validate_protocol(src: str, at: int, rewind: int, max_rewind: int, protocol: str) -> bool:
    length = len(protocol)
    if length > max_rewind - rewind:
        return False
    begin = at - rewind - length
    if src[begin : begin + length] != protocol:
        return False
    if length == max_rewind - rewind:
        return True
    return src[begin - 1] not in _ALNUM


def email_links(src: str) -> dict[int, tuple[int, str]]:
    """cmark-gfm's e-mail pass (`postprocess_text`) over `src` read as one text: start -> (end, href)."""
    found: dict[int, tuple[int, str]] = {}
    start = offset = 0
    remaining = len(src)
    while offset < remaining:
        at = src.find("@", start + offset, start + remaining)
        if at == -1:
            break
        max_rewind = at - (start + offset)
        auto_mailto, is_xmpp, dots = True, False, 0
        while True:  # cmark-gfm's `found_at`: np, auto_mailto and is_xmpp carry over a retry
            at = start + offset + max_rewind
            rewind = 0
            while rewind < max_rewind:
                char = src[at - rewind - 1]
                if char in _ALNUM or char in ".+-_":
                    rewind += 1
                    continue
                if char == ":":
                    if _validate_protocol(src, at, rewind, max_rewind, "mailto:"):
                        auto_mailto = False
                        rewind += 1
                        continue
                    if _validate_protocol(src, at, rewind, max_rewind, "xmpp:"):
                        auto_mailto, is_xmpp = False, True
                        rewind += 1
                        continue
                break
            if rewind == 0:
                offset += max_rewind + 1
                break
            limit = remaining - offset - max_rewind
            link_end = 1
            retry = False
            while link_end < limit:
                char = src[at + link_end]
                if char in _ALNUM:
                    link_end += 1
                    continue
                if char == "@":
                    offset += max_rewind + 1
                    max_rewind = link_end - 1
                    retry = True
                    break
                if char == "." and link_end < limit - 1 and src[at + link_end + 1] in _ALNUM:
                    dots += 1
                elif char == "/" and is_xmpp:
                    pass
                elif char not in "-_":
                    break
                link_end += 1
            if retry:
                continue
            last = src[at + link_end - 1]
            if link_end < 2 or dots == 0 or (last not in _ALPHA and last != "."):
                offset += max_rewind + link_end
                break
            link_end = trimmed_end(src, at, at + link_end) - at
            if link_end == 0:
                offset += max_rewind + 1
                break
            begin = at - rewind
            found[begin] = (at + link_end, ("mailto:" if auto_mailto else "") + src[begin : at + link_end])
            consumed = offset + max_rewind + link_end
            start += consumed
            remaining -= consumed
            offset = 0
            break
    return found


def _unescaped(src: str) -> tuple[str, list[int]]:
    """`src` as cmark-gfm's text nodes hold it for the e-mail pass, backslash escapes of ASCII punctuation undone,
    and where each of its characters starts in `src` (an escaped one at its backslash), plus the end."""
    text: list[str] = []
    starts: list[int] = []
    index = 0
    while index < len(src):
        if src[index] == "\\" and index + 1 < len(src) and src[index + 1] in _ASCII_PUNCTUATION:
            text.append(src[index + 1])
            starts.append(index)
            index += 2
        else:
            text.append(src[index])
            starts.append(index)
            index += 1
    starts.append(len(src))
    return "".join(text), starts


def _flanking(text: str, start: int, end: int) -> tuple[bool, bool]:
    """Whether the `_` run text[start:end] can open and can close emphasis (CommonMark's flanking rules)."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    space_before, space_after = before.isspace(), after.isspace()
    punct_before, punct_after = _punctuation(before), _punctuation(after)
    left = not space_after and (not punct_after or space_before or punct_before)
    right = not space_before and (not punct_before or space_after or punct_after)
    return left and (not right or punct_before), right and (not left or punct_after)


def _punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or (ord(char) >= 128 and unicodedata.category(char).startswith("P"))


def _emphasis_underscores(text: str) -> str:
    """`text` with each `_` run that pairs as emphasis (an opener, then a closer) made a boundary: cmark-gfm finds
    e-mail addresses in text nodes after emphasis is made, so `_a@b.com_` holds the address `a@b.com`."""
    runs = [(match.start(), match.end()) for match in re.finditer(r"_+", text)]
    openers: list[tuple[int, int]] = []
    paired: list[tuple[int, int]] = []
    for start, end in runs:
        can_open, can_close = _flanking(text, start, end)
        if can_close and openers:
            paired += [openers.pop(), (start, end)]
        elif can_open:
            openers.append((start, end))
    if not paired:
        return text
    chars = list(text)
    for start, end in paired:
        chars[start:end] = "\0" * (end - start)
    return "".join(chars)


def _emails(src: str) -> dict[int, tuple[int, str, str]]:
    """The e-mail links of `src`: start -> (end, href, text), positions in `src`, escapes undone in href and text."""
    text, starts = _unescaped(src) if "\\" in src else (src, None)
    scanned = _emphasis_underscores(text) if "_" in text else text
    found = {}
    for start, (end, href) in email_links(scanned).items():  # a link never holds a boundary: its text is text's
        found[starts[start] if starts else start] = (starts[end] if starts else end, href, text[start:end])
    return found


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
        while begin > 0 and src[begin - 1] in _ALPHA:
            begin -= 1
        if src[begin:position].lower() in ("http", "https", "ftp"):
            kinds.setdefault(begin, "url")
        position = src.find("://", position + 1)
    emails = _emails(src) if "@" in src else {}
    return _Candidates(sorted(set(kinds) | set(emails)), kinds, emails)


def _state_candidates(state: StateInline) -> _Candidates:
    try:
        return state._gfm_autolinks  # type: ignore[attr-defined]
    except AttributeError:
        found = state._gfm_autolinks = candidates(state.src)  # type: ignore[attr-defined]
        return found


def www_link(src: str, pos: int, found: _Candidates) -> tuple[int, str] | None:
    """cmark-gfm's `www_match` at `pos` (already a `www.` after an allowed character): (end, href) or None."""
    if not _domain_ok(src, pos, len(src), allow_short=False):
        return None
    end = trimmed_end(src, pos, found.link_end(src, pos))
    return (end, "http://" + src[pos:end]) if end > pos else None


def url_link(src: str, pos: int, found: _Candidates) -> tuple[int, str] | None:
    """cmark-gfm's `url_match` for the scheme that starts at `pos`: (end, href) or None."""
    colon = src.find(":", pos)
    scheme = src[pos : colon + 3].lower()
    after = colon + 3
    if scheme not in _SCHEMES or after >= len(src) or not _hostchar(src[after]):
        return None
    if not _domain_ok(src, after, len(src), allow_short=True):
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
