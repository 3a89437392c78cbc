"""Where each chapter and file lands in a multi-page output, and the relative URLs between them."""
from __future__ import annotations

import posixpath
import re
import unicodedata
from functools import lru_cache
from urllib.parse import quote

from tools.book.resolve import MARKDOWN_SUFFIXES


@lru_cache(maxsize=65536)
def page_path(chapter_path: str, suffix: str = ".html") -> str:
    """`a/b.md` -> `a/b.html`: one page per chapter, beside where the source sits."""
    stem, ext = posixpath.splitext(chapter_path)
    return (stem if ext.lower() in MARKDOWN_SUFFIXES else chapter_path) + suffix


_UNPORTABLE = re.compile(r"[^A-Za-z0-9._/-]+")


def portable_name(path: str) -> str:
    """`sub dir/café.xhtml` -> `sub-dir/cafe.xhtml`: a member name every EPUB reader and epubcheck accepts (no
    spaces, no `#` or `%` that a URL would read otherwise, ASCII)."""
    ascii_path = unicodedata.normalize("NFKD", path).encode("ascii", "ignore").decode("ascii")
    return "/".join(_UNPORTABLE.sub("-", part).strip("-") or "page" for part in ascii_path.split("/"))


def unique_names(wanted: list[tuple[str, str]], reserved=()) -> dict[str, str]:
    """{key: name} for (key, wanted name) pairs, no two names equal when case is ignored (readers unzip and serve
    books on case-insensitive file systems), none of them `reserved`. A wanted name that is free is kept, so a
    collision renames only the later comers: `a.md` and `a.markdown` become `a.html` and `a-2.html`."""
    taken = {name.casefold() for name in reserved}
    names: dict[str, str] = {}
    for key, name in wanted:
        if key not in names and name.casefold() not in taken:
            names[key] = name
            taken.add(name.casefold())
    for key, name in wanted:
        if key in names:
            continue
        stem, ext = posixpath.splitext(name)
        number = 2
        while f"{stem}-{number}{ext}".casefold() in taken:
            number += 1
        names[key] = f"{stem}-{number}{ext}"
        taken.add(names[key].casefold())
    return names


def chapter_pages(chapters, suffix: str = ".html", reserved=(), portable: bool = False) -> dict[str, str]:
    """Each chapter's page: `page_path`, or a distinct name where two chapters (or a page of the output's own)
    would land on one file. Which chapter keeps the plain name depends only on the set of chapters (a worker
    rendering one chapter knows them all, not their order): `.md` before `.markdown`, then in code-point order.
    A `reserved` name ending in `/` is a folder of the output's own: a page under it goes to `<folder>-2/`."""
    folders = [name for name in reserved if name.endswith("/")]
    plain = (lambda path: portable_name(page_path(path, suffix))) if portable else (lambda path: page_path(path, suffix))
    name = (lambda path: outside(plain(path), folders)) if folders else plain
    wanted = sorted((name(path).casefold(), not path.endswith(".md"), path) for path in set(chapters))
    return unique_names([(path, name(path)) for _, _, path in wanted], [name for name in reserved if not name.endswith("/")])


def outside(page: str, folders: list[str]) -> str:
    """`page`, or where it goes when it lies in one of `folders` (`assets/search/a.html` -> `assets/search-2/a.html`)."""
    taken = {folder.casefold() for folder in folders}
    for folder in folders:
        if page.casefold().startswith(folder.casefold()):
            number = 2
            while f"{folder[:-1]}-{number}/".casefold() in taken:
                number += 1
            return f"{folder[:-1]}-{number}/{page[len(folder):]}"
    return page


@lru_cache(maxsize=65536)  # every page's navigation asks for every chapter's, at every rebuild of `tools serve`
def relative_url(target: str, from_page: str) -> str:
    """The relative URL of `target` (a path under the output root) from the page `from_page`, percent-encoded: a
    file named `a#b.md` or `50%.md` must not read as a fragment or an escape."""
    return quote(_relpath(target, posixpath.dirname(from_page) or "."), safe="/")


@lru_cache(maxsize=65536)
def _relpath(target: str, base: str) -> str:
    """posixpath.relpath's answer without its two calls to os.getcwd(), for the plain relative paths pages have (a
    sidebar asks for every chapter from every folder)."""
    parts, start = target.split("/"), [] if base == "." else base.split("/")
    if _ODD.intersection(parts) or _ODD.intersection(start):
        return posixpath.relpath(target, base)
    common = 0
    while common < len(parts) and common < len(start) and parts[common] == start[common]:
        common += 1
    return "/".join([".."] * (len(start) - common) + parts[common:]) or "."


_ODD = frozenset(("", ".", ".."))  # a part that makes a path absolute or not plain: posixpath.relpath decides


def root_prefix(page: str) -> str:
    """`../` repeated to climb from `page` to the output root ('' at the top)."""
    depth = page.count("/")
    return "../" * depth
