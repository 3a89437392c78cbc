"""Every reader can read the EPUB and the PDF, as independent validators see them (issue 35): DAISY Ace on our
English EPUB and the shared corpus's (the Chinese one: tests/test_zh_book.py), `pdfua` on the PDF of a book with
every kind of content (our own book's PDF: tests/test_pdf.py, its Chinese one: tests/test_zh_book.py); and what
they cannot see: accessibility metadata that is true of the book, math a PDF reader can search and copy, the PDF/UA
claim only where it holds, with the warning that says why not."""
from __future__ import annotations

import re
import struct
import subprocess
import zlib

import pytest
from test_epub import OWN_BOOK, built_epub

from conftest import CORPUS, require, require_tool, run_tools, write_book
from validators import ace_violations, pdfua_errors, pdfua_report, ua_claimed

pytestmark = pytest.mark.slow
ACCESSIBILITY_GROUP = pytest.mark.xdist_group("accessibility")  # the tests that share the readable PDF



def _png(size: int = 8) -> bytes:
    """A small grey PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * size for _ in range(size))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = _png()
CONTENT = {
    "book.toml": '[book]\ntitle = "Readable"\nauthors = ["A. Author"]\nlanguage = "en"\n',
    "chapters-md.txt": "README.md\nmath.md\n",
    "README.md": "# Readable\n\n> [!NOTE]\n> Alerts have icons.\n\n> [!CAUTION]\n> Another one.\n\n![A grey pixel](pixel.png)\n\n"
                 "| Tool | Version |\n| --- | --- |\n| Python | 3.11 |\n| Chromium | 156 |\n",
    "math.md": "# Math\n\nEnergy is $E = mc^2$ here.\n\n$$\n\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}\n$$\n\n| $x$ | $x^2$ |\n| --- | --- |\n| 2 | 4 |\n",
    "pixel.png": PNG,
}
NO_ALT = {**CONTENT, "README.md": CONTENT["README.md"] + "\nAnd ![](pixel.png) again.\n"}


def _meta(epub, prop: str) -> list[str]:
    return [m.text for m in epub.opf.iter("{http://www.idpf.org/2007/opf}meta") if m.get("property") == prop]


BOOKS = {"ours": OWN_BOOK, "ml-engineering": CORPUS.parent / "ml-engineering", "the-art-of-debugging": CORPUS}


def _epub(name: str, base):
    book = BOOKS[name]
    require(book.is_dir(), f"the shared corpus is not at {book}")
    return built_epub(book, base / f"{name}.epub", allowed_exit=(0, 1), options=("--lang", "en") if name == "ours" else ())


@pytest.mark.parametrize("name", list(BOOKS))
def test_ace_finds_no_violation_in_our_epub_and_the_corpus(name, tmp_path):
    """One book per test, so that the test processes share them out (Ace takes a while per chapter)."""
    found = ace_violations(_epub(name, tmp_path).path, tmp_path)
    assert not found, "\n".join(found)


def test_the_package_says_its_language_and_metadata_is_true_of_the_book(tmp_book, tmp_path):
    for name in ("ours", "ml-engineering"):
        epub = _epub(name, tmp_path)
        assert epub.opf.get("{http://www.w3.org/XML/1998/namespace}lang") == epub.opf.findtext("{http://www.idpf.org/2007/opf}metadata/{http://purl.org/dc/elements/1.1/}language"), name
    described = built_epub(tmp_book(CONTENT, "described"), tmp_path / "described.epub")
    assert "alternativeText" in _meta(described, "schema:accessibilityFeature")
    assert "MathML" in _meta(described, "schema:accessibilityFeature")
    assert _meta(described, "schema:accessModeSufficient") == ["textual", "textual,visual"]
    assert "Every image has alternative text." in _meta(described, "schema:accessibilitySummary")[0]
    bare = built_epub(tmp_book(NO_ALT, "bare"), tmp_path / "bare.epub")
    assert "alternativeText" not in _meta(bare, "schema:accessibilityFeature")
    assert _meta(bare, "schema:accessModeSufficient") == ["textual,visual"]  # the picture is needed to get all of it
    assert "1 of its 2 images has no alternative text" in _meta(bare, "schema:accessibilitySummary")[0]
    chapter = bare.zip.read(next(n for n in bare.names if n.endswith("math.xhtml"))).decode()
    assert re.search(r'<th><span class="math inline" role="math" aria-label="x\^2">', chapter), chapter  # a header named by its formula


@pytest.fixture(scope="module")
def readable_pdf(tmp_path_factory):
    base = tmp_path_factory.mktemp("readable-pdf")
    root = write_book(base / "book", CONTENT)
    result = run_tools(base, "build", "pdf", "--book", str(root), "--out", str(base / "book.pdf"), "--strict")
    assert result.returncode == 0 and "warning:" not in result.stderr, result.stdout + result.stderr
    return base / "book.pdf"


@ACCESSIBILITY_GROUP
def test_pdfua_finds_no_error_and_the_pdf_says_it_is_pdf_ua(readable_pdf):
    """Alert icons are artifacts (no Figure without words), table headers have /Scope, the image has /Alt."""
    errors = pdfua_errors(readable_pdf)
    assert not errors, "\n".join(errors)
    assert ua_claimed(readable_pdf)
    report = pdfua_report(readable_pdf)
    assert not [f for f in report.findings if f.rule_id in ("UA-13-004", "UA-15-003")], report.findings
    from pypdf import PdfReader

    elements = [obj.get_object() for obj in _struct_elements(PdfReader(str(readable_pdf)))]
    figures = [e for e in elements if e.get("/S") == "/Figure"]
    assert [str(e.get("/Alt")) for e in figures] == ["A grey pixel"]  # the alert icons and the formulas are no figures
    headers = [e for e in elements if e.get("/S") == "/TH"]
    assert headers and all(e["/A"].get("/Scope") == "/Column" for e in headers)


def _struct_elements(reader):
    """Every structure element of the PDF's tree."""
    stack = [reader.trailer["/Root"]["/StructTreeRoot"]]
    while stack:
        node = stack.pop().get_object()
        kids = node.get("/K")
        for kid in (kids if isinstance(kids, list) else [kids]):
            if hasattr(kid, "get_object") and isinstance(kid.get_object(), dict) and kid.get_object().get("/Type") == "/StructElem":
                yield kid
                stack.append(kid)


@ACCESSIBILITY_GROUP
def test_the_pdfs_math_is_text_a_reader_can_search_and_copy(readable_pdf):
    require_tool("pdftotext")
    text = subprocess.run(["pdftotext", str(readable_pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "E = mc^2" in text and "\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}" in text, text
    assert re.search(r"Energy is\s+E = mc\^2\s+here", text), text  # where the formula is drawn


def test_an_image_without_alt_text_drops_the_pdf_ua_claim_and_says_so(tmp_path):
    root = write_book(tmp_path / "book", NO_ALT)
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "book.pdf"))
    assert result.returncode == 0, result.stdout + result.stderr
    line = NO_ALT["README.md"].splitlines().index("And ![](pixel.png) again.") + 1
    warnings = [w for w in result.stderr.splitlines() if "warning:" in w]
    assert len(warnings) == 1, warnings
    assert f"README.md:{line}: warning: the image 'pixel.png' has no alt text" in warnings[0], warnings
    assert "the PDF is not marked PDF/UA" in warnings[0] and "![what the image shows](pixel.png)" in warnings[0], warnings
    assert not ua_claimed(tmp_path / "book.pdf")
