"""The words of the book's interface (navigation, search, notices, the 404 page) in each language the tool speaks.

`interface_text(language)` gives every key for a BCP 47 tag: the exact tag, else its primary subtag (`zh-Hans` ->
`zh`), and English for any key a language lacks, so a template never shows a missing string."""
from __future__ import annotations

ENGLISH: dict[str, str] = {
    "not_translated": "This chapter has not been translated yet; it is shown in its original language.",
    "languages": "Languages",
    "edit_page": "Edit this page",
    "last_changed": "Last changed",
}

# language tag -> key -> text; English is the fallback for every key
TRANSLATIONS: dict[str, dict[str, str]] = {}

# each language's own name for itself, as the language switcher shows it
LANGUAGE_NAMES: dict[str, str] = {
    "en": "English", "zh": "中文", "ja": "日本語", "ko": "한국어", "es": "Español", "fr": "Français", "de": "Deutsch",
}


def _known(language: str, table: dict[str, dict[str, str]] | dict[str, str]) -> str | None:
    tag = language.strip()
    for candidate in (tag, tag.lower(), tag.split("-")[0].lower()):
        if candidate in table:
            return candidate
    return None


def interface_text(language: str) -> dict[str, str]:
    known = _known(language, TRANSLATIONS)
    return {**ENGLISH, **(TRANSLATIONS[known] if known else {})}


def language_name(language: str) -> str:
    known = _known(language, LANGUAGE_NAMES)
    return LANGUAGE_NAMES[known] if known else language
