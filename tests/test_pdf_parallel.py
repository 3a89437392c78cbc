"""The PDF laid out a chapter at a time in worker processes and merged (tools/render/pdf/).

Read as a reader would (tests/pdf_check.py: pypdf for structure, pdftotext for what is printed where). The reference
is one WeasyPrint render of the whole print document (`build_whole_pdf`): the merged PDF must print every word at the same
place on the same page and carry every link to the same destination, besides the properties the PDF issue asks for
(outline, contents page numbers, running header, continuous page numbers, metadata). The cache is checked for
staleness: an edit is always visible, an unchanged chapter is not laid out again, and an edit that changes a
chapter's page count moves the page numbers of the chapters after it.
"""
from __future__ import annotations

import multiprocessing
import re
from pathlib import Path

import pytest

import tools.render.pdf as pdf_route
from conftest import require_tool, write_book
from pdf_check import DIAGRAM_SVG, LONG_CODE_LINE, PdfReport, assert_lands_on_heading, chapter_start_pages, expected_outline, link_at, outline_titles, tree
from tools.book.load import load_book
from tools.checks.links.local import check_book
from tools.core.cache import Cache
from tools.render.pdf import build_pdf, document as single, job, stream
from tools.render.pdf.whole import build_whole_pdf

pytestmark = pytest.mark.xdist_group("pdf")

FILLER = ("Gradients flow through every layer of the network while the optimizer keeps its moments in memory and "
          "the scheduler decides which rank sends its shard next over the switch. ")


def paragraphs(count: int, seed: int) -> str:
    return "\n\n".join(f"Paragraph {seed}.{n}: " + FILLER * (2 + (seed + n) % 3) for n in range(count))


def numbered_chapter(n: int, length: int) -> str:
    previous = f"ch{n - 1:02d}.md" if n > 1 else "../guide/setup.md"
    section = f"first-section-of-{n - 1:02d}" if n > 1 else "install-the-tools"
    return (
        f"# Chapter {n:02d} on sharding\n\n"
        f"Back to [the previous chapter]({previous}) and on to [its first section]({previous}#{section})"
        f" or [the notes](../ref/notes.md#notes-on-c).\n\n"
        f"## First section of {n:02d}\n\n{paragraphs(length, n)}\n\n"
        f"### A detail of {n:02d}\n\n{paragraphs(1, n + 50)}\n\n"
        f"## Second section of {n:02d}\n\n{paragraphs(length, n + 100)}\n"
    )


CHAPTER_LIST = ["README.md", "guide/README.md", "guide/setup.md", "ref/notes.md"] + [f"more/ch{n:02d}.md" for n in range(1, 9)]
FILES: dict[str, str] = {
    "book.toml": (
        '[book]\ntitle = "Parallel Fixture"\nauthors = ["Grace Hopper", "Edsger Dijkstra"]\n'
        'description = "A book laid out a chapter at a time."\nsubject = "Testing the parallel PDF"\nlanguage = "en"\n'
        'repository = "https://github.com/example/fixture"\nbranch = "main"\nrepository_path = ""\n'
    ),
    "chapters-md.txt": "\n".join(CHAPTER_LIST) + "\n",
    "README.md": (
        "# Welcome to the Parallel Fixture\n\nStart with [the setup section](guide/setup.md#install-the-tools), "
        "the [guide folder](guide/), the [notes](ref/notes.md) and [chapter five](more/ch05.md).\n\n"
        "Read the [upstream documentation](https://example.org/docs/page) too.\n"
    ),
    "guide/README.md": (
        "# The Guide\n\n## Example\n\nThe first example.\n\n## Example\n\n"
        "The second example; compare with [the first one](#example) and [this one](#example-1).\n\n"
        "### Details of the example\n\nMore details.\n"
    ),
    "guide/setup.md": (
        "# Setup\n\n## Install the tools\n\nRun [the install script](../scripts/install.sh) and look at the figure:\n\n"
        "![a small diagram](img/diagram.svg)\n\nA claim with a footnote[^source].\n\n"
        f"```python\n{LONG_CODE_LINE}\n```\n\n## Über Straße und Größe\n\n{paragraphs(3, 7)}\n\n"
        "On to the [notes on C++](../ref/notes.md#notes-on-c) and the [hand-made anchor](../ref/notes.md#manual-anchor).\n\n"
        "[^source]: The source of the claim.\n"
    ),
    "ref/notes.md": (
        "# Notes\n\n## Notes on C++\n\nText about C++.\n\n## Ünïcödé heading ✓\n\n"
        "See the [umlaut section](../guide/setup.md#über-straße-und-größe) and [chapter eight](../more/ch08.md#second-section-of-08).\n\n"
        '<a name="manual-anchor"></a>\nA paragraph with a hand-made anchor.\n'
    ),
    "scripts/install.sh": "#!/bin/sh\necho install\n",
    "guide/img/diagram.svg": DIAGRAM_SVG,
    **{f"more/ch{n:02d}.md": numbered_chapter(n, 2 + 4 * (n % 3 == 0)) for n in range(1, 9)},
}
TITLES = ["Welcome to the Parallel Fixture", "The Guide", "Setup", "Notes"] + [f"Chapter {n:02d} on sharding" for n in range(1, 9)]


