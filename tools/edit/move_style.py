"""How `tools mv` writes a link's new destination in the link's own style: angle brackets, `./`, a leading `/`,
a trailing slash, percent-encoding or backslash escapes, raw-HTML quoting."""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from markdown_it.common.utils import unescapeAll


@dataclass(frozen=True)
class LinkStyle:
    bracketed: bool  # <path with spaces.md>
    dot: bool  # ./x.md
    absolute: bool  # /x.md (from the repository root, as GitHub reads it)
    trailing: bool  # folder/
    percent: bool  # the path uses %XX escapes
    html: bool  # the value of a raw-HTML attribute
    quote: str = ""  # for raw HTML: the attribute's quote character ('' when unquoted)


_SPLIT = re.compile(r"[?#]")


def split_raw(raw: str) -> tuple[bool, str, str]:
    """(bracketed, path part as written, the rest as written: '?query#fragment')."""
    bracketed = raw.startswith("<") and raw.endswith(">") and len(raw) >= 2
    inner = raw[1:-1] if bracketed else raw
    match = _SPLIT.search(inner)
    if match is None:
        return bracketed, inner, ""
    return bracketed, inner[: match.start()], inner[match.start() :]


def decode_segment(segment: str, is_html: bool) -> str:
    return unquote(html.unescape(segment) if is_html else unescapeAll(segment))


def _unsafe(is_html: bool, bracketed: bool, quote: str = "") -> str:
    if is_html:
        return (quote + "<>&\t\n") if quote else " \"'<>&\t\n`="
    if bracketed:
        return "<>\\\n"
    return " ()<>\\\t\n\"'"


def encode_segment(segment: str, style: LinkStyle) -> str:
    if style.percent:
        return quote(segment, safe="-._~!$'*+,;=:@" + ("()" if style.bracketed else ""))
    unsafe = _unsafe(style.html, style.bracketed, style.quote)
    return "".join(f"%{ord(c):02X}" if c in unsafe or c == "%" else c for c in segment)
