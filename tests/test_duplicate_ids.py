"""A raw-HTML `id` that a heading of the same chapter has too (`<a id="setup"></a>` above `## Setup`, a common way to
keep an old anchor), or an `<a name>` (an id in the EPUB's XHTML): a page may hold an id once, so every output keeps
the heading's, and check-links and build say so once, at the line of the raw anchor (`duplicate-id`)."""
from __future__ import annotations

import re
import zipfile
from collections import Counter

from bs4 import BeautifulSoup
from hypothesis import given, settings, strategies as st
from test_epub import epubcheck

from conftest import run_tools, write_book
from tools.book.model import parse_text

CHAPTER = """# Guide

<a id="setup"></a>
## Setup

See [the setup](#setup) and <span id=other>this</span>, <b ID = 'setup'>bold</b>, <a name="setup">named</a>.

<div id="kept">a raw id no heading has</div>

## Other
"""


def _book(tmp_path):
    return write_book(tmp_path / "book", {"README.md": CHAPTER, "chapters-md.txt": "README.md\n"})


def test_check_links_warns_once_at_each_raw_id_a_heading_has(tmp_path):
    root = _book(tmp_path)
    result = run_tools(root, "check-links", "--book", ".")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    found = re.findall(r"^README\.md:(\d+): warning: the anchor (\w+)=\"(\w+)\" is also the id of the heading on line (\d+)", output, re.M)
    assert sorted(found) == [("3", "id", "setup", "4"), ("6", "id", "other", "10"), ("6", "id", "setup", "4"), ("6", "name", "setup", "4")], output
    assert "kept" not in output and "0 errors, 4 warnings" in output


def test_every_output_holds_each_id_once(tmp_path):
    root = _book(tmp_path)
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", "all", "--book", str(root), "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    page = BeautifulSoup((out / "html" / "README.html").read_text(encoding="utf-8"), "html.parser")
    article = page.select_one("article")
    ids = Counter(element["id"] for element in article.find_all(id=True))
    assert ids["setup"] == 1 and ids["other"] == 1 and ids["kept"] == 1, ids
    assert article.find(id="setup").name == "h2" and article.find(id="other").name == "h2"
    assert "this" in article.get_text() and "bold" in article.get_text()  # the elements stay, only the id goes
    assert article.select_one('a[href="#setup"]') is not None and article.find(attrs={"name": "setup"}) is None and "named" in article.get_text()
    with zipfile.ZipFile(out / "book.epub") as epub:
        chapter = next(name for name in epub.namelist() if name.endswith(".xhtml") and "README" in name)
        text = epub.read(chapter).decode("utf-8")
    assert len(re.findall(r'\sid="[^"]*setup"', text)) == 1, text
    report = epubcheck(out / "book.epub")
    assert "ERROR" not in report and "FATAL" not in report, report


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["## Setup", '<a id="setup"></a>', '<span id="setup">x</span>', '<p id="x-1">p</p>', "## X", "text"]), max_size=8))
def test_the_warning_names_exactly_the_raw_ids_a_heading_has(lines):
    text = "\n\n".join(lines) + "\n"
    _, _, found = parse_text("a.md", text)
    headings = {heading.anchor for heading in found.headings}
    assert {value for _, _, value, _ in found.ids_of_headings_too()} == {value for _, _, value in found.raw_ids} & headings
