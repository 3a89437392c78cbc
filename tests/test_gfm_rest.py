"""The rest of GitHub's markdown (issue 16, item 6): footnotes, task lists, table alignment, nested quotes and lists,
`<picture>` and raw `<img>` theme variants, read as a reader sees them in the site, the PDF and the EPUB of one small
book built through the CLI."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from hypothesis import given, settings, strategies as st
from test_epub import EPUB_GROUP, epubcheck

from conftest import build_all_cleanly, require_tool, run_tools, write_book
from pdf_check import PdfReport

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")
DARK_PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000000b49444154789c6360400600000e0001a99173b10000000049454e44ae426082")  # 2x2: the PDF tells it apart
DEEP_QUOTES = 60  # GitHub shows quotes far deeper than this
DEEP_LISTS = 45  # and lists to 50 levels (tools/markdown/parser.py MAX_NESTING)

FIRST = """# First

Words first[^note], then a number[^1], and the word note again[^note].

[^1]: The numbered note.
[^note]: The worded note, with *emphasis*.

- [x] finished task
- [ ] open task
- plain item

| Left | Center | Right |
|:-----|:------:|------:|
| lll | ccc | rrr |

> outer
> > middle
> > > inner

<picture><source media="(prefers-color-scheme: dark)" srcset="dark.png"><img src="light.png" alt="picture logo"></picture>

<img id="logo-dark" src="dark.png#gh-dark-mode-only" alt="raw dark">
<img src="light.png#gh-light-mode-only" alt="raw light" id="logo-light">

- list item
  > quote in a list
  > - list in that quote
  >
  >   ```
  >   code in the list in the quote
  >   ```
  >   > quote at the bottom
"""

SECOND = """# Second

The second chapter has its own first note[^1].

