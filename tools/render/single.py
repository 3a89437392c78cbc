"""One document for the whole book (the PDF's source): ids prefixed per chapter, every chapter link internal."""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from markdown_it.common.normalize_url import normalizeLink
from markupsafe import Markup

from ..book import Book, Chapter
from ..errors import Diagnostics
from ..gitinfo import revision
from ..links.model import Link, TargetKind
from ..markdown import create_markdown
from .html import LinkPolicy, render_chapter_html
from .policy import inside_root, is_image
from .templates import environment


def chapter_prefix(path: str) -> str:
    """`network/benchmarks/README.md` -> `network-benchmarks-readme`: unique per chapter, a valid id."""
    stem = re.sub(r"\.(md|markdown)$", "", path, flags=re.IGNORECASE).lower()
    return re.sub(r"[^a-z0-9_-]+", "-", stem).strip("-") or "chapter"


class SingleDocumentPolicy:
    """Links between chapters become `#prefix--anchor`; files link to the repository; images stay local files."""

    def __init__(self, book: Book, diagnostics: Diagnostics):
        self.book = book
        self.diagnostics = diagnostics
        self.prefixes: dict[str, str] = {}
        for chapter in book.chapters:
            prefix = base = chapter_prefix(chapter.path)
            number = 1
            while prefix in self.prefixes.values():
                number += 1
                prefix = f"{base}-{number}"
            self.prefixes[chapter.path] = prefix

    def anchor_id(self, chapter_path: str, anchor: str) -> str:
        return f"{self.prefixes[chapter_path]}--{anchor}"

    def _chapter_url(self, path: str, fragment: str) -> str:
        return "#" + (self.anchor_id(path, fragment) if fragment else self.prefixes[path])

    def url_for(self, link: Link) -> str | None:
        target = link.target
        if target is None or target.kind in (TargetKind.EXTERNAL, TargetKind.BROKEN):
            return normalizeLink(link.href) if target is not None and target.kind is TargetKind.EXTERNAL else None
        if target.kind is TargetKind.FRAGMENT:
            return self._chapter_url(link.source, target.fragment)
        if target.kind is TargetKind.CHAPTER:
            return self._chapter_url(target.path, target.fragment)
        if target.kind is TargetKind.DIRECTORY and target.readme in self.book.by_path:
            return self._chapter_url(target.readme, target.fragment)
        if (link.kind.is_image or is_image(target.path)) and target.kind is TargetKind.FILE:
            return target.path if inside_root(self.book.root, target.path) else None
        is_dir = target.kind is TargetKind.DIRECTORY and not target.readme
        url = self.book.config.blob_url(target.readme or target.path, is_dir=is_dir)
        return url or None  # no repository configured: the text stays, without a dead link


def render_chapter(md, book: Book, chapter: Chapter, policy: SingleDocumentPolicy) -> str:
    link_policy = LinkPolicy(url_for=policy.url_for, id_for=lambda anchor: policy.anchor_id(chapter.path, anchor), permalinks=False)
    env = dict(chapter.env, docId=policy.prefixes[chapter.path])
    return render_chapter_html(md, chapter.tokens, chapter.links, link_policy, env)


def print_document(book: Book, diagnostics: Diagnostics, template: str = "print.html") -> str:
    """The whole book as one HTML document: cover, table of contents, then every chapter on its own page."""
    md = create_markdown()
    policy = SingleDocumentPolicy(book, diagnostics)
    chapters = []
    for chapter in book.chapters:
        chapters.append({
            "id": policy.prefixes[chapter.path],
            "title": chapter.title,
            "html": Markup(render_chapter(md, book, chapter, policy)),
            "sections": [{"id": policy.anchor_id(chapter.path, h.anchor), "text": h.text, "level": h.level} for h in chapter.headings if h.level in (2, 3)],
        })
    cover = book.config.cover if book.config.cover and inside_root(book.root, book.config.cover) else ""
    now = dt.datetime.now(dt.timezone.utc)
    return environment().get_template(template).render(
        title=book.title,
        authors=", ".join(book.config.authors),
        description=book.config.description,
        subject=book.config.subject or book.config.description,
        language=book.config.language,
        date=now.strftime("%Y-%m-%d"),
        revision=revision(book.root),
        cover=cover,
        chapters=chapters,
        stylesheet=Markup((Path(environment().loader.searchpath[0]) / "print.css").read_text(encoding="utf-8")),
    )
