"""GitHub's heading ids, exactly: the rule of github-slugger, which GitHub's markdown pages follow."""
from __future__ import annotations

import unicodedata

# Kept: letters, marks, decimal and letter numbers, connector punctuation (`_`), the ASCII space and hyphen.
# Everything else goes: other punctuation (en and em dashes too), symbols (emoji), other numbers (², ½), controls.
_KEPT_CATEGORIES = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"}


def _kept(char: str) -> bool:
    return char in " -" or unicodedata.category(char) in _KEPT_CATEGORIES


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

