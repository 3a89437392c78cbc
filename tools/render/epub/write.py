"""The EPUB 3: one XHTML file per chapter in spine order, a nav document and an NCX, every image embedded."""
from __future__ import annotations

import html as html_lib
import posixpath
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from tools import __version__
from tools.book.collect import ELEMENT_DEPTH
from tools.book.diagrams import drawings_digest
from tools.book.interface_text import interface_text
from tools.book.link_model import Link, LinkKind, TargetKind
from tools.book.model import Book, repository_config
from tools.book.parts import grouped
from tools.book.translations import chapter_language
from tools.core import safe_io
from tools.core.atomic import atomic_file, build_time, readable
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostics
from tools.markdown.parser import create_markdown
from tools.render.diagrams.html import restore_svgs, stash_svgs
from tools.render.epub.accessibility import accessibility_metadata, lang_writer, pictures_of
from tools.render.html import LinkPolicy, fixed_urls, render_chapter_html
from tools.render.pages import portable_name, relative_url, unique_names
from tools.render.policy import MultiPagePolicy, normalized_link, remote_image
from tools.render.templates import asset_bytes

MEDIA_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml", ".webp": "image/webp"}


PLACEHOLDER_IMAGE = "images/missing-image.svg"
EPUB_FILES = ("nav.xhtml", "cover.xhtml", "toc.ncx", "content.opf", "style/book.css", PLACEHOLDER_IMAGE)  # ebooklib's and ours
_PLACEHOLDER_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="24" viewBox="0 0 120 24">'
                    b'<rect x="0.5" y="0.5" width="119" height="23" fill="none" stroke="#999" stroke-dasharray="3 2"/></svg>')


class EpubPolicy(MultiPagePolicy):
    """Chapters link to `x.xhtml#id`; images are embedded; other files link to the repository, or lose their link.

    An EPUB holds no remote resources and no dangling references: an image that cannot be embedded keeps its alt
    text (a raw-HTML `<img>` points at a small embedded placeholder instead), and a link to an anchor that does not
    exist opens its chapter; the checks have already reported both with file:line.
    """

    def __init__(self, book: Book, diagnostics: Diagnostics):
        super().__init__(book, diagnostics, suffix=".xhtml", local=False, external_files=False, reserved=EPUB_FILES, portable=True)
        self.members: dict[str, str] = {}  # embedded file -> its member name
        self.placeholder = False  # whether some chapter needs PLACEHOLDER_IMAGE
        self.config = repository_config(book)

    def url_for(self, link: Link) -> str | None:
        if link.theme == "dark":
            return None  # the EPUB shows the light variant only: the dark one is neither shown nor embedded
        url = self._url(link)
        if url is None and link.kind is LinkKind.HTML_SRC:
            self.placeholder = True
            return relative_url(PLACEHOLDER_IMAGE, self.page_of(link.source))
        return url

    def member(self, path: str) -> str:
        """The member name of an embedded file: portable, and never a chapter's or another file's."""
        if path not in self.members:
            taken = {*self.written, *(name.casefold() for name in self.members.values())}
            self.members[path] = unique_names([(path, portable_name(path))], taken)[path]
        return self.members[path]

    def _fragment(self, chapter_path: str, fragment: str) -> str:
        return f"#{fragment}" if fragment and fragment in self.book.by_path[chapter_path].anchors else ""

    def _url(self, link: Link) -> str | None:
        target = link.target
        if target is None or target.kind is TargetKind.BROKEN:
            return None
        if target.kind is TargetKind.EXTERNAL:
            if link.kind.is_image:
                remote_image(link, self.diagnostics)
                return None
            return normalized_link(target.url or link.href)
        here = self.page_of(link.source)
        if target.kind is TargetKind.FRAGMENT:
            return self._fragment(link.source, target.fragment) or relative_url(here, here)
        path = target.readme if target.kind is TargetKind.DIRECTORY and target.readme else target.path
        if path in self.book.by_path:
            return relative_url(self.page_of(path), here) + self._fragment(path, target.fragment)
        if link.kind.is_image:  # embedded, or no image at all: never a remote one
            embeddable = target.kind is TargetKind.FILE and posixpath.splitext(path)[1].lower() in MEDIA_TYPES
            if not embeddable:
                return None
            problem = self.refusal(path)
            if problem is not None:
                self.report_refusal(link, problem, "embedded")
                return None
            self.copies.add(path)
            return relative_url(self.member(path), here)
        # A text link may only open a spine document (epubcheck RSC-011): any other file, an image included,
        # is linked where it lives in the repository.
        is_dir = target.kind is TargetKind.DIRECTORY and not target.readme
        url = self.config.blob_url(path, is_dir=is_dir)
        if url and target.fragment and not is_dir:
            url += f"#{target.fragment}"
        return url or None


