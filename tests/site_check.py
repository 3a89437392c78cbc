"""Reads a built site as a browser would: every local href/src must reach a produced file and every fragment an id."""
from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _script_value(text: str) -> object:
    """The JSON a search-index script hands over: `X = {...};` or `F("name",{...});`."""
    if text.startswith("window.BOOK_SEARCH_INDEX"):
        return json.loads(text[text.index("=") + 1 : text.rindex(";")])
    return json.loads(text[text.index(",") + 1 : text.rindex(")")])


def search_sections(out: Path) -> list[dict]:
    """Every section of the site's search index, in order, read from its parts (tools/render/site/search.py)."""
    meta = _script_value((out / "assets" / "search-index.js").read_text(encoding="utf-8"))
    sections: list[dict] = []
    for number in range(len(meta["docs"])):
        sections += _script_value((out / "assets" / "search" / f"d{number}.js").read_text(encoding="utf-8"))
    return sections


def search_index_text(out: Path) -> str:
    """All the search index's files as text: what a reader's searches can ever download."""
    files = [out / "assets" / "search-index.js", *sorted((out / "assets" / "search").glob("*.js"))]
    return "".join(f.read_text(encoding="utf-8") for f in files)


def parse(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "lxml")


def ids_of(soup: BeautifulSoup) -> set[str]:
    ids = {tag["id"] for tag in soup.find_all(id=True)}
    ids |= {tag["name"] for tag in soup.find_all("a", attrs={"name": True})}
    return ids


def dangling_links(out: Path, skip_pages: tuple[str, ...] = ("404.html",)) -> list[str]:
    """Every local reference in every page that does not land: 'page: href (why)'. A page named in `skip_pages` is
    skipped in every folder (a translation's site in `<tag>/` has its own 404.html, whose links a server resolves
    from wherever it shows it)."""
    problems: list[str] = []
    cache: dict[Path, set[str]] = {}
    for page in sorted(out.rglob("*.html")):
        rel_page = page.relative_to(out).as_posix()
        if rel_page in skip_pages or page.name in skip_pages:
            continue
        soup = parse(page)
        cache[page.resolve()] = ids_of(soup)
        refs = [(tag.name, tag.get("href")) for tag in soup.find_all(["a", "link"], href=True)]
        refs += [(tag.name, tag.get("src")) for tag in soup.find_all(["img", "script", "source"], src=True)]
        for _, ref in refs:
            if not ref or _SCHEME.match(ref) or ref.startswith("//"):
                continue
            parts = urlsplit(ref)
            target = page if not parts.path else (page.parent / unquote(parts.path))
            target = Path(posixpath.normpath(str(target)))
            try:
                target.relative_to(out.resolve() if out.is_absolute() else out)
            except ValueError:
                problems.append(f"{rel_page}: {ref} (leaves the site)")
                continue
            if not target.is_file():
                problems.append(f"{rel_page}: {ref} (no such file)")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                if target.resolve() not in cache:
                    cache[target.resolve()] = ids_of(parse(target))
                if fragment not in cache[target.resolve()]:
                    problems.append(f"{rel_page}: {ref} (no id '{fragment}')")
    return problems
