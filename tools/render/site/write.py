"""The HTML site: a page per chapter, a front page, a sidebar, search, themes; self-contained, works from file://."""
from __future__ import annotations

import base64
import datetime as dt
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from tools.book.diagrams import drawings_digest
from tools.book.interface_text import interface_text
from tools.book.model import Book
from tools.book.redirects import collapsed
from tools.core import safe_io
from tools.core.atomic import atomic_dir, build_time
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostics
from tools.core.git import revision
from tools.core.parallel import Background
from tools.markdown.parser import create_markdown
from tools.render.html import LinkPolicy, fixed_urls, pygments_css, render_chapter_html
from tools.render.pages import page_path, relative_url, root_prefix
from tools.render.policy import MultiPagePolicy, copy_files
from tools.render.site.nav import LazyNav, NavNode, NavTrees, build_nav
from tools.render.site.page_meta import card_image, chapter_dates, first_paragraph, page_url, robots_txt, sitemap_xml, trimmed
from tools.render.site.search import entries_digest, gram_files, search_index_files, sections
from tools.render.site.second_line import report_removed, second_line
from tools.render.site.switcher import LanguageLinks
from tools.render.templates import asset_bytes, environment, theme_extras

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


@dataclass
class SiteFiles:
    """A whole site before it is written: each file's bytes by its path in the site, in writing order, and the
    book's files copied as they are (read only when written)."""
    files: dict[str, bytes]
    copies: set[str]
    copied_at: int  # the copies are made after this many of `files` (and may replace them), before the others
    pages: int
    search: _PendingSearch | None = None  # the search index, still being made: `write_site` writes it last

    def complete(self) -> None:
        """Wait for the files still being made and put them in their place in `files`."""
        if self.search is not None:
            items = list(self.files.items())
            late = self.search.files()
            self.files = dict([*items[: self.copied_at], *late.items(), *items[self.copied_at :]])
            self.copied_at += len(late)
            self.search = None

    def close(self) -> None:
        """Stop making what is still being made (the build failed)."""
        if self.search is not None:
            self.search.close()


class PageMemory(Protocol):
    """What `site_files` asks of the pages of the last build (tools/serve/page_memo.py keeps them for `tools serve`):
    a page, its navigation and the search index, each made again only when its inputs changed."""

    search: Any  # .index_files(entries, language) -> {name: text}

    def nav(self, key: str, page: str, current: str, make: Callable[[], list[dict]]) -> list[dict]: ...

    def render(self, page: str, template, context: dict) -> bytes: ...


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


Body = tuple[str, list[dict], str, list[str]]  # a page body, its search sections, its description, what nh3 removed


def chapter_body(md, chapter, tokens, urls: Sequence[str | None]) -> Body:
    """The chapter's page body, search sections and description, its links getting `urls` (one per link, in order),
    after the second line of defence (tools/render/site/second_line.py), and what that removed (`report_removed`)."""
    link_policy = LinkPolicy(url_for=fixed_urls(chapter.links, urls), id_for=lambda anchor: anchor)
    body, removed = second_line(render_chapter_html(md, tokens, chapter.links, link_policy, chapter.env, chapter.drawings))
    return body, sections(chapter, tokens), trimmed(first_paragraph(tokens)), removed


def _chapter_body(md, chapter, policy: MultiPagePolicy, cache: Cache | None) -> Body:
    """A body rendered here, for a site built on its own (`check-links --html`); `tools build` renders the bodies
    where the chapters were parsed (tools/build/pipeline.py) and passes them to `build_site`."""
    urls = [policy.url_for(link) for link in chapter.links]
    key = site_key(chapter, urls)
    cached = cache.get("site", key) if cache is not None and key else None
    if cached is not None:
        return cached
    body = chapter_body(md, chapter, chapter.tokens, urls)
    if cache is not None and key:
        cache.put("site", key, body)
    return body


class _PendingSearch:
    """The split search index: from the cache when the sections and the language are those of an earlier build,
    else its gram parts made in a second process (when `jobs` allow one) while this one draws and writes the pages,
    then makes the sections' parts while it waits for them: the files `search_index_files` makes."""

    def __init__(self, entries: list[dict], language: str, cache: Cache | None, jobs: int):
        self.cache, self.job = cache, None
        self.entries, self.language = entries, language
        self.key = key_of("search", entries_digest(language, entries))
        self.made = cache.get("search", self.key) if cache is not None else None
        if self.made is None and jobs > 1:
            self.job = Background(partial(gram_files, entries))

    def files(self) -> dict[str, bytes]:
        if self.made is None:
            self.made = search_index_files(self.entries, self.language, self.job.result if self.job is not None else None)
            if self.cache is not None:
                self.cache.put("search", self.key, self.made)
        return {"assets/" + name: text.encode() for name, text in self.made.items()}

    def close(self) -> None:
        if self.job is not None:
            self.job.close()


