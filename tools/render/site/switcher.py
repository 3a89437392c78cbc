"""The site's language switcher and `hreflang` alternates: every page links the same chapter in every language of
the book (a language's site lies in `<tag>/` inside the original's), or that site's front page where its chapter
list leaves the chapter out. URLs are relative, so they work from any subpath and from file://."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.book.interface_text import interface_text, language_name
from tools.render.pages import chapter_pages, relative_url
from tools.render.policy import SITE_RESERVED, front_page


class LanguageLinks:
    """The other sites' pages, as `MultiPagePolicy` names them, from the logical paths of their chapters."""

    def __init__(self, sites: Sequence[Any], language: str):
        self.sites = list(sites)
        self.current = next((site for site in self.sites if site.language == language), None)
        self.pages = {site.language: chapter_pages(site.chapters, ".html", SITE_RESERVED) for site in self.sites}
        self.fronts = {site.language: front_page([*SITE_RESERVED, *self.pages[site.language].values()]) for site in self.sites}

    def entries(self, logical: str | None, page: str) -> list[dict]:
        """The switcher's entries on `page` of the current site, which shows the chapter `logical` (None: no chapter)."""
        if self.current is None or len(self.sites) < 2:
            return []
        here = self.current.base + page
        found = []
        for site in self.sites:
            target = self.pages[site.language].get(logical) if logical else None
            url = relative_url(site.base + (target or self.fronts[site.language]), here)
            found.append({"language": site.language, "name": language_name(site.language), "url": url, "current": site is self.current})
        return found

    def variables(self, logical: str | None, page: str, chapter_language: str = "", fallback: bool = False) -> dict:
        """What the templates read: the switcher (`languages_menu`), its label, the alternates with the original
        as `x-default`, the language of the chapter's text, and the notice of a chapter not translated yet."""
        entries = self.entries(logical, page)
        language = self.current.language if self.current else ""
        text = interface_text(language)
        alternates = [{"hreflang": entry["language"], "url": entry["url"]} for entry in entries]
        if entries:
            alternates.append({"hreflang": "x-default", "url": entries[0]["url"]})
        return {
            "languages_menu": entries,
            "languages_label": text["languages"],
            "alternates": alternates,
            "content_language": chapter_language if chapter_language and chapter_language != language else "",
            "not_translated": text["not_translated"] if fallback else "",
        }
