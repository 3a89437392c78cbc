"""Search in Chromium: a word found in one chapter only finds that chapter, and the result opens its section."""
from __future__ import annotations

import pytest

from .pages import scrolled_to, wait_scrolled_to, word_in_one_section

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
