"""The HTML site: a page per chapter, a front page, a sidebar, search, themes; self-contained, works from file://."""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from .. import safe_io
from ..atomic import atomic_dir
from ..book import Book
from ..cache import Cache, key_of
from ..diagram_source import drawings_digest
from ..errors import Diagnostics
from ..git import revision
from ..interface_text import interface_text
from ..markdown import create_markdown
from ..redirects import collapsed
from .html import LinkPolicy, fixed_urls, pygments_css, render_chapter_html
from .languages import LanguageLinks
from .nav import NavNode, build_nav
from .page_meta import card_image, chapter_dates, first_paragraph, page_url, robots_txt, sitemap_xml, trimmed
from .pages import page_path, relative_url, root_prefix
from .policy import MultiPagePolicy, copy_files
from .search import search_index_files, sections
from .templates import asset_bytes, environment, theme_extras

ASSETS = ("style.css", "search.js", "theme.js", "copy.js")  # with pygments.css, search-index.js and search/, the favicon: policy.SITE_FILES
_ICON_TYPES = {".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon"}
# An icon up to this size goes inside every page as a data: URL: no request of its own, so none to fail or to be
# cut off by the next click; a bigger one is linked to its copy in assets/, which the browser caches.
INLINE_ICON_LIMIT = 8 * 1024


@dataclass
class SiteResult:
    out: Path
    pages: int
    files: int


def _nav_html(nodes: list[NavNode], current: str, policy: MultiPagePolicy, page: str) -> list[dict]:
    items = []
    for node in nodes:
        url = relative_url(policy.page_of(node.chapter), page) if node.chapter else ""
        items.append({"title": node.title, "url": url, "current": node.chapter == current, "part": node.part, "children": _nav_html(node.children, current, policy, page)})
    return items


def _favicon(book: Book, diagnostics: Diagnostics) -> tuple[str, bytes]:
    """The favicon's name under `assets/` and its bytes: `[book] favicon` (checked by load_config), else the tool's."""
    chosen = book.config.favicon
    if chosen:
        try:
            return "favicon" + posixpath.splitext(chosen)[1].lower(), safe_io.read_bytes(book.root / chosen, book.root, safe_io.ASSET_LIMIT, shown=chosen)
        except safe_io.UnsafeFile as exc:  # it changed since book.toml was checked
            diagnostics.error(chosen, 0, f"The favicon '{chosen}' {exc.reason}; the site got the tool's own icon.", code="favicon")
    return "favicon.svg", asset_bytes("favicon.svg")


def _data_url(name: str, data: bytes) -> str:
    """The icon as a URL of its own bytes; the 404 page always has it so, as a server shows it at any depth."""
    return f"data:{_ICON_TYPES[posixpath.splitext(name)[1]]};base64,{base64.b64encode(data).decode('ascii')}"


def site_key(chapter, urls: Sequence[str | None]) -> str | None:
    """The cache key of a chapter's page body: the chapter and the URL every link got, which is all it depends on."""
    return key_of("site", chapter.key, urls, drawings_digest(chapter.drawings)) if chapter.key else None


def chapter_body(md, chapter, tokens, urls: Sequence[str | None]) -> tuple[str, list[dict], str]:
    """The chapter's page body, search sections and description, its links getting `urls` (one per link, in order)."""
    link_policy = LinkPolicy(url_for=fixed_urls(chapter.links, urls), id_for=lambda anchor: anchor)
    body = render_chapter_html(md, tokens, chapter.links, link_policy, chapter.env, chapter.drawings)
    return body, sections(chapter, tokens), trimmed(first_paragraph(tokens))


def _chapter_body(md, chapter, policy: MultiPagePolicy, cache: Cache | None) -> tuple[str, list[dict], str]:
    """A body rendered here, for a site built on its own (`check-links --html`); `tools build` renders the bodies
    where the chapters were parsed (tools/pipeline.py) and passes them to `build_site`."""
    urls = [policy.url_for(link) for link in chapter.links]
    key = site_key(chapter, urls)
    cached = cache.get("site", key) if cache is not None and key else None
    if cached is not None:
        return cached
    body = chapter_body(md, chapter, chapter.tokens, urls)
    if cache is not None and key:
        cache.put("site", key, body)
    return body


def _search_files(entries: list[dict], language: str, cache: Cache | None) -> dict[str, str]:
    """The split search index, from the cache when the sections and the language are those of an earlier build."""
    key = key_of("search", hashlib.sha256(repr((language, entries)).encode()).hexdigest())
    files = cache.get("search", key) if cache is not None else None
    if files is None:
        files = search_index_files(entries, language)
        if cache is not None:
            cache.put("search", key, files)
    return files


