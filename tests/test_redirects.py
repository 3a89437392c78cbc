"""Redirects after a move (`[redirects]` in book.toml): `tools mv` and `mv-links` record each old path in the same
all-or-nothing write as the links, chains collapse to one hop, a round trip gives book.toml back byte for byte,
the site sends a reader of an old URL to the new page with its #fragment, and check-links finds a dead redirect."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

from bs4 import BeautifulSoup
from hypothesis import given, settings, strategies as st

from conftest import run_tools, write_book
from site_check import search_index_text
from tools.book.redirects import after_move, check_redirects, edit_table
from tools.core.errors import BookError

BOOK_TOML = '# The book\n[book]\ntitle = "Moves"  # shown on the cover\n'
FILES = {
    "book.toml": BOOK_TOML,
    "chapters-md.txt": "a.md\nc.md\n",
    "a.md": "# Alpha\n\nIntro.\n\n## Some heading\n\nSee [c](c.md).\n",
    "c.md": "# Gamma\n\nBack to [alpha](a.md#some-heading).\n",
}


def _book(tmp_path: Path, files: dict | None = None) -> Path:
    return write_book(tmp_path / "book", dict(FILES if files is None else files))


def _redirects(root: Path) -> dict:
    return tomllib.loads((root / "book.toml").read_text(encoding="utf-8")).get("redirects", {})


def _ok(result) -> None:
    assert result.returncode == 0, result.stdout + result.stderr


def test_mv_records_the_old_path_and_dry_run_shows_it(tmp_path):
    root = _book(tmp_path)
    dry = run_tools(root, "mv", "--dry-run", "a.md", "b.md")
    _ok(dry)
    assert '+[redirects]\n+"a.md" = "b.md"\n' in dry.stdout and "--- a/book.toml" in dry.stdout
    assert (root / "book.toml").read_text() == BOOK_TOML and (root / "a.md").exists()
    _ok(run_tools(root, "mv", "a.md", "b.md"))
    assert _redirects(root) == {"a.md": "b.md"}
    text = (root / "book.toml").read_text()
    assert text.startswith(BOOK_TOML), "the comments and the [book] table stay as they were"


def test_chain_collapses_and_round_trip_gives_every_byte_back(tmp_path):
    root = _book(tmp_path)
    before = (root / "book.toml").read_bytes()
    _ok(run_tools(root, "mv", "a.md", "b.md"))
    _ok(run_tools(root, "mv", "b.md", "sub/c2.md"))
    assert _redirects(root) == {"a.md": "sub/c2.md", "b.md": "sub/c2.md"}
    _ok(run_tools(root, "mv", "sub/c2.md", "b.md"))
    _ok(run_tools(root, "mv", "b.md", "a.md"))
    assert (root / "book.toml").read_bytes() == before


def test_existing_table_keeps_its_comments_and_round_trips(tmp_path):
    toml = BOOK_TOML + '\n[redirects]\n# moved in 2024\n"old.md" = "a.md"\n\n[links]\ntimeout = 5.0\n'
    root = _book(tmp_path, {**FILES, "book.toml": toml})
    _ok(run_tools(root, "mv", "a.md", "b.md"))
    text = (root / "book.toml").read_text()
    assert "# moved in 2024\n" in text and text.endswith("[links]\ntimeout = 5.0\n")
    assert _redirects(root) == {"old.md": "b.md", "a.md": "b.md"}
    _ok(run_tools(root, "mv", "b.md", "a.md"))
    assert (root / "book.toml").read_text() == toml


def test_folder_move_adds_one_entry_per_chapter_and_mv_links_does_the_same(tmp_path):
    files = {**FILES, "chapters-md.txt": "a.md\nc.md\nguide/x.md\nguide/y.md\n", "guide/x.md": "# X\n", "guide/y.md": "# Y\n", "guide/notes.md": "# not a chapter\n"}
    root = _book(tmp_path, files)
    _ok(run_tools(root, "mv", "guide", "manual"))
    assert _redirects(root) == {"guide/x.md": "manual/x.md", "guide/y.md": "manual/y.md"}
    os.rename(root / "manual", root / "guide")  # moved back by hand
    result = run_tools(root, "mv-links", "manual", "guide")
    _ok(result)
    assert "redirects" in result.stdout
    assert (root / "book.toml").read_text() == BOOK_TOML


def test_book_without_book_toml_still_moves(tmp_path):
    files = {k: v for k, v in FILES.items() if k != "book.toml"}
    root = _book(tmp_path, files)
    result = run_tools(root, "mv", "a.md", "b.md")
    _ok(result)
    assert not (root / "book.toml").exists() and (root / "b.md").exists()
    assert "no book.toml" in result.stderr


def test_site_redirect_page_keeps_the_fragment_in_chromium(tmp_path, browser):
    root = _book(tmp_path)
    _ok(run_tools(root, "mv", "a.md", "sub/b.md"))
    out = tmp_path / "out"
    _ok(run_tools(root, "build", "html", "--out", str(out)))
    page = out / "a.html"
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    assert soup.find("meta", attrs={"http-equiv": "refresh"})["content"] == "0; url=sub/b.html"
    assert soup.find("link", rel="canonical")["href"] == "sub/b.html"
    assert soup.find("meta", attrs={"name": "robots"})["content"] == "noindex"
    assert soup.find("a")["href"] == "sub/b.html"
    assert "a.html" not in search_index_text(out) and "a.html" not in (out / "index.html").read_text()
    tab = browser.new_page()
    try:
        tab.goto(page.as_uri() + "#some-heading")
        tab.wait_for_url("**/sub/b.html#some-heading")
        assert tab.title().startswith("Alpha")
        assert tab.evaluate("location.hash") == "#some-heading"
    finally:
        tab.close()


def test_check_links_reports_a_redirect_to_a_missing_chapter(tmp_path):
    root = _book(tmp_path, {**FILES, "book.toml": BOOK_TOML + '\n[redirects]\n"old.md" = "cc.md"\n'})
    result = run_tools(root, "check-links")
    assert result.returncode == 1
    assert "book.toml:6: error: the redirect target 'cc.md' (from 'old.md') does not exist" in result.stderr + result.stdout
    assert "Did you mean 'c.md'?" in result.stderr + result.stdout


def test_a_redirect_that_would_hide_a_page_is_an_error(tmp_path):
    root = _book(tmp_path, {**FILES, "book.toml": BOOK_TOML + '\n[redirects]\n"a.md" = "c.md"\n'})
    result = run_tools(root, "check-links")
    assert result.returncode == 1 and "book.toml:6: error: the redirect's old path 'a.md' is a file of the book" in result.stdout + result.stderr


def test_config_errors_name_the_line(tmp_path):
    cases = [
        ('"/abs.md" = "a.md"', "is not relative to the book's root folder"),
        ('"../out.md" = "a.md"', "outside the book's root folder"),
        ('"old.txt" = "a.md"', "is not a markdown file"),
        ('"old.md" = "../a.md"', "outside the book's root folder"),
        ("old.md = \"a.md\"", "both in quotes"),
        ('"x.md" = "y.md"\n"y.md" = "x.md"', "cycle (x.md -> y.md -> x.md)"),
        ('"x.md" = "x.md"', "cycle"),
    ]
    for number, (entry, expected) in enumerate(cases):
        root = write_book(tmp_path / f"book{number}", {**FILES, "book.toml": BOOK_TOML + "\n[redirects]\n" + entry + "\n"})
        result = run_tools(root, "check-links")
        assert result.returncode == 2, entry
        assert "book.toml:6:" in result.stderr and expected in result.stderr, result.stderr


PATHS = st.sampled_from(["a.md", "b.md", "c.md", "d/e.md", "d/f.md", "g/e.md", "g/f.md"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(PATHS, PATHS), max_size=12))
def test_any_sequence_of_moves_gives_one_hop_redirects(moves):
    """Moving chapters around in any order: every redirect leads in one hop to a current chapter, none hides a
    chapter, none points at itself, and the table written as text reads back as the same table."""
    chapters = {"a.md", "c.md", "d/e.md"}
    redirects: dict[str, str] = {}
    text = BOOK_TOML
    for src, dst in moves:
        if src not in chapters or dst in chapters or src == dst:
            continue
        chapters = (chapters - {src}) | {dst}
        new = after_move(redirects, src, dst, [src], [dst])
        text = edit_table(text, redirects, new)
        redirects = new
        for key, value in redirects.items():
            assert value in chapters and key not in chapters and key != value
        assert check_redirects(redirects, str) == redirects
        assert tomllib.loads(text).get("redirects", {}) == redirects
    if not redirects:
        assert text == BOOK_TOML


def test_edit_table_refuses_an_inline_table():
    text = 'redirects = { "a.md" = "b.md" }\n'
    try:
        edit_table(text, {"a.md": "b.md"}, {"a.md": "c.md"})
    except BookError as exc:
        assert "[redirects] table" in exc.message
    else:
        raise AssertionError("an inline table must be refused")


NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).map(lambda name: name + ".md")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(NAMES, NAMES, max_size=4), st.dictionaries(NAMES, NAMES, max_size=4), st.sampled_from([BOOK_TOML, "", "[book]\r\ntitle = \"x\"\r\n"]))
def test_edit_table_writes_any_paths_and_gives_the_text_back(first, second, start):
    """Any path text (quotes, backslashes, control characters) goes through the edit and reads back as written;
    editing back to no redirects gives the original text."""
    text = edit_table(start, {}, first)
    assert tomllib.loads(text).get("redirects", {}) == first
    changed = edit_table(text, first, second)
    assert tomllib.loads(changed).get("redirects", {}) == second
    assert edit_table(changed, second, {}) == start


def test_a_refused_move_leaves_book_toml_as_it_was(tmp_path):
    root = _book(tmp_path)
    (root / "c.md").chmod(0o444)  # its link to a.md must change, so the whole move is refused
    result = run_tools(root, "mv", "a.md", "b.md")
    assert result.returncode == 2 and "c.md" in result.stderr
    assert (root / "book.toml").read_text() == BOOK_TOML and (root / "a.md").exists() and not (root / "b.md").exists()


def test_a_redirect_whose_page_would_go_under_a_page_is_an_error_at_its_line_and_the_site_is_built(tmp_path):
    """`"a.html/x.md"`: its page would need a folder where the site has the page a.html: an error naming the
    book.toml line, the rest of the site written."""
    root = write_book(tmp_path / "book", {"chapters-md.txt": "a.md\nb.md\n", "a.md": "# A\n", "b.md": "# B\n",
                                          "book.toml": '[book]\ntitle = "T"\n\n[redirects]\n"a.html/x.md" = "b.md"\n'})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "book.toml:5:" in result.stderr and "a.html/x.md" in result.stderr, result.stderr
    assert (tmp_path / "out" / "a.html").is_file() and (tmp_path / "out" / "b.html").is_file()


def test_a_redirect_page_speaks_the_books_language(tmp_path):
    root = write_book(tmp_path / "book", {"chapters-md.txt": "b.md\n", "b.md": "# 第二章\n",
                                          "book.toml": '[book]\ntitle = "书"\nlanguage = "zh"\n\n[redirects]\n"a.md" = "b.md"\n'})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "a.html").read_text(encoding="utf-8")
    assert "已移至" in page and "已移动" in page and "moved" not in page.lower().replace("moved_", ""), page
