"""Search in Chromium: a word found in one chapter only finds that chapter, and the result opens its section; the
split index finds what one index found, and one search of a book ten times the upstream one fetches under 1 MB."""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from site_check import search_sections

from .pages import scrolled_to, wait_scrolled_to, word_in_one_section
from .support import build, serve

pytestmark = pytest.mark.xdist_group("browser")


def _word(site) -> tuple[str, str, str]:
    """(word, page, anchor): the fixture's rare word, or a word of our book found in one section only."""
    if site.name == "fixture":
        return "quagmireblossom", "other/notes.html", "rare-animals"
    word, entry = word_in_one_section(site.out)
    return word, entry["p"], entry["a"]


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_word_of_one_chapter_finds_it_and_opens_the_section(site, scheme, open_page):
    word, target, anchor = _word(site)
    start = next(p for p, _ in site.chapters if p != target)
    page, _ = open_page(site, scheme, page=start)
    results = page.locator("#search-results")
    assert results.is_hidden()
    page.locator("#search-input").fill(word)
    hits = results.locator("li a")
    hits.first.wait_for()
    assert hits.count() == 1, [hits.nth(i).inner_text() for i in range(hits.count())]
    assert site.page_of(hits.first.evaluate("a => a.href")) == target
    hits.first.click()
    page.wait_for_url(lambda url: site.page_of(url) == target and url.endswith("#" + anchor))
    state = wait_scrolled_to(page, anchor)
    assert scrolled_to(state), state
    if site.name == "fixture":
        assert state["scrollY"] > 300, "the matching section is far down the page: the page must have scrolled there"


def test_enter_opens_the_first_result_and_escape_clears(fixture_site, open_page):
    page, _ = open_page(fixture_site, "http", page="intro/README.html")
    page.keyboard.press("/")  # the shortcut focuses the search box
    assert page.evaluate("document.activeElement.id") == "search-input"
    page.keyboard.type("quagmireblossom")
    page.locator("#search-results li a").first.wait_for()
    page.keyboard.press("Escape")
    assert page.locator("#search-input").input_value() == "" and page.locator("#search-results").is_hidden()
    page.keyboard.type("quagmireblossom")
    page.locator("#search-results li a").first.wait_for()
    page.keyboard.press("Enter")
    page.wait_for_url(fixture_site.url("other/notes.html") + "#rare-animals")
    assert scrolled_to(wait_scrolled_to(page, "rare-animals"))


def test_no_match_says_so(fixture_site, open_page):
    page, _ = open_page(fixture_site, "file", page="README.html")
    page.locator("#search-input").fill("zzzznotaword")
    none = page.locator("#search-results .search-none")
    none.wait_for()
    assert "zzzznotaword" in none.inner_text()


# --- The split index (tools/render/site/search.py): the same results as one index, a small part of it per search -----

QUERIES = ["bandwidth", "GPU memory", "checkpoint", "nccl all-reduce", "throughput of the cluster", "kv", "a", "zzzzunfound",
           "the", "slurm job", "`--help`", "H100", "--", "all-reduce", "e"]


def reference(entries: list[dict], query: str) -> list[str]:
    """What search.js found with one index (before the split), for a query without Chinese or Japanese: every word in
    the title (10) or the text (1), best first, book order among equals, twenty at most; as the results' hrefs."""
    terms = query.lower().split()
    hits = []
    for number, entry in enumerate(entries):
        title, text, score = entry["t"].lower(), entry["x"].lower(), 0
        for term in terms:
            if term not in title and term not in text:
                break
            score += 10 if term in title else 1
        else:
            hits.append((-score, number))
    return [entries[n]["p"] + ("#" + entries[n]["a"] if entries[n]["a"] else "") for _, n in sorted(hits)[:20]]


def shown(page, query: str) -> list[str]:
    page.locator("#search-input").fill(query)
    page.locator("#search-results:not([aria-busy]) li").first.wait_for()
    return page.locator("#search-results li a").evaluate_all("links => links.map(a => a.getAttribute('href'))")


@pytest.fixture(scope="module")
def generated_site(tmp_path_factory):
    """A generated book (scripts/gen_large_book.py) a third the size of the upstream one, built and served."""
    base = tmp_path_factory.mktemp("generated-site")
    subprocess.run([sys.executable, str(REPO / "scripts" / "gen_large_book.py"), str(base / "book"), "--scale", "0.3", "--seed", "1"],
                   check=True, capture_output=True)
    site = build(base / "book", base / "html", "generated")
    site.server = serve(site.out)
    yield site
    site.server.close()


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_the_split_index_finds_what_one_index_found(generated_site, scheme, open_page):
    entries = search_sections(generated_site.out)
    assert len(list((generated_site.out / "assets" / "search").glob("d*.js"))) > 10, "the index is split into parts"
    page, _ = open_page(generated_site, scheme)
    for query in QUERIES:
        assert shown(page, query) == reference(entries, query), query


def test_one_search_of_a_ten_times_book_downloads_under_a_megabyte(generated_site, tmp_path, open_page):
    """The generated site's sections repeated to the size of a book ten times the upstream one (about 12 MB of
    text): each query fetches the index's first file and the parts it needs, under 1 MB in all, and finds the same."""
    from tools.render.site.search import search_index_files

    entries = search_sections(generated_site.out)
    big = entries * (13_000 // len(entries) + 1)
    assert sum(len(e["x"]) for e in big) > 10_000_000
    site = build_copy(generated_site, tmp_path / "html")
    shutil.rmtree(site.out / "assets" / "search")
    (site.out / "assets" / "search").mkdir()
    for name, text in search_index_files(big, "en").items():
        (site.out / "assets" / name).write_text(text, encoding="utf-8")
    site.server = serve(site.out)
    try:
        for query in ("bandwidth", "throughput of the cluster", "a"):
            page, _ = open_page(site, "http")
            page.wait_for_load_state("networkidle")
            sizes: list[int] = []
            page.on("requestfinished", lambda request, sizes=sizes: sizes.append(request.sizes()["responseBodySize"]))
            assert shown(page, query) == reference(big, query), query
            page.wait_for_load_state("networkidle")
            assert 0 < sum(sizes) < 1_000_000, (query, len(sizes), sum(sizes))
    finally:
        site.server.close()


def build_copy(site, out):
    shutil.copytree(site.out, out)
    return dataclasses.replace(site, out=out, server=None)
