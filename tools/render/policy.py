"""How a multi-page output (the site, the EPUB) turns resolved links into URLs, and which files it must copy."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from markdown_it.common.normalize_url import normalizeLink

from tools.book.link_model import Link, TargetKind
from tools.book.model import Book
from tools.core import safe_io
from tools.core.errors import Diagnostics
from tools.core.source_names import OUTPUT_STAMP
from tools.render.pages import chapter_pages, outside, relative_url, unique_names

# Every file the site writes besides the chapters' pages (tools/render/site/write.py), whether or not a given build
# writes it: the 404 page, robots.txt, the sitemap (with `site_url`), the output's stamp, the assets, the favicon (one
# of three names) and the link card (the cover's copy or the tool's card). Its front page is `index.html`, or
# `front.html` where a chapter has that page; a listing or redirect page takes a name no page has. A chapter whose page
# would have one of these names gets another (`chapter_pages`); a book file of one of them is not copied (`clashes`,
# an error at the link). tests/test_site_reserved.py checks that a site holds nothing else.
SITE_FILES = ("404.html", "robots.txt", "sitemap.xml", OUTPUT_STAMP, "assets/style.css", "assets/search.js", "assets/theme.js", "assets/copy.js", "assets/pygments.css",
              "assets/search-index.js", "assets/favicon.svg", "assets/favicon.png", "assets/favicon.ico", "assets/social-card.png", "assets/card.png", "assets/card.jpg",
              "assets/card.jpeg")
SEARCH_PARTS = "assets/search/"  # the search index's parts (search.py), all written by the site
SITE_FOLDERS = (SEARCH_PARTS,)  # folders whose every name is the site's; a translation's `<tag>/` is refused by book.toml's check
SITE_RESERVED = (*SITE_FILES, *SITE_FOLDERS)  # what `chapter_pages` keeps chapters' pages off, here and in the language switcher
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".bmp", ".ico")


@lru_cache(maxsize=8192)
def normalized_link(href: str) -> str:
    """markdown-it's `normalizeLink` (the percent-encoding its renderer applies), remembered: a book repeats its URLs,
    and `tools serve` works out every link's URL again at each rebuild (a tenth of a one-chapter rebuild)."""
    return normalizeLink(href)


def is_image(path: str) -> bool:
    return path.lower().endswith(IMAGE_SUFFIXES)


def inside_root(root: Path, rel: str) -> bool:
    """True when `rel` is a regular file whose real path (symbolic links followed) lies under the root."""
    try:
        safe_io.check_regular(root / rel, root)
    except safe_io.UnsafeFile:
        return False
    return True


