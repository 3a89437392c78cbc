"""The three formats the tool ships, as `Format` registrations (tools/render/registry.py): the site, the PDF, the EPUB.

Each is a thin adapter over its renderer, which it imports only when it works, so that listing the formats
(`tools build --help`) loads no renderer."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.render.protocol import BuildOptions, Built, Prepared

if TYPE_CHECKING:  # listing the formats (`tools build --help`) imports no parser, model or renderer
    from markdown_it.token import Token

    from tools.book.model import Book, Chapter
    from tools.core.errors import Diagnostics


@lru_cache(maxsize=1)
def _markdown():
    """The MarkdownIt whose renderer rules (footnotes, front matter) each render borrows: one per process."""
    from tools.markdown.parser import create_markdown

    return create_markdown()


def _urls(book: Book, url_for) -> list[list[str | None]]:
    """The URL of every link, chapter by chapter in book order (the order in which a policy names copied files)."""
    return [[url_for(link) for link in chapter.links] for chapter in book.chapters]


class SiteFormat:
    name = "html"
    default_output = "html"
    cache_namespace = "site"

    def preload(self, sources: list[str]) -> None:
        from tools.render.html import warm_lexers
        from tools.render.site import write as site  # noqa: F401

        _markdown()
        warm_lexers(sources)

    def prepare(self, book: Book, diagnostics: Diagnostics, options: BuildOptions) -> Prepared:
        from tools.render.policy import MultiPagePolicy
        from tools.render.site.write import site_key

        policy = MultiPagePolicy(book, diagnostics, ".html", local=options.local, refusals=options.refusals)
        urls = _urls(book, policy.url_for)
        return Prepared(urls, [site_key(chapter, own) for chapter, own in zip(book.chapters, urls)], policy)

    def render_chapter(self, chapter: Chapter, tokens: list[Token], context: Any) -> Any:
        from tools.render.site.write import chapter_body

        return chapter_body(_markdown(), chapter, tokens, context)

    def finish(self, book: Book, prepared: Prepared, results: list[Any], out: Path, diagnostics: Diagnostics, options: BuildOptions) -> Built:
        from tools.core.report import progress
        from tools.render.site.write import build_site

        with progress("html", len(book.chapters)) as advance:
            result = build_site(book, out, diagnostics, local=options.local, progress=advance, cache=options.cache, bodies=results, policy=prepared.state, languages=options.languages, jobs=options.jobs)
        return Built(out / "index.html", f"{result.pages} pages, {result.files} copied files")


EARLY_IMPORT_LIMIT = 4_000_000  # bytes of markdown to parse: 1x the upstream book is 1.2 MB, 10x is 12 MB


class PdfFormat:
    name = "pdf"
    default_output = "book.pdf"
    cache_namespace = "print"

    def meanwhile(self, markdown_bytes: int) -> None:
        """WeasyPrint's imports (0.2 s, which the layout workers inherit) while the chapter workers parse; not for a
        long book, where they would add their 30-45 MiB to the parse's peak memory to save 0.1 s of minutes."""
        if markdown_bytes <= EARLY_IMPORT_LIMIT:
            from tools.render.pdf.native import load_weasyprint

            load_weasyprint()

    def preload(self, sources: list[str]) -> None:
        from tools.render.html import warm_lexers
        from tools.render.pdf import document as single  # noqa: F401

        _markdown()
        warm_lexers(sources)

    def prepare(self, book: Book, diagnostics: Diagnostics, options: BuildOptions) -> Prepared:
        from tools.book.diagrams import drawings_digest
        from tools.core.cache import key_of
        from tools.render.pdf.document import SingleDocumentPolicy

        policy = SingleDocumentPolicy(book, diagnostics)
        urls = _urls(book, policy.url_for)
        contexts = [(own, policy.prefixes[chapter.path]) for chapter, own in zip(book.chapters, urls)]
        keys = [key_of("print", chapter.key, *context, drawings_digest(chapter.drawings)) if chapter.key else None for chapter, context in zip(book.chapters, contexts)]
        return Prepared(contexts, keys, policy)

    def render_chapter(self, chapter: Chapter, tokens: list[Token], context: Any) -> Any:
        """Exactly what `single.render_chapter` gives: the chapter's HTML in the print document."""
        from tools.render.html import fixed_urls
        from tools.render.pdf.document import chapter_print_html

        urls, prefix = context
        return chapter_print_html(_markdown(), chapter, tokens, fixed_urls(chapter.links, urls), prefix)

    def finish(self, book: Book, prepared: Prepared, results: list[Any], out: Path, diagnostics: Diagnostics, options: BuildOptions) -> Built:
        from tools.core.report import progress
        from tools.render.pdf import build_pdf
        from tools.render.pdf.coverage import check_glyphs
        from tools.render.pdf.job import PackedTexts

        if not check_glyphs(book, results, diagnostics, out.name):  # before layout: a missing glyph would print as an empty box
            return Built(out, "not written, as some characters have no font")
        chapter_html = PackedTexts((chapter.path, html) for chapter, html in zip(book.chapters, results))
        del results  # the packed copies are what stays (the pipeline holds no other reference)
        with progress("pdf", len(book.chapters)) as advance:
            pages = build_pdf(book, out, diagnostics, cache=options.cache, jobs=options.jobs, progress=advance, chapter_html=chapter_html)
        return Built(out, f"{pages} pages")


class EpubFormat:
    name = "epub"
    default_output = "book.epub"
    cache_namespace = "epub"

    def preload(self, sources: list[str]) -> None:
        from tools.render.epub import write as epub  # noqa: F401
        from tools.render.html import warm_lexers

        _markdown()
        warm_lexers(sources)

    def prepare(self, book: Book, diagnostics: Diagnostics, options: BuildOptions) -> Prepared:
        from tools.render.epub.write import EpubPolicy, epub_key

        policy = EpubPolicy(book, diagnostics)
        urls = _urls(book, policy.url_for)  # the policy learns which images to embed, and names them in this order
        return Prepared(urls, [epub_key(chapter, own) for chapter, own in zip(book.chapters, urls)], policy)

    def render_chapter(self, chapter: Chapter, tokens: list[Token], context: Any) -> Any:
        from tools.render.epub.write import chapter_body

        return chapter_body(_markdown(), chapter, tokens, context)

    def finish(self, book: Book, prepared: Prepared, results: list[Any], out: Path, diagnostics: Diagnostics, options: BuildOptions) -> Built:
        from tools.render.epub.write import build_epub

        files = build_epub(book, out, diagnostics, cache=options.cache, bodies=results, policy=prepared.state)
        return Built(out, f"{files} files inside")


BUILTIN_FORMATS = (SiteFormat(), PdfFormat(), EpubFormat())