def build(root: Path, out: Path, cache: Cache | None = None, jobs: int = 2, single_render: bool = False):
    """Build the PDF as `tools build pdf` would; returns (report, diagnostics)."""
    require_tool("pdftotext")
    book = load_book(root, cache=cache)
    diagnostics = check_book(book)
    if single_render:
        pages = build_whole_pdf(book, out, diagnostics)
    else:
        pages = build_pdf(book, out, diagnostics, cache=cache, jobs=jobs)
    report = PdfReport(out)
    assert report.pages == pages
    return report, diagnostics


def printed(report: PdfReport) -> list[tuple]:
    return [(w.page, round(w.x_min, 1), round(w.y_min, 1), w.text) for w in report.words]


def landings(report: PdfReport) -> list[tuple]:
    return [(link.page, tuple(round(v, 1) for v in link.rect), link.uri, link.dest_page, round(link.dest_top or 0, 1)) for link in report.links]


def layouts_in(cache_dir: Path) -> int:
    """How many chapter layouts the cache holds (one is added for each chapter laid out)."""
    folder = cache_dir / "pdf-layout"
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return write_book(tmp_path_factory.mktemp("parallel") / "book", FILES)


@pytest.fixture(scope="module")
def reference(root, tmp_path_factory) -> PdfReport:
    return build(root, tmp_path_factory.mktemp("single") / "book.pdf", single_render=True)[0]


@pytest.fixture(scope="module")
def merged(root, tmp_path_factory) -> tuple[PdfReport, object]:
    folder = tmp_path_factory.mktemp("merged")
    return build(root, folder / "book.pdf", cache=Cache(folder / "cache"))


# --- the merged PDF is the one render's PDF ---------------------------------------------------------------------


def test_same_pages_words_and_links_as_one_render(merged, reference):
    report, _ = merged
    assert report.pages == reference.pages >= 15
    assert printed(report) == printed(reference)  # every word, at the same place on the same page
    assert landings(report) == landings(reference)  # every link: same box, same target, same landing point
    assert tree(report.outline) == tree(reference.outline)


def test_one_process_gives_the_same_pdf(root, merged, tmp_path):
    serial, _ = build(root, tmp_path / "serial.pdf", jobs=1)
    assert printed(serial) == printed(merged[0]) and landings(serial) == landings(merged[0])


def test_outline_contents_and_continuous_page_numbers(root, merged):
    report, _ = merged
    assert tree(report.outline) == expected_outline(root)
    assert outline_titles(report.outline) == TITLES
    first = chapter_start_pages(report)
    assert first[0] == 2 and first == sorted(first)
    assert report.toc() == [(title, page + 1) for title, page in zip(TITLES, first)]
    assert report.footer(0) == "" and report.header(0) == ""  # the cover
    for page in range(1, report.pages):  # contents and chapters: 2, 3, ... without a gap or a repeat
        assert report.footer(page) == str(page + 1), f"page {page + 1}"
    for title, start, end in zip(TITLES, first, first[1:] + [report.pages]):
        assert report.body_text(start).startswith(title)
        for page in range(start, end):  # the chapter's title runs on each of its pages
            assert report.header(page) == title, f"page {page + 1}"
    assert any(end - start >= 3 for start, end in zip(first, first[1:] + [report.pages]))  # some run over pages


