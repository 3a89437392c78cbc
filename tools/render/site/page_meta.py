"""What the site says about its pages besides their text: descriptions, last-changed dates from git, canonical URLs,
the sitemap, robots.txt and the image a shared link shows (OpenGraph and Twitter cards)."""
from __future__ import annotations

import posixpath
from urllib.parse import quote
from xml.etree import ElementTree

from markdown_it.token import Token

from tools.book.model import Book
from tools.core import safe_io
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostics
from tools.core.git import head_commit, last_commit_dates, repository_prefix

DESCRIPTION_LIMIT = 160  # characters: about what search results and link cards show
SOCIAL_CARD = "social-card.png"  # the image a shared link shows when the book has no PNG or JPEG cover
_CARD_COVERS = (".png", ".jpg", ".jpeg")  # what every link-card reader shows
_TEXT = ("text", "code_inline")
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def first_paragraph(tokens: list[Token]) -> str:
    """The plain text of the chapter's first paragraph that has words (a row of badges has none)."""
    for index, token in enumerate(tokens):
        if token.type != "paragraph_open" or index + 1 >= len(tokens) or tokens[index + 1].type != "inline":
            continue
        words = []
        for child in tokens[index + 1].children or []:
            if child.type in _TEXT:
                words.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                words.append(" ")
        text = " ".join("".join(words).split())
        if text:
            return text
    return ""


def trimmed(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """`text` cut at the last word boundary that keeps it within `limit` characters, with '…' when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.-") + "…"


def chapter_dates(book: Book, cache: Cache | None) -> dict[str, str]:
    """{chapter path: date of the last commit that touched it}; {} outside git. One `git log` for the whole book,
    kept in the build cache under HEAD (and the root's place in the repository), which is all it depends on."""
    head = head_commit(book.root)
    if not head:
        return {}
    key = key_of("git-dates", head, repository_prefix(book.root))
    dates = cache.get("git-dates", key) if cache is not None else None
    if dates is None:
        dates = last_commit_dates(book.root)
        if cache is not None:
            cache.put("git-dates", key, dates)
    return {chapter.path: dates[chapter.path] for chapter in book.chapters if chapter.path in dates}


def page_url(site_url: str, page: str) -> str:
    """The absolute URL of an output page; the front page is the site's own URL."""
    return site_url if page == "index.html" else site_url + quote(page)


def card_image(book: Book, diagnostics: Diagnostics) -> tuple[str, bytes]:
    """The image shared links show, as its name under `assets/` and its bytes: the book's cover when it is a PNG or
    JPEG (checked by load_config), else the tool's social card (or the theme's)."""
    from tools.render.templates import asset_bytes

    cover = book.config.cover
    if cover and posixpath.splitext(cover)[1].lower() in _CARD_COVERS:
        try:
            data = safe_io.read_bytes(book.root / cover, book.root, safe_io.ASSET_LIMIT, shown=cover)
            return "card" + posixpath.splitext(cover)[1].lower(), data
        except safe_io.UnsafeFile as exc:  # it changed since book.toml was checked
            diagnostics.warning(cover, 0, f"The cover '{cover}' {exc.reason}; shared links show the tool's own card.", code="cover")
    return SOCIAL_CARD, asset_bytes(SOCIAL_CARD)


def sitemap_xml(pages: list[tuple[str, str]]) -> bytes:
    """A sitemap (sitemaps.org 0.9) of (absolute URL, last-changed date or '') pairs."""
    ElementTree.register_namespace("", SITEMAP_NS)
    urlset = ElementTree.Element(f"{{{SITEMAP_NS}}}urlset")
    for url, lastmod in pages:
        entry = ElementTree.SubElement(urlset, f"{{{SITEMAP_NS}}}url")
        ElementTree.SubElement(entry, f"{{{SITEMAP_NS}}}loc").text = url
        if lastmod:
            ElementTree.SubElement(entry, f"{{{SITEMAP_NS}}}lastmod").text = lastmod
    return ElementTree.tostring(urlset, encoding="utf-8", xml_declaration=True) + b"\n"


def robots_txt(site_url: str) -> str:
    """Every page may be crawled; the sitemap is named when the site's URL is known."""
    return "User-agent: *\nAllow: /\n" + (f"Sitemap: {site_url}sitemap.xml\n" if site_url else "")
