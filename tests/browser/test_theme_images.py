"""GitHub's images for one colour theme, in Chromium: a `<picture>`'s dark source and raw `<img>` with
`#gh-dark-mode-only` follow the site's theme, the reader's toggle included, not only the system's preference."""
from __future__ import annotations

import json

import pytest

from conftest import write_book

from .support import build, serve

pytestmark = pytest.mark.xdist_group("browser")

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")
CHAPTER = """# Logos

<picture><source media="(prefers-color-scheme: dark)" srcset="dark.png"><img src="light.png" alt="picture logo"></picture>

<img src="dark.png#gh-dark-mode-only" alt="raw dark">
<img src="light.png#gh-light-mode-only" alt="raw light">
"""
SHOWN = """() => [
  document.querySelector("picture img").currentSrc.split("/").pop().split("#")[0],  // Chromium may name the cached raw <img> URL
  [...document.querySelectorAll("main img[alt^=raw]")].filter(i => getComputedStyle(i).display !== "none").map(i => i.alt),
]"""


@pytest.fixture(scope="module")
def logo_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("logo-site")
    root = write_book(base / "book", {"logos.md": CHAPTER, "light.png": PNG, "dark.png": PNG})
    site = build(root, base / "html", "logos")
    site.server = serve(site.out)
    yield site
    site.server.close()


def _assert_shows(page, theme: str) -> None:
    """The picture shows `theme`'s image and only the raw `<img>` of that theme is displayed (images switch a moment
    after the theme does)."""
    expected = [f"{theme}.png", [f"raw {theme}"]]
    try:
        page.wait_for_function(f"() => JSON.stringify(({SHOWN})()) === {json.dumps(json.dumps(expected, separators=(',', ':')))}", timeout=5_000)
    finally:
        assert page.evaluate(SHOWN) == expected


@pytest.mark.parametrize("system", ["light", "dark"])
def test_theme_images_follow_the_system_then_the_toggle(logo_site, system, open_page):
    page, _ = open_page(logo_site, "http", page="logos.html", color_scheme=system)
    other = "dark" if system == "light" else "light"
    _assert_shows(page, system)
    page.locator(".theme-toggle").click()
    _assert_shows(page, other)
    page.reload()  # the reader's choice is kept
    _assert_shows(page, other)
