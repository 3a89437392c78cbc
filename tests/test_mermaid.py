"""Mermaid diagrams as a reader sees them: drawn to SVG at build time in the site (both themes), the PDF (labels as
text) and the EPUB (valid for epubcheck); drawn once and then taken from the cache; a diagram that cannot be drawn
stays a code block, with one warning for the build or a warning at the fence's line."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_epub import epubcheck

from conftest import REPO, require, require_tool, write_book
from pdf_check import assert_valid_pdf

pytestmark = pytest.mark.xdist_group("browser")

MERMAID_JS = REPO / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
FLOW = "```mermaid\ngraph TD\n  accTitle: The start flow\n  A[Start here] --> B{Is it ready?}\n  B -->|Yes| C[Finish line]\n```\n"
CHAPTER = f"""# Diagrams

A flow:

{FLOW}
A conversation:

```mermaid
sequenceDiagram
  Alice->>Bob: Hello Bob
  Bob-->>Alice: Hi Alice
```

A state machine:

```mermaid
stateDiagram-v2
  [*] --> Waiting
  Waiting --> Running
  Running --> [*]
```

The flow again:

{FLOW}"""
BROKEN = "# Broken\n\nBefore.\n\n```mermaid\ngraph TD\n  A -->\n```\n"
FILES = {"chapters-md.txt": "README.md\nbroken.md\n", "README.md": CHAPTER, "broken.md": BROKEN}
RAW = ("graph TD", "sequenceDiagram", "stateDiagram", "-->", "accTitle")
LABELS = ("Start here", "Finish line", "Hello Bob", "Hi Alice", "Waiting", "Running")


def tools(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TOOLS_MERMAID_JS": str(MERMAID_JS), **env}
    return subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def require_drawing() -> None:
    require(MERMAID_JS.is_file(), "mermaid.js is not installed (make install-dev runs scripts/install-node-deps.sh)")
    require(shutil.which("chromium") is not None or shutil.which("chromium-browser") is not None,
            "the system tool 'chromium' is not installed (make test installs it)")


def visible_text(html: str) -> str:
    soup = BeautifulSoup(html, "lxml")
    for hidden in soup(["script", "style", "head"]):
        hidden.decompose()
    return " ".join(soup.get_text(" ").split())  # mermaid puts each word of a label in a <tspan> of its own


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, Path]:
    require_drawing()
    root = write_book(tmp_path_factory.mktemp("mermaid") / "book", FILES)
    out, cache = root.parent / "out", root.parent / "cache"
    result = tools("build", "all", "--book", str(root), "--out", str(out), cwd=root.parent, BOOK_CACHE_DIR=str(cache))
    assert result.returncode == 0, result.stderr
    return out, result, cache


def test_site_shows_each_diagram_in_both_themes(built):
    out, _, _ = built
    soup = BeautifulSoup((out / "html" / "README.html").read_text(), "lxml")
    article = soup.find("article") or soup
    figures = article.find_all("figure", class_="mermaid-diagram")
    assert len(figures) == 4
    for figure in figures:
        svgs = figure.find_all("svg", recursive=False)
        assert [svg.get("class") and svg["class"][0] for svg in svgs] == ["gh-light-mode-only", "gh-dark-mode-only"]
    assert [figure.get("aria-label") for figure in figures] == ["The start flow", "Diagram", "Diagram", "The start flow"]
    text = visible_text(str(article))
    for raw in RAW:
        assert raw not in text
    for label in LABELS:
        assert label in text
    assert not article.find_all("script") and not article.find_all("foreignobject")
    assert not article.find("pre", attrs={"data-lang": "mermaid"})
    style = (out / "html" / "assets" / "style.css").read_text()
    assert 'svg.gh-dark-mode-only' in style


def test_ids_never_repeat_on_a_page(built):
    """The same diagram twice, and each diagram in two themes: every id inside the SVGs is its own."""
    out, _, _ = built
    for page, parser in ((out / "html" / "README.html").read_text(), "lxml"), (_epub_member(out, "EPUB/README.xhtml"), "xml"):
        ids = [tag["id"] for tag in BeautifulSoup(page, parser).find_all(id=True)]
        assert len(ids) > 50
        assert [ident for ident, count in Counter(ids).items() if count > 1] == []


def test_mermaid_error_is_a_warning_at_the_fence_and_shown_as_code(built):
    out, result, _ = built
    assert re.search(r"^broken\.md:5: warning: this mermaid diagram cannot be drawn: Parse error on line \d+: .*; it is shown as code\.", result.stderr, re.M), result.stderr
    assert "shown as code because" not in result.stderr and "Traceback" not in result.stderr
    soup = BeautifulSoup((out / "html" / "broken.html").read_text(), "lxml")
    assert "A -->" in soup.find("pre", attrs={"data-lang": "mermaid"}).get_text()


def test_pdf_draws_the_light_diagrams_with_their_labels_as_text(built):
    out, _, _ = built
    pdftotext = require_tool("pdftotext")
    require_tool("qpdf")
    assert_valid_pdf(out / "book.pdf")
    text = subprocess.run([pdftotext, str(out / "book.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    drawn = text[text.index("A flow:") : text.index("Before.")]
    for label in LABELS:
        assert label in drawn
    for raw in RAW:
        assert raw not in drawn
    assert drawn.count("Start here") == 2  # the light drawing of each occurrence, no dark one


def _epub_member(out: Path, name: str) -> str:
    with zipfile.ZipFile(out / "book.epub") as epub:
        return epub.read(name).decode()


def test_epub_is_valid_with_inline_svg(built):
    out, _, _ = built
    chapter = _epub_member(out, "EPUB/README.xhtml")
    assert chapter.count('class="mermaid-diagram"') == 4 and chapter.count("<svg") >= 4
    assert "viewBox=" in chapter and "viewbox=" not in chapter  # SVG's camel case survives ebooklib's HTML parser
    assert "gh-dark-mode-only" not in chapter
    assert re.search(r'<item [^>]*href="README\.xhtml"[^>]*properties="svg"', _epub_member(out, "EPUB/content.opf"))
    report = epubcheck(out / "book.epub")
    assert "No errors or warnings detected" in report, report


def test_a_rebuild_takes_the_drawings_from_the_cache(built, tmp_path):
    """No browser this time: every drawing (and mermaid's error) comes from the cache, so nothing is shown as code
    and no warning says how to enable diagrams."""
    out, _, cache = built
    root = out.parent / "book"
    again = tmp_path / "again"
    result = tools("build", "html", "--book", str(root), "--out", str(again), cwd=tmp_path, BOOK_CACHE_DIR=str(cache),
                   TOOLS_CHROMIUM="/nonexistent")
    assert result.returncode == 0, result.stderr
    assert "shown as code because" not in result.stderr
    assert re.search(r"^broken\.md:5: warning: this mermaid diagram cannot be drawn", result.stderr, re.M)
    soup = BeautifulSoup((again / "README.html").read_text(), "lxml")
    assert len(soup.find_all("figure", class_="mermaid-diagram")) == 4


def test_without_mermaid_one_warning_and_code_blocks(tmp_book, tmp_path):
    root = tmp_book({"README.md": CHAPTER})
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = tools("build", "html", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(cache),
                   TOOLS_MERMAID_JS=str(tmp_path / "missing.js"))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 1, result.stderr
    assert re.match(r"README\.md:\d+: warning: 4 mermaid diagrams are shown as code because mermaid\.js was not found\. To draw them, install", warnings[0])
    assert "npm install mermaid" in warnings[0] and "apt-get install chromium" in warnings[0]
    soup = BeautifulSoup((out / "README.html").read_text(), "lxml")
    assert len(soup.find_all("pre", attrs={"data-lang": "mermaid"})) == 4 and not soup.find("svg", class_="gh-light-mode-only")
    strict = tools("build", "html", "--strict", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(cache),
                   TOOLS_MERMAID_JS=str(tmp_path / "missing.js"))
    assert strict.returncode == 1, strict.stderr
    off = tools("build", "html", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(cache), TOOLS_DIAGRAMS="off")
    assert off.returncode == 0 and ": warning: " not in off.stderr, off.stderr
    assert "Traceback" not in result.stderr + strict.stderr + off.stderr


def test_a_page_shown_without_drawings_is_drawn_once_they_can_be(tmp_book, tmp_path):
    """The cached page body of a build without mermaid.js is not reused once diagrams can be drawn."""
    require_drawing()
    root = tmp_book({"README.md": "# One\n\n" + FLOW})
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = tools("build", "html", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(cache),
                  TOOLS_MERMAID_JS=str(tmp_path / "missing.js"))
    assert first.returncode == 0 and "shown as code because" in first.stderr, first.stderr
    second = tools("build", "html", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(cache))
    assert second.returncode == 0 and ": warning: " not in second.stderr, second.stderr
    soup = BeautifulSoup((out / "README.html").read_text(), "lxml")
    assert len(soup.find_all("svg", class_="gh-light-mode-only")) == 1 and not soup.find("pre", attrs={"data-lang": "mermaid"})


def test_a_diagram_brings_in_no_script_link_or_remote_style(tmp_book, tmp_path):
    require_drawing()
    hostile = ('# Hostile\n\n```mermaid\n%%{init: {"themeCSS": "@import url(https://example.invalid/x.css); '
               '.node rect { fill: url(https://example.invalid/a.png); }"}}%%\ngraph TD\n  A[Click me] --> B\n'
               '  click A "javascript:alert(1)"\n```\n')
    root = tmp_book({"README.md": hostile})
    out = tmp_path / "out"
    result = tools("build", "html", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    figure = BeautifulSoup((out / "README.html").read_text(), "lxml").find("figure", class_="mermaid-diagram")
    assert figure is not None and "Click me" in figure.get_text()
    drawn = str(figure)
    assert "example.invalid" not in drawn and "javascript:" not in drawn and "@import" not in drawn
    assert not figure.find_all(["script", "foreignobject"])
    assert not [attr for tag in figure.find_all(True) for attr in tag.attrs if attr.lower().startswith("on")]


# A mermaid.js from a book's own folder runs beside the browser-side cleaning and can disarm it; the Python check
# after the browser must still keep its SVG out of every page.
SUBVERTING_MERMAID = """
Element.prototype.remove = function () {};
Element.prototype.removeAttributeNode = function () {};
window.mermaid = {
  initialize() {},
  async render(id, code) {
    const svg = `<svg id="${id}" xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><text onclick="alert(2)">Shape</text></svg>`;
    return {svg};
  },
};
"""


def test_a_subverting_mermaid_script_gets_nothing_into_a_page(tmp_book, tmp_path):
    require_drawing()
    script = tmp_path / "book-own" / "mermaid.min.js"
    script.parent.mkdir()
    script.write_text(SUBVERTING_MERMAID)
    root = tmp_book({"README.md": "# Shapes\n\n```mermaid\ngraph TD\n  A --> B\n```\n"})
    out = tmp_path / "out"
    result = tools("build", "all", "--book", str(root), "--out", str(out), cwd=tmp_path, BOOK_CACHE_DIR=str(tmp_path / "cache"),
                   TOOLS_MERMAID_JS=str(script))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert re.search(r"^README\.md:3: warning: this mermaid diagram cannot be drawn: the drawing cannot go into a page: it holds a <script> element", result.stderr, re.M), result.stderr
    page = (out / "html" / "README.html").read_text()
    assert "alert(" not in page and "mermaid-diagram" not in page
    with zipfile.ZipFile(out / "book.epub") as epub:
        assert not [name for name in epub.namelist() if "alert(" in epub.read(name).decode("utf-8", "replace")]


@pytest.mark.parametrize("svg,why", [
    ('<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>', "<script>"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div xmlns="http://www.w3.org/1999/xhtml"/></foreignObject></svg>', "<foreignObject>"),
    ('<svg xmlns="http://www.w3.org/2000/svg" onload="x()"/>', "event handler"),
    ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="https://e.invalid/a.svg#x"/></svg>', "links outside"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><style>.a{fill:url(https://e.invalid/a.png)}</style></svg>', "load"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><style>.a{background:image-set("https://e.invalid/a.png" 1x)}</style></svg>', "load"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><rect style="fill:\\75 rl(https://e.invalid/a.png)"/></svg>', "load"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><style>@import "https://e.invalid/x.css";</style></svg>', "load"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><image href="https://e.invalid/a.png"/></svg>', "<image>"),
    ("<svg", "well-formed"),
])
def test_the_python_check_refuses_what_a_page_may_not_hold(svg, why):
    from tools.render.diagrams.svg_check import unsafe_svg

    reason = unsafe_svg(svg)
    assert reason is not None and why in reason, reason


def test_the_python_check_accepts_mermaids_own_drawings(built):
    from tools.render.diagrams.svg_check import unsafe_svg

    out, _, _ = built
    figures = BeautifulSoup((out / "html" / "README.html").read_text(), "lxml").find_all("figure", class_="mermaid-diagram")
    assert figures
    epub_svgs = []
    with zipfile.ZipFile(out / "book.epub") as epub:
        for name in epub.namelist():
            if name.endswith(".xhtml"):
                text = epub.read(name).decode()
                epub_svgs += re.findall(r"<svg\b.*?</svg>", text, re.S)
    assert epub_svgs and all(unsafe_svg(svg) is None for svg in epub_svgs if "mermaid-" in svg)


def test_diagrams_are_drawn_when_the_caller_runs_an_event_loop(tmp_path, monkeypatch):
    """The tool used from a notebook or an async program (or, in this suite, beside Playwright's sync API), where an
    event loop already runs in the thread: the diagrams are drawn all the same (asyncio.run would refuse there)."""
    import asyncio
    import threading

    from click.testing import CliRunner

    from tools.cli import main

    require_drawing()
    root = write_book(tmp_path / "book", {"chapters-md.txt": "README.md\n", "README.md": f"# Diagrams\n\n{FLOW}"})
    monkeypatch.setenv("TOOLS_MERMAID_JS", str(MERMAID_JS))
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))

    async def in_a_running_loop():
        return CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "site")])

    # in a thread of its own: this test process may run Playwright's loop in its main thread already
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(asyncio.run(in_a_running_loop())))
    thread.start()
    thread.join()
    result = outcome[0]
    assert result.exit_code == 0 and "warning:" not in result.output, result.output
    page = (tmp_path / "site" / "README.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 2 and "Start here" in visible_text(page), result.output
