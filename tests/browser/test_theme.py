"""The light and dark themes: the system's choice until the reader picks one, then the reader's, on every page."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("browser")

THEME = "() => [document.documentElement.getAttribute('data-theme'), getComputedStyle(document.body).backgroundColor]"
LIGHT_BG, DARK_BG = "rgb(255, 255, 255)", "rgb(13, 17, 23)"


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_toggle_persists_across_pages_and_reloads(fixture_site, scheme, open_page):
    site = fixture_site
    page, _ = open_page(site, scheme, page="intro/README.html", color_scheme="light")
    assert page.evaluate(THEME) == ["light", LIGHT_BG]
    page.locator(".theme-toggle").click()
    assert page.evaluate(THEME) == ["dark", DARK_BG]
    page.locator("a[rel=next]").click()  # another page
    page.wait_for_url(site.url("intro/setup.html", scheme))
    assert page.evaluate(THEME) == ["dark", DARK_BG]
    page.reload()
    assert page.evaluate(THEME) == ["dark", DARK_BG]
    other = page.context.new_page()  # a new tab of the same browser
    other.goto(site.url("other/notes.html", scheme))
    assert other.evaluate(THEME) == ["dark", DARK_BG]
    other.locator(".theme-toggle").click()
    assert other.evaluate(THEME) == ["light", LIGHT_BG]
    page.reload()
    assert page.evaluate(THEME) == ["light", LIGHT_BG]


@pytest.mark.parametrize("system", ["light", "dark"])
def test_without_a_choice_the_system_theme_is_followed(fixture_site, system, open_page):
    page, _ = open_page(fixture_site, "http", page="README.html", color_scheme=system)
    assert page.evaluate(THEME) == [system, LIGHT_BG if system == "light" else DARK_BG]


def test_the_toggle_says_what_it_does(fixture_site, open_page):
    page, _ = open_page(fixture_site, "http", page="README.html", color_scheme="light")
    toggle = page.get_by_role("button", name="Switch between light and dark theme")
    assert toggle.count() == 1
    toggle.focus()
    page.keyboard.press("Enter")  # works from the keyboard
    assert page.evaluate(THEME)[0] == "dark"
