"""The language each chapter is written in, for every format that declares it (the PDF's sections, which pick
fonts and hyphenation by it, and the EPUB's documents): one function, so the formats never disagree."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..book import Book, Chapter


def chapter_language(book: Book, chapter: Chapter) -> str:
    """The chapter's BCP 47 tag: its own when it has one (a translation's chapter), else the book's."""
    return getattr(chapter, "language", None) or book.config.language or "en"