def test_links_land_across_chapters(merged):
    report, _ = merged
    internal = [link for link in report.links if link.internal]
    assert len(internal) >= 30 and [link for link in internal if link.dest_page is None] == []
    first = chapter_start_pages(report)
    assert_lands_on_heading(report, link_at(report, first[0], "setup section"), "Install the tools")  # with a fragment
    assert link_at(report, first[0], "guide folder").dest_page == first[1]  # a folder: its README
    assert link_at(report, first[0], "chapter five").dest_page == first[TITLES.index("Chapter 05 on sharding")]  # no fragment
    assert_lands_on_heading(report, link_at(report, first[3], "umlaut section"), "Über Straße und Größe")  # non-ASCII anchor
    assert_lands_on_heading(report, link_at(report, first[3], "chapter eight"), "Second section of 08")  # a later chapter
    one, other = link_at(report, first[1], "first one"), link_at(report, first[1], "this one")
    assert one.dest_page == other.dest_page == first[1] and one.dest_top > other.dest_top  # duplicate headings
    setup_pages = range(first[2], first[3])
    anchor = next(link_at(report, p, "hand-made anchor") for p in setup_pages if report.phrase_box(p, "hand-made anchor"))
    assert anchor.dest_page == first[3]
    note = next(p for p in setup_pages if "The source of the claim." in report.body_text(p))
    assert any(link.page in setup_pages and link.dest_page == note for link in internal)  # the footnote mark
    for n in range(2, 9):  # every chapter links back to the previous one, with and without a fragment
        here = first[TITLES.index(f"Chapter {n:02d} on sharding")]
        previous = first[TITLES.index(f"Chapter {n - 1:02d} on sharding")]
        assert link_at(report, here, "previous chapter").dest_page == previous
        assert_lands_on_heading(report, link_at(report, here, "its first section"), f"First section of {n - 1:02d}")
    uris = {link.uri for link in report.links if link.uri}
    assert "https://example.org/docs/page" in uris and "https://github.com/example/fixture/blob/main/scripts/install.sh" in uris
    assert [u for u in uris if not u.startswith(("https://", "http://", "mailto:"))] == []


def test_nothing_runs_past_the_right_margin(merged):
    report, _ = merged
    assert report.overflowing_words() == []
    setup = chapter_start_pages(report)[2]
    words = [w for p in (setup, setup + 1) for w in report.words_on(p)]
    assert {f"option_{i:03d}" for i in range(70)} <= {w.text.strip(",[]") for w in words}  # wrapped, nothing lost
    assert len({round(w.y_min) for w in words if "option_" in w.text}) >= 3
    assert "diagramlabel" in report.text(layout=False)  # the SVG figure is drawn


def test_metadata_and_language(merged):
    report, _ = merged
    meta = report.metadata
    assert meta["/Title"] == "Parallel Fixture"
    assert meta["/Author"] == "Grace Hopper, Edsger Dijkstra"
    assert meta["/Subject"] == "Testing the parallel PDF"
    assert re.match(r"D:\d{14}", meta["/CreationDate"]), meta["/CreationDate"]
    assert report.language == "en"


def test_each_font_is_embedded_once(merged, reference):
    report, _ = merged

    def programs(pdf: PdfReport) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for page in pdf.reader.pages:
            for font in page["/Resources"]["/Font"].values():
                descriptor = font.get_object()["/DescendantFonts"][0].get_object()["/FontDescriptor"]
                name = str(descriptor["/FontName"]).split("+", 1)[1]
                found.setdefault(name, set()).add(descriptor.raw_get("/FontFile2").idnum)
        return found

    shared = programs(report)
    assert shared and all(len(ids) == 1 for ids in shared.values()), shared  # one program per font, for all chapters
    assert set(shared) == set(programs(reference))
    assert report.path.stat().st_size <= 1.3 * reference.path.stat().st_size



