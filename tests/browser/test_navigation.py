"""Moving around the site in Chromium: the sidebar, previous/next, the current page, permalinks, links to sections.

Every test runs on the fixture book and on our own book, served on 127.0.0.1 and opened from file://; each fails on
a console error, a request that leaves the local server or a failed load (see `open_page`).
"""
from __future__ import annotations

import pytest

from .pages import cross_chapter_links, scrolled_to, sidebar_links, wait_scrolled_to
from .support import PHONE

pytestmark = pytest.mark.xdist_group("browser")
SCHEMES = ["http", "file"]


# The text of the chapter's h1 without its permalink.
H1_TEXT = """() => {
  const h1 = document.querySelector("article h1");
  if (!h1) { return null; }
  return [...h1.childNodes].filter(n => !(n.classList && n.classList.contains("permalink"))).map(n => n.textContent).join("").trim();
}"""


def page_path(site, url: str) -> str:
    return site.page_of(url)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sidebar_lists_every_chapter_in_book_order_and_navigates(site, scheme, open_page):
    page, _ = open_page(site, scheme)
    links = sidebar_links(page)
    assert [(page_path(site, url), text) for url, text in links] == site.chapters
    # Click the entries (our book: every third, and the last) one after the other, each from the page the last one opened.
    chosen = sorted({*range(0, len(links), 8 if _sample(site, scheme) else 3), len(links) - 1}) if site.name == "book" else range(len(links))
    for index in chosen:
        target, title = site.chapters[index]
        page.locator("#sidebar a").nth(index).click()
        page.wait_for_url(site.url(target, scheme))
        assert page.evaluate(H1_TEXT) == title


_PAGE_STATE_JS = """() => {
  const H1_TEXT = """ + H1_TEXT + """;
  const current = [...document.querySelectorAll("#sidebar [aria-current=page]")];
  const href = (sel) => { const a = document.querySelector(sel); return a ? a.href : null; };
  return {
    h1: H1_TEXT(),
    current: current.map(a => a.href),
    currentMarked: current.every(a => a.parentElement.classList.contains("current")),
    prev: href("a[rel=prev]"), next: href("a[rel=next]"),
    scrollY: window.scrollY,
    currentInView: current.length === 1 && (() => {
      const list = document.getElementById("sidebar").getBoundingClientRect(), r = current[0].getBoundingClientRect();
      return r.top >= list.top && r.bottom <= list.bottom;
    })(),
  };
}"""


def _sample(site, scheme: str) -> bool:
    """Our book over file:// repeats what http covered page by page: there, a sample of pages is enough."""
    return site.name == "book" and scheme == "file"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_previous_next_and_the_current_page(site, scheme, open_page):
    pages = [p for p, _ in site.chapters]
    last = 6 if _sample(site, scheme) else len(pages) - 1
    page, _ = open_page(site, scheme, page=pages[0])
    for index in range(last + 1):
        path, title = site.chapters[index]
        assert page_path(site, page.url) == path
        state = page.evaluate(_PAGE_STATE_JS)
        assert state["h1"] == title, path
        assert [page_path(site, u) for u in state["current"]] == [path], f"{path}: the sidebar marks {state['current']}"
        assert state["currentMarked"], f"{path}: the current entry's <li> lacks class=current"
        assert state["scrollY"] == 0, f"{path}: opened without a fragment, the page should start at its top"
        assert state["currentInView"], f"{path}: the chapter list does not show the current chapter"
        assert (state["prev"] and page_path(site, state["prev"])) == (pages[index - 1] if index else None), path
        assert (state["next"] and page_path(site, state["next"])) == (pages[index + 1] if index + 1 < len(pages) else None), path
        if index == last:
            break
        page.locator("a[rel=next]").click()
        page.wait_for_url(site.url(pages[index + 1], scheme))
    for index in range(last, max(0, last - 4), -1):  # and back with Previous
        page.locator("a[rel=prev]").click()
        page.wait_for_url(site.url(pages[index - 1], scheme))
        assert page.evaluate(H1_TEXT) == site.chapters[index - 1][1]


