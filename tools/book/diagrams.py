"""Mermaid diagrams as the model knows them: a ```` ```mermaid ```` fence's source, and the drawing of it that the
build's drawing stage (tools/render/diagrams/stage.py) hands to the renderers.

`collect` notes each fence (line, source) on the chapter's light model, so a chapter from the cache still knows its
diagrams without a parse. A `Drawing` is the SVG of both themes; every id inside starts with `ident`, the one string
a renderer replaces to make the ids of each occurrence on a page its own.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from markdown_it.token import Token

MERMAID_FENCE = "mermaid"
MAX_SOURCE = 50_000  # characters: mermaid's own `maxTextSize`; a longer diagram is shown as code


class Drawing(NamedTuple):
    light: str  # SVG drawn with mermaid's `default` theme: the site's light theme, the PDF and the EPUB
    dark: str  # SVG drawn with mermaid's `dark` theme: the site's dark theme
    ident: str  # the id of the SVG element, the prefix of every id inside it


def is_mermaid_fence(token: Token) -> bool:
    return token.type == "fence" and token.info.strip().lower() == MERMAID_FENCE


def diagram_ident(source: str) -> str:
    """The id a diagram is drawn with: the same for the same source, so a cached drawing keeps it."""
    return "mermaid-" + hashlib.sha256(source.encode()).hexdigest()[:12]


def drawings_digest(drawings: Mapping[str, Drawing]) -> str:
    """What a chapter's rendered result depends on besides its text: which of its diagrams are drawn, and how.
    Part of every per-chapter cache key, so a page rendered before a browser was at hand is not reused after."""
    if not drawings:
        return ""
    digest = hashlib.sha256()
    for source in sorted(drawings):
        for part in (source, *drawings[source]):
            digest.update(part.encode() + b"\0")
    return digest.hexdigest()


_ACC_TITLE = re.compile(r"^\s*accTitle\s*:\s*(.+?)\s*$", re.MULTILINE)
_ACC_DESCR = re.compile(r"^\s*accDescr\s*:\s*(.+?)\s*$", re.MULTILINE)


def accessible_name(source: str) -> str:
    """The figure's name for a screen reader: mermaid's `accTitle`, else its `accDescr`, else "Diagram"."""
    for pattern in (_ACC_TITLE, _ACC_DESCR):
        found = pattern.search(source)
        if found:
            return found.group(1)
    return "Diagram"
