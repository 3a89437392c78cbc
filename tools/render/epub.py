"""The EPUB 3: one XHTML file per chapter in spine order, a nav document and an NCX, every image embedded."""
from __future__ import annotations

import datetime as dt
import html as html_lib
import posixpath
import uuid
from pathlib import Path

from ..atomic import atomic_file
from ..book import Book
from ..errors import Diagnostics
from ..links.model import Link, TargetKind
from ..markdown import create_markdown
from .html import LinkPolicy, render_chapter_html
from .pages import relative_url
from .policy import MultiPagePolicy, inside_root, is_image
from .templates import TEMPLATES

MEDIA_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml", ".webp": "image/webp"}


class EpubPolicy(MultiPagePolicy):
    """Chapters link to `x.xhtml#id`; images are embedded; other files link to the repository, or lose their link."""

    def __init__(self, book: Book, diagnostics: Diagnostics):
        super().__init__(book, diagnostics, suffix=".xhtml", local=False, external_files=False)

    def url_for(self, link: Link) -> str | None:
        target = link.target
        if target is not None and target.kind is TargetKind.EXTERNAL and link.kind.is_image:
            return None  # an EPUB holds no remote resources: the alt text stays
        if target is not None and target.kind in (TargetKind.FILE, TargetKind.MARKDOWN, TargetKind.DIRECTORY):
            path = target.readme if target.kind is TargetKind.DIRECTORY and target.readme else target.path
            if path in self.book.by_path:
                return relative_url(self.page_of(path), self.page_of(link.source)) + (f"#{target.fragment}" if target.fragment else "")
            if is_image(path) and posixpath.splitext(path)[1].lower() in MEDIA_TYPES and target.kind is TargetKind.FILE:
                if not inside_root(self.book.root, path):
                    return None
                self.copies.add(path)
                return relative_url(path, self.page_of(link.source))
            return self.book.config.blob_url(path, is_dir=target.kind is TargetKind.DIRECTORY and not target.readme) or None
        if target is None or target.kind is TargetKind.BROKEN:
            return None
        return super().url_for(link)


def _cover_svg(title: str, authors: str) -> bytes:
    """A plain typographic cover when book.toml names no cover image."""
    words, lines, current = title.split(), [], ""
    for word in words:
        if len(current) + len(word) > 22 and current:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    lines.append(current)
    text = "".join(f'<text x="300" y="{300 + 70 * i}" font-size="52" text-anchor="middle" font-family="serif" fill="#ffffff">{html_lib.escape(line)}</text>' for i, line in enumerate(lines))
    byline = f'<text x="300" y="720" font-size="28" text-anchor="middle" font-family="sans-serif" fill="#dddddd">{html_lib.escape(authors)}</text>' if authors else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="600" height="900" viewBox="0 0 600 900">'
            f'<rect width="600" height="900" fill="#1d3557"/>{text}{byline}</svg>').encode("utf-8")


def build_epub(book: Book, out: Path, diagnostics: Diagnostics) -> int:
    from ebooklib import epub

    md = create_markdown()
    policy = EpubPolicy(book, diagnostics)
    config = book.config
    document = epub.EpubBook()
    identifier = config.repository or f"{book.title}|{','.join(config.authors)}"
    document.set_identifier(f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, identifier)}")
    document.set_title(book.title)
    document.set_language(config.language or "en")
    for number, author in enumerate(config.authors or ["Unknown author"], 1):
        document.add_author(author, uid=f"creator{number}")  # ids must be unique: ebooklib gives every author 'creator'
    if config.description:
        document.add_metadata("DC", "description", config.description)
    document.add_metadata("DC", "date", dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"))
    for value, prop in (
        ("textual", "schema:accessMode"), ("visual", "schema:accessMode"), ("textual", "schema:accessModeSufficient"),
        ("structuralNavigation", "schema:accessibilityFeature"), ("tableOfContents", "schema:accessibilityFeature"),
        ("readingOrder", "schema:accessibilityFeature"), ("alternativeText", "schema:accessibilityFeature"),
        ("none", "schema:accessibilityHazard"),
        ("Text with headings for structural navigation, a table of contents, and alternative text for images; code is text, not pictures. Some diagrams carry information that is also given in the surrounding text.", "schema:accessibilitySummary"),
    ):
        document.add_metadata(None, "meta", value, {"property": prop})
    style = epub.EpubItem(uid="style", file_name="style/book.css", media_type="text/css", content=(TEMPLATES / "epub.css").read_bytes())
    document.add_item(style)
    cover = config.cover if config.cover and inside_root(book.root, config.cover) and posixpath.splitext(config.cover)[1].lower() in MEDIA_TYPES else ""
    if cover:
        document.set_cover(f"images/cover{posixpath.splitext(cover)[1].lower()}", (book.root / cover).read_bytes())
    else:
        document.set_cover("images/cover.svg", _cover_svg(book.title, ", ".join(config.authors)))
    document.get_item_with_id("cover").is_linear = True  # it opens the book, so it belongs to the reading order
    items, toc = [], []
    for chapter in book.chapters:
        name = policy.page_of(chapter.path)
        body = render_chapter_html(md, chapter.tokens, chapter.links, LinkPolicy(url_for=policy.url_for, id_for=lambda a: a, permalinks=False), chapter.env)
        item = epub.EpubHtml(title=chapter.title, file_name=name, lang=config.language or "en")
        item.content = body
        item.add_link(href=relative_url(style.file_name, name), rel="stylesheet", type="text/css")
        document.add_item(item)
        items.append(item)
        number = len(items)
        sections = [epub.Link(f"{name}#{h.anchor}", h.text or h.anchor, f"nav-{number}-{k}") for k, h in enumerate(h for h in chapter.headings if h.level == 2)]
        entry = epub.Link(name, chapter.title, f"nav-{number}")
        toc.append((epub.Section(chapter.title, name), sections) if sections else entry)
    for rel in sorted(policy.copies):
        suffix = posixpath.splitext(rel)[1].lower()
        document.add_item(epub.EpubItem(uid=f"img-{len(document.items)}", file_name=rel, media_type=MEDIA_TYPES[suffix], content=(book.root / rel).read_bytes()))
    document.toc = toc
    document.add_item(epub.EpubNcx())
    document.add_item(epub.EpubNav())
    document.spine = ["cover", "nav", *items]
    with atomic_file(out) as temp:
        epub.write_epub(str(temp), document, {"epub3_pages": False})
    return len(document.items)
