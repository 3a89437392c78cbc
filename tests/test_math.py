"""Math as GitHub writes it, seen as a reader sees it: MathML in the site and the EPUB (valid for epubcheck), SVG
drawings in the PDF; dollar signs GitHub leaves as text stay text; LaTeX errors are warnings at their line."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, given, settings, strategies as st
from test_epub import EPUB_GROUP, epubcheck

from conftest import REPO, require_tool, write_book
from site_check import search_index_text

CHAPTER = """# Formulas

Inline $E = mc^2$ and with backticks $`\\frac{a}{b}`$ in one line.

Training costs about $C \\approx 6ND$ FLOPs.

Money: $5 and $10. Escaped \\$x\\$ stays. Code `$y$` stays.

$$
\\sum_{i=1}^{n} x_i^2
$$

A display $$a^2 + b^2 = c^2$$ inside a paragraph.

```math
\\int_0^1 f(x)\\,dx
```

A [link](#formulas) and $[z](missing.md)$ inside math.
"""
ERRORS = """# Errors

Fine line.

Broken $\\frac{1}{$ here.

And $\\nosuchcommand x$ there.
"""
FILES = {"chapters-md.txt": "README.md\nerrors.md\n", "README.md": CHAPTER, "errors.md": ERRORS}
RAW = ("\\frac", "$$", "\\sum", "\\int", "mc^2", "\\approx")


def tools(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    root = write_book(tmp_path_factory.mktemp("math") / "book", FILES)
    out = root.parent / "out"
    result = tools("build", "all", "--book", str(root), "--out", str(out), cwd=root.parent)
    assert result.returncode == 0, result.stderr
    return out, result


def visible_text(html: str) -> str:
    soup = BeautifulSoup(html, "lxml")
    for hidden in soup(["script", "style", "head"]):
        hidden.decompose()
    return soup.get_text(" ")


def test_site_shows_mathml(built):
    out, _ = built
    page = (out / "html" / "README.html").read_text()
    soup = BeautifulSoup(page, "lxml")
    article = soup.find("article") or soup
    maths = article.find_all("math")
    assert len(maths) == 7  # E=mc^2, a/b, 6ND, the sum, the paragraph's display, the fence, the one holding a link
    assert [m.get("display") for m in maths].count("block") == 3
    assert article.find("mfrac") is not None and article.find("munderover") is not None
    text = visible_text(str(article))
    for raw in RAW:
        assert raw not in text
    assert "$5 and $10" in text and "Escaped $x$ stays" in text
    assert article.find("code", string="$y$") is not None
    assert not article.find_all("script")
    index = search_index_text(out / "html")
    assert "\\\\int" not in index and "\\\\frac" not in index  # no LaTeX in the search results either


def test_links_inside_math_are_not_links(built, tmp_path):
    out, result = built
    assert "missing.md" not in result.stderr  # the link checker does not see it
    soup = BeautifulSoup((out / "html" / "README.html").read_text(), "lxml")
    assert not [a for a in soup.find_all("a") if "missing" in (a.get("href") or "")]


def test_latex_errors_are_warnings_at_their_line_and_shown_as_code(built):
    out, result = built
    assert re.search(r"errors\.md:5: warning: this math cannot be shown \(it ends before a group or a command is complete\)", result.stderr)
    assert re.search(r"errors\.md:7: warning: this math cannot be shown \(an unknown command \\nosuchcommand\)", result.stderr)
    assert "Traceback" not in result.stderr
    soup = BeautifulSoup((out / "html" / "errors.html").read_text(), "lxml")
    assert [c.get_text() for c in soup.find_all("code", class_="math-error")] == ["\\frac{1}{", "\\nosuchcommand x"]


def test_pdf_draws_math_as_vectors(built):
    out, _ = built
    pdftotext = require_tool("pdftotext")
    text = subprocess.run([pdftotext, str(out / "book.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    assert "Broken \\frac{1}{ here." in text  # the LaTeX error's source, shown as code
    text = text[: text.index("Fine line.")]  # the chapter of valid math
    # Each formula is drawn, and its LaTeX lies over the drawing as invisible text: search, copy and screen readers
    # find the formula where it is (no dollar signs: those are markdown's, not the formula's).
    assert re.search(r"Inline\s+E = mc\^2\s+and with backticks\s+\\frac\{a\}\{b\}\s+in one line", text), text
    assert "\\sum_{i=1}^{n} x_i^2" in text and "\\int_0^1 f(x)\\,dx" in text and "$$" not in text
    assert "$5 and $10" in text
    from pypdf import PdfReader

    reader = PdfReader(out / "book.pdf")
    math_page = next(p for p in reader.pages if "Training costs about" in p.extract_text())
    plain_page = next(p for p in reader.pages if "Fine line." in p.extract_text())
    # WeasyPrint draws each formula's SVG into the page as vector paths: glyph outlines are Bezier curves (`c`).
    assert _curves(math_page) > 20 * _curves(plain_page) + 200
    assert not _images(math_page)  # vectors, no raster image


def _curves(page) -> int:
    """Bezier curves drawn on the page: its content and the forms and patterns it paints (a formula is drawn as the
    background of its box, which WeasyPrint paints as a form)."""
    count, seen = len(re.findall(rb"(?m) c$", page.get_contents().get_data())), set()
    stack = [page.get("/Resources")]
    while stack:
        resources = stack.pop()
        resources = resources.get_object() if resources is not None else {}
        for kind in ("/XObject", "/Pattern"):
            for ref in resources.get(kind, {}).values():
                obj = ref.get_object()
                if id(obj) in seen or not hasattr(obj, "get_data") or obj.get("/Subtype") == "/Image":
                    continue
                seen.add(id(obj))
                count += len(re.findall(rb"(?m) c$", obj.get_data()))
                stack.append(obj.get("/Resources"))
    return count


def _images(page) -> list:
    resources = page.get("/Resources").get_object()
    xobjects = resources.get("/XObject", {})
    return [x for x in xobjects.values() if x.get_object().get("/Subtype") == "/Image"]


@EPUB_GROUP
def test_epub_is_valid_with_mathml(built):
    out, _ = built
    with zipfile.ZipFile(out / "book.epub") as epub:
        opf = epub.read("EPUB/content.opf").decode()
        chapter = epub.read("EPUB/README.xhtml").decode()
    assert re.search(r'<item [^>]*href="README\.xhtml"[^>]*properties="mathml"', opf) or re.search(r'<item [^>]*properties="mathml"[^>]*href="README\.xhtml"', opf)
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML"' in chapter
    report = epubcheck(out / "book.epub")
    assert "0 fatals / 0 errors / 0 warnings" in report, report


# Text with dollar signs that GitHub does not read as math: money, escaped dollars, dollars in code spans.
_WORDS = st.sampled_from(["cost", "and", "to", "x", "total", "per", "GPU", "hour", "5", "10", "1.50"])
_MONEY = st.builds(lambda n: f"${n}", st.integers(0, 10_000))
_ESCAPED = st.builds(lambda w: f"\\${w}", _WORDS)
_CODE = st.builds(lambda a, b: f"`${a} {b}$`", _WORDS, _WORDS)
_PARTS = st.lists(st.one_of(_WORDS, _MONEY, _ESCAPED, _CODE), min_size=1, max_size=12)


def _no_math_between_money(parts: list[str]) -> bool:
    """`$5 x$` would be math by GitHub's rules too (no space inside, no digit after): not what this test is about."""
    text = " ".join(parts)
    return not re.search(r"\$[^\s$`]([^$`]*[^\s\\$`])?\$(?!\d)", text.replace("\\$", ""))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PARTS.filter(_no_math_between_money))
def test_dollars_that_are_not_math_stay_text(parts):
    from tools.markdown.parser import create_markdown

    source = " ".join(parts)
    tokens = create_markdown(()).parse(source)
    children = tokens[1].children or []
    assert not [t for t in children if t.type.startswith("math")], source
    shown = "".join(t.content for t in children if t.type in ("text", "code_inline")).replace(" ", "")
    expected = source.replace("\\$", "$").replace("`", "").replace(" ", "")
    assert shown == expected


@pytest.mark.parametrize("environment", ["aligned", "alignedat}{2", "gathered", "gather*", "multline", "eqnarray", "split"])
def test_environments_github_knows_become_tables(environment):
    """MathJax on GitHub lays these out; latex2mathml leaves some of their `&` as text, which is not even XML."""
    from xml.etree import ElementTree

    from tools.markdown.math import to_mathml
    from tools.render.math import math_html

    name = environment.split("}")[0]
    mathml = to_mathml(f"\\begin{{{environment}}} a &= b \\\\[1ex] c &= d \\end{{{name}}}", True)
    tree = ElementTree.fromstring(mathml)
    assert tree.find(".//{http://www.w3.org/1998/Math/MathML}mtable") is not None, mathml
    assert "1ex" not in mathml and "&" not in "".join(tree.itertext())
    assert math_html(f"\\begin{{{environment}}} a &= b \\\\ c &= d \\end{{{name}}}", True, svg=True).startswith('<div class="math display"><span class="math-image"')


_LATEX = st.lists(st.sampled_from([*"ab&\\{}^_ <", "\\\\", "\\frac", "\\begin{aligned}", "\\end{aligned}", "\\begin{matrix}", "\\end{matrix}", "&amp;"]), max_size=20).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LATEX, st.booleans())
def test_mathml_is_well_formed_or_an_error(latex, display):
    """Whatever the LaTeX, the MathML put into a page is well-formed XML (the EPUB is XHTML), or the formula is an
    error shown as code."""
    from xml.etree import ElementTree

    from tools.markdown.math import MathError, to_mathml

    try:
        mathml = to_mathml(latex, display)
    except MathError:
        return
    ElementTree.fromstring(mathml)
