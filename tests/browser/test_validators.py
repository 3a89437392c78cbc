"""Independent validators on the built sites (issue 35): axe-core's WCAG 2.2 A/AA rules and its best practices in
Chromium, on every template (front page, chapter, listing, redirect, 404, a translation's pages) in the light and
the dark theme as the reader saved it, and the Nu HTML checker on every page. Sites: the templates book (every
template once), our book (every template it has, several chapters), the shared corpus's books (the Nu checker on
every page, axe on a sample of each template). One browser, one page per site and theme; one JVM for the Nu checker.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from validators import vnu_errors

from .pages import first_page_with
from .support import DESKTOP, PHONE, Watch, axe_source, new_context

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.slow]

AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa", "best-practice"]
AXE_RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ") + " :: " + (n.failureSummary || "").replace(/\\s+/g, " ").slice(0, 240)),
  }));
}"""
REDIRECT = re.compile(r'<meta http-equiv="refresh"')
REPLACE_SCRIPT = re.compile(r"<script>location\.replace\(.*?</script>", re.DOTALL)


def pages_of(site, *, sample: int | None = None) -> list[str]:
    """Every template's pages of a site (or up to `sample` of each, spread over the book, a translation's among
    them): front pages, chapters, listings, redirects, 404."""
    found: dict[str, list[str]] = {"front": [], "chapter": [], "listing": [], "redirect": [], "404": []}
    for path in sorted(site.out.rglob("*.html")):
        rel = path.relative_to(site.out).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.name == "404.html":
            kind = "404"
        elif REDIRECT.search(text):
            kind = "redirect"
        elif '<article class="chapter listing">' in text:
            kind = "listing"
        elif '<article class="front">' in text:
            kind = "front"
        else:
            kind = "chapter"
        found[kind].append(rel)
    translated = {p.split("/")[0] + "/" for p in found["front"] if "/" in p}  # a translation's folder has a front page
    chosen = []
    for pages in found.values():
        if sample is None or len(pages) <= sample:
            chosen += pages
            continue
        spread = pages[::max(1, len(pages) // (sample - 2))][:sample - 2] + [pages[-1]]
        chosen += list(dict.fromkeys(spread + [p for p in pages if p.startswith(tuple(translated))][:2]))
    return chosen


def _only(url: str, body: str):
    """A route handler that serves `body` at `url` and stops every other request (Playwright passes the request too
    to a handler of two parameters: a closure, not default arguments)."""
    def handle(route) -> None:
        if route.request.url == url:
            route.fulfill(body=body, content_type="text/html; charset=utf-8")
        else:
            route.abort("aborted")

    return handle


def audit_pages(browser, site, pages: list[str], theme: str, viewport=DESKTOP) -> list[str]:
    """axe on each page, in one browser context whose saved theme is `theme` (the system's is the other one, so the
    saved choice is what shows): what it finds, and pages whose theme is not the saved one."""
    watch = Watch()
    other = "light" if theme == "dark" else "dark"
    context = new_context(browser, site, "http", watch, viewport=viewport, color_scheme=other)
    context.add_init_script(f"try {{ localStorage.setItem('book-theme', '{theme}'); }} catch (e) {{}}")
    axe = axe_source()
    found = []
    try:
        tab = context.new_page()
        tab.set_default_timeout(15_000)
        for path in pages:
            text = (site.out / path).read_text(encoding="utf-8")
            if REDIRECT.search(text):
                # The page itself, not the chapter it sends the reader on to: it is served without its script
                # (`location.replace`), and the refresh's navigation is stopped; axe sees the rest as it is.
                own = site.url(path)
                body = REPLACE_SCRIPT.sub("", text)
                tab.route(re.compile(".*"), _only(own, body))
                try:
                    tab.goto(own, wait_until="commit")
                except PlaywrightError as error:  # the refresh, stopped, may be reported as the load's abort
                    assert "ERR_ABORTED" in str(error), error
                tab.wait_for_load_state("load")
            else:
                tab.goto(site.url(path), wait_until="load")
                shown = tab.evaluate("document.documentElement.getAttribute('data-theme')")
                if shown != theme:
                    found.append(f"{site.name}/{path} [{theme}]: shows the {shown} theme, not the saved {theme} one")
            tab.add_script_tag(content=axe)
            violations = tab.evaluate(AXE_RUN, AXE_TAGS)
            if REDIRECT.search(text):
                assert tab.url == own, tab.url  # still the redirect page that axe looked at
                tab.unroute(re.compile(".*"))
            for v in violations:
                found.append(f"{site.name}/{path} [{theme}] {v['impact']} {v['id']}: {v['help']} ({v['count']} elements)\n    " + "\n    ".join(v["nodes"]))
    finally:
        context.close()
    watch.failed = [f for f in watch.failed if "ERR_ABORTED" not in f and "aborted" not in f.lower()]  # the stopped redirects
    return found + [f"{site.name}: {problem}" for problem in watch.problems()]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_nothing_on_any_template(templates_site, browser, theme):
    """Every page of the templates book: front, chapters (an alert, images, wide display math, a table whose header
    cells hold only math), a listing, a redirect, the 404 page and the translation's pages."""
    pages = pages_of(templates_site)
    assert {"index.html", "404.html", "old/start.html", "zh/index.html", "guide/math.html"} <= set(pages), pages
    assert any("data" in page for page in pages), pages  # the listing of the folder without a README
    found = audit_pages(browser, templates_site, pages, theme) + audit_pages(browser, templates_site, ["guide/math.html", "guide/start.html"], theme, PHONE)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_nothing_on_our_book(book_site, browser, theme):
    """Our book: every template it has; its chapters on a desktop, and those with tables, code and math on a phone,
    where they scroll sideways."""
    chapters = [p for p, _ in book_site.chapters]
    pages = pages_of(book_site, sample=12)
    wide = list(dict.fromkeys([first_page_with(book_site.out, chapters, ["table", "pre.highlight"]), first_page_with(book_site.out, chapters, [".math.display"])]))
    found = audit_pages(browser, book_site, pages, theme) + audit_pages(browser, book_site, wide, theme, PHONE)
    assert not found, "\n".join(found)


@pytest.mark.corpus
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_nothing_on_the_corpus_books(corpus_sites, browser, theme):
    """A sample of each template of each book of the shared corpus (all of it takes minutes)."""
    found = []
    for site in corpus_sites.values():
        found += audit_pages(browser, site, pages_of(site, sample=6), theme)
    assert not found, "\n".join(found)


def test_the_nu_checker_finds_no_error_on_any_page(templates_site, book_site, corpus_sites):
    """Every page of every site, in one run of the Nu HTML checker."""
    roots: list[Path] = [templates_site.out, book_site.out, *(site.out for site in corpus_sites.values())]
    errors = vnu_errors(*roots)
    assert not errors, "\n".join(errors[:60]) + f"\n({len(errors)} errors)"


def test_what_axe_checks_is_there_a_wide_formula_scrolls_from_the_keyboard_and_toc_targets_are_24px(templates_site, open_page):
    """The fixes axe's findings led to, seen directly: the formula wider than the column is a focusable, named region
    the arrow keys scroll; every "On this page" entry is at least 24 px high."""
    page, _ = open_page(templates_site, page="guide/math.html")
    box = page.locator(".math.display")
    assert box.evaluate("b => [b.scrollWidth > b.clientWidth, b.getAttribute('tabindex'), b.getAttribute('role'), b.getAttribute('aria-label')]") == [True, "0", "group", "Formula"]
    box.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('.math.display').scrollLeft > 0")
    page.goto(templates_site.url("guide/start.html"))
    heights = page.eval_on_selector_all(".page-toc a", "links => links.map(a => a.getBoundingClientRect().height)")
    assert len(heights) > 10 and min(heights) >= 24, heights
