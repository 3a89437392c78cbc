"""Markdown rendered as a chapter of a book by the tool (the site's code path), and by cmark-gfm as github.com does.

The tool's side writes every document into one book in a temporary folder and goes the way `tools build html`
goes for a chapter body: the stages of `load_book` (the chapter list, `parse_text` with `create_markdown`, `collect`, links
resolved against the book), the site's link policy (`MultiPagePolicy.url_for`) and `chapter_body`, the shared
renderer `render_chapter_html`. One book for all the examples, so the whole suite renders in a second or two.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rendered:
    html: str  # the chapter body, as the site renders it
    anchors: tuple[str, ...]  # its headings' ids, in order, as the link checker, `mv` and every format know them


def render_book(documents: Mapping[str, str], as_written: bool = False) -> dict[str, Rendered]:
    """{name: markdown} -> {name: the chapter as the site renders it}; each document is a chapter of one book. With
    `as_written`, every link keeps its address as written (the site's policy for an address outside the book), so
    that a chapter's links compare with another parser's: the chapter's own file links would otherwise become pages."""
    from tools.book.config import load_config
    from tools.book.load import add_chapters, open_book, parse_chapter
    from tools.core.errors import Diagnostics
    from tools.markdown.parser import create_markdown
    from tools.render.policy import MultiPagePolicy, normalized_link
    from tools.render.site.write import chapter_body

    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None  # 700 small files
    with tempfile.TemporaryDirectory(prefix="conformance-", dir=memory) as folder:
        root = Path(folder)
        paths = {name: f"doc-{index:05d}.md" for index, name in enumerate(documents)}  # any name, one folder
        for name, text in documents.items():
            (root / paths[name]).write_text(text, encoding="utf-8", newline="")
        (root / "chapters-md.txt").write_text("".join(f"{path}\n" for path in paths.values()), encoding="utf-8")
        # load_book's stages, with one parser for every chapter as a chapter worker of `tools build` has
        book, entries = open_book(load_config(root))
        md = create_markdown(())
        parsed = []
        for path, line in entries:
            found = Diagnostics()
            parsed.append((parse_chapter(root, path, line, found, md), found.items))
        add_chapters(book, parsed)
        policy = MultiPagePolicy(book, Diagnostics())
        by_path = {chapter.path: chapter for chapter in book.chapters}
        out = {}
        for name, path in paths.items():
            chapter = by_path[path]
            urls = [normalized_link(link.href) if as_written else policy.url_for(link) for link in chapter.links]
            out[name] = Rendered(chapter_body(md, chapter, chapter.tokens, urls)[0], tuple(h.anchor for h in chapter.headings))
        return out


GITHUB_EXTENSIONS = ("autolink", "strikethrough", "table", "tagfilter", "tasklist")


def cmark_available() -> bool:
    try:
        import cmarkgfm  # noqa: F401
    except ImportError:
        return False
    return True


def github_html(markdown: str) -> str:
    """What github.com's parser gives: cmark-gfm with GitHub's extensions, raw HTML kept (github.com sanitises it
    afterwards, a step the tool's own allowlist stands for), footnotes on."""
    from cmarkgfm import cmark

    options = cmark.Options.CMARK_OPT_UNSAFE | cmark.Options.CMARK_OPT_FOOTNOTES
    return cmark.markdown_to_html_with_extensions(markdown, options=options, extensions=list(GITHUB_EXTENSIONS))