class MultiPagePolicy:
    """One page per chapter. `local`: copy every linked file into the output; else link files to the repository."""

    def __init__(self, book: Book, diagnostics: Diagnostics, suffix: str = ".html", local: bool = False, external_files: bool = True, reserved=SITE_RESERVED, portable: bool = False,
                 refusals: dict | None = None):
        self.book = book
        self.diagnostics = diagnostics
        self.suffix = suffix
        self.portable = portable  # EPUB: member names without spaces, `#`, `%` or non-ASCII letters
        self.local = local or not book.config.repository
        self.external_files = external_files  # False (EPUB): never link out for a book file, embed or drop
        self.copies: set[str] = set()
        self.listings: set[str] = set()  # folders without a README that get a generated page of their files
        self._refused: dict[str, safe_io.UnsafeFile | None] = refusals if refusals is not None else {}  # filled by `refusal`
        # Files of the output's own (404 page, assets) come first; then every chapter gets a page of its own, named
        # after its logical path (a translation's `zh/a.md` is `a.html` of the translation's site).
        logical = {book.index.logical(path): path for path in set(book.index.chapters) | {chapter.path for chapter in book.chapters}}
        self.pages = {logical[path]: page for path, page in chapter_pages(logical, suffix, reserved, portable).items()}
        self.front = front_page([*reserved, *self.pages.values()]) if suffix == ".html" else ""
        extras = [f"assets/{name}" for name in _theme_extras()] if suffix == ".html" else []  # a theme's own files, copied beside the assets
        self.written = {name.casefold() for name in (*reserved, *extras, *self.pages.values(), self.front) if name and not name.endswith("/")}
        self.folders = tuple(name.casefold() for name in reserved if name.endswith("/"))
        self._listing_pages: dict[str, str] = {}

    def page_of(self, chapter_path: str) -> str:
        return self.pages.get(chapter_path) or chapter_pages([chapter_path], self.suffix, portable=self.portable)[chapter_path]

    def listing_page(self, folder: str) -> str:
        """The generated page that lists a folder's files: `folder/index.html`, unless a page holds that name."""
        if folder not in self._listing_pages:
            base = outside(f"{folder}/index.html" if folder else "index.html", list(self.folders))
            name = unique_names([(folder, base)], self.written)[folder]
            self._listing_pages[folder] = name
            self.written.add(name.casefold())
        return self._listing_pages[folder]

    def clashes(self, path: str) -> bool:
        """Whether a copied file would land on a page or a file the output writes itself."""
        return path.casefold() in self.written or path.casefold().startswith(self.folders)

    def refusal(self, path: str) -> safe_io.UnsafeFile | None:
        """Why the file `path` may not be copied or embedded (outside the root, not regular, too large), or None."""
        if path not in self._refused:
            try:
                safe_io.check_regular(self.book.root / path, self.book.root, safe_io.ASSET_LIMIT, shown=path)
                self._refused[path] = None
            except safe_io.UnsafeFile as exc:
                self._refused[path] = exc
        return self._refused[path]

    def report_refusal(self, link: Link, problem: safe_io.UnsafeFile, done: str = "copied") -> None:
        code = "outside-root" if ("outside the book" in problem.reason or "leaves the book" in problem.reason) else "unsafe-file"
        self.diagnostics.error(link.source, link.line, f"'{link.raw or link.href}' {problem.reason}; it was not {done}.", col=link.col, suggestion=problem.suggestion, code=code)

    def _copy(self, link: Link, path: str) -> str | None:
        problem = self.refusal(path)
        if problem is not None:
            self.report_refusal(link, problem)
            return None
        if self.clashes(path):
            what = "page" if path.lower().endswith((".html", ".xhtml")) else "file"
            self.diagnostics.error(link.source, link.line, f"'{path}' has the name of a {what} the output writes itself; it was not copied.", col=link.col, suggestion="Rename the file.", code="name-clash")
            return None
        self.copies.add(path)
        return relative_url(path, self.page_of(link.source))

    def _file_url(self, link: Link, path: str, fragment: str, is_dir: bool = False) -> str:
        wants_copy = link.kind.is_image or is_image(path) or self.local
        if not is_dir and wants_copy:
            copied = self._copy(link, path)
            if copied is not None:
                return copied
        blob = self.book.config.blob_url(path, is_dir=is_dir)
        if blob and not (is_dir and self.local):
            return blob + (f"#{fragment}" if fragment and not is_dir else "")
        if is_dir and self.external_files:
            return self._listing(link, path)
        return normalized_link(link.href)

    def _listing(self, link: Link, folder: str) -> str:
        """A folder with no README, in local mode: a generated page lists its files, which are copied."""
        members = sorted(f for f in self.book.index.files if f.startswith(folder + "/") if folder) or []
        page = self.listing_page(folder)
        for member in members:
            if self.refusal(member) is None and not self.clashes(member):
                self.copies.add(member)
        self.listings.add(folder)
        return relative_url(page, self.page_of(link.source))

    def url_for(self, link: Link) -> str | None:  # None (EPUB): no link, keep the text
        target = link.target
        if target is not None and target.kind is TargetKind.EXTERNAL:
            return normalized_link(target.url or link.href)  # a `www.` autolink's is `http://www...`
        if target is None or target.kind is TargetKind.BROKEN:
            return normalized_link(link.href)
        fragment = f"#{target.fragment}" if target.fragment else ""
        here = self.page_of(link.source)
        if target.kind is TargetKind.FRAGMENT:
            return fragment or "#"
        if target.kind is TargetKind.CHAPTER:
            return relative_url(self.page_of(target.path), here) + fragment
        if target.kind is TargetKind.DIRECTORY:
            if target.readme and target.readme in self.book.index.chapters:
                return relative_url(self.page_of(target.readme), here) + fragment
            if target.readme:
                return self._file_url(link, target.readme, "")
            return self._file_url(link, target.path, "", is_dir=True)
        return self._file_url(link, target.path, target.fragment)


def _theme_extras() -> list[str]:
    from tools.render.templates import theme_extras  # Jinja's, only where a site is made

    return theme_extras()


def front_page(taken) -> str:
    """The site's front page: `index.html`, unless a chapter's page (or a file of the site's own) took that name."""
    free = [name for name in ("index.html", "front.html") if name not in {t.casefold() for t in taken}]
    return free[0] if free else unique_names([("", "front.html")], taken)[""]


def copy_files(book: Book, paths: set[str], out: Path, diagnostics: Diagnostics | None = None) -> int:
    """Copy the book's files `paths` into `out`, each read through safe_io: a file that became a link out of the
    root, a FIFO or too large since the links were checked is reported and left out, never copied."""
    copied = 0
    for rel in sorted(paths):
        try:
            data = safe_io.read_bytes(book.root / rel, book.root, safe_io.ASSET_LIMIT, shown=rel)
        except safe_io.UnsafeFile as exc:
            if diagnostics is not None:
                diagnostics.error(rel, 0, f"the file {exc}; it was not copied.", suggestion=exc.suggestion, code="unsafe-file")
            continue
        destination = out / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
        copied += 1
    return copied


def remote_image(link: Link, diagnostics: Diagnostics) -> None:
    """The PDF and the EPUB embed local files only; one sentence, so that `build all` reports it once."""
    diagnostics.warning(
        link.source, link.line, f"the image '{link.raw or link.href}' is remote; the PDF and EPUB show its alt text instead.",
        col=link.col, suggestion="Save the image next to the chapter and link to it by relative path.", code="remote-image",
    )
