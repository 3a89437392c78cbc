"""Which characters of a chapter no font has: the check the PDF runs before layout, so a reader never gets the
empty box a missing glyph prints as. Pure: the covered code points come from the renderer (fontconfig's charsets,
tools/render/pdf/coverage.py) and the text from the chapter's printed HTML.

The errors are one per script (tools/render/pdf/scripts.py), not one per character: a Chinese book on a machine
without a CJK font has one problem, the missing font, however many characters it prints."""
from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable, Iterable
from typing import NamedTuple

from tools.core.errors import Diagnostic, Severity
from tools.render.pdf.scripts import PRIVATE, describe_script, script_key

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


class Missing(NamedTuple):
    """A character no font has, at its first place in a file (line 0: not in the source, e.g. from a shortcode)."""

    char: str
    file: str
    line: int
    col: int


def missing_glyphs(path: str, source: str, printed: str, covered: Callable[[str], bool]) -> list[Missing]:
    """Each character of `printed` (a chapter's visible text) that needs a glyph and that `covered` says no font has,
    once, at its first place in `source` (the markdown)."""
    found = []
    for char in dict.fromkeys(printed):
        if needs_glyph(char) and not covered(char):
            at = source.find(char)
            line = source.count("\n", 0, at) + 1 if at >= 0 else 0
            col = at - source.rfind("\n", 0, at) if at >= 0 else 0
            found.append(Missing(char, path, line, col))
    return found


def script_errors(missing: Iterable[Missing], output: str, language: str = "") -> list[Diagnostic]:
    """One error per script that some missing character is written in (Chinese, emoji, Devanagari...), not one per
    character: how many characters, in how many files, and the first of them at its place, with the Debian package
    that has a font for the script. `output` names the PDF that is not written; `language` is the book's (Han is read
    as Japanese kanji in a Japanese book)."""
    groups: dict[str, list[Missing]] = {}
    for place in missing:
        groups.setdefault(script_key(place.char), []).append(place)
    found = []
    for key, places in groups.items():
        script = describe_script(key, language)
        chars = len({place.char for place in places})
        files = list(dict.fromkeys(place.file for place in places))
        first = next((place for place in places if place.line), places[0])
        at = f"{first.file}:{first.line}:{first.col}" if first.line else f"{first.file} (it comes from the markup, e.g. an emoji shortcode)"
        where = f"{len(files)} chapter{'s' if len(files) != 1 else ''}" if all(name.endswith((".md", ".markdown")) for name in files) else ", ".join(files)
        message = (f"no installed font covers {script.name}, so {output} is not written: {f'{chars:,} different characters' if chars != 1 else '1 character'} in {where}, "
                   f"the first {describe(first.char)} at {at}.")
        if key == PRIVATE:
            suggestion = "A private-use character prints only in the font made for it: name that font in the theme's print.css."
        elif script.package:
            suggestion = f"Install {script.package} (Debian) or name a font that has them in the theme's print.css."
        else:
            suggestion = "Install a font for it (Debian's fonts-noto-core and fonts-noto-extra cover most scripts) or name one in the theme's print.css."
        found.append(Diagnostic(Severity.ERROR, first.file, first.line, message, col=first.col, suggestion=suggestion, code="missing-glyph"))
    return found
