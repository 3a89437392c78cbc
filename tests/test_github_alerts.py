"""GitHub's alerts, emoji shortcodes and theme-only images (issue 16, items 1, 4 and 6's dark/light images), read as a
reader sees them in the site, the PDF and the EPUB of one small book built through the CLI."""
from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_epub import EPUB_GROUP, epubcheck

from conftest import build_all_cleanly, require_tool, run_tools, write_book
from pdf_check import assert_valid_pdf

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")
DARK_PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000000b49444154789c6360400600000e0001a99173b10000000049454e44ae426082")  # 2x2: the PDF tells it apart
KINDS = ("Note", "Tip", "Important", "Warning", "Caution")

CHAPTER = """# Alerts

> [!NOTE]
> Useful information, with a [link](#alerts).

> [!tip]
> Helpful advice.

> [!IMPORTANT]
> Key information.

> [!WARNING]
> Urgent info.

> [!CAUTION]
> Risks ahead.

> An ordinary quote [!NOTE] stays a quote.

> [!NOTE] with words after the marker is a quote too.

- An alert cannot be nested in a list:

  > [!TIP]
  > so this stays a quote.

## 🎉

## :rocket: Launch

Ship it :rocket: :+1: :white_check_mark:, keep `:smile:` in code and :no_such_emoji: as text.

See https://example.com/a:rocket:b for the URL.

![light logo](light.png#gh-light-mode-only)
![dark logo](dark.png#gh-dark-mode-only)
"""


run = run_tools


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("alerts")
    return build_all_cleanly(tmp, {"alerts.md": CHAPTER, "light.png": PNG, "dark.png": DARK_PNG})


def _site(built: Path) -> BeautifulSoup:
    return BeautifulSoup((built / "html" / "alerts.html").read_text(encoding="utf-8"), "html.parser")


def test_site_shows_github_alerts_with_titles_and_icons(built):
    main = _site(built).find("main")
    alerts = main.select("div.markdown-alert")
    assert [a["class"] for a in alerts] == [["markdown-alert", f"markdown-alert-{k.lower()}"] for k in KINDS]
    for alert, kind in zip(alerts, KINDS):
        title = alert.find("p", class_="markdown-alert-title")
        assert title.get_text() == kind
        assert title.find("svg").find("path")["d"]
    assert alerts[0].find("a")["href"] == "#alerts"
    quotes = main.find_all("blockquote")
    assert [" ".join(q.get_text().split()) for q in quotes] == [
        "An ordinary quote [!NOTE] stays a quote.", "[!NOTE] with words after the marker is a quote too.", "[!TIP] so this stays a quote."]
    text = main.get_text()
    assert "[!NOTE]\n" not in text and "[!tip]" not in text and "[!CAUTION]" not in text and "[!IMPORTANT]" not in text


def test_site_shows_emoji_and_github_heading_ids(built):
    main = _site(built).find("main")
    text = main.get_text()
    assert "Ship it 🚀 👍 ✅" in text
    assert ":rocket:" not in text.replace("https://example.com/a:rocket:b", "")
    assert main.find("code").get_text() == ":smile:" and ":no_such_emoji:" in text
    assert main.find("a", string="https://example.com/a:rocket:b")["href"] == "https://example.com/a:rocket:b"
    headings = main.find_all("h2")
    assert [h.get_text().rstrip("#") for h in headings] == ["🎉", "🚀 Launch"]
    # GitHub's ids: an emoji character is dropped (`## 🎉` has an empty id), a shortcode keeps its name (github/markup#1231)
    assert not headings[0].has_attr("id") and headings[1]["id"] == "rocket-launch"


def test_site_shows_each_theme_image_in_its_theme_only(built):
    main = _site(built).find("main")
    classes = {img["alt"]: img.get("class") for img in main.find_all("img")}
    assert classes == {"light logo": ["gh-light-mode-only"], "dark logo": ["gh-dark-mode-only"]}
    css = (built / "html" / "assets" / "style.css").read_text(encoding="utf-8")
    assert '[data-theme="dark"] img.gh-light-mode-only' in css and ':root:not([data-theme="dark"]) img.gh-dark-mode-only' in css


def test_pdf_shows_alert_titles_emoji_and_only_the_light_image(built):
    pdftotext = require_tool("pdftotext")
    pdf = built / "book.pdf"
    assert_valid_pdf(pdf)
    text = subprocess.run([pdftotext, "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, timeout=60).stdout
    for kind in KINDS:
        assert re.search(rf"^{kind}$", text, re.M), text
    assert "[!NOTE]\n" not in text and "[!tip]" not in text and "🚀" in text and "Ship it 🚀 👍 ✅" in text
    assert ":rocket:" not in text.replace("https://example.com/a:rocket:b", "")
    from pypdf import PdfReader

    sizes = [(image.image.width, image.image.height) for page in PdfReader(pdf).pages for image in page.images if image.image is not None]
    assert (1, 1) in sizes and (2, 2) not in sizes, sizes


@EPUB_GROUP
def test_epub_is_valid_with_alerts_emoji_and_only_the_light_image(built):
    epub = built / "book.epub"
    report = epubcheck(epub)
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report
    with zipfile.ZipFile(epub) as archive:
        names = archive.namelist()
        body = archive.read(next(n for n in names if n.endswith("alerts.xhtml"))).decode("utf-8")
    assert not any(n.endswith("dark.png") for n in names) and any(n.endswith("light.png") for n in names)
    soup = BeautifulSoup(body, "html.parser")
    assert [t.get_text() for t in soup.select("p.markdown-alert-title")] == list(KINDS)
    assert len(soup.select("p.markdown-alert-title svg path")) == 5
    assert [img["alt"] for img in soup.find_all("img")] == ["light logo"]
    assert [h.get("id") for h in soup.find_all("h2")] == ["heading.untitled", "rocket-launch"]
    assert "Ship it 🚀 👍 ✅" in soup.get_text() and "[!NOTE]\n" not in soup.get_text()


def test_check_links_places_a_link_inside_an_alert(tmp_path):
    root = write_book(tmp_path / "book", {"a.md": "# A\n\n> [!WARNING]\n> Read [this](missing.md) :warning: first.\n"})
    result = run(tmp_path, "check-links", "--book", str(root))
    assert result.returncode == 1
    assert "a.md:4:15: error: the link 'missing.md'" in result.stdout + result.stderr, result.stdout + result.stderr
