"""The PDF in one WeasyPrint render of the whole print document: the fall-back of the chapter-at-a-time route."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...atomic import atomic_file
from ...book import Book
from ...errors import Diagnostics
from ...stack import roomy_stack
from ..single import print_document, readable
from .fetcher import report_weasyprint_warnings, root_only_fetcher, weasyprint_warnings
from .hooks import Unsupported, check_weasyprint, join_leaders
from .native import load_weasyprint
from .tags import PDF_VARIANT


def build_whole_pdf(book: Book, out: Path, diagnostics: Diagnostics, chapter_html: Mapping[str, str] | None = None) -> int:
    """Write the PDF atomically with one render of the whole print document; returns its page count. `chapter_html`:
    bodies rendered before, as `tools.render.pdf.build_pdf` takes them."""
    load_weasyprint()
    from weasyprint import HTML

    html = print_document(book, diagnostics, chapter_html=chapter_html)
    with weasyprint_warnings() as messages:
        source = HTML(string=html, base_url=str(book.root) + "/", url_fetcher=root_only_fetcher(book.root))
        document = roomy_stack(source.render)
        try:
            check_weasyprint()
        except Unsupported:
            pass  # another WeasyPrint: its leaders stay as it laid them out
        else:
            join_leaders(document)  # as the chapter-at-a-time route does: the same dots, one text box per leader
        with atomic_file(out) as temp:
            document.write_pdf(temp, pdf_variant=PDF_VARIANT)
            readable(temp)
    report_weasyprint_warnings(messages, diagnostics, book)
    return len(document.pages)
