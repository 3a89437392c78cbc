"""Raw HTML as GitHub treats it (issue 16, item 5): GitHub's allowlist of tags and attributes in every format.

A tag GitHub does not show is escaped so its text reads (`<jobid>`), with a warning at file:line; script, event
handlers and `javascript:` URLs never reach the site live; `<details>`, `<kbd>`, `<sub>`, `<sup>`, `<picture>` work;
the EPUB is valid XHTML whatever the fragments.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_epub import epubcheck

from conftest import REPO, require_tool, write_book
from pdf_check import assert_valid_pdf
from tools.markdown.html_sanitize import clean_html, safe_url

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")

JOBID = "# Slurm\n\nCancel it with `scancel`, with <jobid> being a job id.\n"
HOSTILE = """# Hostile

<script>alert("pwned-script")</script>

Text <img src="light.png" onerror="alert(1)" style="x"> and <a href="javascript:alert(1)" onclick="alert(2)">bad</a>.

<iframe src="https://evil.example/"></iframe>

<style>body { display: none }</style>

<a href="JaVa&#x09;ScRiPt:alert(3)">obfuscated</a> <a href="data:text/html,hi">data</a>

<svg onload="alert(4)"><p>inside svg</p></svg>
"""
GOOD = """# Good

<details open>
<summary>More</summary>

Press <kbd>Ctrl</kbd>+<kbd>C</kbd>; H<sub>2</sub>O and x<sup>2</sup>.

</details>

<picture><source media="(prefers-color-scheme: dark)" srcset="dark.png"><img src="light.png" alt="logo" width="120"></picture>

<a name="old-anchor"></a>

<div align="center">

Centered words.

</div>

<p>A paragraph left open

<br> line <img src="light.png" alt="bare"> <hr>

</span> stray closing tags </div>

<details>
<summary>Never closed</summary>

