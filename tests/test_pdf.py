"""The PDF as a reader gets it: outline, table of contents, links that land, pages that hold their text.

Each PDF is built once per session (the corpus and our own book take a minute or more each) and read with pypdf for
structure and poppler's pdftotext for what is printed where. The builds share one xdist group, so that one worker
builds each of them once.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, require_tool, write_book
from pdf_check import (
    BAD_FILES,
    BAD_LOCATIONS,
    FIXTURE_FILES,
    FIXTURE_REPO,
    FIXTURE_TITLES,
    LONG_CODE_LINE,
    WARNING_FILES,
    PartNode,
    PdfReport,
    assert_lands_on_heading,
    chapter_items,
    chapter_start_pages,
    expected_outline,
    link_at,
    outline_titles,
    tree,
)
from tools.book.config import load_config
from tools.cli import main
from tools.render.pdf import stream as pdf_stream
from validators import pdfua_errors, ua_claimed

PDF_GROUP = pytest.mark.xdist_group("pdf")
OWN_BOOK = REPO / "chapters"


def build(fmt: str, book: Path, out: Path, *options: str):
    return CliRunner().invoke(main, ["build", fmt, "--book", str(book), "--out", str(out), *options])


def built_pdf(book: Path, out: Path, allowed_exit=(0,), options: tuple[str, ...] = ()) -> PdfReport:
    require_tool("pdftotext")
    result = build("pdf", book, out, *options)
    assert result.exit_code in allowed_exit, result.output
    assert re.search(rf"Built pdf(?: \([\w-]+\))?: \d+ chapters, \d+ pages, .* -> {re.escape(str(out))}$", result.stdout, re.M), result.output
    return PdfReport(out)


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory) -> Path:
    return write_book(tmp_path_factory.mktemp("fixture") / "book", FIXTURE_FILES)


@pytest.fixture(scope="session")
def fixture_pdf(fixture_root, tmp_path_factory) -> PdfReport:
    return built_pdf(fixture_root, tmp_path_factory.mktemp("fixture-pdf") / "fixture.pdf")


@pytest.fixture(scope="session")
def corpus_pdf(corpus_root, tmp_path_factory) -> tuple[PdfReport, list]:
    expected = expected_outline(corpus_root)
    return built_pdf(corpus_root, tmp_path_factory.mktemp("corpus-pdf") / "corpus.pdf"), expected


@pytest.fixture(scope="session")
def own_pdf(tmp_path_factory) -> tuple[PdfReport, list]:
    # Our chapters are still being written: missing chapters are errors (exit 1), and the PDF is made all the same.
    # The outline is read from the sources just before the build, as other chapters may change meanwhile.
    expected = expected_outline(OWN_BOOK)
    return built_pdf(OWN_BOOK, tmp_path_factory.mktemp("own-pdf") / "book.pdf", allowed_exit=(0, 1), options=("--lang", "en")), expected  # the Chinese one: tests/test_zh_book.py


# --- (a) the fixture book -------------------------------------------------------------------------------------


@PDF_GROUP
def test_fixture_pages_outline_and_toc(fixture_pdf):
    assert 5 <= fixture_pdf.pages <= 12
    assert tree(fixture_pdf.outline) == [
        ("Welcome to the Fixture", []),
        ("The Guide", [("Example", []), ("Example", [("Details of the example", [])])]),
        ("Setup", [("Install the tools — quickly", []), ("Über Straße und Größe", [])]),
        ("Notes", [("Notes on C++", []), ("Ünïcödé heading ✓", [])]),
    ]
    starts = chapter_start_pages(fixture_pdf)
    assert starts == sorted(starts) and starts[0] >= 2  # after the cover and the contents
    assert fixture_pdf.toc() == [(title, page + 1) for title, page in zip(FIXTURE_TITLES, starts)]
    for title, page in zip(FIXTURE_TITLES, starts):
        assert fixture_pdf.body_text(page).startswith(title)  # the chapter's h1 opens its first page
        assert fixture_pdf.footer(page) == str(page + 1)  # the printed number is the one in the contents


@PDF_GROUP
def test_fixture_every_internal_link_lands(fixture_pdf):
    internal = [link for link in fixture_pdf.links if link.internal]
    assert len(internal) >= 10
    assert [link for link in internal if link.dest_page is None] == []


@PDF_GROUP
def test_fixture_cross_chapter_link_with_fragment_lands_on_its_heading(fixture_pdf):
    front = chapter_start_pages(fixture_pdf)[0]
    assert_lands_on_heading(fixture_pdf, link_at(fixture_pdf, front, "setup section"), "Install the tools — quickly")
    notes = chapter_start_pages(fixture_pdf)[3]
    assert_lands_on_heading(fixture_pdf, link_at(fixture_pdf, notes, "umlaut section"), "Über Straße und Größe")


@PDF_GROUP
def test_fixture_folder_link_opens_its_readme_and_duplicates_are_distinct(fixture_pdf):
    starts = chapter_start_pages(fixture_pdf)
    folder = link_at(fixture_pdf, starts[0], "guide folder")
    assert folder.dest_page == starts[1]
    first, second = link_at(fixture_pdf, starts[1], "first one"), link_at(fixture_pdf, starts[1], "this one")
    assert first.dest_page == second.dest_page == starts[1]
    assert first.dest_top > second.dest_top  # the first "Example" is printed above the second


@PDF_GROUP
def test_fixture_hand_made_anchor_and_footnote_land(fixture_pdf):
    setup = chapter_start_pages(fixture_pdf)[2]
    pages = range(setup, chapter_start_pages(fixture_pdf)[3])
    anchor = next(link_at(fixture_pdf, p, "hand-made anchor") for p in pages if fixture_pdf.phrase_box(p, "hand-made anchor"))
    assert anchor.dest_page == chapter_start_pages(fixture_pdf)[3]
    note_page = next(p for p in pages if "The source of the claim." in fixture_pdf.body_text(p))
    refs = [link for link in fixture_pdf.links if link.page in pages and link.internal and link.dest_page == note_page]
    assert refs, "the footnote mark does not link to the note"


@PDF_GROUP
def test_fixture_external_and_file_links_are_uris(fixture_pdf):
    uris = {link.uri for link in fixture_pdf.links if link.uri}
    assert "https://example.org/docs/page" in uris
    front = chapter_start_pages(fixture_pdf)[0]
    assert link_at(fixture_pdf, front, "upstream documentation").uri == "https://example.org/docs/page"
    assert f"{FIXTURE_REPO}/scripts/install.sh" in uris  # a script is linked where it lives in the repository
    assert f"{FIXTURE_REPO}/scripts/install.sh#L2" in uris
    assert f"{FIXTURE_REPO}/guide/img/diagram.svg" in uris  # a text link to an image file too
    assert [u for u in uris if not u.startswith(("https://", "http://", "mailto:"))] == []  # no file:// paths


@PDF_GROUP
def test_fixture_nothing_runs_past_the_right_margin(fixture_pdf):
    assert fixture_pdf.overflowing_words() == []
    setup = chapter_start_pages(fixture_pdf)[2]
    words = fixture_pdf.words_on(setup)
    code_lines = {round(w.y_min) for w in words if "option_" in w.text}
    assert len(code_lines) >= 3, "the long code line did not wrap"
    printed = {w.text.strip(",[]") for w in words}
    assert {f"option_{i:03d}" for i in range(70)} <= printed  # wrapped at spaces: every name printed whole
    assert len(LONG_CODE_LINE) > 3 * 92
    z_lines = [w for w in words if set(w.text.strip("'")) == {"z"}]
    assert len(z_lines) >= 2 and sum(len(w.text.strip("'")) for w in z_lines) == 150  # cut, and nothing lost
    text = " ".join(fixture_pdf.body_text(p) for p in range(setup, fixture_pdf.pages))
    assert "row2" in text and "cell11" in text  # the wide table, its last row and column included
    front = chapter_start_pages(fixture_pdf)[0]
    assert "far/too/long" in fixture_pdf.body_text(front) and "index.html" in fixture_pdf.body_text(front)


@PDF_GROUP
def test_fixture_text_image_and_header_footer(fixture_pdf):
    text = fixture_pdf.text(layout=False)
    for title in FIXTURE_TITLES:
        assert title in text
    assert "diagramlabel" in text  # the SVG figure is drawn
    assert "The source of the claim." in text
    assert fixture_pdf.header(0) == "" and fixture_pdf.footer(0) == ""  # the cover has neither
    for title, page in zip(FIXTURE_TITLES, chapter_start_pages(fixture_pdf)):
        assert fixture_pdf.header(page) == title
        assert fixture_pdf.footer(page) == str(page + 1)


@PDF_GROUP
def test_fixture_metadata(fixture_pdf):
    meta = fixture_pdf.metadata
    assert meta["/Title"] == "Fixture Book"
    assert meta["/Author"] == "Ada Lovelace, Alan Turing"
    assert meta["/Subject"] == "Testing book outputs"
    assert re.match(r"D:\d{14}", meta["/CreationDate"]), meta["/CreationDate"]
    assert fixture_pdf.language == "en"


# --- (b) the shared corpus and (c) our own book -----------------------------------------------------------------


@pytest.fixture(params=["corpus", "own"])
def big(request) -> tuple[PdfReport, list]:
    """(the PDF, the outline its sources call for) of the shared corpus and of our own book."""
    return request.getfixturevalue(f"{request.param}_pdf")


@PDF_GROUP
def test_big_book_pages_and_outline(big):
    report, expected = big
    assert len(expected) + 2 <= report.pages <= 40 * len(expected) + 10
    assert outline_titles(report.outline) == [title for title, _ in expected]
    assert tree(report.outline) == expected


def _contents_items(report: PdfReport, expected: list) -> list[tuple[object, bool]]:
    """(outline item, is a part) of every part and chapter, in page order: what the printed contents lists."""
    items: list[tuple[object, bool]] = []
    for item, node in zip(report.outline, expected):
        items.append((item, isinstance(node, PartNode)))
        if isinstance(node, PartNode):
            items += [(child, False) for child in item.children]
    return items


@PDF_GROUP
def test_big_book_toc_numbers_are_the_chapter_pages(big):
    report, expected = big
    items = _contents_items(report, expected)
    assert report.toc() == [(item.title, item.page + 1) for item, _ in items]
    for item, _ in items:
        assert report.footer(item.page) == str(item.page + 1)
        assert report.body_text(item.page).startswith(" ".join(item.title.split()[:3]))


@PDF_GROUP
def test_big_book_links_land_and_text_stays_on_the_page(big):
    report, _ = big
    internal = [link for link in report.links if link.internal]
    assert internal and [link for link in internal if link.dest_page is None] == []
    assert [u.uri for u in report.links if u.uri and not u.uri.startswith(("https://", "http://", "mailto:"))] == []
    assert report.overflowing_words() == []
    text = " ".join(report.text(layout=False).split())
    for title in outline_titles(report.outline):
        assert " ".join(title.split()) in text


@PDF_GROUP
def test_big_book_running_header_and_page_numbers(big):
    report, expected = big
    items = _contents_items(report, expected)
    starts = [item.page for item, _ in items] + [report.pages]
    checked = 0
    for (item, is_part), start, end in zip(items, starts, starts[1:]):
        title = item.title
        if is_part:  # a part's title page: no running header
            assert report.header(start).strip() == "" and report.footer(start) == str(start + 1)
            continue
        for page in {start, end - 1}:  # the first page sets the header; a later one carries it over
            assert " ".join(report.header(page).split()) == " ".join(title.split()), f"page {page + 1}"
            assert report.footer(page) == str(page + 1)
            checked += 1
    assert checked >= len(chapter_items(report.outline, expected))
    meta = report.metadata
    assert meta.get("/Title") and re.match(r"D:\d{8}", meta.get("/CreationDate", "")) and report.language


@PDF_GROUP
def test_own_book_metadata(own_pdf):
    report, _ = own_pdf
    config = load_config(OWN_BOOK)
    meta = report.metadata
    assert meta["/Title"] == config.title
    assert meta["/Author"] == ", ".join(config.authors)
    assert meta["/Subject"] == (config.subject or config.description)
    assert report.language == config.language


@PDF_GROUP
def test_own_book_passes_pdfua_and_says_it_is_pdf_ua(own_pdf):
    """pdfua (tests/validators.py) finds no error in our book's PDF, which therefore may claim PDF/UA-1."""
    report, _ = own_pdf
    errors = pdfua_errors(report.path)
    assert not errors, "\n".join(errors)
    assert ua_claimed(report.path)