def test_each_contents_leader_is_one_run_of_dots_drawn_where_weasyprint_draws_its_dots(root, merged, reference, tmp_path, monkeypatch):
    """WeasyPrint lays a `leader('.')` out as one text box per dot (70,000 in the contents of a 470-chapter book);
    both routes join them into one run, which must print the same dots at the same places."""
    import subprocess

    from PIL import Image, ImageChops

    report, _ = merged
    contents = next(page for page in range(report.pages) if report.body_text(page).startswith("Contents"))
    for pdf in (report, reference):
        runs = [w.text for w in pdf.words_on(contents) if "..." in w.text]
        assert len(runs) == len(TITLES) and not [w for w in pdf.words_on(contents) if w.text == "."]
    monkeypatch.setattr("tools.render.pdf.whole.join_leaders", lambda document: 0)
    unjoined, _ = build(root, tmp_path / "unjoined.pdf", single_render=True)
    assert [w.text for w in unjoined.words_on(contents)].count(".") > 20 * len(TITLES)  # WeasyPrint's own: a box per dot
    pdftoppm = require_tool("pdftoppm")
    images = []
    for name, pdf in (("joined", reference), ("unjoined", unjoined)):
        subprocess.run([pdftoppm, "-r", "100", "-gray", "-png", "-f", str(contents + 1), "-l", str(contents + 1), str(pdf.path), str(tmp_path / name)], check=True, timeout=60)
        images.append(Image.open(next(tmp_path.glob(f"{name}*.png"))).convert("L"))
    difference = ImageChops.difference(*images)
    assert images[0].size == images[1].size
    values = list(difference.get_flattened_data() if hasattr(difference, "get_flattened_data") else difference.getdata())
    # a dot missing, added or moved by a pixel differs by over 150 where it is; the joined run's dots differ only
    # in anti-aliasing (measured: at most 60, on 0.1% of the page)
    assert max(values) <= 100
    assert sum(1 for value in values if value > 40) < 0.01 * len(values)

# --- the cache: never stale ------------------------------------------------------------------------------------


def test_an_edit_is_visible_and_only_its_chapter_is_laid_out_again(tmp_book, tmp_path):
    root = tmp_book(FILES)
    cache_dir = tmp_path / "cache"
    before, _ = build(root, tmp_path / "before.pdf", Cache(cache_dir))
    laid_out = layouts_in(cache_dir)
    assert laid_out == len(TITLES)

    again, _ = build(root, tmp_path / "again.pdf", Cache(cache_dir))  # no change: nothing is laid out, the same PDF
    assert layouts_in(cache_dir) == laid_out
    assert printed(again) == printed(before) and landings(again) == landings(before)

    chapter = root / "more" / "ch04.md"
    chapter.write_text(chapter.read_text().replace("Paragraph 4.0:", "Pangolins 4.0:"))  # same length: same pages
    edited, _ = build(root, tmp_path / "edited.pdf", Cache(cache_dir))
    assert layouts_in(cache_dir) == laid_out + 1  # that chapter only
    page = chapter_start_pages(edited)[TITLES.index("Chapter 04 on sharding")]
    assert "Pangolins 4.0:" in edited.body_text(page) and "Paragraph 4.0:" not in edited.text(layout=False)
    fresh, _ = build(root, tmp_path / "fresh.pdf", single_render=True)
    assert printed(edited) == printed(fresh) and landings(edited) == landings(fresh)


def test_a_longer_chapter_moves_the_page_numbers_after_it(tmp_book, tmp_path):
    root = tmp_book(FILES)
    cache_dir = tmp_path / "cache"
    before, _ = build(root, tmp_path / "before.pdf", Cache(cache_dir))
    notes = root / "ref" / "notes.md"
    notes.write_text(notes.read_text() + "\n## Added later\n\n" + paragraphs(14, 99) + "\n")
    after, _ = build(root, tmp_path / "after.pdf", Cache(cache_dir))
    assert after.pages > before.pages
    assert outline_titles(after.outline[3].children)[-1] == "Added later"
    fresh, _ = build(root, tmp_path / "fresh.pdf", single_render=True)
    assert printed(after) == printed(fresh) and landings(after) == landings(fresh)
    assert after.toc() == fresh.toc() != before.toc()
    assert all(after.footer(page) == str(page + 1) for page in range(1, after.pages))


def test_a_renamed_heading_reroutes_the_links_of_other_chapters(tmp_book, tmp_path):
    root = tmp_book(FILES)
    cache_dir = tmp_path / "cache"
    out = tmp_path / "book.pdf"
    build(root, out, Cache(cache_dir))  # the same output path: it is replaced
    setup = root / "guide" / "setup.md"
    setup.write_text(setup.read_text().replace("## Install the tools\n", "## Install everything\n"))
    after, diagnostics = build(root, out, Cache(cache_dir))
    assert any("install-the-tools" in d.message for d in diagnostics.items)  # README's link now misses its anchor
    fresh, _ = build(root, tmp_path / "fresh.pdf", single_render=True)
    assert printed(after) == printed(fresh) and landings(after) == landings(fresh)
    assert link_at(after, chapter_start_pages(after)[0], "setup section").dest_page == chapter_start_pages(after)[2]  # the chapter, then