[^1]: Second chapter's note.
"""


def _deep() -> str:
    quotes = "\n".join("> " * level + f"quote{level}" for level in range(1, DEEP_QUOTES + 1))
    lists = "".join("  " * level + f"- item{level + 1}\n" for level in range(DEEP_LISTS))
    return f"# Deep\n\n{quotes}\n\nBetween.\n\n{lists}"


run = run_tools


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("gfm")
    return build_all_cleanly(tmp, {"first.md": FIRST, "second.md": SECOND, "deep.md": _deep(), "light.png": PNG, "dark.png": DARK_PNG})


def _page(built: Path, name: str) -> Tag:
    main = BeautifulSoup((built / "html" / f"{name}.html").read_text(encoding="utf-8"), "html.parser").find("main")
    assert isinstance(main, Tag)
    return main


def _epub_body(built: Path, name: str) -> BeautifulSoup:
    with zipfile.ZipFile(built / "book.epub") as archive:
        member = next(n for n in archive.namelist() if n.endswith(f"{name}.xhtml"))
        return BeautifulSoup(archive.read(member).decode("utf-8"), "html.parser")


def _ancestors(tag: Tag, names: tuple[str, ...] = ("blockquote", "ul", "ol")) -> list[str]:
    """The containers around `tag`, outermost first."""
    return [parent.name for parent in reversed(list(tag.parents)) if parent.name in names]


def _holding(soup: Tag, text: str) -> Tag:
    found = soup.find(string=lambda s: s is not None and s.strip() == text)
    assert found is not None, text
    return found.parent


# --- footnotes ------------------------------------------------------------------------------------------------------

def _check_footnotes(body: Tag, label: str = "h2") -> None:
    refs = body.select("sup > a[data-footnote-ref]")
    assert [a.get_text() for a in refs] == ["1", "2", "1"]  # numbered by first reference, no brackets
    assert [a["aria-label"] for a in refs] == ["Footnote 1", "Footnote 2", "Footnote 1"]
    notes = body.select("section.footnotes > ol > li")
    assert [" ".join(li.get_text().split()) for li in notes] == ["The worded note, with emphasis. ↩ ↩2", "The numbered note. ↩"]
    heading = body.select_one(f"section.footnotes > {label}")
    assert heading is not None and heading.get_text() == "Footnotes" and "sr-only" in heading["class"]
    ids = [tag["id"] for tag in body.find_all(id=True)]
    assert len(ids) == len(set(ids)), ids
    for ref in refs:  # each reference leads to its note, and the note's back links lead back to the references
        note = body.find(id=ref["href"][1:])
        assert note in notes
        assert f"#{ref['id']}" in [a["href"] for a in note.select("a[data-footnote-backref]")]
    backs = notes[0].select("a[data-footnote-backref]")
    assert [a.get_text() for a in backs] == ["↩", "↩2"]


def test_site_footnotes_are_github_style(built):
    main = _page(built, "first")
    _check_footnotes(main)
    assert "[1]" not in main.get_text() and "[^1]" not in main.get_text()
    css = (built / "html" / "assets" / "style.css").read_text(encoding="utf-8")
    assert ".sr-only" in css


@EPUB_GROUP
def test_epub_footnotes_are_github_style(built):
    _check_footnotes(_epub_body(built, "first"), label="p")  # the EPUB's navigation lists every h2
    second = _epub_body(built, "second")
    assert [a.get_text() for a in second.select("a[data-footnote-ref]")] == ["1"]


def test_pdf_footnote_links_jump_to_their_note_in_their_own_chapter(built):
    require_tool("pdftotext")
    report = PdfReport(built / "book.pdf")
    text = report.text(layout=False)
    assert "The numbered note. ↩" in text and "↩2" in text and "[1]" not in text
    assert "Footnotes" not in text  # GitHub's footnote heading is for screen readers only
    links = [link for link in report.links if link.dest.endswith("fn-1")]
    assert len(links) == 3 and len({link.dest for link in links}) == 2, links  # both chapters have a note 1: no clash
    for link in links:
        note = "The worded note" if link.page in report.pages_printing("Words first") else "Second chapter's note"
        assert link.dest_page in report.pages_printing(note), (link.dest, link.dest_page)
        box = report.phrase_box(link.dest_page, note)
        assert box is not None and link.dest_top is not None
        assert abs(link.dest_top - (report.page_size[1] - box.y_min)) < 30


# --- task lists ------------------------------------------------------------------------------------------------------

def _check_tasks(body: Tag) -> None:
    items = body.select("li.task-list-item")
    assert [" ".join(li.get_text().split()) for li in items] == ["finished task", "open task"]
    boxes = [li.find("input") for li in items]
    assert all(box is not None and box["type"] == "checkbox" and box.has_attr("disabled") for box in boxes)
    assert [box.has_attr("checked") for box in boxes] == [True, False]


def test_site_task_lists_show_disabled_checkboxes(built):
    _check_tasks(_page(built, "first"))


@EPUB_GROUP
def test_epub_task_lists_show_disabled_checkboxes(built):
    _check_tasks(_epub_body(built, "first"))


def test_pdf_task_lists_show_ticked_and_empty_boxes(built):
    require_tool("pdftotext")
    text = PdfReport(built / "book.pdf").text(layout=False)
    assert "☑ finished task" in text and "☐ open task" in text and "☐ plain item" not in text


def test_an_authors_raw_input_stays_out_as_on_github(tmp_path):
    root = write_book(tmp_path / "book", {"a.md": '# A\n\n<input type="checkbox" checked> raw\n\n<input class="task-list-item-checkbox" type="checkbox"> forged\n'})
    result = run(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0 and "a.md:3: warning: GitHub leaves out the raw HTML tag <input>" in result.stderr, result.stderr
    main = BeautifulSoup((tmp_path / "out" / "a.html").read_text(encoding="utf-8"), "html.parser").find("main")
    assert main.find("input") is None and "raw" in main.get_text() and "forged" in main.get_text()


# --- table alignment -------------------------------------------------------------------------------------------------

def _check_alignment(body: Tag) -> None:
    rows = [[cell.get("style", "").replace(" ", "") for cell in row.find_all(["th", "td"])] for row in body.find_all("tr")]
    assert rows == [["text-align:left", "text-align:center", "text-align:right"]] * 2


def test_site_and_epub_tables_keep_github_alignment(built):
    _check_alignment(_page(built, "first"))
    _check_alignment(_epub_body(built, "first"))


def test_pdf_tables_are_aligned(built):
    require_tool("pdftotext")
    report = PdfReport(built / "book.pdf")
    page = report.pages_printing("finished task")[0]
    box = {word.text: word for word in report.words_on(page) if word.text in ("Left", "lll", "Center", "ccc", "Right", "rrr")}
    assert abs(box["Left"].x_min - box["lll"].x_min) < 1
    assert abs((box["Center"].x_min + box["Center"].x_max) / 2 - (box["ccc"].x_min + box["ccc"].x_max) / 2) < 1
    assert abs(box["Right"].x_max - box["rrr"].x_max) < 1
    assert box["rrr"].x_min - box["ccc"].x_max > 20  # the cells are not simply run together


# --- nesting ---------------------------------------------------------------------------------------------------------

def _check_nesting(body: Tag) -> None:
    assert _ancestors(_holding(body, "inner")) == ["blockquote"] * 3
    assert _ancestors(_holding(body, "code in the list in the quote"), ("blockquote", "ul", "pre")) == ["ul", "blockquote", "ul", "pre"]
    assert _ancestors(_holding(body, "quote at the bottom")) == ["ul", "blockquote", "ul", "blockquote"]


def _check_deep(body: Tag) -> None:
    assert _ancestors(_holding(body, f"quote{DEEP_QUOTES}")) == ["blockquote"] * DEEP_QUOTES
    assert _ancestors(_holding(body, f"item{DEEP_LISTS}")) == ["ul"] * DEEP_LISTS


def test_site_nests_quotes_and_lists_as_github(built):
    _check_nesting(_page(built, "first"))
    _check_deep(_page(built, "deep"))


@EPUB_GROUP
def test_epub_nests_quotes_and_lists_and_stays_valid(built):
    _check_nesting(_epub_body(built, "first"))
    _check_deep(_epub_body(built, "deep"))
    report = epubcheck(built / "book.epub")
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report


def test_pdf_prints_the_deepest_quote_and_item(built):
    require_tool("pdftotext")
    text = PdfReport(built / "book.pdf").text(layout=False).split()
    assert f"quote{DEEP_QUOTES}" in text and f"item{DEEP_LISTS}" in text and "inner" in text and ">" not in text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["> ", "- ", "1. "]), min_size=1, max_size=30))
def test_any_nesting_of_quotes_and_lists_renders_that_nesting(markers):
    """One line of container markers (`> - 1. > text`) gives those containers, one inside the other, in the site."""
    from tools.markdown.parser import create_markdown
    from tools.render.html import LinkPolicy, render_chapter_html

    md = create_markdown(())
    source = "".join(markers) + "deepest\n"
    html = render_chapter_html(md, md.parse(source, {}), [], LinkPolicy(url_for=lambda link: link.href, id_for=lambda anchor: anchor), {})
    body = BeautifulSoup(html, "html.parser")
    expected = [{"> ": "blockquote", "- ": "ul", "1. ": "ol"}[marker] for marker in markers]
    assert _ancestors(_holding(body, "deepest")) == expected, source


# --- <picture> and raw <img> theme variants --------------------------------------------------------------------------

def test_site_picture_and_raw_images_follow_the_theme(built):
    main = _page(built, "first")
    picture = main.find("picture")
    source = picture.find("source")
    assert source["media"] == "(prefers-color-scheme: dark)" and source["srcset"] == "dark.png"
    assert picture.find("img")["src"] == "light.png"
    raw = {img["alt"]: img["src"] for img in main.find_all("img")}
    assert raw["raw dark"] == "dark.png#gh-dark-mode-only" and raw["raw light"] == "light.png#gh-light-mode-only"
    assert (built / "html" / "dark.png").is_file() and (built / "html" / "light.png").is_file()
    css = (built / "html" / "assets" / "style.css").read_text(encoding="utf-8")
    assert ':root:not([data-theme="dark"]) img[src$="#gh-dark-mode-only"]' in css and '[data-theme="dark"] img[src$="#gh-light-mode-only"]' in css
    script = (built / "html" / "assets" / "theme.js").read_text(encoding="utf-8")
    assert "picturesFollowTheme" in script  # the theme toggle switches a picture's sources too


@EPUB_GROUP
def test_epub_shows_only_the_light_images_and_leaves_the_dark_file_out(built):
    body = _epub_body(built, "first")
    assert body.find("source") is None
    assert sorted(img["alt"] for img in body.find_all("img")) == ["picture logo", "raw light"]
    assert all(img["src"].endswith("light.png") for img in body.find_all("img"))
    with zipfile.ZipFile(built / "book.epub") as archive:
        names = archive.namelist()
    assert not any(n.endswith("dark.png") for n in names) and any(n.endswith("light.png") for n in names)


def test_pdf_shows_only_the_light_images(built):
    from pypdf import PdfReader

    sizes = [(image.image.width, image.image.height) for page in PdfReader(built / "book.pdf").pages for image in page.images if image.image is not None]
    assert (1, 1) in sizes and (2, 2) not in sizes, sizes


def test_an_external_raw_theme_image_keeps_one_fragment(tmp_path):
    """GitHub's raw `<img src="https://…/x.png#gh-dark-mode-only">`: the site keeps the fragment once, not twice."""
    root = write_book(tmp_path / "book", {"README.md": '# Logo\n\n<img src="https://example.com/logo.png#gh-dark-mode-only" alt="logo">\n'})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    srcs = [img["src"] for img in BeautifulSoup((tmp_path / "out" / "README.html").read_text(), "lxml").find_all("img")]
    assert srcs == ["https://example.com/logo.png#gh-dark-mode-only"], srcs