# GitHub gives a heading made only of emoji or punctuation the empty id, which XHTML forbids. Its EPUB id is one that
# no heading's id can be: GitHub's ids never hold a full stop.
EMPTY_HEADING_ID = "heading.untitled"


def xhtml_id(anchor: str) -> str:
    return anchor or EMPTY_HEADING_ID


_ELEMENT = re.compile(r"<[A-Za-z]")  # ebooklib writes a body without any element as an empty, ill-formed file
_A_NAME = re.compile(r"<a\b[^>]*>", re.IGNORECASE)
_NAME_ATTR = re.compile(r"(\s)name(\s*=)", re.IGNORECASE)
_ID_ATTR = re.compile(r"\sid\s*=", re.IGNORECASE)


def _names_to_ids(body: str) -> str:
    """`<a name="x">` (raw HTML, an anchor on GitHub) becomes `<a id="x">`: XHTML 5 knows only ids as link targets."""
    def fix(match: re.Match) -> str:
        tag = match.group(0)
        return tag if _ID_ATTR.search(tag) else _NAME_ATTR.sub(r"\1id\2", tag, count=1)

    return _A_NAME.sub(fix, body)


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
            f'<rect width="600" height="900" fill="#1d3557"/>{text}{byline}</svg>').encode()


def _read_asset(book: Book, rel: str, diagnostics: Diagnostics) -> bytes | None:
    """An image to embed, read through safe_io; one swapped for a link out of the root or a FIFO since the links
    were checked is reported and left out."""
    try:
        return safe_io.read_bytes(book.root / rel, book.root, safe_io.ASSET_LIMIT, shown=rel)
    except safe_io.UnsafeFile as exc:
        diagnostics.error(rel, 0, f"the file {exc}; it was not embedded in the EPUB.", suggestion=exc.suggestion, code="unsafe-file")
        return None


def epub_key(chapter, urls: Sequence[str | None]) -> str | None:
    """The cache key of a chapter's XHTML body: the chapter and the URL each of its links gets."""
    return key_of("epub", chapter.key, urls, drawings_digest(chapter.drawings)) if chapter.key else None


def chapter_body(md, chapter, tokens, urls: Sequence[str | None]) -> str:
    """The chapter's XHTML body, its links getting `urls` (one per link, in order)."""
    link_policy = LinkPolicy(url_for=fixed_urls(chapter.links, urls), id_for=xhtml_id, permalinks=False, max_depth=ELEMENT_DEPTH, xhtml=True, dark_images=False)
    return _names_to_ids(render_chapter_html(md, tokens, chapter.links, link_policy, chapter.env, chapter.drawings))


def _chapter_item(svgs: list[str]):
    """ebooklib's chapter document, with the diagrams `stash_svgs` took out put back into the XHTML it writes."""
    from ebooklib import epub

    if not svgs:
        return epub.EpubHtml

    class DiagramHtml(epub.EpubHtml):
        def get_content(self, default=None):
            return restore_svgs(super().get_content(default), svgs)

    return DiagramHtml


def chapter_bodies(book: Book, policy: EpubPolicy, cache: Cache | None = None) -> list[str]:
    """Each chapter's XHTML body, rendered here, for an EPUB built on its own; `tools build` renders the bodies where
    the chapters were parsed (tools/build/pipeline.py). The URLs are worked out in chapter order: that is where the policy
    learns which images to embed, and under which names."""
    usable = cache if cache is not None and cache.enabled else None
    md = create_markdown()
    bodies = []
    for chapter in book.chapters:
        urls = [policy.url_for(link) for link in chapter.links]
        key = epub_key(chapter, urls)
        body = usable.get("epub", key) if usable is not None and key else None
        if not isinstance(body, str):
            body = chapter_body(md, chapter, chapter.tokens, urls)
            if usable is not None and key:
                usable.put("epub", key, body)
        bodies.append(body)
    return bodies


