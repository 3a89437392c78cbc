"""Reading a built site and a rendered page the way the browser tests need: links, search index, scroll position."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

from bs4 import BeautifulSoup

# The target of a fragment is "scrolled to" when its top sits just under the sticky top bar (the stylesheet's
# scroll-padding-top is 4rem), or when the page is scrolled to its end and the target is on screen.
SCROLL_STATE_JS = """(id) => {
  const el = document.getElementById(id);
  if (!el) { return null; }
  const r = el.getBoundingClientRect();
  const max = document.documentElement.scrollHeight - window.innerHeight;
  return {top: r.top, bottom: r.bottom, scrollY: window.scrollY, max: max, height: window.innerHeight, hash: decodeURIComponent(location.hash.slice(1))};
}"""


def scrolled_to(state: dict | None, padding: float = 64, tolerance: float = 40) -> bool:
    if not state:
        return False
    on_screen = 0 <= state["top"] < state["height"]
    near_top = padding - 8 <= state["top"] <= padding + tolerance
    at_end = state["scrollY"] >= state["max"] - 2
    return on_screen and (near_top or at_end)


def wait_scrolled_to(page, anchor: str, timeout: float = 5000) -> dict:
    """Wait until the page shows `anchor`'s element at the top of the reading area; returns the last state seen."""
    try:
        page.wait_for_function(
            f"""(id) => {{ const s = ({SCROLL_STATE_JS})(id); if (!s) return false;
                 const onScreen = s.top >= 0 && s.top < s.height; const nearTop = s.top >= 56 && s.top <= 104;
                 return onScreen && (nearTop || s.scrollY >= s.max - 2); }}""",
            arg=anchor,
            timeout=timeout,
        )
    except Exception:  # noqa: BLE001 - the caller asserts on the state and shows it
        pass
    return page.evaluate(SCROLL_STATE_JS, anchor)


def sidebar_links(page) -> list[tuple[str, str]]:
    """(absolute URL, text) of every link of the sidebar, in document order."""
    return page.eval_on_selector_all("#sidebar a", "links => links.map(a => [a.href, a.textContent.trim()])")


def search_index(out: Path) -> list[dict]:
    from site_check import search_sections

    return search_sections(out)


def word_in_one_section(out: Path) -> tuple[str, dict]:
    """A word that search.js finds in exactly one section of the index (a section with an anchor): (word, entry)."""
    entries = search_index(out)
    haystacks = [(e.get("t", "") + " " + e.get("x", "")).lower() for e in entries]
    words: dict[str, int] = {}
    for index, entry in enumerate(entries):
        for word in set(re.findall(r"\b[a-z]{9,}\b", entry.get("x", "").lower())):
            words.setdefault(word, index)
    for word in sorted(words):
        index = words[word]
        if not entries[index].get("a"):
            continue
        if sum(word in h for h in haystacks) == 1:
            return word, entries[index]
    raise AssertionError("no word of the search index appears in exactly one section")


def cross_chapter_links(out: Path, pages: list[str], limit: int = 3) -> list[tuple[str, str, str]]:
    """(page, href, target page) of links inside chapters to a heading of another chapter, up to `limit`."""
    found = []
    for page in pages:
        soup = BeautifulSoup((out / page).read_text(encoding="utf-8"), "lxml")
        for link in soup.select("article a[href]"):
            href = link["href"]
            if "#" not in href or href.startswith(("#", "http:", "https:")):
                continue
            target, _, fragment = urljoin(page, href).partition("#")
            if target == page or not (out / target).is_file():
                continue
            ids = {tag.get("id") for tag in BeautifulSoup((out / target).read_text(encoding="utf-8"), "lxml").select("h1[id],h2[id],h3[id],h4[id],h5[id],h6[id]")}
            if fragment in ids:
                found.append((page, href, target))
                break
        if len(found) >= limit:
            break
    return found


def first_page_with(out: Path, pages: list[str], selectors: list[str]) -> str:
    """The first page whose article has an element for every selector (a table and code, say)."""
    for page in pages:
        soup = BeautifulSoup((out / page).read_text(encoding="utf-8"), "lxml")
        if all(soup.select_one(f"article {s}") for s in selectors):
            return page
    return pages[0]
