"""The PDF, laid out chapter by chapter in parallel processes, then merged into one file (issue 7).

One WeasyPrint render of the whole print document runs on one core and holds every page until it is written. Here
each chapter is its own small document, made of the print template's pieces (`parts.PrintPieces`: the same template,
stylesheet, ids and links as one document of the whole book) around the body `single.render_chapter` makes of it:

1. A worker (a forked process sharing the loaded book, `schedule.py` and `job.py`) renders the chapter's document and
   lays it out, keeping WeasyPrint's layout context (`hooks.py`): the margin boxes (running header, page number) are
   the only thing that depends on where the chapter starts. It reports the page count, the page and position of every anchor and the
   chapter's bookmarks, and goes on.
2. Once every earlier chapter has reported its page count, the chapter's first page number is known: the worker lays
   out the margin boxes with the page counter starting there, paints the chapter, and sends back the PDF objects
   WeasyPrint's `generate_pdf` made for it (numbered within the part) instead of a file.
3. A worker also lays out the cover and contents: first with placeholder numbers (to learn how many pages they
   take), then, once every page count is known, with literal page numbers (a `target-counter` would make WeasyPrint
   lay the document out again). The main process, which holds the book, writes each part to the file as it comes
   (`write.py`, `stream.py`; it keeps no part): the parts' objects renumbered (nothing is parsed back); at the end
   one page tree, one name tree holding every anchor (a link to another chapter
   is a named destination), one outline (chapters at the top, their h2 and h3 below), the front matter's metadata
   and language, and each font program once. Workers embed a placeholder instead of a subset, so sixty parts do not
   carry sixty subsets of each font: the merge embeds one subset of the union of the glyphs all parts use, at the
   same glyph ids (`fonts.py`). Objects without a stream go into compressed object streams, as WeasyPrint writes
   them. The pages print the same words at the same places as one render of the whole document.

Workers are forked only when two or more chapters need WeasyPrint; one does it in this process; none, nothing.

Cache (`tools/core/cache.py`), per chapter: its layout (page count, anchors, bookmarks) under a key of what its HTML is
made of (its text, the URL each of its links gets, its place in the template, the bytes of the local files it draws,
the WeasyPrint version; the tool's code and templates are in every key), and its written part under that key and
the page it starts on. An edit that keeps a chapter's page count lays out that chapter only; one that changes it
also rewrites the chapters after it (their page numbers moved). The cover and contents carry the build time, so
they are rendered on every build (a fraction of a second). System fonts are not in the keys: after changing the
installed fonts, build with the cache disabled once.

What cannot be reproduced one chapter at a time makes the build fall back to one render of the whole document
(`whole.build_whole_pdf`): page selectors that depend on a page's place in the book (`:first`, `:left`, `:right`,
`:nth()`, `:blank`), `counter(pages)`, `target-counter`/`target-text` anywhere but in the contents, a linked
stylesheet, a print template without the four macros, or a WeasyPrint whose internals differ from the ones
`hooks.py` calls (version 70: the steps of `Document._render`, `layout.page.make_margin_boxes`, `Font.clean`,
`pdf.generate_pdf` and pydyf's objects). Nothing of WeasyPrint is replaced: a render elsewhere in the process is
left alone."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from tools.book.model import Book
from tools.core.atomic import atomic_file, private_folder, readable
from tools.core.cache import Cache
from tools.core.errors import Diagnostics
from tools.core.stack import roomy_stack
from tools.render.pdf.fetcher import report_weasyprint_warnings
from tools.render.pdf.fonts import MissingFont, shared_fonts
from tools.render.pdf.hooks import Unsupported, check_weasyprint
from tools.render.pdf.job import Job
from tools.render.pdf.parts import PrintPieces
from tools.render.pdf.schedule import render_parts
from tools.render.pdf.tags import report_missing_alt
from tools.render.pdf.whole import build_whole_pdf
from tools.render.pdf.write import BookWriter


def build_pdf(book: Book, out: Path, diagnostics: Diagnostics, cache: Cache | None = None, jobs: int = 2,
              progress: Callable[[str], object] | None = None, chapter_html: Mapping[str, str] | None = None) -> int:
    """Write the PDF atomically, laying chapters out in `jobs` processes; returns its page count.

    The PDF has what one render of the print document has (`whole.build_whole_pdf`): cover, contents with page
    numbers, each chapter's title in the running header, page numbers continuous across chapters, internal links
    landing on their anchors, an outline of chapters with their h2 and h3, metadata and language. Only files under
    the book's root are read. With a `cache`, a rebuild lays out only the chapters whose HTML (or a file it draws)
    changed, and writes again only those and the ones whose first page moved. `progress(path)` is called as each
    chapter's part is ready (again for every chapter if the contents' length forces a second numbering).
    `chapter_html` maps a chapter's path to its body exactly as `single.render_chapter` returns it, rendered before
    (while its tokens were at hand); a chapter it lacks is rendered here.
    """
    try:
        check_weasyprint()
        pieces = PrintPieces(book, diagnostics)
    except Unsupported:
        return build_whole_pdf(book, out, diagnostics, chapter_html=chapter_html)
    return roomy_stack(_build, book, pieces, out, diagnostics, cache, jobs, progress, chapter_html)  # forked workers inherit the room


def _build(book: Book, pieces: PrintPieces, out: Path, diagnostics: Diagnostics, cache: Cache | None, jobs: int,
           progress: Callable[[str], object] | None, chapter_html: Mapping[str, str] | None) -> int:
    with private_folder("mlbook-pdf-") as temp, atomic_file(out) as pdf, open(pdf, "wb") as handle:
        job = Job(book, pieces, temp, cache, chapter_html)
        front_pages = None
        for _attempt in range(4):
            handle.seek(0)
            handle.truncate()
            writer = BookWriter(handle)  # each part goes to the file as it comes
            parts, used, actual = render_parts(job, diagnostics, jobs, front_pages, writer, progress)
            if actual == used:
                handle.flush()  # nothing buffered is left for the font subsetting's forked processes
                try:
                    subsets = shared_fonts(job, writer.used, jobs)
                    break
                except MissingFont:  # a font program is missing from the cache: render every part again
                    job.cache = None
            front_pages = actual  # the contents took more or fewer pages than with placeholders: number again
        else:
            raise RuntimeError("the PDF's contents do not settle on a number of pages")
        warnings = {message for layout in [parts.front_layout, *parts.layouts] for message in layout.warnings}
        report_weasyprint_warnings(sorted(warnings | writer.warnings), diagnostics, job.book)
        count = writer.finish(parts, subsets, [entry["in_part"] and not entry["part"] for entry in pieces.entries])
        report_missing_alt(job.book, diagnostics, writer.unlabelled)
        handle.close()
        readable(pdf)
        return count


build_pdf_parallel = build_pdf  # the name this entry had before the route became a package

__all__ = ["build_pdf", "build_pdf_parallel", "build_whole_pdf"]