# --- bad input, strict mode, interrupted builds, `build all` -----------------------------------------------


def test_bad_input_is_reported_with_locations_and_the_pdf_is_still_made(tmp_book, tmp_path):
    require_tool("pdftotext")
    root = tmp_book(BAD_FILES)
    out = tmp_path / "bad.pdf"
    result = build("pdf", root, out)
    assert result.exit_code == 1, result.output
    for location, (severity, word) in BAD_LOCATIONS.items():
        line = next((line for line in result.stderr.splitlines() if line.startswith(f"{location}: {severity}:")), None)
        assert line is not None and word in line, f"{location} not reported:\n{result.stderr}"
    report = PdfReport(out)
    assert outline_titles(report.outline) == ["Chapter A", "Chapter B", "Chapter C"]
    starts = chapter_start_pages(report)
    assert link_at(report, starts[0], "chapter B").dest_page == starts[1]  # a missing anchor still opens its chapter
    assert link_at(report, starts[0], "here").dest_page == starts[0]
    for alt in ("a lost figure", "a remote figure"):  # a missing image and a remote one leave their alt text
        assert alt in report.body_text(starts[0])
    assert "caf" in report.body_text(starts[2])


def test_strict_fails_on_warnings_and_still_writes(tmp_book, tmp_path):
    root = tmp_book(WARNING_FILES)
    out = tmp_path / "warn.pdf"
    relaxed = build("pdf", root, out)
    assert relaxed.exit_code == 0 and "a.md:3:" in relaxed.stderr and "warning" in relaxed.stderr
    out.unlink()
    strict = build("pdf", root, out, "--strict")
    assert strict.exit_code == 1 and out.is_file()
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # an ordinary file, readable by others


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("failure", [RuntimeError("disk on fire"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_a_failed_write_keeps_the_last_good_pdf(tmp_book, tmp_path, monkeypatch, failure):
    import weasyprint

    root = tmp_book({"a.md": "# Only chapter\n\nText.\n"})
    out = tmp_path / "out" / "book.pdf"
    assert build("pdf", root, out).exit_code == 0
    good = out.read_bytes()
    assert good.startswith(b"%PDF")

    def broken_write(self, target=None, *args, **kwargs):
        Path(target).write_bytes(b"%PDF-1.7\n% truncated")
        raise failure

    def broken_merge(self, *args, **kwargs):  # the route `tools build pdf` takes: parts merged into one file
        self.handle.write(b"% truncated")
        raise failure

    monkeypatch.setattr(weasyprint.Document, "write_pdf", broken_write)
    monkeypatch.setattr(pdf_stream.PdfStream, "finish", broken_merge)
    result = build("pdf", root, out)
    assert result.exit_code != 0  # click turns an interrupt into "Aborted!" and exit status 1
    assert out.read_bytes() == good
    assert sorted(p.name for p in out.parent.iterdir()) == ["book.pdf"]  # no temporary file left behind


def test_build_all_makes_three_outputs_and_prints_their_paths(tmp_book, tmp_path):
    require_tool("pdftotext")
    root = tmp_book(FIXTURE_FILES)
    out = tmp_path / "all"
    result = CliRunner().invoke(main, ["build", "all", "--book", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    paths = re.findall(r"^Built (\w+): .* -> (.+)$", result.stdout, re.M)
    assert [name for name, _ in paths] == ["html", "pdf", "epub"]
    assert [Path(p) for _, p in paths] == [out / "html" / "index.html", out / "book.pdf", out / "book.epub"]
    for _, path in paths:
        assert Path(path).is_file() and Path(path).stat().st_size > 0
    assert PdfReport(out / "book.pdf").pages >= 5
