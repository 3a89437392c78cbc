"""Parts of the book: `Part: Title` lines of the chapter list, as a reader meets them in the site's navigation, the
PDF's contents and outline (both PDF routes), and the EPUB's navigation; mistakes reported at the list's line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from test_epub import EpubReport, epubcheck

from conftest import REPO, run_tools, write_book
from pdf_check import PdfReport, tree
from site_check import parse
from tools.book.parts import ChapterEntries, is_chapter_line, part_title
from tools.core.errors import Diagnostics

CHAPTERS = """# reading order
intro.md

# 'Part:' lines open parts; this line stays a comment
Part: Hardware
hw/README.md
hw/gpu.md
Part: Software
sw/tools.md
"""
FILES = {
    "chapters-md.txt": CHAPTERS,
    "intro.md": "# Introduction\n\nSee [the GPU](hw/gpu.md#memory).\n",
    "hw/README.md": "# Hardware overview\n\nText.\n",
    "hw/gpu.md": "# GPUs\n\n## Memory\n\nText.\n\n### Bandwidth\n\nMore.\n",
    "sw/tools.md": "# Tools\n\n## Profilers\n\nText.\n",
}
EXPECTED_OUTLINE = [
    ("Introduction", []),
    ("Hardware", [("Hardware overview", []), ("GPUs", [("Memory", [("Bandwidth", [])])])]),
    ("Software", [("Tools", [("Profilers", [])])]),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("parts")
    root = write_book(tmp / "book", FILES)
    result = run_tools(tmp, "build", "all", "--book", str(root), "--out", str(tmp / "out"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp / "out"


# --- the chapter list ---------------------------------------------------------------------------------------------

_PATH = st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6})?\.md", fullmatch=True)
_LINE = st.one_of(
    _PATH.map(lambda path: ("chapter", path)),
    st.from_regex(r"[A-Za-z][A-Za-z ]{0,10}", fullmatch=True).map(lambda title: ("part", title.strip())),
    st.from_regex(r"#[ A-Za-z:]{0,12}", fullmatch=True).map(lambda text: ("comment", text)),
    st.just(("blank", "")),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=20))
def test_parts_hold_the_chapters_after_them_and_comments_stay_comments(lines):
    entries = ChapterEntries("chapters-md.txt", Diagnostics())
    expected: list[tuple[str, list[str]]] = []  # (title, chapters) of every part, as a reader of the list sees them
    for number, (kind, text) in enumerate(lines, 1):
        line = f"Part: {text}" if kind == "part" else text
        assert is_chapter_line(line) == (kind == "chapter")
        if kind == "part":
            expected.append((text, []))
        if not entries.skip(line, number):
            entries.append((text, number))
            if expected:
                expected[-1][1].append(text)
    entries.finish()
    assert [path for path, _ in entries] == [text for kind, text in lines if kind == "chapter"]
    assert [(part.title, part.chapters) for part in entries.parts] == [(title, paths) for title, paths in expected if title and paths]


@given(st.text(max_size=30))
def test_part_title_reads_only_part_lines(text):
    title = part_title(text.strip())
    assert (title is None) == (not text.strip().lower().startswith("part:"))


@pytest.mark.parametrize(("listing", "expected"), [
    ("a.md\nPart: Empty\nPart: Next\nb.md\n", "chapters-md.txt:2: error: the part 'Empty' holds no chapter."),
    ("a.md\nPart:\nb.md\n", "chapters-md.txt:2: error: the part line names no title."),
    ("Part: One\na.md\npart: one\nb.md\n", "chapters-md.txt:3: warning: the part 'one' is declared twice (first on line 1)."),
    ("a.md\nPart: Trailing\n", "chapters-md.txt:2: error: the part 'Trailing' holds no chapter."),
    ("a.md\nPart: Bad\u202etitle\nb.md\n", "chapters-md.txt:2: error: the part title"),
], ids=["empty", "untitled", "repeated", "last", "invisible"])
def test_mistakes_in_parts_are_reported_at_their_line(tmp_path, listing, expected):
    root = write_book(tmp_path / "book", {"chapters-md.txt": listing, "a.md": "# A\n", "b.md": "# B\n"})
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--strict")
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stdout + result.stderr


def test_a_path_starting_with_part_is_written_with_dot_slash(tmp_path):
    root = write_book(tmp_path / "book", {"chapters-md.txt": "./Part: odd.md\n", "Part: odd.md": "# Odd\n"})
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mv_keeps_part_lines(tmp_path):
    root = write_book(tmp_path / "book", FILES)
    result = run_tools(tmp_path, "mv", str(root / "hw"), str(root / "hardware"), "--book", str(root))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (root / "chapters-md.txt").read_text() == CHAPTERS.replace("hw/", "hardware/")


def test_our_book_has_parts():
    text = (REPO / "chapters" / "chapters-md.txt").read_text()
    assert len(re.findall(r"^Part: ", text, re.M)) >= 5 and text.startswith("# ")


# --- what a reader sees -------------------------------------------------------------------------------------------


def test_site_navigation_shows_parts_as_headings_over_their_chapters(built):
    soup = parse(built / "html" / "hw" / "gpu.html")
    sidebar = soup.select_one("nav.sidebar > ul")
    parts = sidebar.find_all("li", class_="part", recursive=False)
    assert [li.select_one(":scope > .part-title").get_text(strip=True) for li in parts] == ["Hardware", "Software"]
    assert all(li.select_one(":scope > .part-title").name == "span" for li in parts)  # a heading, not a link
    hardware = [a.get_text(strip=True) for a in parts[0].select("a")]
    assert hardware == ["Hardware overview", "GPUs"]
    assert [a.get_text(strip=True) for a in parts[1].select("a")] == ["Tools"]
    assert sidebar.select_one("a[aria-current=page]").get_text(strip=True) == "GPUs"
    assert sidebar.select_one(":scope > li > a").get_text(strip=True) == "Introduction"  # before the first part
    front = parse(built / "html" / "index.html")
    assert [span.get_text(strip=True) for span in front.select(".front-contents .part-title")] == ["Hardware", "Software"]


def test_pdf_outline_nests_chapters_under_their_parts(built):
    report = PdfReport(built / "book.pdf")
    assert tree(report.outline) == EXPECTED_OUTLINE
    hardware = report.outline[1]
    assert report.body_text(hardware.page).split() == ["Hardware"]  # the part's own title page
    assert hardware.children[0].page == hardware.page + 1


def test_pdf_contents_shows_part_titles_before_their_chapters(built):
    report = PdfReport(built / "book.pdf")
    assert [title for title, _ in report.toc()] == ["Introduction", "Hardware", "Hardware overview", "GPUs", "Software", "Tools"]
    pages = {item.title: item.page + 1 for item in report.outline}
    assert dict(report.toc())["Software"] == pages["Software"]


def test_pdf_whole_document_route_has_the_same_parts(tmp_path):
    """A print stylesheet that needs the whole book falls back to one render; its outline is the same."""
    print_css = (REPO / "tools" / "render" / "theme" / "print.css").read_text() + "\n@page :first { margin-top: 20mm; }\n"
    files = dict(FILES, **{"book.toml": '[book]\ntheme = "theme"\n', "theme/print.css": print_css})
    root = write_book(tmp_path / "book", files)
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "whole.pdf"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    report = PdfReport(tmp_path / "whole.pdf")
    assert tree(report.outline) == EXPECTED_OUTLINE
    assert [title for title, _ in report.toc()] == ["Introduction", "Hardware", "Hardware overview", "GPUs", "Software", "Tools"]


def test_epub_navigation_nests_chapters_under_their_parts(built):
    report = EpubReport(built / "book.epub")
    nav = report.nav()
    assert [(text, [child[0] for child in children]) for text, _, children in nav] == [
        ("Introduction", []), ("Hardware", ["Hardware overview", "GPUs"]), ("Software", ["Tools"])]
    ncx = report.xml(next(item.path for item in report.items.values() if item.media_type == "application/x-dtbncx+xml"))
    names = {"ncx": "http://www.daisy.org/z3986/2005/ncx/"}
    points = ncx.find("ncx:navMap", names).findall("ncx:navPoint", names)
    assert [point.findtext("ncx:navLabel/ncx:text", namespaces=names) for point in points] == ["Introduction", "Hardware", "Software"]
    assert [child.findtext("ncx:navLabel/ncx:text", namespaces=names) for child in points[1].findall("ncx:navPoint", names)] == ["Hardware overview", "GPUs"]


def test_epub_with_parts_passes_epubcheck(built):
    report = epubcheck(built / "book.epub")
    assert "0 fatals / 0 errors / 0 warnings" in report, report


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_part_headings_are_shown_in_both_themes(built, browser, theme):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((built / "html" / "hw" / "gpu.html").as_uri())
        page.evaluate("theme => document.documentElement.setAttribute('data-theme', theme)", theme)
        heading = page.locator("#sidebar .part-title").first
        assert heading.is_visible() and heading.inner_text().strip().lower() == "hardware"
        colour, background = page.evaluate("""() => [getComputedStyle(document.querySelector('#sidebar .part-title')).color,
                                                    getComputedStyle(document.body).backgroundColor]""")
        assert colour != background
        assert page.locator("#sidebar [aria-current=page]").inner_text().strip() == "GPUs"
    finally:
        page.close()
