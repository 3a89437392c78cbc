"""Screenshots of a chapter of our book in both themes, on a desktop and on a phone, for a person to look at:
written to _build/screenshots/: the top of the page, the desktop one scrolled to the chapter's first table, and on the
phone the chapter list open and search results."""
from __future__ import annotations

import struct

import pytest

from .pages import first_page_with
from .support import DESKTOP, PHONE, SCREENSHOTS

pytestmark = pytest.mark.xdist_group("browser")


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_screenshots_of_a_chapter(book_site, theme, device, open_page):
    chapter = first_page_with(book_site.out, [p for p, _ in book_site.chapters][1:], ["table", "pre.highlight"])
    viewport = DESKTOP if device == "desktop" else PHONE
    mobile = {"is_mobile": True, "has_touch": True} if device == "phone" else {}
    page, _ = open_page(book_site, "http", page=chapter, viewport=viewport, color_scheme=theme, **mobile)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = chapter.replace("/", "-").removesuffix(".html")
    shots = [SCREENSHOTS / f"{name}-{theme}-{device}.png"]
    page.screenshot(path=shots[-1])
    if device == "phone":
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways on a phone"
        page.locator(".nav-toggle").click()
        shots.append(SCREENSHOTS / f"{name}-{theme}-{device}-menu.png")
        page.screenshot(path=shots[-1])
        page.locator(".nav-toggle").click()
        page.locator("#search-input").fill("bandwidth")
        page.locator("#search-results:not([aria-busy]) li").first.wait_for()
        shots.append(SCREENSHOTS / f"{name}-{theme}-{device}-search.png")
        page.screenshot(path=shots[-1])
    else:
        page.locator("article table").first.scroll_into_view_if_needed()
        page.evaluate("document.querySelector('article table').scrollIntoView({block: 'start'})")
        shots.append(SCREENSHOTS / f"{name}-{theme}-{device}-table.png")
        page.screenshot(path=shots[-1])
    for shot in shots:
        assert png_size(shot) == (viewport["width"], viewport["height"]), shot
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
