"""The site's shortcuts give what the plain way gives: relative URLs without os.getcwd(), the chapter tree drawn once
and each folder's URLs put in, the search index's sets read as strings of bits in a big book, and the search index
made in a second process while the pages are written."""
from __future__ import annotations

import base64
import multiprocessing
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tools.render import pages
from tools.render.pages import relative_url
from tools.render.site import search
from tools.render.site.nav import NavNode, NavTrees
from tools.render.templates import environment

PART = st.sampled_from(["a", "b", "c.html", ".", "..", "", "é x", "a%b"])
PATH = st.lists(PART, min_size=1, max_size=4).map("/".join)


@settings(max_examples=400, deadline=None)
@given(target=PATH, base=PATH)
def test_relpath_is_posixpaths(target, base):
    expected: str | type[ValueError]
    try:
        expected = posixpath.relpath(target, base)
    except ValueError:
        expected = ValueError
    pages._relpath.cache_clear()
    if expected is ValueError:
        with pytest.raises(ValueError):
            pages._relpath(target, base)
    else:
        assert pages._relpath(target, base) == expected


@settings(max_examples=300, deadline=None)
@given(members=st.sets(st.integers(0, 9999)), count=st.sampled_from([1, 50, 4096, 4097, 10_000]))
def test_a_set_encodes_to_its_members(members, count):
    members = {m for m in members if m < count}
    encoded = search._encoded(sum(1 << m for m in members), count)
    if isinstance(encoded, str):
        bits = int.from_bytes(base64.b64decode(encoded), "little")
        decoded = {i for i in range(count) if bits >> i & 1}
    else:
        decoded, at = set(), -1
        for gap in encoded:
            at += gap
            decoded.add(at)
    assert decoded == members


class _Policy:
    def page_of(self, chapter: str) -> str:
        return chapter[: -len(".md")] + ".html"


TITLE = st.sampled_from(["Intro", "A <b> & \"c\"", "模型", "x\x00y", "\x001\x00", "Ünïcode 'q'", ""])
CHAPTER = st.sampled_from(["README.md", "a.md", "x/README.md", "x/b.md", "x/y/c d.md", "z/50%.md", "z/e.md"])


@st.composite
def _trees(draw, depth=0):
    nodes = []
    for _ in range(draw(st.integers(0, 4 if depth < 2 else 0))):
        part = draw(st.booleans()) and depth == 0
        chapter = None if part else draw(st.one_of(st.none(), CHAPTER))
        nodes.append(NavNode(draw(TITLE), chapter, draw(_trees(depth + 1)), part))
    return nodes


def _drawn(env, nav, current, page):
    def items(nodes):
        return [{"title": n.title, "url": relative_url(_Policy().page_of(n.chapter), page) if n.chapter else "", "current": n.chapter == current,
                 "part": n.part, "children": items(n.children)} for n in nodes]
    return str(env.get_template("_nav.html").module.tree(items(nav)))


@settings(max_examples=150, deadline=None)
@given(nav=_trees(), current=st.one_of(st.just(""), CHAPTER), pages_=st.lists(CHAPTER, min_size=1, max_size=4))
def test_the_tree_drawn_once_is_the_tree_drawn_per_page(nav, current, pages_):
    env = environment()
    trees = NavTrees(env, nav, _Policy(), lambda c, p: [])
    trees.items = lambda c, p: _items(nav, c, p)
    for chapter in pages_:
        page = _Policy().page_of(chapter)
        assert str(trees.html(current, page)) == _drawn(env, nav, current, page)


def _items(nav, current, page):
    return [{"title": n.title, "url": relative_url(_Policy().page_of(n.chapter), page) if n.chapter else "", "current": n.chapter == current,
             "part": n.part, "children": _items(n.children, current, page)} for n in nav]


def _book(root: Path, chapters: int = 12) -> Path:
    lines = []
    for number in range(chapters):
        folder = root / f"part{number % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"c{number}.md").write_text(f"# Chapter {number}\n\nText about gpu{number} and NCCL.\n\n## Section {number}\n\nMore words: 模型 all-reduce {number}.\n", encoding="utf-8")
        lines.append(f"part{number % 3}/c{number}.md")
    (root / "README.md").write_text("# Book\n\nThe front.\n", encoding="utf-8")
    (root / "chapters-md.txt").write_text("README.md\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return root


def _build(book: Path, out: Path, jobs: int) -> None:
    done = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(book), "--out", str(out), "--no-cache", "-j", str(jobs)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_the_search_index_made_beside_the_pages_is_the_one_made_after_them(tmp_path):
    book = _book(tmp_path / "book")
    _build(book, tmp_path / "one", 1)
    _build(book, tmp_path / "two", 2)
    one = {p.relative_to(tmp_path / "one"): p.read_bytes() for p in (tmp_path / "one").rglob("*") if p.is_file()}
    two = {p.relative_to(tmp_path / "two"): p.read_bytes() for p in (tmp_path / "two").rglob("*") if p.is_file()}
    assert one.keys() == two.keys()
    searched = [name for name in one if name.parts[:2] == ("assets", "search") or name.name == "search-index.js"]
    assert len(searched) >= 3 and all(one[name] == two[name] for name in searched)


def test_a_failed_search_index_fails_the_build_and_leaves_no_process(tmp_path, monkeypatch):
    from tools.book.load import load_book
    from tools.core.errors import Diagnostics
    from tools.render.site import write as site

    book = load_book(_book(tmp_path / "book"))

    def broken(entries):  # what the second process makes: the gram parts
        raise ValueError("the index broke")

    monkeypatch.setattr(site, "gram_files", broken)
    with pytest.raises(ValueError, match="the index broke"):
        site.build_site(book, tmp_path / "site", Diagnostics(), jobs=2)
    assert not (tmp_path / "site").exists()
    assert multiprocessing.active_children() == []


SLOW_SEARCH = """
import os, sys, time
sys.argv = ["tools", *sys.argv[1:]]
import tools  # noqa: F401 - as the command: a signal is held back until the command can stop cleanly
import tools.render.site.write as site


def slow(entries):  # the second process (the gram parts): says who it is, then takes its time
    with open(os.environ["SEARCH_PID"], "w") as mark:
        mark.write(str(os.getpid()))
    time.sleep(120)
    return {}, 1


site.gram_files = slow
from tools.cli import main
main()
"""


@pytest.mark.parametrize("signum, code, group", [(2, 130, True), (15, 143, False)], ids=["Ctrl-C", "kill"])
def test_a_signal_while_the_search_index_is_made_stops_both_processes(tmp_path, signum, code, group):
    import os
    import time

    book = _book(tmp_path / "book")
    out = tmp_path / "site"
    _build(book, out, 2)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    mark = tmp_path / "search.pid"
    driver = tmp_path / "driver.py"
    driver.write_text(SLOW_SEARCH, encoding="utf-8")
    command = [sys.executable, str(driver), "build", "html", "--book", str(book), "--out", str(out), "-j", "2", "--no-cache"]
    env = dict(os.environ, SEARCH_PID=str(mark), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not mark.is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.is_file(), process.communicate()[1]
    time.sleep(0.5)  # the main process writes the pages and waits for the index
    (os.killpg if group else os.kill)(process.pid, signum)
    started = time.monotonic()
    out_text, err_text = process.communicate(timeout=60)
    assert process.returncode == code, err_text
    assert time.monotonic() - started < 30  # not the two minutes the index would have taken
    assert "Interrupted" in err_text and "Traceback" not in out_text + err_text
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")]
    child = int(mark.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the search index's process {child} outlived the build")