def build_epub(book: Book, out: Path, diagnostics: Diagnostics, cache: Cache | None = None,
               bodies: list[str] | None = None, policy: EpubPolicy | None = None) -> int:
    """Write the EPUB atomically; returns how many files it holds. `bodies` (with the `policy` that gave their links
    URLs, which knows the images to embed) are the chapters' bodies rendered beforehand; without them they are
    rendered here, those the `cache` holds taken from it."""
    from ebooklib import epub

    if bodies is None or policy is None:
        policy = EpubPolicy(book, diagnostics)
        bodies = chapter_bodies(book, policy, cache)
    policy.diagnostics = diagnostics
    config = book.config
    document = epub.EpubBook()
    identifier = config.repository or f"{book.title}|{','.join(config.authors)}"
    identifier += f"|{config.language}" if config.translation else ""  # a translation is a book of its own
    document.set_identifier(f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, identifier)}")
    document.set_title(book.title)
    # names the tool, so that a later build knows it may replace this file (tools/core/outputs.py)
    document.set_unique_metadata("OPF", "generator", "", {"name": "generator", "content": f"mlbook-tools {__version__}"})
    document.set_language(config.language or "en")
    for number, author in enumerate(config.authors or ["Unknown author"], 1):
        document.add_author(author, uid=f"creator{number}")  # ids must be unique: ebooklib gives every author 'creator'
    if config.description:
        document.add_metadata("DC", "description", config.description)
    document.add_metadata("DC", "date", build_time().strftime("%Y-%m-%dT%H:%M:%SZ"))
    for value, prop in accessibility_metadata(pictures_of(bodies)):  # what is true of this book's chapters
        document.add_metadata(None, "meta", value, {"property": prop})
    style = epub.EpubItem(uid="style", file_name="style/book.css", media_type="text/css", content=asset_bytes("epub.css"))
    document.add_item(style)
    cover = config.cover if config.cover and posixpath.splitext(config.cover)[1].lower() in MEDIA_TYPES else ""
    cover_bytes = _read_asset(book, cover, diagnostics) if cover else None
    cover_name = f"images/cover{posixpath.splitext(cover)[1].lower() if cover_bytes is not None else '.svg'}"
    cover_name = unique_names([("", cover_name)], [policy.member(rel) for rel in policy.copies])[""]  # the book may hold an images/cover.png
    if cover_bytes is not None:
        document.set_cover(cover_name, cover_bytes)
    else:
        document.set_cover(cover_name, _cover_svg(book.title, ", ".join(config.authors)))
    document.get_item_with_id("cover").is_linear = True  # it opens the book, so it belongs to the reading order
    items, toc = [], []
    for chapter, body in zip(book.chapters, bodies):
        name = policy.page_of(chapter.path)
        body, svgs = stash_svgs(body)  # mermaid drawings, kept from ebooklib's HTML parser
        item = _chapter_item(svgs)(title=chapter.title, file_name=name, lang=chapter_language(book, chapter))
        item.content = body if _ELEMENT.search(body) else body + '<div class="empty-chapter"></div>'
        if chapter.fallback:  # shown in the original's language, said in the book's
            notice = html_lib.escape(interface_text(config.language)["not_translated"])
            item.content = f'<p class="not-translated" lang="{html_lib.escape(config.language)}">{notice}</p>' + item.content
        if not body.lstrip().startswith("<"):  # escaped raw HTML first: ebooklib keeps only the body's elements
            item.content = "<span></span>" + item.content
        item.add_link(href=relative_url(style.file_name, name), rel="stylesheet", type="text/css")
        if "<svg" in item.content or svgs:  # an alert's icon, a diagram: epubcheck wants the manifest to say so (OPF-014)
            item.properties.append("svg")
        if "<math " in body:  # EPUB 3 asks a document holding MathML to say so in the manifest
            item.properties.append("mathml")
        document.add_item(item)
        items.append(item)
        number = len(items)
        sections = [epub.Link(f"{quote(name)}#{xhtml_id(h.anchor)}", h.text or h.anchor, f"nav-{number}-{k}") for k, h in enumerate(h for h in chapter.headings if h.level == 2)]
        entry = epub.Link(quote(name), chapter.title, f"nav-{number}")
        toc.append((chapter.path, (epub.Section(chapter.title, quote(name)), sections) if sections else entry))
    for rel in sorted(policy.copies):
        suffix = posixpath.splitext(rel)[1].lower()
        content = _read_asset(book, rel, diagnostics)
        if content is not None:
            document.add_item(epub.EpubItem(uid=f"img-{len(document.items)}", file_name=policy.member(rel), media_type=MEDIA_TYPES[suffix], content=content))
    if policy.placeholder:
        document.add_item(epub.EpubItem(uid="missing-image", file_name=PLACEHOLDER_IMAGE, media_type="image/svg+xml", content=_PLACEHOLDER_SVG))
    # A part is a section of the navigation over its chapters, opening its first one (the NCX needs a target).
    document.toc = [entry for part, run in grouped(toc, book.parts, path_of=lambda item: item[0])
                    for entry in ([(epub.Section(part.title, quote(policy.page_of(part.first))), [item for _, item in run])] if part else [item for _, item in run])]
    document.add_item(epub.EpubNcx())
    document.add_item(epub.EpubNav())
    document.spine = ["cover", "nav", *items]
    with atomic_file(out) as temp:
        # epub.write_epub, with xml:lang on <package>; the writer's own write() raises on a full disk, where
        # write_epub would return False and leave an empty EPUB called built
        writer = lang_writer()(str(temp), document, {"epub3_pages": False})
        writer.process()
        writer.write()
        readable(temp)
    return len(document.items)