def _write_redirects(book: Book, policy: MultiPagePolicy, temp: Path, template, common: dict, diagnostics: Diagnostics) -> None:
    """A small page at the old URL of each `[redirects]` entry that sends the reader on to the chapter's page, with
    the #fragment kept (by script; the refresh and the link without it). The links are relative, so they work
    under any subpath and from file://. A redirect whose target is no chapter, or whose old path is a file of the
    book again, is left out (check_book reports it); one that would replace a page of the site is an error."""
    config = book.config
    if not config.redirects:
        return
    written = {path.relative_to(temp).as_posix().casefold() for path in temp.rglob("*")}
    files = {path.relative_to(temp).as_posix().casefold() for path in temp.rglob("*") if not path.is_dir()}
    for old, logical_new in collapsed(config.redirects).items():
        new = book.index.real(logical_new)  # in a translation's site, its translated chapter when it has one
        if new not in book.by_path or book.index.real(old) in book.index.files:
            continue
        page = page_path(old)
        folders = ["/".join(page.casefold().split("/")[:n]) for n in range(1, page.count("/") + 1)]
        if page.casefold() in written or any(folder in files for folder in folders):  # a page there, or a page where a folder must go
            shown = config.config_file.name if config.config_file else "book.toml"
            diagnostics.error(shown, config.redirect_lines.get(old, 0), f"the redirect from '{old}' would write {page}, which is a page of the site already; it was not written.", suggestion="Remove the entry from [redirects].", code="redirect")
            continue
        url = relative_url(policy.page_of(new), page)
        (temp / page).parent.mkdir(parents=True, exist_ok=True)
        (temp / page).write_text(template.render(dict(common, page_title=book.by_path[new].title, url=url)), encoding="utf-8")
        written.update([page.casefold(), *folders])
        files.add(page.casefold())


