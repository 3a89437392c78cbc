"""Link resolution: the fixture table, side by side, and properties over generated trees."""
from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tools.book.link_model import TargetKind
from tools.book.resolve import FileIndex, resolve

FIXTURE = Path(__file__).parent / "fixtures" / "resolve.tsv"
FILES = ["README.md", "a/README.md", "a/one.md", "a/two.md", "a/run.py", "a/img/x.png", "b/notes.md", "c/data.csv", "d/f.txt"]
CHAPTERS = ["README.md", "a/README.md", "a/one.md", "a/two.md"]


def index_of(files, chapters) -> FileIndex:
    dirs = {posixpath.dirname(f) for f in files} - {""}
    for d in list(dirs):
        while "/" in d:
            d = posixpath.dirname(d)
            dirs.add(d)
    return FileIndex(frozenset(files), frozenset(dirs), frozenset(chapters))


INDEX = index_of(FILES, CHAPTERS)


def rows():
    for number, line in enumerate(FIXTURE.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("#") or not line.strip():
            continue
        source, href, kind, path, last = (line.split("\t") + [""] * 5)[:5]
        yield pytest.param(source, "" if href == "<empty>" else href, kind, path, last, id=f"line{number}:{href}")


@pytest.mark.parametrize("source,href,kind,path,last", list(rows()))
def test_fixture_table(source, href, kind, path, last):
    target = resolve(source, href, INDEX)
    assert target.kind.value == kind
    if kind == "broken":
        assert target.problem.value == last
        assert target.reason
        if path:
            assert target.path == path
    else:
        assert target.path == path
        assert target.fragment == last


def test_directory_readme_is_found():
    assert resolve("a/one.md", "./", INDEX).readme == "a/README.md"
    assert resolve("a/one.md", "../d/", INDEX).readme == ""


def test_root_relative_links_follow_the_repository_prefix():
    index = FileIndex(INDEX.files, INDEX.dirs, INDEX.chapters, repo_prefix="chapters")
    assert resolve("a/one.md", "/chapters/a/two.md", index).path == "a/two.md"
    assert resolve("a/one.md", "/Makefile", index).kind is TargetKind.BROKEN


segment = st.text(alphabet="abcxyz-_é", min_size=1, max_size=6)
paths = st.lists(st.lists(segment, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".md"), min_size=1, max_size=8, unique=True)


@given(paths, st.data())
def test_relative_path_to_any_file_resolves_to_it(files, data):
    index = index_of(files, files)
    source = data.draw(st.sampled_from(files))
    target_file = data.draw(st.sampled_from(files))
    href = posixpath.relpath(target_file, posixpath.dirname(source) or ".")
    fragment = data.draw(st.text(alphabet="abc-_1", max_size=5))
    target = resolve(source, href + (f"#{fragment}" if fragment else ""), index)
    assert target.kind in (TargetKind.CHAPTER, TargetKind.DIRECTORY)
    if target.kind is TargetKind.CHAPTER:
        assert (target.path, target.fragment) == (target_file, fragment)


@given(st.text(max_size=40))
def test_resolve_never_raises_and_never_escapes(href):
    target = resolve("a/one.md", href, INDEX)
    if target.is_local:
        assert not target.path.startswith("..")