def _check_permalinks_by_clicking(page) -> list[str]:
    """Click each heading's permalink like a reader; returns what went wrong."""
    problems = []
    ids = page.eval_on_selector_all("article :is(h1,h2,h3,h4,h5,h6)[id]", "hs => hs.map(h => h.id)")
    for anchor in ids:
        link = page.locator(f"article [id='{anchor}'] > a.permalink")
        if link.count() != 1:
            problems.append(f"#{anchor}: no permalink")
            continue
        if link.get_attribute("href") != f"#{anchor}":
            problems.append(f"#{anchor}: permalink is {link.get_attribute('href')}")
            continue
        link.click()
        state = wait_scrolled_to(page, anchor)
        if state["hash"] != anchor or not scrolled_to(state):
            problems.append(f"#{anchor}: after the click {state}")
    return problems


_PERMALINKS_JS = """() => {
  const problems = [];
  for (const h of document.querySelectorAll("article :is(h1,h2,h3,h4,h5,h6)[id]")) {
    const a = h.querySelector(":scope > a.permalink");
    if (!a) { problems.push("#" + h.id + ": no permalink"); continue; }
    if (a.getAttribute("href") !== "#" + h.id) { problems.push("#" + h.id + ": permalink is " + a.getAttribute("href")); continue; }
    a.click();  // a same-page fragment: Chromium scrolls before click() returns
    const r = h.getBoundingClientRect();
    const max = document.documentElement.scrollHeight - innerHeight;
    const onScreen = r.top >= 0 && r.top < innerHeight;
    const nearTop = r.top >= 56 && r.top <= 104;
    if (decodeURIComponent(location.hash.slice(1)) !== h.id || !(onScreen && (nearTop || scrollY >= max - 2))) {
      problems.push("#" + h.id + ": hash " + location.hash + ", top " + r.top + ", scrollY " + scrollY + " of " + max);
    }
  }
  return problems;
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_headings_permalink_works(site, scheme, open_page):
    page, _ = open_page(site, scheme, page=None)
    problems = []
    chapters = site.chapters[:: max(1, len(site.chapters) // 6)] if _sample(site, scheme) else site.chapters
    for path, _ in chapters:
        page.goto(site.url(path, scheme))
        if site.name == "fixture":
            problems += [f"{path}{p}" for p in _check_permalinks_by_clicking(page)]
        else:  # our book has hundreds of headings: the same clicks, from inside the page
            problems += [f"{path}{p}" for p in page.evaluate(_PERMALINKS_JS)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_link_to_a_section_of_another_chapter_opens_it_scrolled_there(site, scheme, open_page):
    pages = [p for p, _ in site.chapters]
    links = cross_chapter_links(site.out, pages)
    assert links, "the book has no link to a section of another chapter"
    page, _ = open_page(site, scheme, page=None)
    for source, href, target in links:
        page.goto(site.url(source, scheme))
        page.locator(f"article a[href='{href}']").first.click()
        page.wait_for_url(lambda url, target=target: page_path(site, url) == target)
        anchor = href.partition("#")[2]
        state = wait_scrolled_to(page, anchor)
        assert scrolled_to(state), f"{source} -> {href}: {state}"
        if href.endswith("#install-the-tools--quickly"):
            assert state["scrollY"] > 300, "the fixture's target sits far down its page: the page must have scrolled"


def test_a_fragment_typed_in_the_address_bar_scrolls_there(fixture_site, open_page):
    page, _ = open_page(fixture_site, "http", page="other/notes.html#rare-animals")
    state = wait_scrolled_to(page, "rare-animals")
    assert scrolled_to(state) and state["scrollY"] > 300, state


def test_phone_menu_opens_the_chapter_list(fixture_site, open_page):
    page, _ = open_page(fixture_site, "http", page="intro/setup.html", viewport=PHONE, is_mobile=True, has_touch=True)
    sidebar, toggle = page.locator("#sidebar"), page.locator(".nav-toggle")
    assert not sidebar.is_visible() and toggle.is_visible()
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert sidebar.is_visible() and toggle.get_attribute("aria-expanded") == "true"
    page.locator("#sidebar a", has_text="Notes").click()
    page.wait_for_url(fixture_site.url("other/notes.html"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways on a phone"
