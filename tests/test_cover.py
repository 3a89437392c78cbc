"""`[book] cover`: the image is the PDF's first page, edge to edge, before the typographic title page, and the
EPUB's cover image; without it the typographic cover opens the PDF."""
from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest
from test_epub import NS, EpubReport, epubcheck

from conftest import require_tool, run_tools, write_book

CHAPTERS = {"README.md": "# Welcome\n\nText.\n", "next.md": "# Next\n\nMore.\n", "chapters-md.txt": "README.md\nnext.md\n"}


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 60, 120)).save(buffer, format="PNG")
    return buffer.getvalue()


def _build(tmp: Path, files: dict) -> Path:
    root = write_book(tmp / "book", dict(CHAPTERS, **files))
    result = run_tools(tmp, "build", "all", "--book", str(root), "--out", str(tmp / "out"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp / "out"


@pytest.fixture(scope="module")
def with_cover(tmp_path_factory) -> Path:
    toml = '[book]\ntitle = "Covered"\ncover = "art/cover.png"\n'
    return _build(tmp_path_factory.mktemp("cover"), {"book.toml": toml, "art/cover.png": _png(420, 594)})


def _image_area(page) -> float:
    """The share of the page that the images drawn on it cover (their placement from the content stream)."""
    content = page.get_contents().get_data().decode("latin-1")
    width, height = float(page.mediabox.width), float(page.mediabox.height)
    names = list(page["/Resources"].get("/XObject", {}).keys())
    assert names, "no image on the page"
    # WeasyPrint scales CSS pixels by 0.75 first, then places each image with `w 0 0 -h x y cm /name Do`.
    scale = 0.75 if "0.75 0 0 0.75 0 0 cm" in content else 1.0
    sizes = [(abs(float(w)) * scale, abs(float(h)) * scale) for w, h, name in re.findall(r"([\d.]+) 0 0 (-?[\d.]+) [\d.-]+ [\d.-]+ cm\s*(/\S+) Do", content) if name in names]
    return max(w * h for w, h in sizes) / (width * height)


def test_the_cover_image_is_page_one_and_the_title_page_follows(with_cover):
    pdftotext = require_tool("pdftotext")
    from pypdf import PdfReader

    reader = PdfReader(with_cover / "book.pdf")
    first = reader.pages[0]
    assert first["/Resources"]["/XObject"][list(first["/Resources"]["/XObject"].keys())[0]]["/Subtype"] == "/Image"
    assert _image_area(first) > 0.95  # edge to edge
    text = subprocess.run([pdftotext, "-f", "1", "-l", "2", "-layout", str(with_cover / "book.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    cover_text, title_text = text.split("\f")[:2]
    assert cover_text.strip() == ""
    assert title_text.split()[0] == "Covered"


def test_the_epub_names_the_image_as_its_cover(with_cover):
    report = EpubReport(with_cover / "book.epub")
    covers = [item for item in report.items.values() if "cover-image" in item.properties.split()]
    assert [(item.path.rsplit("/", 1)[-1], item.media_type) for item in covers] == [("cover.png", "image/png")]
    meta = {m.get("name"): m.get("content") for m in report.opf.find("opf:metadata", NS).findall("opf:meta", NS)}
    assert report.items[meta["cover"]] is covers[0]
    assert report.read(covers[0].path) == (with_cover.parent / "book" / "art" / "cover.png").read_bytes()
    assert report.spine[0].endswith("cover.xhtml")


def test_the_epub_with_a_cover_passes_epubcheck(with_cover):
    report = epubcheck(with_cover / "book.epub")
    assert "0 fatals / 0 errors / 0 warnings" in report, report


def test_a_wide_cover_keeps_its_ratio_on_its_own_page(tmp_path):
    from pypdf import PdfReader

    out = _build(tmp_path, {"book.toml": '[book]\ncover = "wide.png"\n', "wide.png": _png(800, 400)})
    reader = PdfReader(out / "book.pdf")
    share = _image_area(reader.pages[0])
    assert 0.3 < share < 0.4  # 2:1 on A4 (1:1.41): the whole picture, the width filled
    assert b" Do" not in reader.pages[1].get_contents().get_data()  # the title page draws no image


def test_without_a_cover_the_typographic_cover_opens_the_pdf(tmp_path):
    pdftotext = require_tool("pdftotext")
    out = _build(tmp_path, {"book.toml": '[book]\ntitle = "Plain"\n'})
    text = subprocess.run([pdftotext, "-f", "1", "-l", "1", str(out / "book.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    assert text.split()[0] == "Plain"


@pytest.mark.parametrize(("value", "words"), [
    ("notes.txt", "is not an image the PDF and EPUB can show"),
    ("../outside.png", "outside the book's root folder"),
    ("missing.png", "does not exist"),
])
def test_a_cover_that_cannot_be_shown_is_refused_at_its_line(tmp_path, value, words):
    root = write_book(tmp_path / "book", dict(CHAPTERS, **{"book.toml": f'[book]\ntitle = "T"\ncover = "{value}"\n', "notes.txt": "x"}))
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "b.pdf"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "book.toml:3: " in result.stderr and words in result.stderr, result.stderr
