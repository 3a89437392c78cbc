"""Which characters of a chapter no font has: the check the PDF runs before layout, so a reader never gets the
empty box a missing glyph prints as. Pure: the covered code points come from the renderer (fontconfig's charsets,
tools/render/pdf/coverage.py) and the text from the chapter's printed HTML."""
from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable, Iterable

from tools.core.errors import Diagnostic, Severity

MAX_PER_CHAPTER = 20  # characters named one by one; past them one line counts the rest
_NO_GLYPH_NEEDED = {"Cc", "Cf", "Zs", "Zl", "Zp", "Cs"}  # controls, joiners, bidi marks, spaces: nothing is drawn


def needs_glyph(char: str) -> bool:
    """Whether a character is drawn: not whitespace, a control, a format character (zero-width joiner, soft hyphen),
    a variation selector or a noncharacter."""
    code = ord(char)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or code == 0x034F:  # variation selectors, grapheme joiner
        return False
    if (code & 0xFFFE) == 0xFFFE or 0xFDD0 <= code <= 0xFDEF:
        return False
    return not char.isspace() and unicodedata.category(char) not in _NO_GLYPH_NEEDED


class Coverage:
    """The code points some font has, as sorted inclusive ranges (fontconfig's charset notation)."""

    def __init__(self, ranges: Iterable[tuple[int, int]]):
        merged: list[list[int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        self.lows = [low for low, _ in merged]
        self.highs = [high for _, high in merged]

    def __contains__(self, char: str) -> bool:
        code = ord(char)
        at = bisect.bisect_right(self.lows, code) - 1
        return at >= 0 and code <= self.highs[at]


def describe(char: str) -> str:
    """'中' (U+4E2D CJK UNIFIED IDEOGRAPH-4E2D), or the general category for a character without a name."""
    name = unicodedata.name(char, "") or {"Co": "a private-use character", "Cn": "an unassigned code point"}.get(unicodedata.category(char), "no name")
    return f"{char!r} (U+{ord(char):04X} {name})"


def missing_glyphs(path: str, source: str, printed: str, covered: Callable[[str], bool]) -> list[Diagnostic]:
    """One error per character of `printed` (the chapter's visible text) that needs a glyph and that `covered` says
    no font has, at its first place in `source` (the markdown): `file:line:col`, the character, its code point."""
    missing = [char for char in dict.fromkeys(printed) if needs_glyph(char) and not covered(char)]
    found = []
    for char in missing[:MAX_PER_CHAPTER]:
        at = source.find(char)
        line = source.count("\n", 0, at) + 1 if at >= 0 else 0
        col = at - source.rfind("\n", 0, at) if at >= 0 else 0
        where = "" if at >= 0 else " (it comes from the markup, e.g. an emoji shortcode)"
        found.append(Diagnostic(Severity.ERROR, path, line, f"no font the PDF can use has a glyph for {describe(char)}{where}; the PDF would print an empty box.", col=col,
                                suggestion="Install a font that has it (Debian's fonts-noto packages cover most scripts) or name one in the theme's print.css; a private-use character needs the font it was made for.",
                                code="missing-glyph"))
    if len(missing) > MAX_PER_CHAPTER:
        rest = ", ".join(f"U+{ord(char):04X}" for char in missing[MAX_PER_CHAPTER:MAX_PER_CHAPTER + 40])
        found.append(Diagnostic(Severity.ERROR, path, 0, f"{len(missing) - MAX_PER_CHAPTER} more characters have no glyph in any font: {rest}.", code="missing-glyph"))
    return found
