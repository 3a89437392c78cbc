"""Which writing system a character belongs to, and which Debian package has a font for it: what the PDF's font check
(tools/render/pdf/coverage.py) names when no installed font covers some text, and what `make book` installs
(tools/build/system_packages.py).

A character's script is its Unicode Script property (ISO 15924 code), from fontTools' `unicodedata.script`, which
WeasyPrint already depends on. Characters of the Common script are told apart further: emoji (the `emoji` package's
list, as GitHub's shortcodes use), math symbols (category Sm and the mathematical alphanumerics), other symbols.
The table names the package of Debian 12 and Ubuntu that has a font for each common script; a script it lacks gets
the generic advice (Debian's Noto packages cover most scripts).
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import NamedTuple

CJK = "fonts-noto-cjk"
NOTO = "fonts-noto-core"
DEJAVU = "fonts-dejavu-core"
EMOJI = "fonts-noto-color-emoji"

# ISO 15924 code -> (the name a reader knows, the Debian package with a font for it)
SCRIPTS: dict[str, tuple[str, str]] = {
    "Latn": ("Latin", DEJAVU),
    "Grek": ("Greek", DEJAVU),
    "Cyrl": ("Cyrillic", DEJAVU),
    "Armn": ("Armenian", DEJAVU),
    "Geor": ("Georgian", DEJAVU),
    "Hani": ("Chinese (Han)", CJK),
    "Bopo": ("Chinese (Bopomofo)", CJK),
    "Hira": ("Japanese (Hiragana and Katakana)", CJK),  # Katakana is counted as Hiragana: one font has both
    "Hang": ("Korean (Hangul)", CJK),
    "Arab": ("Arabic", NOTO),
    "Syrc": ("Syriac", NOTO),
    "Thaa": ("Thaana", NOTO),
    "Hebr": ("Hebrew", NOTO),
    "Deva": ("Devanagari", NOTO),
    "Beng": ("Bengali", NOTO),
    "Guru": ("Gurmukhi", NOTO),
    "Gujr": ("Gujarati", NOTO),
    "Orya": ("Odia", NOTO),
    "Taml": ("Tamil", NOTO),
    "Telu": ("Telugu", NOTO),
    "Knda": ("Kannada", NOTO),
    "Mlym": ("Malayalam", NOTO),
    "Sinh": ("Sinhala", NOTO),
    "Thai": ("Thai", NOTO),
    "Laoo": ("Lao", NOTO),
    "Khmr": ("Khmer", NOTO),
    "Mymr": ("Myanmar", NOTO),
    "Tibt": ("Tibetan", NOTO),
    "Ethi": ("Ethiopic", NOTO),
}
# The Common script's kinds, keyed like scripts (not ISO 15924 codes: those are four letters)
COMMON_KINDS: dict[str, tuple[str, str]] = {
    "emoji": ("emoji", EMOJI),
    "math": ("math symbols", "fonts-stix"),
    "symbols": ("symbols", "fonts-symbola"),
    "marks": ("combining marks", NOTO),
}
PRIVATE = "private"  # private-use and unassigned code points: only the font made for them has them
# Han read as the book's language: kanji in a Japanese book, hanja in a Korean one
HAN_BY_LANGUAGE = {"ja": "Japanese (Kanji)", "ko": "Korean (Hanja)"}
# The language tags whose text needs a font package besides DejaVu (what `make book` installs for a declared language)
LANGUAGE_SCRIPTS = {"zh": "Hani", "ja": "Hira", "ko": "Hang", "yue": "Hani", "ar": "Arab", "fa": "Arab", "ur": "Arab", "he": "Hebr", "yi": "Hebr",
                    "hi": "Deva", "mr": "Deva", "ne": "Deva", "bn": "Beng", "pa": "Guru", "gu": "Gujr", "or": "Orya", "ta": "Taml", "te": "Telu",
                    "kn": "Knda", "ml": "Mlym", "si": "Sinh", "th": "Thai", "lo": "Laoo", "km": "Khmr", "my": "Mymr", "bo": "Tibt", "am": "Ethi"}


class Script(NamedTuple):
    key: str  # the ISO 15924 code, or one of COMMON_KINDS, or PRIVATE
    name: str  # e.g. "Chinese (Han)"
    package: str  # the Debian package with a font for it; "" when none is known


def _is_math(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) == "Sm" or 0x1D400 <= code <= 0x1D7FF or 0x2200 <= code <= 0x22FF or 0x27C0 <= code <= 0x27EF or 0x2980 <= code <= 0x2AFF


@lru_cache(maxsize=65536)
def script_key(char: str) -> str:
    """The ISO 15924 code of a character's script, or a key of COMMON_KINDS (Common and Inherited) or PRIVATE."""
    import emoji
    from fontTools import unicodedata as font_unicodedata

    code = font_unicodedata.script(char)
    if code == "Zzzz" or unicodedata.category(char) in ("Co", "Cn"):
        return PRIVATE
    if code == "Zinh":
        return "marks"
    if code != "Zyyy":
        return "Hira" if code == "Kana" else code
    if emoji.is_emoji(char) and ord(char) > 0x2000:  # ©, ® and the digits are emoji too, but every text font has them
        return "emoji"
    return "math" if _is_math(char) else "symbols"


def script_of(char: str, language: str = "") -> Script:
    """The script a character is written in, named for a reader, with the Debian package that has a font for it."""
    key = script_key(char)
    return describe_script(key, language)


def describe_script(key: str, language: str = "") -> Script:
    if key == PRIVATE:
        return Script(key, "private-use characters", "")
    if key in COMMON_KINDS:
        return Script(key, *COMMON_KINDS[key])
    if key in SCRIPTS:
        name, package = SCRIPTS[key]
        if key == "Hani":
            name = HAN_BY_LANGUAGE.get(language.lower().split("-")[0], name)
        return Script(key, name, package)
    from fontTools import unicodedata as font_unicodedata

    return Script(key, font_unicodedata.script_name(key, default=key), "")


def language_package(tag: str) -> str:
    """The Debian font package a book written in `tag` (BCP 47) needs besides DejaVu; "" for none."""
    primary = tag.lower().split("-")[0]
    script = LANGUAGE_SCRIPTS.get(primary)
    return SCRIPTS[script][1] if script else ""
