"""Heading ids as GitHub gives them: a table of real cases, duplicates, and properties of the rule."""
from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from conftest import run_tools, write_book
from tools.book.load import parse_chapter
from tools.core.errors import Diagnostics
from tools.markdown.slug import ALPHABETIC_SYMBOLS, Slugger, slugify

TABLE = Path(__file__).parent / "fixtures" / "slugs.tsv"
CASES = [tuple(line.split("\t")) for line in TABLE.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def test_the_table_is_big_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("heading,expected", CASES, ids=[c[0] for c in CASES])
def test_heading_ids_match_github(tmp_path, heading, expected):
    """Through the whole parser: the heading's text content (inline code, links, images, HTML) matters."""
    (tmp_path / "c.md").write_text(f"## {heading}\n", encoding="utf-8")
    chapter = parse_chapter(tmp_path, "c.md", 1, Diagnostics())
    assert [h.anchor for h in chapter.headings] == [expected]


def test_duplicates_are_numbered_in_document_order(tmp_path):
    (tmp_path / "c.md").write_text("# Example\n\n## Example\n\n### Example\n\n## Example-1\n\n## Other\n", encoding="utf-8")
    chapter = parse_chapter(tmp_path, "c.md", 1, Diagnostics())
    assert [h.anchor for h in chapter.headings] == ["example", "example-1", "example-2", "example-1-1", "other"]


def test_raw_html_anchors_count(tmp_path):
    (tmp_path / "c.md").write_text('<a name="top"></a>\n\n# Title <a id="inline-id"></a>\n\n<div id="block">x</div>\n', encoding="utf-8")
    chapter = parse_chapter(tmp_path, "c.md", 1, Diagnostics())
    assert {"top", "inline-id", "block", "title-"} <= set(chapter.anchors)


ALLOWED = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"}


def _alphabetic_symbol(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in ALPHABETIC_SYMBOLS)


@given(st.text(max_size=60))
def test_slug_keeps_only_word_characters_and_hyphens(text):
    slug = slugify(text)
    assert " " not in slug
    assert all(ch == "-" or unicodedata.category(ch) in ALLOWED or _alphabetic_symbol(ch) for ch in slug)


def test_circled_and_squared_letters_are_the_alphabetic_symbols():
    """github-slugger keeps the symbols Unicode calls alphabetic: all of them are circled or squared letters."""
    kept = [chr(code) for low, high in ALPHABETIC_SYMBOLS for code in range(low, high + 1)]
    assert len(kept) == 52 + 26 * 3 and all(unicodedata.category(ch) == "So" and slugify(ch) for ch in kept)
    assert all(" LETTER " in unicodedata.name(ch) for ch in kept)


def test_check_links_suggests_the_id_github_gives_a_shortcode_heading(tmp_path):
    """A book written for the old ids (`#-launch`) is told the id GitHub gives (`#rocket-launch`), through the CLI."""
    root = write_book(tmp_path / "book", {"a.md": "# A\n\n## :rocket: Launch\n\nSee [below](#-launch).\n",
                                          "b.md": "# B\n\nSee [launch](a.md#-launch) and [ok](a.md#rocket-launch).\n"})
    result = run_tools(tmp_path, "check-links", "--book", str(root))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout + result.stderr
    assert "a.md:5:13: error: the link '#-launch'" in out and "b.md:3:14: error: the link 'a.md#-launch'" in out
    assert out.count("Did you mean '#rocket-launch'?") == 2 and "2 errors" in out


@given(st.text(max_size=60))
def test_slug_is_idempotent(text):
    assert slugify(slugify(text)) == slugify(text)


@given(st.lists(st.text(alphabet="ab -", max_size=4), max_size=30))
def test_slugger_never_repeats_an_id(headings):
    slugger = Slugger()
    ids = [slugger.slug(h) for h in headings]
    assert len(ids) == len(set(ids))


@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Nd"]), min_size=1, max_size=20))
def test_words_survive_lowercased(word):
    assert slugify(word) == word.lower()
