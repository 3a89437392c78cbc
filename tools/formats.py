"""The output formats `tools build` knows: each takes the loaded book and writes one output."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .book import Book
from .errors import Diagnostics


@dataclass
class Built:
    path: Path  # the file or folder a reader opens
    summary: str  # e.g. "62 pages, 14 files"


Builder = Callable[[Book, Path, Diagnostics, dict], Built]


def _html(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.site import build_site
    from .report import progress

    with progress("html", len(book.chapters)) as advance:
        result = build_site(book, out, diagnostics, local=options.get("local", False), progress=advance, cache=options.get("cache"))
    return Built(out / "index.html", f"{result.pages} pages, {result.files} copied files")


def _pdf(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.pdf_parallel import build_pdf_parallel
    from .report import progress

    with progress("pdf", len(book.chapters)) as advance:
        pages = build_pdf_parallel(book, out, diagnostics, cache=options.get("cache"), jobs=options.get("jobs", 1), progress=advance)
    return Built(out, f"{pages} pages")


def _epub(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.epub import build_epub

    files = build_epub(book, out, diagnostics, cache=options.get("cache"), jobs=options.get("jobs", 1))
    return Built(out, f"{files} files inside")


FORMATS: dict[str, tuple[str, Builder]] = {  # format name -> (default output under _build, builder)
    "html": ("html", _html),
    "pdf": ("book.pdf", _pdf),
    "epub": ("book.epub", _epub),
}


def register(name: str, default_out: str, builder: Builder) -> None:
    FORMATS[name] = (default_out, builder)
