"""The header of a translated book's site holds, at 1280 px and on a phone (390 px), whatever the title's length and
in every language of the interface (issue 36): each language switcher entry on one line (not "中文" one character
per line), nothing in the header overlapping anything else, the header inside the viewport and the page not
scrolling sideways. Screenshots go to _build/screenshots/ for a person to look at."""
from __future__ import annotations

import pytest

from conftest import write_book
from tools.book.interface_text import TRANSLATIONS

from .support import DESKTOP, PHONE, SCREENSHOTS, build, serve

pytestmark = pytest.mark.xdist_group("browser")

LONG_TITLE = "Machine Learning Engineering for Training and Serving Very Large Models on Clusters of Thousands of Accelerators"
INTERFACES = ["en", *TRANSLATIONS]  # every language the interface speaks
OTHERS = ["zh", "ja", "es", "en"]


def _book(language: str) -> dict[str, str]:
    """A book in `language` with three translations (Chinese, Japanese, Spanish, or English where it is one of them)."""
    others = [tag for tag in OTHERS if tag != language][:3]
    tables = "".join(f'\n[translations.{tag}]\nfolder = "tr-{tag}"\ntitle = "{LONG_TITLE} ({tag})"\n' for tag in others)
    files = {
        "book.toml": f'[book]\ntitle = "{LONG_TITLE}"\nlanguage = "{language}"\n{tables}',
        "chapters-md.txt": "README.md\nguide.md\n",
        "README.md": "# Start\n\nRead [the guide](guide.md).\n",
        "guide.md": "# Guide\n\n## Steps\n\nFollow them in order.\n",
    }
    for tag in others:
        files[f"tr-{tag}/README.md"] = f"# Start ({tag})\n\nRead [the guide](guide.md).\n"
    return files


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    built = {}
    for language in INTERFACES:
        base = tmp_path_factory.mktemp(f"header-{language}")
        site = build(write_book(base / "book", _book(language)), base / "html", f"header-{language}")
        assert site.extra["exit_code"] == 0, site.extra["build_output"]
        site.server = serve(site.out)
        built[language] = site
    yield built
    for site in built.values():
        site.server.close()


GEOMETRY = """() => {
  const box = (element) => { const r = element.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
  const lines = (element) => { const range = document.createRange(); range.selectNodeContents(element); return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size; };
  const visible = (element) => element.getClientRects().length > 0 && getComputedStyle(element).visibility !== "hidden";
  const header = document.querySelector(".topbar");
  const parts = [".nav-toggle", ".book-title", ".search", ".language-switcher", ".theme-toggle"]
    .map((selector) => document.querySelector(selector)).filter((element) => element && visible(element));
  return {
    viewport: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, header: box(header),
    parts: parts.map((element) => ({name: element.className, box: box(element)})),
    entries: [...document.querySelectorAll(".language-switcher a")].map((a) => ({text: a.textContent, lines: lines(a), box: box(a)})),
  };
}"""


def _overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5 and a["top"] < b["bottom"] - 0.5 and b["top"] < a["bottom"] - 0.5


@pytest.mark.parametrize("device", ["desktop", "phone"])
@pytest.mark.parametrize("language", INTERFACES)
def test_the_header_holds_every_language_whatever_the_title(sites, language, device, open_page):
    viewport = DESKTOP if device == "desktop" else PHONE
    mobile = {"is_mobile": True, "has_touch": True} if device == "phone" else {}
    site = sites[language]
    other = next(tag for tag in OTHERS if tag != language)
    for page_name in ("guide.html", f"{other}/guide.html"):  # the original's page and a translation's
        page, _ = open_page(site, "http", page=page_name, viewport=viewport, **mobile)
        found = page.evaluate(GEOMETRY)
        where = f"{language} interface, {device}, {page_name}"
        assert len(found["entries"]) == 4, where
        for entry in found["entries"]:
            assert entry["lines"] == 1, f"{where}: the switcher's '{entry['text']}' takes {entry['lines']} lines"
            assert 0 <= entry["box"]["left"] and entry["box"]["right"] <= found["viewport"], f"{where}: '{entry['text']}' lies outside the viewport"
        for number, first in enumerate(found["parts"]):
            assert 0 <= first["box"]["left"] and first["box"]["right"] <= found["viewport"] + 0.5, f"{where}: {first['name']} lies outside the viewport"
            assert first["box"]["top"] >= found["header"]["top"] - 0.5 and first["box"]["bottom"] <= found["header"]["bottom"] + 0.5, f"{where}: {first['name']} leaves the header"
            for second in found["parts"][number + 1:]:
                assert not _overlap(first["box"], second["box"]), f"{where}: {first['name']} overlaps {second['name']}"
        assert found["scrollWidth"] <= found["viewport"], f"{where}: the page scrolls sideways"
        title = next(part for part in found["parts"] if "book-title" in part["name"])
        assert title["box"]["width"] >= 40, f"{where}: the title has no room left"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / f"header-{language}-{device}-{page_name.replace('/', '-').removesuffix('.html')}.png")