def _write_redirects(book: Book, policy: MultiPagePolicy, site: dict[str, bytes], copies: set[str], template, common: dict, diagnostics: Diagnostics) -> None:
    """A small page at the old URL of each `[redirects]` entry that sends the reader on to the chapter's page, with
    the #fragment kept (by script; the refresh and the link without it). The links are relative, so they work
    under any subpath and from file://. A redirect whose target is no chapter, or whose old path is a file of the
    book again, is left out (check_book reports it); one that would replace a page of the site is an error."""
    config = book.config
    if not config.redirects:
        return
    files = {name.casefold() for name in [*site, *copies]}
    written = files | {"/".join(name.split("/")[:n]) for name in files for n in range(1, name.count("/") + 1)}
    for old, logical_new in collapsed(config.redirects).items():
        new = book.index.real(logical_new)  # in a translation's site, its translated chapter when it has one
        if new not in book.by_path or book.index.real(old) in book.index.files:
            continue
        page = page_path(old)
        folders = ["/".join(page.casefold().split("/")[:n]) for n in range(1, page.count("/") + 1)]
        if page.casefold() in written or any(folder in files for folder in folders) or page.casefold().startswith(policy.folders):  # a page there, a page where a folder must go, a folder of the site's own
            shown = config.config_file.name if config.config_file else "book.toml"
            diagnostics.error(shown, config.redirect_lines.get(old, 0), f"the redirect from '{old}' would write {page}, which is a page of the site already; it was not written.", suggestion="Remove the entry from [redirects].", code="redirect")
            continue
        url = relative_url(policy.page_of(new), page)
        site[page] = template.render(dict(common, page_title=book.by_path[new].title, url=url)).encode()
        written.update([page.casefold(), *folders])
        files.add(page.casefold())


def build_site(book: Book, out: Path, diagnostics: Diagnostics, local: bool = False, progress: Callable[[str], None] | None = None, cache: Cache | None = None,
               bodies: list[Body] | None = None, policy: MultiPagePolicy | None = None, language: str | None = None, languages: Sequence = (),
               jobs: int = 1) -> SiteResult:
    """Write the site atomically. `bodies` (with the `policy` that gave their links URLs, which knows the files to
    copy) are the chapters' page bodies rendered beforehand; without them each is rendered here. `language` (the
    book's `[book] language` unless given) is the one source of the pages' `lang`, their interface's words and the
    search index's language. `languages`: every language's site (tools/book/translations.py), for the language switcher;
    the original's site keeps the translations' sites that lie inside it. `jobs` > 1: the search index is made in
    a second process."""
    made = site_files(book, diagnostics, local, progress, cache, bodies, policy, language, languages, jobs=jobs)
    try:
        return SiteResult(out, made.pages, write_site(book, made, out, diagnostics, languages))
    finally:
        made.close()


def write_site(book: Book, made: SiteFiles, out: Path, diagnostics: Diagnostics, languages: Sequence = ()) -> int:
    """Put the site `made` in place of `out` at once; the number of the book's files copied."""
    keep = () if book.config.translation else tuple(site.base.strip("/") for site in languages if site.base)
    copied = 0
    with atomic_dir(out, keep=keep) as temp:
        for number, (name, data) in enumerate(chain(made.files.items(), [("", b"")], _still_made(made))):
            if number == made.copied_at:
                copied = copy_files(book, made.copies, temp, diagnostics)
            if name:
                (temp / name).parent.mkdir(parents=True, exist_ok=True)
                (temp / name).write_bytes(data)
    return copied


def _still_made(made: SiteFiles) -> Iterator[tuple[str, bytes]]:
    """The files still being made, waited for when every other file is written (no copy lands on them: policy.clashes)."""
    if made.search is not None:
        yield from made.search.files().items()


