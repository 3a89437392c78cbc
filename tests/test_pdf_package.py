"""The PDF route's seams (tools/render/pdf/): chapter bodies rendered before the route, a print template without the
pieces the route renders one at a time, and the one subset of each font the merged PDF embeds.

Read as a reader would: pdftotext for the words (tests/pdf_check.py, which also runs `qpdf --check` on each PDF),
fontTools for the glyphs an embedded font draws."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from jinja2 import DictLoader, Environment, StrictUndefined

import tools.render.pdf as pdf_route
from conftest import require
from pdf_check import PdfReport
from tools.book.load import load_book
from tools.checks.links.local import check_book
from tools.markdown.parser import create_markdown
from tools.render.pdf import build_pdf, document as single, parts
from tools.render.pdf.fonts import subset_font
from tools.render.pdf.whole import build_whole_pdf

pytestmark = pytest.mark.xdist_group("pdf")

FILES = {
    "chapters-md.txt": "a.md\nb.md\nc.md\n",
    "a.md": "# Alpha\n\nSee [the beta details](b.md#details) and [gamma](c.md).\n",
    "b.md": "# Beta\n\n## Details\n\nThe beta text, with Ünïcödé.\n",
    "c.md": "# Gamma\n\nBack to [alpha](a.md).\n\n```python\nprint('gamma')\n```\n",
}


def bodies(root: Path) -> dict[str, str]:
    """Every chapter's body as `single.render_chapter` makes it, as a pipeline that renders while parsing has it."""
    book = load_book(root)
    policy = single.SingleDocumentPolicy(book, check_book(book))
    md = create_markdown()
    return {chapter.path: single.render_chapter(md, book, chapter, policy) for chapter in book.chapters}


def words(report: PdfReport) -> list[tuple]:
    return [(w.page, round(w.x_min, 1), round(w.y_min, 1), w.text) for w in report.words]


@pytest.mark.parametrize("jobs", [1, 2])
def test_bodies_rendered_before_are_laid_out_as_given(tmp_book, tmp_path, jobs):
    root = tmp_book(FILES)
    book = load_book(root)
    build_pdf(book, tmp_path / "plain.pdf", check_book(book), jobs=jobs)
    given = bodies(root)
    book = load_book(root)
    build_pdf(book, tmp_path / "given.pdf", check_book(book), jobs=jobs, chapter_html=given)
    assert words(PdfReport(tmp_path / "given.pdf")) == words(PdfReport(tmp_path / "plain.pdf"))

    given["b.md"] = given["b.md"].replace("The beta text", "The pangolin text")  # the route renders nothing itself
    book = load_book(root)
    build_pdf(book, tmp_path / "marked.pdf", check_book(book), jobs=jobs, chapter_html=given)
    text = PdfReport(tmp_path / "marked.pdf").text(layout=False)
    assert "The pangolin text" in text and "The beta text" not in text and "print('gamma')" in text


def test_one_render_of_the_whole_takes_the_given_bodies_too(tmp_book, tmp_path):
    root = tmp_book(FILES)
    given = bodies(root)
    given["c.md"] = given["c.md"].replace("Back to", "Onward to")
    book = load_book(root)
    build_whole_pdf(book, tmp_path / "whole.pdf", check_book(book), chapter_html=given)
    text = PdfReport(tmp_path / "whole.pdf").text(layout=False)
    assert "Onward to alpha" in text and "Back to" not in text


def test_a_print_template_without_its_pieces_is_rendered_as_one_document(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    whole_document = (  # what an older or a theme's print.html may be: one document, no macros
        '<!DOCTYPE html><html lang="{{ language }}"><head><meta charset="utf-8"><title>{{ title }}</title>'
        "<style>{{ stylesheet }}</style></head><body>{% for chapter in chapters %}"
        '<section class="chapter" id="{{ chapter.id }}" data-title="{{ chapter.title }}">{{ chapter.html }}</section>'
        "{% endfor %}</body></html>")
    plain = Environment(loader=DictLoader({"print.html": whole_document}), autoescape=True, undefined=StrictUndefined)
    monkeypatch.setattr(parts, "environment", lambda: plain)
    calls = []
    monkeypatch.setattr(pdf_route, "build_whole_pdf", lambda *a, **k: calls.append(a) or build_whole_pdf(*a, **k))
    book = load_book(root)
    build_pdf(book, tmp_path / "book.pdf", check_book(book), jobs=2)
    assert len(calls) == 1 and "The beta text" in PdfReport(tmp_path / "book.pdf").text(layout=False)


def test_a_shared_font_subset_keeps_every_used_glyph_at_its_id():
    from fontTools.ttLib import TTFont

    path = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
    require(path.is_file(), f"the font {path} is not installed (fonts-dejavu-core)")
    data = path.read_bytes()
    original = TTFont(io.BytesIO(data))
    order = original.getGlyphOrder()
    cmap = original.getBestCmap()
    used = {original.getGlyphID(cmap[ord(c)]) for c in "Aa Üß→"}  # Ü is drawn from U and a diaeresis placed after
    udieresis = original.getGlyphID(cmap[ord("Ü")])
    components = [c.glyphName for c in original["glyf"][order[udieresis]].components]
    assert max(original.getGlyphID(name) for name in components) > max(used)  # the case that needs a renumbered part

    program, kind = subset_font(data, 0, used)
    assert kind == "TrueType"
    subset = TTFont(io.BytesIO(program))
    kept = subset.getGlyphOrder()
    assert subset["maxp"].numGlyphs == max(used) + 1 + sum(original.getGlyphID(n) > max(used) for n in components)
    glyf, source = subset["glyf"], original["glyf"]
    for gid in used:  # the same glyph at the same id: its advance and its outline, components placed and resolved
        assert subset["hmtx"][kept[gid]] == original["hmtx"][order[gid]]
        assert list(glyf[kept[gid]].getCoordinates(glyf)[0]) == list(source[order[gid]].getCoordinates(source)[0])
    drawn = used | {original.getGlyphID(c.glyphName) for gid in used if source[order[gid]].isComposite() for c in source[order[gid]].components}
    assert all(glyf[kept[gid]].numberOfContours == 0 for gid in range(1, max(used)) if gid not in drawn)  # emptied
    for tag in ("GSUB", "GPOS", "kern"):
        assert tag not in subset
