"""The build cache never serves a stale page: every edit shows, whatever the cache holds."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pdf_check import assert_valid_pdf
from site_check import dangling_links, parse
from tools.cli import main

FILES = {
    "chapters-md.txt": "a.md\nb.md\n",
    "a.md": "# Alpha\n\nSee [beta](b.md#details).\n",
    "b.md": "# Beta\n\n## Details\n\nOriginal text.\n",
}


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "site"

    def run(root, *extra):
        result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out), *extra])
        assert result.exit_code in (0, 1), result.output
        return out, result

    return run


def test_an_edit_is_always_visible(tmp_book, build, tmp_path):
    root = tmp_book(FILES)
    out, _ = build(root)
    assert (tmp_path / "cache").is_dir()
    (root / "b.md").write_text("# Beta\n\n## Details\n\nEdited text.\n", encoding="utf-8")
    out, _ = build(root)
    assert "Edited text." in parse(out / "b.html").get_text()
    assert "Original text." not in parse(out / "b.html").get_text()


def test_a_renamed_title_updates_every_page(tmp_book, build):
    root = tmp_book(FILES)
    build(root)
    (root / "b.md").write_text("# Gamma\n\n## Details\n\nOriginal text.\n", encoding="utf-8")
    out, _ = build(root)
    assert "Gamma" in [a.get_text() for a in parse(out / "a.html").select("#sidebar a")]
    assert parse(out / "a.html").find("a", rel="next").get_text(" ", strip=True).endswith("Gamma")


def test_a_removed_anchor_is_reported_from_a_cached_chapter(tmp_book, build):
    root = tmp_book(FILES)
    build(root)
    (root / "b.md").write_text("# Beta\n\n## Renamed\n", encoding="utf-8")
    out, result = build(root)
    assert "a.md:3:" in result.output and "'#details'" in result.output
    assert result.exit_code == 1


def test_a_target_that_becomes_a_chapter_changes_the_cached_link(tmp_book, build):
    files = dict(FILES, **{"a.md": "# Alpha\n\nSee [notes](notes.md).\n", "notes.md": "# Notes\n"})
    files["chapters-md.txt"] = "a.md\nb.md\n"
    root = tmp_book(files)
    out, _ = build(root, "--local")
    assert parse(out / "a.html").find("a", string="notes")["href"] == "notes.md"
    (root / "chapters-md.txt").write_text("a.md\nb.md\nnotes.md\n", encoding="utf-8")
    out, _ = build(root, "--local")
    assert parse(out / "a.html").find("a", string="notes")["href"] == "notes.html"
    assert dangling_links(out) == []


def test_a_changed_repository_in_book_toml_changes_cached_links(tmp_book, build):
    files = dict(FILES, **{"a.md": "# Alpha\n\nRun [the script](run.sh).\n", "run.sh": "echo hi\n",
                           "book.toml": '[book]\ntitle = "T"\nrepository = "https://github.com/old/book"\n'})
    root = tmp_book(files)
    out, _ = build(root)
    assert parse(out / "a.html").find("a", string="the script")["href"].startswith("https://github.com/old/book/")
    (root / "book.toml").write_text('[book]\ntitle = "T"\nrepository = "https://github.com/new/book"\n', encoding="utf-8")
    out, _ = build(root)  # a.md's bytes did not change; the URL its link gets did, and that is in the key
    assert parse(out / "a.html").find("a", string="the script")["href"].startswith("https://github.com/new/book/")


def test_non_utf8_problems_are_replayed_from_the_cache(tmp_book, build):
    root = tmp_book(dict(FILES, **{"b.md": b"# Beta\n\n## Details\n\ncaf\xe9\n"}))
    _, first = build(root)
    _, second = build(root)
    for result in (first, second):
        assert "b.md:5:4: error: the file is not valid UTF-8" in result.output


def test_no_cache_builds_the_same_site(tmp_book, build, tmp_path):
    root = tmp_book(FILES)
    cached_out, _ = build(root)
    cached = {p.relative_to(cached_out): p.read_bytes() for p in cached_out.rglob("*.html")}
    out, _ = build(root, "--no-cache")
    fresh = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.html")}

    def strip_time(pages):
        import re

        return {k: re.sub(rb"built \d{4}-\d\d-\d\d \d\d:\d\d UTC|Built \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"", v) for k, v in pages.items()}

    assert strip_time(cached) == strip_time(fresh)


def test_parallel_and_serial_builds_are_identical(tmp_path, monkeypatch):
    import re
    import sys

    sys.path.insert(0, str(__import__("conftest").REPO / "scripts"))
    from gen_large_book import generate

    generate(tmp_path / "big", chapters=12, sections=2)
    sites = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / f"cache{jobs}"))
        out = tmp_path / f"site{jobs}"
        result = CliRunner().invoke(main, ["build", "html", "-j", jobs, "--book", str(tmp_path / "big"), "--out", str(out)])
        assert result.exit_code == 0, result.output
        sites[jobs] = {p.relative_to(out): re.sub(rb"[Bb]uilt \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"", p.read_bytes()) for p in out.rglob("*") if p.is_file()}
    assert sites["1"] == sites["2"]
    assert dangling_links(tmp_path / "site2") == []


# --- EPUB and PDF: the same guarantees through `tools build epub|pdf` ------------------------------------------------


def _epub_pages(path) -> dict[str, str]:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return {name.split("/", 1)[-1]: archive.read(name).decode() for name in archive.namelist() if name.endswith(".xhtml")}


@pytest.fixture
def build_epub(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))

    def run(root, out_name="book.epub", *extra):
        out = tmp_path / out_name
        result = CliRunner().invoke(main, ["build", "epub", "--book", str(root), "--out", str(out), *extra])
        assert result.exit_code in (0, 1), result.output
        return _epub_pages(out), result

    return run


def test_epub_an_edit_is_always_visible(tmp_book, build_epub, tmp_path):
    root = tmp_book(FILES)
    build_epub(root)
    assert any((tmp_path / "cache" / "epub").rglob("*")), "the first build fills the EPUB cache"
    (root / "b.md").write_text("# Beta\n\n## Details\n\nEdited text.\n", encoding="utf-8")
    pages, _ = build_epub(root)
    assert "Edited text." in pages["b.xhtml"] and "Original text." not in pages["b.xhtml"]


def test_epub_a_removed_anchor_changes_the_cached_link_of_another_chapter(tmp_book, build_epub):
    root = tmp_book(FILES)
    pages, _ = build_epub(root)
    assert 'href="b.xhtml#details"' in pages["a.xhtml"]
    (root / "b.md").write_text("# Beta\n\n## Renamed\n", encoding="utf-8")
    pages, result = build_epub(root)
    assert 'href="b.xhtml"' in pages["a.xhtml"]  # a.md did not change; the anchor it names is gone, so is the fragment
    assert "a.md:3:" in result.output


def test_epub_cached_parallel_and_serial_builds_are_identical(tmp_path, build_epub):
    import sys

    sys.path.insert(0, str(__import__("conftest").REPO / "scripts"))
    from gen_large_book import generate

    generate(tmp_path / "big", chapters=12, sections=2)
    serial, _ = build_epub(tmp_path / "big", "serial.epub", "-j", "1", "--no-cache")
    parallel, _ = build_epub(tmp_path / "big", "parallel.epub", "-j", "2")
    cached, _ = build_epub(tmp_path / "big", "cached.epub", "-j", "2")
    assert len(serial) == 14  # the twelve chapters, the cover and the nav
    assert serial == parallel == cached


def test_pdf_an_edit_is_visible_through_the_command(tmp_book, tmp_path, monkeypatch):
    import subprocess

    from conftest import require_tool

    pdftotext = require_tool("pdftotext")
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_book(FILES)
    out = tmp_path / "book.pdf"

    def text() -> str:
        result = CliRunner().invoke(main, ["build", "pdf", "--book", str(root), "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert_valid_pdf(out)
        return subprocess.run([pdftotext, str(out), "-"], check=True, capture_output=True, text=True).stdout

    assert "Original text." in text()
    assert any((tmp_path / "cache" / "pdf-part").rglob("*")), "the first build fills the PDF cache"
    (root / "b.md").write_text("# Beta\n\n## Details\n\nEdited text.\n", encoding="utf-8")
    edited = text()
    assert "Edited text." in edited and "Original text." not in edited


def test_prune_removes_only_entries_unused_for_a_month(tmp_path):
    import os
    import time

    from tools.core.cache import Cache

    cache = Cache(tmp_path / "cache")
    cache.put("site", "aa-old", "stale")
    cache.put("site", "bb-used", "kept")
    cache.put("site", "cc-new", "fresh")
    month_ago = time.time() - 31 * 86400
    for key in ("aa-old", "bb-used"):
        os.utime(cache._path("site", key), (month_ago, month_ago))
    assert cache.get("site", "bb-used") == "kept"  # a hit marks the entry as used
    assert cache.prune(max_age_days=30) == 1
    assert cache.get("site", "aa-old") is None
    assert cache.get("site", "bb-used") == "kept" and cache.get("site", "cc-new") == "fresh"
    cache.put("site", "dd-later", "x")
    os.utime(cache._path("site", "dd-later"), (month_ago, month_ago))
    assert cache.prune(max_age_days=30) == 0  # the folder is walked at most once a day
    assert cache.prune(max_age_days=30, every_hours=0) == 1


def test_the_code_fingerprint_covers_every_layer_and_the_theme(tmp_path, monkeypatch):
    """A change to any module of the tool (not only tools/core/, where the cache lives) or to a template makes every
    entry stale: a light chapter pickled by older code would lack what newer code reads."""
    import shutil

    from tools.core import cache

    copy = tmp_path / "tools"
    shutil.copytree(cache.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert (copy / "book" / "model.py").is_file() and (copy / "render" / "theme").is_dir()
    fingerprints = []
    for edited in (None, copy / "book" / "model.py", copy / "render" / "theme" / "print.css"):
        if edited is not None:
            edited.write_text(edited.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        monkeypatch.setattr(cache, "PACKAGE", copy)
        cache.code_fingerprint.cache_clear()
        fingerprints.append(cache.code_fingerprint())
    cache.code_fingerprint.cache_clear()
    assert len(set(fingerprints)) == 3