def site_files(book: Book, diagnostics: Diagnostics, local: bool = False, progress: Callable[[str], None] | None = None, cache: Cache | None = None,
               bodies: list[Body] | None = None, policy: MultiPagePolicy | None = None, language: str | None = None, languages: Sequence = (),
               memo: PageMemory | None = None, git: tuple[str, dict[str, str]] | None = None, jobs: int = 1) -> SiteFiles:
    """The site `build_site` writes, in memory (`memo`: the pages of the last build, which need no new render when
    their inputs are the same; `git`: the revision and the chapters' dates, when the caller knows them). Without a
    memo the search index may still be in the making (`jobs` > 1): `SiteFiles.complete()` waits for it."""
    language = language or book.config.language
    ui = interface_text(language)
    md = create_markdown()
    policy = policy or MultiPagePolicy(book, diagnostics, ".html", local=local)
    policy.diagnostics = diagnostics
    if bodies is None:
        bodies = [_chapter_body(md, chapter, policy, cache) for chapter in book.chapters]
    index_entries: list[dict] = []
    for chapter, made in zip(book.chapters, bodies):
        chapter_sections, removed = made[1], made[3]
        if removed:
            report_removed(chapter, removed, diagnostics)
        quoted = quote(policy.page_of(chapter.path))
        index_entries += [{"p": quoted, "a": section["a"], "t": section["t"], "c": chapter.title, "x": section["x"]} for section in chapter_sections]
    # The index is the longest part of a cold build's end: its second process starts before the pages are drawn.
    pending = _PendingSearch(index_entries, language, cache, jobs) if memo is None else None
    try:
        env = environment()
        nav = build_nav(book)
        built = build_time().strftime("%Y-%m-%d %H:%M UTC")
        icon_name, icon = _favicon(book, diagnostics)
        site_url = book.config.site_url
        card_name, card = card_image(book, diagnostics) if site_url else ("", b"")
        revision_text, dates = git if git is not None else (revision(book.root), chapter_dates(book, cache))
        common = {
            "book": book,
            "title": book.title,
            "authors": ", ".join(book.config.authors),
            "description": book.config.description,
            "language": language,
            "ui": ui,
            "revision": revision_text,
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
        chapter_template = env.get_template("chapter.html")
        render = memo.render if memo is not None else (lambda page, template, context: template.render(context).encode())
        nav_key = repr((nav, [policy.page_of(chapter.path) for chapter in book.chapters], policy.front)) if memo is not None else ""

        def nav_items(current: str, page: str) -> list[dict]:
            make = lambda: _nav_html(nav, current, policy, page)  # noqa: E731 - a thunk
            return memo.nav(nav_key, page, current, make) if memo is not None else make()

        trees = NavTrees(env, nav, policy, nav_items)

        def nav_html(current: str, page: str) -> dict:
            return {"nav": LazyNav(nav_items, current, page, nav_key), "nav_markup": trees.html(current, page)}

        site: dict[str, bytes] = {}
        for number, chapter in enumerate(book.chapters):
            page = policy.page_of(chapter.path)
            content, _, description, _ = bodies[number]
            previous = book.chapters[number - 1] if number > 0 else None
            following = book.chapters[number + 1] if number + 1 < len(book.chapters) else None
            context = dict(
                common,
                page_title=chapter.title,
                content=Markup(content),
                root=root_prefix(page),
                **nav_html(chapter.path, page),
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
            site[page] = render(page, chapter_template, context)
            if progress:
                progress(chapter.path)
        front = policy.front  # index.html, unless a chapter's page took that name
        site[front] = render(front, env.get_template("front.html"), dict(common, page_title=book.title, root="", og_type="book", canonical=page_url(site_url, front) if site_url else "", **nav_html("", front), front_url=front, **switcher.variables(None, front), first={"url": policy.page_of(book.chapters[0].path), "title": book.chapters[0].title} if book.chapters else None))
        # a server shows 404.html at any path: its link to the front page is absolute (site_url's path) or found by its script
        site["404.html"] = render("404.html", env.get_template("404.html"), dict(common, page_title=ui["not_found_title"], favicon_url=_data_url(icon_name, icon), site_path=urlsplit(site_url).path if site_url else ""))
        for name in ASSETS:
            site["assets/" + name] = asset_bytes(name)
        for name in theme_extras():  # a theme's own files (a logo, a font) beside the assets they go with
            site["assets/" + name] = asset_bytes(name)
        site["assets/" + icon_name] = icon
        if card_name:
            site["assets/" + card_name] = card
        site["assets/pygments.css"] = pygments_css().encode()
        if memo is not None:  # else the index comes in its place when it is written (SiteFiles.complete)
            site.update(("assets/" + name, text.encode()) for name, text in memo.search.index_files(index_entries, language).items())
        copied_at = len(site)  # the book's files are copied over what comes before, and under what comes after
        listing_pages = {policy.listing_page(folder): folder for folder in sorted(policy.listings)}
        listed = {name.casefold() for name in listing_pages}
        for clash in sorted(c for c in policy.copies if c.casefold() in listed):
            diagnostics.error(clash, 0, f"'{clash}' has the name of the page that lists its folder's files; it was not copied.", suggestion="Rename the file or add a README to its folder.", code="name-clash")
            policy.copies.discard(clash)
        listing = env.get_template("listing.html")
        for page, folder in listing_pages.items():
            members = [{"name": f[len(folder) + 1 :], "url": quote(f[len(folder) + 1 :])} for f in sorted(policy.copies) if f.startswith(folder + "/")]
            canonical = page_url(site_url, page) if site_url else ""
            site[page] = render(page, listing, dict(common, page_title=folder + "/", folder=folder, members=members, root=root_prefix(page), **nav_html("", page), front_url=relative_url(front, page), canonical=canonical, **switcher.variables(None, page)))
            sitemap.append((canonical, ""))
        site["robots.txt"] = robots_txt(site_url).encode()
        if site_url:  # a sitemap needs absolute URLs: the chapters, the front page, the listing pages
            site["sitemap.xml"] = sitemap_xml([(page_url(site_url, front), max(dates.values(), key=dt.datetime.fromisoformat, default="")), *sitemap])
        if book.config.redirects:  # its template is compiled only for a book that has redirects
            _write_redirects(book, policy, site, policy.copies, env.get_template("redirect.html"), common, diagnostics)
    except BaseException:
        if pending is not None:
            pending.close()
        raise
    return SiteFiles(site, set(policy.copies), copied_at, len(book.chapters) + 2, pending)
