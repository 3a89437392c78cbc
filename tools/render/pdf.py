"""The PDF: WeasyPrint lays out the single print document; nothing outside the book root is ever fetched."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path

from ..atomic import atomic_file
from ..book import Book
from ..errors import Diagnostics
from ..stack import roomy_stack
from .single import print_document, readable


def _root_only_fetcher(root: Path):
    """A WeasyPrint URL fetcher that serves files under the book root and data: URLs, and refuses everything else."""
    from weasyprint.urls import URLFetcher

    class RootOnlyFetcher(URLFetcher):
        def fetch(self, url, headers=None):
            if url.startswith("data:"):
                return super().fetch(url, headers)
            if url.startswith("file://"):
                from urllib.parse import unquote, urlsplit

                path = Path(unquote(urlsplit(url).path)).resolve()
                try:
                    path.relative_to(root.resolve())
                except ValueError:
                    raise ValueError(f"{url} is outside the book's root folder") from None
                return super().fetch(url, headers)
            raise ValueError(f"{url}: remote resources are not fetched into the book")

    return RootOnlyFetcher()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def weasyprint_warnings():
    """Collect what WeasyPrint logs at warning level while the block runs: yields the list it fills."""
    collector = _Collect()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(collector)
    try:
        yield collector.messages
    finally:
        logger.removeHandler(collector)


def report_weasyprint_warnings(messages, diagnostics: Diagnostics) -> None:
    """The warnings a reader can act on (a resource left out) become the build's warnings; the rest is WeasyPrint's."""
    for message in messages:
        if "Failed to load" in message or "outside the book" in message:
            diagnostics.warning("PDF", 0, f"WeasyPrint: {message}", code="pdf-resource")


def build_pdf(book: Book, out: Path, diagnostics: Diagnostics) -> int:
    """Write the PDF atomically with one render of the whole print document; returns its page count."""
    from weasyprint import HTML

    html = print_document(book, diagnostics)
    with weasyprint_warnings() as messages:
        source = HTML(string=html, base_url=str(book.root) + "/", url_fetcher=_root_only_fetcher(book.root))
        document = roomy_stack(source.render)
        with atomic_file(out) as temp:
            document.write_pdf(temp)
            readable(temp)
    report_weasyprint_warnings(messages, diagnostics)
    return len(document.pages)