def test_an_edited_figure_is_drawn_anew(tmp_book, tmp_path):
    root = tmp_book(FILES)
    cache_dir = tmp_path / "cache"
    out = tmp_path / "book.pdf"
    build(root, out, Cache(cache_dir))
    (root / "guide" / "img" / "diagram.svg").write_text(DIAGRAM_SVG.replace("diagramlabel", "redrawnlabel"))
    after, _ = build(root, out, Cache(cache_dir))
    text = after.text(layout=False)
    assert "redrawnlabel" in text and "diagramlabel" not in text


def test_a_link_to_an_anchor_no_chapter_has_is_dropped_as_one_render_drops_it(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    original = single.SingleDocumentPolicy._chapter_url

    def nowhere(self, path, fragment):
        return "#an-anchor-no-chapter-has" if path == "more/ch05.md" and not fragment else original(self, path, fragment)

    monkeypatch.setattr(single.SingleDocumentPolicy, "_chapter_url", nowhere)  # the forked workers inherit it
    merged, _ = build(root, tmp_path / "merged.pdf")
    reference, _ = build(root, tmp_path / "single.pdf", single_render=True)
    assert landings(merged) == landings(reference)
    assert [link for link in merged.links if link.internal and link.dest_page is None] == []
    assert "chapter five" in merged.body_text(chapter_start_pages(merged)[0])  # the words stay, without a link


# --- safety and failures -----------------------------------------------------------------------------------------


def test_files_outside_the_book_are_never_read(tmp_book, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.svg").write_text(DIAGRAM_SVG.replace("diagramlabel", "secretlabel"))
    files = dict(FILES)
    # a figure and a CSS background inside the book by name only (a symbolic link): the URL fetcher refuses both
    files["guide/setup.md"] = files["guide/setup.md"].replace("](img/diagram.svg)", "](img/leak.svg)") + (
        '\n<div style="background-image: url(guide/img/leak.svg); width: 240px; height: 90px">Background.</div>\n')
    root = tmp_book(files)
    (root / "guide" / "img" / "leak.svg").symlink_to(outside / "secret.svg")
    report, diagnostics = build(root, tmp_path / "book.pdf")
    assert "secretlabel" not in report.text(layout=False) and "Background." in report.text(layout=False)
    assert any(d.code == "pdf-resource" and "leak.svg is outside the book" in d.message for d in diagnostics.items)


def test_a_failed_write_keeps_the_last_good_pdf(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    out = tmp_path / "out" / "book.pdf"
    build(root, out)
    good = out.read_bytes()

    def broken(self, *args):
        self.handle.write(b"% truncated")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(stream.PdfStream, "finish", broken)
    book = load_book(root)
    with pytest.raises(RuntimeError, match="disk on fire"):
        build_pdf(book, out, check_book(book), jobs=2)
    assert out.read_bytes() == good
    assert sorted(p.name for p in out.parent.iterdir()) == ["book.pdf"]


def test_a_failing_chapter_is_named_and_no_worker_is_left(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    original = job.Job.part_html

    def failing(self, index):
        if self.book.chapters[index].path == "more/ch03.md":
            raise ValueError("cannot render this one")
        return original(self, index)

    monkeypatch.setattr(job.Job, "part_html", failing)  # the forked workers inherit it
    book = load_book(root)
    with pytest.raises(RuntimeError, match=r"more/ch03\.md(.|\n)*cannot render this one"):
        build_pdf(book, tmp_path / "book.pdf", check_book(book), jobs=2)
    assert not (tmp_path / "book.pdf").exists()
    assert multiprocessing.active_children() == []


def test_a_stylesheet_that_needs_the_whole_book_falls_back_to_one_render(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    original = single.asset_text  # the print stylesheet both routes put into the template
    monkeypatch.setattr(single, "asset_text", lambda name: original(name) + ("@page :left { margin-left: 25mm; }\n" if name == "print.css" else ""))
    calls = []
    monkeypatch.setattr(pdf_route, "build_whole_pdf", lambda *a, **k: calls.append(a) or build_whole_pdf(*a, **k))
    report, _ = build(root, tmp_path / "book.pdf")
    assert len(calls) == 1 and outline_titles(report.outline) == TITLES