def build_site(book: Book, out: Path, diagnostics: Diagnostics, local: bool = False, progress: Callable[[str], None] | None = None, cache: Cache | None = None,
               bodies: list[tuple[str, list[dict], str]] | None = None, policy: MultiPagePolicy | None = None, language: str | None = None, languages: Sequence = ()) -> SiteResult:
    """Write the site atomically. `bodies` (with the `policy` that gave their links URLs, which knows the files to
    copy) are the chapters' page bodies rendered beforehand; without them each is rendered here. `language` (the
    book's `[book] language` unless given) is the one source of the pages' `lang`, their interface's words and the
    search index's language. `languages`: every language's site (tools/translations.py), for the language switcher;
    the original's site keeps the translations' sites that lie inside it."""
    language = language or book.config.language
    ui = interface_text(language)
    md = create_markdown()
    policy = policy or MultiPagePolicy(book, diagnostics, ".html", local=local)
    policy.diagnostics = diagnostics
    env = environment()
    nav = build_nav(book)
    built = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    icon_name, icon = _favicon(book, diagnostics)
    site_url = book.config.site_url
    card_name, card = card_image(book, diagnostics) if site_url else ("", b"")
    dates = chapter_dates(book, cache)
    common = {
        "book": book,
        "title": book.title,
        "authors": ", ".join(book.config.authors),
        "description": book.config.description,
        "language": language,
        "ui": ui,
        "revision": revision(book.root),
        "built": built,
        "favicon": "assets/" + icon_name,
        "favicon_url": _data_url(icon_name, icon) if len(icon) <= INLINE_ICON_LIMIT else "",
        "favicon_type": _ICON_TYPES[posixpath.splitext(icon_name)[1]],
        "page_description": book.config.description,
        "og_type": "website",
        "og_locale": book.config.language.replace("-", "_"),
        "card_url": site_url + "assets/" + card_name if card_name else "",
        **LanguageLinks((), "").variables(None, ""),  # no switcher where a page sets none (the 404 page)
    }
    sitemap: list[tuple[str, str]] = []
    switcher = LanguageLinks(languages, book.config.language or "en")
    keep = () if book.config.translation else tuple(site.base.strip("/") for site in languages if site.base)
    index_entries: list[dict] = []
    chapter_template = env.get_template("chapter.html")
    with atomic_dir(out, keep=keep) as temp:
        for number, chapter in enumerate(book.chapters):
            page = policy.page_of(chapter.path)
            content, chapter_sections, description = bodies[number] if bodies is not None else _chapter_body(md, chapter, policy, cache)
            previous = book.chapters[number - 1] if number > 0 else None
            following = book.chapters[number + 1] if number + 1 < len(book.chapters) else None
            context = dict(
                common,
                page_title=chapter.title,
                content=Markup(content),
                root=root_prefix(page),
                nav=_nav_html(nav, chapter.path, policy, page),
                toc=[h for h in chapter.headings if h.level in (2, 3)],
                previous={"url": relative_url(policy.page_of(previous.path), page), "title": previous.title} if previous else None,
                next={"url": relative_url(policy.page_of(following.path), page), "title": following.title} if following else None,
                source_url=book.config.blob_url(chapter.path),
                edit_url=book.config.edit_url(chapter.path),
                last_changed=dates.get(chapter.path, ""),
                front_url=relative_url(policy.front, page),
                page_description=description or book.config.description,
                og_type="article",
                canonical=page_url(site_url, page) if site_url else "",
                **switcher.variables(book.index.logical(chapter.path), page, chapter.language, chapter.fallback),
            )
            sitemap.append((page_url(site_url, page), dates.get(chapter.path, "")))
            target = temp / page
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(chapter_template.render(context), encoding="utf-8")
            for section in chapter_sections:
                index_entries.append({"p": quote(page), "a": section["a"], "t": section["t"], "c": chapter.title, "x": section["x"]})
            if progress:
                progress(chapter.path)
        front = policy.front  # index.html, unless a chapter's page took that name
        (temp / front).write_text(env.get_template("front.html").render(dict(common, page_title=book.title, root="", og_type="book", canonical=page_url(site_url, front) if site_url else "", nav=_nav_html(nav, "", policy, front), front_url=front, **switcher.variables(None, front), first={"url": policy.page_of(book.chapters[0].path), "title": book.chapters[0].title} if book.chapters else None)), encoding="utf-8")
        # a server shows 404.html at any path: its link to the front page is absolute (site_url's path) or found by its script
        (temp / "404.html").write_text(env.get_template("404.html").render(dict(common, page_title=ui["not_found_title"], favicon_url=_data_url(icon_name, icon), site_path=urlsplit(site_url).path if site_url else "")), encoding="utf-8")
        assets = temp / "assets"
        assets.mkdir(exist_ok=True)  # a chapter may sit in a folder named assets
        for name in ASSETS:
            (assets / name).write_bytes(asset_bytes(name))
        for name in theme_extras():  # a theme's own files (a logo, a font) beside the assets they go with
            (assets / name).parent.mkdir(parents=True, exist_ok=True)
            (assets / name).write_bytes(asset_bytes(name))
        (assets / icon_name).write_bytes(icon)
        if card_name:
            (assets / card_name).write_bytes(card)
        (assets / "pygments.css").write_text(pygments_css(), encoding="utf-8")
        (assets / "search").mkdir(exist_ok=True)
        for name, text in _search_files(index_entries, language, cache).items():
            (assets / name).write_text(text, encoding="utf-8")
        listing_pages = {policy.listing_page(folder): folder for folder in sorted(policy.listings)}
        listed = {name.casefold() for name in listing_pages}
        for clash in sorted(c for c in policy.copies if c.casefold() in listed):
            diagnostics.error(clash, 0, f"'{clash}' has the name of the page that lists its folder's files; it was not copied.", suggestion="Rename the file or add a README to its folder.", code="name-clash")
            policy.copies.discard(clash)
        files = copy_files(book, policy.copies, temp, diagnostics)
        listing = env.get_template("listing.html")
        for page, folder in listing_pages.items():
            members = [{"name": f[len(folder) + 1 :], "url": quote(f[len(folder) + 1 :])} for f in sorted(policy.copies) if f.startswith(folder + "/")]
            canonical = page_url(site_url, page) if site_url else ""
            (temp / page).write_text(listing.render(dict(common, page_title=folder + "/", folder=folder, members=members, root=root_prefix(page), nav=_nav_html(nav, "", policy, page), front_url=relative_url(front, page), canonical=canonical, **switcher.variables(None, page))), encoding="utf-8")
            sitemap.append((canonical, ""))
        (temp / "robots.txt").write_text(robots_txt(site_url), encoding="utf-8")
        if site_url:  # a sitemap needs absolute URLs: the chapters, the front page, the listing pages
            (temp / "sitemap.xml").write_bytes(sitemap_xml([(page_url(site_url, front), max(dates.values(), key=dt.datetime.fromisoformat, default="")), *sitemap]))
        _write_redirects(book, policy, temp, env.get_template("redirect.html"), common, diagnostics)
    return SiteResult(out, len(book.chapters) + 2, files)
