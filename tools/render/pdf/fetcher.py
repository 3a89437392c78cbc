"""What WeasyPrint may read for the PDF (a URL fetcher that refuses anything outside the book root) and what it
says (its warnings collected and reported at the chapter line that names the file)."""
from __future__ import annotations

import logging
import mimetypes
import os
import posixpath
import re
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tools.book.model import Book
from tools.core import safe_io
from tools.core.errors import Diagnostics

REFUSED = "is not drawn into the PDF"  # ends every refusal of the fetcher, so that the warnings can find them


def root_only_fetcher(root: Path):
    """A WeasyPrint URL fetcher that serves regular files under the book root (read through safe_io, so a link out
    of the root, a FIFO or a huge file is refused without being opened) and data: URLs. Nothing remote is fetched:
    a PDF build never goes on the network."""
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    real_root = os.path.realpath(root)

    class RootOnlyFetcher(URLFetcher):
        def fetch(self, url, headers=None):
            scheme = url.partition(":")[0].lower() if ":" in url else ""
            if scheme == "data":
                return super().fetch(url, headers)
            parts = urlsplit(url)
            if scheme != "file" or parts.netloc not in ("", "localhost"):
                raise ValueError(f"'{url}' is remote and {REFUSED}: a PDF build never fetches from the network")
            path = unquote(parts.path)
            shown = os.path.relpath(path, real_root) if safe_io.is_inside(path, real_root) else path
            try:
                data = safe_io.read_bytes(path, real_root, safe_io.ASSET_LIMIT, shown=shown)
            except safe_io.UnsafeFile as exc:
                if "outside the book" in exc.reason:  # the path, unquoted: "img/x.svg is outside the book's root"
                    raise ValueError(f"{shown} is outside the book's root folder (it leads to '{os.path.realpath(path)}') and {REFUSED}") from None
                raise ValueError(f"'{shown}' {exc.reason}, and {REFUSED}") from None
            mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
            return URLFetcherResponse(url, body=data, headers={"Content-Type": mime})

    return RootOnlyFetcher()


def _quoted(message: str) -> list[str]:
    return re.findall(r"'([^']+)'", message)


def _where_named(book: Book, message: str) -> tuple[str, int]:
    """The chapter and line that name the file of a refused resource (its path, or failing that its file name)."""
    names = []
    for quoted in _quoted(message) + re.findall(r"(?<![\w'])(/[^\s']+)", message):  # quoted, and bare absolute paths
        path = unquote(urlsplit(quoted).path) if quoted.startswith("file:") else quoted
        names += [path, os.path.relpath(path, book.root) if os.path.isabs(path) else path, posixpath.basename(path)]
    for name in [n for n in names if n and n not in (".", "/")]:
        for chapter in book.chapters:
            at = chapter.text.find(name)
            if at >= 0:
                return chapter.path, chapter.text.count("\n", 0, at) + 1
    return "PDF", 0
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
    propagate, logger.propagate = logger.propagate, False  # a root handler (basicConfig by any library) would print them
    try:
        yield collector.messages
    finally:
        logger.removeHandler(collector)
        logger.propagate = propagate


def report_weasyprint_warnings(messages, diagnostics: Diagnostics, book: Book | None = None) -> None:
    """The warnings a reader can act on (a resource left out) become the build's warnings; the rest is WeasyPrint's.
    A resource the fetcher refused is reported at the chapter line that names it."""
    for message in messages:
        if REFUSED in message and book is not None:
            source, line = _where_named(book, message)
            report = diagnostics.warning if "is remote" in message else diagnostics.error  # outside the root: as a link there
            report(source, line, f"the PDF leaves out a resource: {message.partition('ValueError: ')[2] or message}.", suggestion="Keep images and stylesheets inside the book's folder as regular files.", code="pdf-resource")
        elif "Failed to load" in message or REFUSED in message:
            diagnostics.warning("PDF", 0, f"WeasyPrint: {message}", code="pdf-resource")
