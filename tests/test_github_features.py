"""Every GitHub feature of issue 16, read back as a reader reads it: the fixture book `tests/fixtures/github-features/`
is built once with `tools build all --strict`, then its site is parsed and opened in Chromium (light and dark, a
screenshot per chapter and theme under `_build/screenshots/`), its PDF read with pdftotext and rasterised, and its
EPUB checked by epubcheck. The raw syntax an author types must never reach what a reader sees."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from browser.support import DESKTOP, SCREENSHOTS, Site, Watch, new_context, serve
from bs4 import BeautifulSoup
from test_epub import epubcheck

from conftest import REPO, require, require_tool
from pdf_check import assert_valid_pdf
from site_check import dangling_links

# One xdist group: the one build and the one Chromium of this module stay in one worker.
pytestmark = pytest.mark.xdist_group("browser")

FIXTURE = REPO / "tests" / "fixtures" / "github-features"
CHAPTERS = {"front": "README.html", "alerts": "alerts/README.html", "math": "math/formulas.html", "diagrams": "diagrams/mermaid.html", "markup": "markup/gfm.html"}
RAW = ("[!NOTE]", "[!TIP]", "[!IMPORTANT]", "[!WARNING]", "[!CAUTION]", "$$", "\\frac", "\\sum", "graph TD", "sequenceDiagram", "stateDiagram", ":rocket:", ":+1:", ":tada:", "[^1]", "[^detail]", "[x]", "[ ]")
KINDS = ("Note", "Tip", "Important", "Warning", "Caution")
FORMULAS = 8  # math/formulas.md: five inline, two display, one ```math fence
DIAGRAMS = 4  # diagrams/mermaid.md: flowchart, sequence, state, the flowchart again
LABELS = ("Load batch", "Optimizer step", "request tokens", "Pending", "Finished")  # one or more per diagram
FOOTNOTES = ("The numbered footnote text.", "The named footnote text, cited twice.")


def raw_syntax_in(text: str) -> list[str]:
    return [raw for raw in RAW if raw in text]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("github-features")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", "build", "all", "--strict", "--book", str(FIXTURE), "--out", str(tmp / "out")],
                            cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    undrawn = re.search(r"^.*warning.*mermaid.*$", output, re.I | re.M)
    if result.returncode != 0 and undrawn:  # no browser or mermaid.js here: the diagrams cannot be drawn
        require(False, f"mermaid diagrams cannot be drawn on this machine: {undrawn.group(0)}")
    assert result.returncode == 0, output
    assert len(re.findall(r"^Built \w+: .* 0 errors, 0 warnings", result.stdout, re.M)) == 3, output
    assert "warning" not in result.stderr.lower(), output  # WeasyPrint's own warnings included
    return tmp / "out"


def site_page(built: Path, chapter: str) -> BeautifulSoup:
    return BeautifulSoup((built / "html" / CHAPTERS[chapter]).read_text(encoding="utf-8"), "lxml")


def article(built: Path, chapter: str):
    return site_page(built, chapter).find("article")


def visible_text(element) -> str:
    """The text of a parsed page without what a reader never sees (styles and scripts, e.g. inside a drawn SVG)."""
    for hidden in element.find_all(["style", "script"]):
        hidden.decompose()
    return element.get_text()


# --- the site, parsed ------------------------------------------------------------------------------------------------


def test_site_has_the_five_alerts_with_titles_and_plain_nested_quotes(built):
    page = article(built, "alerts")
    alerts = page.select("div.markdown-alert")
    assert [a.select_one(".markdown-alert-title").get_text(strip=True) for a in alerts] == list(KINDS)
    for alert, kind in zip(alerts, KINDS):
        assert f"markdown-alert-{kind.lower()}" in alert["class"] and alert.select_one(".markdown-alert-title svg path")
    important = alerts[2]
    assert len(important.find_all("p", recursive=False)) == 3 and len(important.select("ul > li")) == 3
    quotes = [q for q in page.find_all("blockquote") if q.find_parent("blockquote") is None and q.find_parent("li") is None]
    assert [" ".join(q.p.get_text().split()) for q in quotes][:2] == ["An ordinary quotation stays a quotation, with no title above it.", "Outer voice."]
    assert page.select_one("blockquote blockquote blockquote blockquote").get_text(strip=True) == "Innermost voice at depth four."
    assert [li.get_text(strip=True) for li in page.select("li > blockquote > ul > li")] == ["point alpha", "point beta"]


def test_site_typesets_every_formula_as_mathml_and_keeps_text_dollars(built):
    page = article(built, "math")
    formulas = page.select(".math")
    assert len(formulas) == FORMULAS and all(f.find("math") for f in formulas), formulas
    assert len(page.find_all("math")) == FORMULAS
    assert [m.get("display") for m in page.find_all("math")].count("block") == 3
    assert page.find("mfrac") and page.find("msub") and page.find("munderover")
    text = visible_text(page)
    assert "The tickets cost $5 and $10 at the door." in text
    assert "An escaped sign $ stays a dollar" in text and page.find("code", string="$PATH")


def test_site_draws_each_mermaid_diagram_for_both_themes(built):
    page = article(built, "diagrams")
    figures = page.select("figure.mermaid-diagram")
    assert len(figures) == DIAGRAMS, "the mermaid blocks are not drawn as figures"
    for figure in figures:
        svgs = figure.find_all("svg", recursive=False)
        assert [s.get("class") and ("gh-light-mode-only" in s["class"], "gh-dark-mode-only" in s["class"]) for s in svgs] == [(True, False), (False, True)], figure.attrs
    assert not page.select('pre[data-lang="mermaid"]')
    text = visible_text(page)
    for label in LABELS:
        assert label in text


def test_site_shows_emoji_and_the_headings_made_of_them(built):
    page = article(built, "markup")
    assert "Ship it 🚀, agree 👍 and celebrate 🎉." in visible_text(page)
    headings = [h.get_text().rstrip("#") for h in page.find_all("h2")]
    assert "🎉 ✨" in headings and "?!" in headings
    assert "🚀" in visible_text(article(built, "front"))


def test_site_keeps_the_raw_html_github_allows(built):
    page = article(built, "markup")
    assert page.select_one("details > summary").get_text() == "Show the hidden answer"
    assert [k.get_text() for k in page.find_all("kbd")] == ["Ctrl", "C"]
    assert page.find("sub").get_text() == "2" and page.find("sup", class_=None).get_text() == "2"
    assert page.find("br") and page.find("ins").get_text() == "inserted words" and page.find("del").get_text() == "deleted words"
    picture = page.find("picture")
    assert picture.find("source", media="(prefers-color-scheme: dark)")["srcset"].endswith("dark.svg")
    assert picture.find("img")["src"].endswith("light.svg")


def test_site_has_footnotes_with_back_links(built):
    page = article(built, "markup")
    backrefs = page.select("a.footnote-backref, a[data-footnote-backref]")
    assert len(backrefs) == 3  # the named note is cited twice
    ids = {tag["id"] for tag in page.find_all(id=True)}
    assert all(a["href"].startswith("#") and a["href"][1:] in ids for a in backrefs)
    text = visible_text(page)
    assert all(note in text for note in FOOTNOTES)


def test_site_shows_task_list_checkboxes(built):
    page = article(built, "markup")
    boxes = page.select("li input[type=checkbox][disabled]")
    assert [box.has_attr("checked") for box in boxes] == [True, False, True], page.select("ul.contains-task-list")


def test_site_aligns_table_columns(built):
    page = article(built, "markup")

    def alignment(cell) -> str | None:
        style = re.search(r"text-align:\s*(\w+)", cell.get("style", ""))
        return style.group(1) if style else cell.get("align")

    for row in page.find("table").find_all("tr"):
        assert [alignment(cell) for cell in row.find_all(["th", "td"])] == ["left", "center", "right"]


def test_site_themed_images_and_deep_lists(built):
    page = article(built, "markup")
    classes = {img["alt"]: img.get("class") for img in page.find_all("img") if img.find_parent("picture") is None}
    assert classes == {"Light diagram": ["gh-light-mode-only"], "Dark diagram": ["gh-dark-mode-only"]}
    assert page.select_one("ul ul ul ul ul ul > li").get_text(strip=True) == "level six"
    assert page.select_one("ol ol ul > li").get_text(strip=True) == "mixed bullet"
    assert {pre["data-lang"] for pre in page.select("pre.highlight")} >= {"python", "bash", "json"}


def test_site_links_land_and_ids_are_unique_on_every_page(built):
    assert dangling_links(built / "html") == []
    for chapter in CHAPTERS:
        ids = Counter(tag["id"] for tag in site_page(built, chapter).find_all(id=True))
        assert [i for i, n in ids.items() if n > 1] == [], chapter
    assert article(built, "front").find("a", href="markup/gfm.html#task-list")


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_site_pages_show_no_raw_syntax(built, chapter):
    assert raw_syntax_in(visible_text(site_page(built, chapter).find("main"))) == []


# --- the site in Chromium --------------------------------------------------------------------------------------------

# Per theme-only pair and per figure, how many variants a reader sees; the size of every formula; the picture's choice.
THEMED = """() => {
  const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const count = sel => [...document.querySelectorAll(sel)].filter(shown).length;
  return {
    light: count('main .gh-light-mode-only'), dark: count('main .gh-dark-mode-only'),
    themed: document.querySelectorAll('main .gh-light-mode-only, main .gh-dark-mode-only').length,
    figures: [...document.querySelectorAll('figure.mermaid-diagram')].map(f => [...f.children].filter(c => c.tagName.toLowerCase() === 'svg' && shown(c)).length),
    math: [...document.querySelectorAll('main math')].map(m => { const r = m.getBoundingClientRect(); return [r.width, r.height]; }),
    pictures: [...document.querySelectorAll('main picture img')].map(i => [i.currentSrc, i.naturalWidth]),
  };
}"""


@pytest.fixture(scope="module")
def served(built):
    site = Site("github-features", FIXTURE, built / "html", list(CHAPTERS.values()), server=serve(built / "html"))
    yield site
    assert site.server is not None
    site.server.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_chromium_shows_one_variant_per_theme_and_no_raw_syntax(served, browser, chapter, theme):
    watch = Watch()
    context = new_context(browser, served, "http", watch, viewport=DESKTOP, color_scheme=theme)
    try:
        page = context.new_page()
        page.goto(served.url(CHAPTERS[chapter]), wait_until="load")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"github-features-{chapter}-{theme}.png"
        page.screenshot(path=shot, full_page=True)
        assert shot.stat().st_size > 5_000, f"{shot} looks empty"
        assert raw_syntax_in(page.evaluate("document.body.innerText")) == []
        seen = page.evaluate(THEMED)
    finally:
        context.close()
    assert watch.problems() == []
    other = "dark" if theme == "light" else "light"
    assert seen[theme] == seen["themed"] // 2 and seen[other] == 0, seen  # each pair: exactly its theme's variant
    assert seen["figures"] == [1] * len(seen["figures"]), seen["figures"]
    assert all(width > 0 and height > 0 for width, height in seen["math"]), seen["math"]
    assert all(src.endswith(f"/{theme}.svg") and width > 0 for src, width in seen["pictures"]), seen["pictures"]
    if chapter == "math":
        assert len(seen["math"]) == FORMULAS
    if chapter == "diagrams":
        assert len(seen["figures"]) == DIAGRAMS
    if chapter == "markup":
        assert seen["themed"] == 2 and len(seen["pictures"]) == 1


# --- the PDF ---------------------------------------------------------------------------------------------------------


def test_pdf_text_has_titles_labels_footnotes_and_no_raw_syntax(built):
    pdftotext = require_tool("pdftotext")
    pdf = built / "book.pdf"
    assert_valid_pdf(pdf)
    text = subprocess.run([pdftotext, "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, timeout=60, check=True).stdout
    for kind in KINDS:
        assert re.search(rf"^{kind}$", text, re.M), kind
    for expected in (*LABELS, *FOOTNOTES, "🚀", "$5 and $10", "Show the hidden answer", "level six", "Innermost voice at depth four."):
        assert expected in text, expected
    # Each drawn formula carries its LaTeX as invisible text, for search, copy and screen readers; its `$$` do not.
    assert "\\frac" in text and raw_syntax_in(text.replace("\\frac", "").replace("\\sum", "")) == []


def test_pdf_pages_rasterise_with_content(built):
    pdftoppm = require_tool("pdftoppm")
    from PIL import Image

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("github-features-pdf-*.png"):
        old.unlink()
    subprocess.run([pdftoppm, "-r", "50", "-png", str(built / "book.pdf"), str(SCREENSHOTS / "github-features-pdf")], check=True, timeout=120)
    pages = sorted(SCREENSHOTS.glob("github-features-pdf-*.png"))
    assert len(pages) >= len(CHAPTERS)
    for path in pages:
        with Image.open(path) as image:
            dark = sum(image.convert("L").histogram()[:128])
        assert dark > 50, f"{path} is blank"


# --- the EPUB --------------------------------------------------------------------------------------------------------


def epub_pages(built: Path) -> tuple[list[str], dict[str, BeautifulSoup]]:
    with zipfile.ZipFile(built / "book.epub") as archive:
        names = archive.namelist()
        return names, {n: BeautifulSoup(archive.read(n), "lxml-xml") for n in names if n.endswith(".xhtml")}


def test_epub_passes_epubcheck_without_a_warning(built):
    report = epubcheck(built / "book.epub")
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report


def test_epub_shows_no_raw_syntax(built):
    for name, soup in epub_pages(built)[1].items():
        assert raw_syntax_in(visible_text(soup.find("body"))) == [], name


def test_epub_has_alerts_math_light_diagrams_and_light_images_only(built):
    names, pages = epub_pages(built)
    chapter = {key: pages["EPUB/" + page.replace(".html", ".xhtml")] for key, page in CHAPTERS.items()}
    assert [t.get_text(strip=True) for t in chapter["alerts"].select(".markdown-alert-title")] == list(KINDS)
    assert len(chapter["math"].find_all("math")) == FORMULAS
    assert "🎉" in chapter["markup"].get_text() and len(chapter["markup"].select(".footnote-backref, [data-footnote-backref]")) == 3
    figures = chapter["diagrams"].select("figure.mermaid-diagram")
    assert [len(f.find_all("svg", recursive=False)) for f in figures] == [1] * DIAGRAMS
    assert not chapter["diagrams"].select(".gh-dark-mode-only") and not chapter["markup"].select(".gh-dark-mode-only")
    assert not [n for n in names if re.search(r"dark\.(png|svg)$", n)], names  # only the light variants travel
