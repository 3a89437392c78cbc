"""GitHub's heading ids, exactly: the rule of github-slugger, which GitHub's markdown pages follow.

github-slugger (github.com/Flet/github-slugger, `script/generate-regex.mjs`) removes every character of these
Unicode general categories: other numbers (`²`, `½`), all punctuation but connectors (`_`) and the ASCII hyphen,
all symbols (emoji), controls, private use, format characters, unassigned code points and separators but the ASCII
space; then it keeps back every *Alphabetic* character among them. The only symbols Unicode calls alphabetic are
the circled and squared Latin letters (`Ⓐ`, `ⓐ`, `🄰`, `🅐`, `🅰`: Other_Alphabetic, category So), listed here.
What is kept is lowercased and each space becomes a hyphen.

The text a heading gives the slugger is its text content with each emoji shortcode as written (`:rocket:`), the way
github.com computes ids (github/markup#1231): `## :rocket: Launch` is `#rocket-launch` (tools/book/collect.py).
"""
from __future__ import annotations

import unicodedata

# Letters, marks, decimal and letter numbers, connector punctuation (`_`); the ASCII space and hyphen besides.
_KEPT_CATEGORIES = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"}
# The symbols (So) with Unicode's Other_Alphabetic property: circled Latin capital and small letters, squared,
# negative circled and negative squared Latin capital letters.
ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def _kept(char: str) -> bool:
    if char in " -" or unicodedata.category(char) in _KEPT_CATEGORIES:
        return True
    code = ord(char)
    return code >= 0x24B6 and any(low <= code <= high for low, high in ALPHABETIC_SYMBOLS)


def slugify(text: str) -> str:
    """The id GitHub gives a heading whose text content is `text` (before de-duplication)."""
    lowered = text.lower()
    return "".join(char for char in lowered if _kept(char)).replace(" ", "-")


class Slugger:
    """Hands out unique ids in document order, as GitHub does: `a`, `a-1`, `a-2`, ..."""

    def __init__(self) -> None:
        self._occurrences: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = slugify(text)
        result = base
        while result in self._occurrences:
            self._occurrences[base] += 1
            result = f"{base}-{self._occurrences[base]}"
        self._occurrences[result] = 0
        return result
