"""The PDF laid out chapter by chapter in parallel processes, then merged into one file (issue 7).

One WeasyPrint render of the whole print document runs on one core and holds every page until it is written. Here
each chapter becomes its own small document, cut out of the very document `print_document` makes (same template,
stylesheet, ids and links):

1. A worker (a forked process sharing the loaded book) renders the chapter's HTML and lays it out with its margin
   boxes (running header, page number) held back, so the layout does not depend on where the chapter starts. It
   reports the page count, the page and position of every anchor and the chapter's bookmarks, and goes on.
2. Once every earlier chapter has reported its page count, the chapter's first page number is known: the worker lays
   out the margin boxes with the page counter starting there, paints the chapter, and sends back the PDF objects
   WeasyPrint's `generate_pdf` made for it (numbered within the part) instead of a file.
3. A worker also lays out the cover and contents: first with placeholder numbers (to learn how many pages they
   take), then, once every page count is known, with literal page numbers (a `target-counter` would make WeasyPrint
   lay the document out again). The main process, which holds the book, writes it: the parts' objects renumbered
   (nothing is parsed back), one page tree, one name tree holding every anchor (a link to another chapter is a named destination),
   one outline (chapters at the top, their h2 and h3 below), the front matter's metadata and language, and each
   font program once. Workers embed a placeholder instead of a subset, so sixty parts do not carry sixty subsets of
   each font: the merge embeds one subset of the union of the glyphs all parts use, at the same glyph ids, made by
   WeasyPrint's own HarfBuzz subsetting. Objects without a stream go into compressed object streams, as WeasyPrint
   writes them. The pages print the same words at the same places as one render of the whole document.

Workers are forked only when two or more chapters need WeasyPrint; one does it in this process; none, nothing.

Cache (`tools/cache.py`), per chapter: its layout (page count, anchors, bookmarks) under a key of what its HTML is
made of (its text, the URL each of its links gets, its place in the template, the bytes of the local files it draws,
the WeasyPrint version; the tool's code and templates are in every key), and its written part under that key and
the page it starts on. An edit that keeps a chapter's page count lays out that chapter only; one that changes it
also rewrites the chapters after it (their page numbers moved). The cover and contents carry the build time, so
they are rendered on every build (a fraction of a second). System fonts are not in the keys: after changing the
installed fonts, build with the cache disabled once.

What cannot be reproduced one chapter at a time makes the build fall back to one render of the whole document
(`tools.render.pdf.build_pdf`): page selectors that depend on a page's place in the book (`:first`, `:left`,
`:right`, `:nth()`, `:blank`), `counter(pages)`, `target-counter`/`target-text` anywhere but in the contents, a
linked stylesheet, or a WeasyPrint whose internals differ from the ones this module hooks into (version 70:
`layout.make_margin_boxes`, `pdf.fonts.Font.clean`, `pdf.generate_pdf` and pydyf's objects)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..book import Book
from ..cache import Cache
from ..errors import Diagnostics
from ..stack import roomy_stack
from .pdf import build_pdf, report_weasyprint_warnings
from .pdf_cut import _Cut, _cut
from .pdf_hooks import _install_hooks, _Unsupported
from .pdf_job import _Job
from .pdf_merge import _Book, _merge, _MissingFont, _shared_fonts  # noqa: F401 (_Book: tests patch its write)
from .pdf_pool import _render_parts


def build_pdf_parallel(book: Book, out: Path, diagnostics: Diagnostics, cache: Cache | None = None, jobs: int = 2,
                       progress=None) -> int:
    """Write the PDF atomically, laying chapters out in `jobs` processes; returns its page count.

    The PDF has what one render of the print document has (`tools.render.pdf.build_pdf`): cover, contents with page
    numbers, each chapter's title in the running header, page numbers continuous across chapters, internal links
    landing on their anchors, an outline of chapters with their h2 and h3, metadata and language. Only files under
    the book's root are read. With a `cache`, a rebuild lays out only the chapters whose HTML (or a file it draws)
    changed, and writes again only those and the ones whose first page moved. `progress(path)` is called as each
    chapter's part is ready (again for every chapter if the contents' length forces a second numbering).
    """
    try:
        _install_hooks()
        cut = _cut(book, diagnostics)
    except _Unsupported:
        return build_pdf(book, out, diagnostics)
    return roomy_stack(_build, book, cut, out, diagnostics, cache, jobs, progress)  # forked workers inherit the room


def _build(book: Book, cut: _Cut, out: Path, diagnostics: Diagnostics, cache: Cache | None, jobs: int, progress) -> int:
    with tempfile.TemporaryDirectory(prefix="mlbook-pdf-") as temp:
        job = _Job(book, cut, Path(temp), cache)
        front_pages = None
        for _attempt in range(4):
            parts, used, actual = _render_parts(job, diagnostics, jobs, front_pages, progress)
            if actual == used:
                try:
                    subsets = _shared_fonts(job, parts)
                    break
                except _MissingFont:  # a font program is missing from the cache: render every part again
                    job.cache = None
            front_pages = actual  # the contents took more or fewer pages than with placeholders: number again
        else:
            raise RuntimeError("the PDF's contents do not settle on a number of pages")
        warnings = {message for layout in [parts.front_layout, *parts.layouts] for message in layout.warnings}
        for written in [parts.front, *parts.written]:
            warnings.update(written.warnings)
        report_weasyprint_warnings(sorted(warnings), diagnostics, job.book)
        return _merge(out, parts, subsets)
