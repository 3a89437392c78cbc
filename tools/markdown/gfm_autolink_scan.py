"""cmark-gfm's autolink scanners (`extensions/autolink.c`) on plain strings, for the inline rule of
`tools/markdown/gfm_autolink.py`: host characters and the domain check as cmark-gfm reads bytes, where a link ends once
trailing punctuation, unbalanced parentheses and entity-like `&name;` are left out (`trimmed_end`), and the e-mail pass
that cmark-gfm runs over text nodes after emphasis is made (`email_links`, `emails_in`). Nothing here knows markdown-it."""
from __future__ import annotations

import re
import unicodedata

# the code points utf8proc counts as white space
_UNICODE_SPACE = frozenset([9, 10, 12, 13, 32, 160, 5760, *range(8192, 8203), 8239, 8287, 12288])
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
ALPHA = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TRAILING = frozenset("?!.,:*_~'\"")


def host_char(char: str) -> bool:
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


def domain_ok(src: str, start: int, end: int, allow_short: bool) -> bool:
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
        elif char != "-" and not host_char(char):
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
            while new_end > start and src[new_end] in ALPHA:
                new_end -= 1
            if new_end >= start and new_end < end - 2 and src[new_end] == "&":
                end = new_end
            else:
                end -= 1
        else:
            return end
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
            if link_end < 2 or dots == 0 or (last not in ALPHA and last != "."):
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


def emails_in(src: str) -> dict[int, tuple[int, str, str]]:
    """The e-mail links of `src`: start -> (end, href, text), positions in `src`, escapes undone in href and text."""
    text, starts = _unescaped(src) if "\\" in src else (src, None)
    scanned = _emphasis_underscores(text) if "_" in text else text
    found = {}
    for start, (end, href) in email_links(scanned).items():  # a link never holds a boundary: its text is text's
        found[starts[start] if starts else start] = (starts[end] if starts else end, href, text[start:end])
    return found