Last words.
"""


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    result.output = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in result.output, result.output
    return result


def book(tmp_path: Path, **chapters: str) -> Path:
    files: dict[str, str | bytes] = {f"{name}.md": text for name, text in chapters.items()}
    files.update({"light.png": PNG, "dark.png": PNG})
    return write_book(tmp_path / "book", files)


def site_page(tmp_path: Path, root: Path, page: str, codes=(0,)) -> tuple[BeautifulSoup, subprocess.CompletedProcess]:
    result = run(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "site"))
    assert result.returncode in codes, result.output
    return BeautifulSoup((tmp_path / "site" / page).read_text(encoding="utf-8"), "html.parser"), result


def epub_text(path: Path, member_suffix: str) -> str:
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith(member_suffix))
        return archive.read(name).decode("utf-8")


def test_unknown_tag_shows_as_text_in_the_site_with_a_warning(tmp_path):
    soup, result = site_page(tmp_path, book(tmp_path, slurm=JOBID), "slurm.html")
    assert "with <jobid> being a job id" in soup.find("main").get_text()
    assert not soup.find("jobid")
    assert re.search(r"slurm\.md:3: warning: <jobid> .*shown as text", result.output), result.output
    assert "`<jobid>` in backticks" in result.output
    assert result.output.count("<jobid> is not") == 1


def test_unknown_tag_shows_in_the_epub_and_the_epub_is_valid(tmp_path):
    root = book(tmp_path, slurm=JOBID)
    out = tmp_path / "book.epub"
    result = run(tmp_path, "build", "epub", "--book", str(root), "--out", str(out))
    assert result.returncode == 0, result.output
    assert "slurm.md:3: warning" in result.output
    text = BeautifulSoup(epub_text(out, "slurm.xhtml"), "html.parser").get_text()
    assert "with <jobid> being a job id" in text
    assert "Messages: 0 fatals / 0 errors" in epubcheck(out)


def test_unknown_tag_shows_in_the_pdf(tmp_path):
    pdftotext = require_tool("pdftotext")
    root = book(tmp_path, slurm=JOBID)
    out = tmp_path / "book.pdf"
    result = run(tmp_path, "build", "pdf", "--book", str(root), "--out", str(out))
    assert result.returncode == 0, result.output
    assert "slurm.md:3: warning" in result.output
    assert_valid_pdf(out)
    text = subprocess.run([pdftotext, "-enc", "UTF-8", str(out), "-"], capture_output=True, text=True, timeout=60).stdout
    assert "<jobid>" in text


def test_check_links_reports_the_escaped_tag(tmp_path):
    result = run(tmp_path, "check-links", "--book", str(book(tmp_path, slurm=JOBID)))
    assert "slurm.md:3: warning" in result.output and "<jobid>" in result.output, result.output


def test_hostile_html_never_reaches_the_site_live(tmp_path):
    # exit 1: the link checker also reports the obfuscated `javascript:` link as a file that does not exist
    soup, result = site_page(tmp_path, book(tmp_path, hostile=HOSTILE), "hostile.html", codes=(0, 1))
    main = soup.find("main")
    assert not main.find_all(["script", "iframe", "style", "svg"])
    for element in main.find_all(True):
        assert not [name for name in element.attrs if name.lower().startswith("on") or name == "style"], element
        for name in ("href", "src"):
            assert not re.sub(r"[\s\x00-\x1f]", "", str(element.get(name, ""))).lower().startswith(("javascript:", "data:text")), element
    words = main.get_text()
    assert '<script>alert("pwned-script")</script>' in words  # shown as text, as GitHub does
    assert "<iframe" in words and "<style>" in words
    assert "inside svg" in words  # an element GitHub removes keeps its text
    assert "hostile.md:3: warning" in result.output and "hostile.md:7: warning" in result.output
    assert "hostile.md:13: warning" in result.output  # <svg> left out


def test_allowed_html_survives_in_the_site(tmp_path):
    soup, result = site_page(tmp_path, book(tmp_path, good=GOOD), "good.html")
    main = soup.find("main")
    assert main.find("details").has_attr("open") and main.find("summary").get_text() == "More"
    assert [k.get_text() for k in main.find_all("kbd")] == ["Ctrl", "C"]
    assert main.find("sub").get_text() == "2" and main.find("sup").get_text() == "2"
    source = main.find("picture").find("source")
    assert source["srcset"] == "dark.png" and source["media"] == "(prefers-color-scheme: dark)"
    assert main.find("img", alt="logo")["width"] == "120"
    assert main.find("a", attrs={"name": True}) is not None
    assert main.find("div", align="center") is not None
    assert ": warning:" not in result.output, result.output


def test_fragments_give_a_valid_epub(tmp_path):
    root = book(tmp_path, good=GOOD, hostile=HOSTILE, slurm=JOBID)
    out = tmp_path / "book.epub"
    result = run(tmp_path, "build", "epub", "--book", str(root), "--out", str(out))
    assert result.returncode in (0, 1), result.output
    report = epubcheck(out)
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report
    good = BeautifulSoup(epub_text(out, "good.xhtml"), "html.parser")
    assert good.find("details") and good.find("kbd") and good.find("sub") and good.find("picture")
    assert good.find("div", style="text-align: center") is not None
    hostile = epub_text(out, "hostile.xhtml")
    assert "<script" not in hostile and "onerror" not in hostile and "javascript" not in hostile.lower().replace("&lt;", "")


@pytest.mark.parametrize("fragment", [
    "<details>", "</div>", "<br>", "<img src=\"a.png\">", "<p>open", "<details open>", "<a name=x>", "<td>cell",
    "<kbd>", "</p></p>", "<source srcset=\"a.png\">", "<table><tr><td>x", "<div align=\"left\" valign=top>",
])
def test_each_fragment_is_well_formed_once_cleaned_for_xhtml(fragment):
    from ebooklib.utils import parse_html_string
    from lxml import etree

    tree = parse_html_string(f"<p>x</p>{clean_html(fragment, xhtml=True)}<p>y</p>")
    etree.fromstring(etree.tostring(tree))  # lxml's XML serialisation of the HTML parse is well-formed XML


@pytest.mark.parametrize(("attribute", "value", "safe"), [
    ("href", "https://example.com", True), ("href", "#a", True), ("href", "../b.html", True), ("href", "mailto:x@y", True),
    ("href", "javascript:alert(1)", False), ("href", " JAVASCRIPT:x", False), ("href", "java\tscript:x", False),
    ("href", "vbscript:x", False), ("href", "data:text/html,x", False), ("src", "data:image/png;base64,AA", True),
    ("src", "data:text/html,x", False), ("src", "file:///etc/passwd", False), ("href", "a:b/c", False),
])
def test_url_schemes_follow_github(attribute, value, safe):
    assert safe_url(attribute, value) is safe


def test_cleaning_is_linear_on_pathological_html():
    import time

    for text in ("<!--" * 20000, "<a x='" * 20000, "<a " + "b " * 50000, "<" * 100000, "</x" * 30000):
        started = time.perf_counter()
        clean_html(text)
        assert time.perf_counter() - started < 2, text[:20]


def test_comments_and_declarations_are_left_out_without_swallowing_text():
    assert clean_html("<!--> seen <!-- hidden --> end") == " seen  end"
    assert clean_html("a <!DOCTYPE html> b <?x y?> c") == "a  b  c"
    assert clean_html("<!-- never closed") == "&lt;!-- never closed"


def test_each_escaped_tag_is_reported_once_per_line(tmp_path):
    chapter = "# T\n\nUse <jobid> and </jobid> and <jobid> here.\n\nAnd <nodename> on <jobid> another line.\n"
    result = run(tmp_path, "check-links", "--book", str(book(tmp_path, t=chapter)))
    assert result.output.count("t.md:3: warning: <jobid>") == 1, result.output
    assert "t.md:5: warning: <nodename>" in result.output and "t.md:5: warning: <jobid>" in result.output


def test_the_element_names_are_lxmls_and_cost_no_lxml_import():
    """html_elements() is written out (checking a chapter imports no lxml): it must stay lxml's list plus the names it lacks."""
    import subprocess
    import sys

    from lxml.html import defs

    from tools.markdown.html_allowlist import html_elements

    assert html_elements() == frozenset(defs.tags) | frozenset("main bdi data dialog picture template slot search frame image nobr listing".split())
    probe = "import sys; from tools.markdown.html_sanitize import clean_html; clean_html('<jobid> <b>x</b>'); print('lxml' in sys.modules)"
    import os
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.stdout.strip() == "False", done.stderr
