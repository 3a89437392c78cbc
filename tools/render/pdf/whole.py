"""The PDF in one WeasyPrint render of the whole print document: the fall-back of the chapter-at-a-time route."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tools.book.model import Book
from tools.core.atomic import atomic_file, readable
from tools.core.errors import Diagnostics
from tools.core.stack import roomy_stack
from tools.render.pdf.document import print_document
from tools.render.pdf.fetcher import report_weasyprint_warnings, root_only_fetcher, weasyprint_warnings
from tools.render.pdf.hooks import Unsupported, check_weasyprint, join_leaders
from tools.render.pdf.native import load_weasyprint
from tools.render.pdf.tags import PDF_VARIANT, finish_whole, report_missing_alt


def build_whole_pdf(book: Book, out: Path, diagnostics: Diagnostics, chapter_html: Mapping[str, str] | None = None) -> int:
    """Write the PDF atomically with one render of the whole print document; returns its page count. `chapter_html`:
    bodies rendered before, as `tools.render.pdf.build_pdf` takes them. Images without alt text are reported, and
    the PDF is not marked PDF/UA then (`tags.finish_whole`)."""
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
            unlabelled = []
            document.write_pdf(temp, pdf_variant=PDF_VARIANT, finisher=lambda _, pdf: unlabelled.append(finish_whole(pdf)))
            readable(temp)
    report_weasyprint_warnings(messages, diagnostics, book)
    report_missing_alt(book, diagnostics, sum(unlabelled))
    return len(document.pages)
