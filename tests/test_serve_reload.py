"""`tools serve` rebuilding in place: the open page in Chromium reloads on a save and shows it, the build-error
overlay comes and goes, a restarted server is found again, and the served site after any edits is byte for byte what
a cold `tools build html` makes of the same sources."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_serve import fetch, free_port, serving, status, wait_for

from conftest import REPO

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")
SAME_TIME = {"SOURCE_DATE_EPOCH": "1700000000"}  # the pages' "built" stamp, the same in both builds


def settled(base: str, before: str) -> str:
    """Wait until a rebuild after `before` is done and no other follows (a save may come as two bursts)."""
    wait_for(lambda: status(base)["version"] != before)
    while True:
        seen = status(base)["version"]
        time.sleep(0.4)
        if status(base)["version"] == seen:
            return seen


def tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def cold_build(root: Path, out: Path, cache: Path) -> dict[str, bytes]:
    env = {"BOOK_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **SAME_TIME}
    subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(root), "--out", str(out)], env=env, capture_output=True, timeout=120)
    return tree(out)


def same_site(served: Path, root: Path, cold: Path, cache: Path) -> None:
    expected = cold_build(root, cold, cache)
    got = tree(served)
    assert sorted(got) == sorted(expected)
    assert [name for name in expected if got[name] != expected[name]] == []


def test_the_served_site_after_edits_is_what_a_cold_build_makes(tmp_book, tmp_path):
    root = tmp_book({
        "chapters-md.txt": "a.md\nb.md\n",
        "a.md": "# Alpha\n\nSee [the old heading](b.md#old-heading) and ![a picture](pic.png).\n\n## Alpha section\n\nFirst words.\n",
        "b.md": "# Beta\n\n## Old heading\n\nBeta words, back to [alpha](a.md#alpha-section).\n",
        "pic.png": PNG,
    })
    served, log = tmp_path / "served", tmp_path / "serve.log"
    with serving(root, served, tmp_path / "cache", env=SAME_TIME, log=log) as base:
        version = status(base)["version"]
        edits = [
            ("a.md", "# Alpha\n\nSee [the old heading](b.md#old-heading) and ![a picture](pic.png).\n\n## Alpha section\n\nSecond words.\n"),
            ("b.md", "# Beta renamed\n\n## New heading\n\nBeta words, back to [alpha](a.md#alpha-section).\n"),  # the title (navigation) and the anchor a.md links to
            ("a.md", "# Alpha\n\nSee [the new heading](b.md#new-heading), no picture.\n\n## Alpha section\n\nThird words.\n"),  # pic.png no longer copied
        ]
        for number, (name, text) in enumerate(edits):
            if number == 0:  # saved as some editors do: a temporary file, flushed, renamed over the chapter
                temp = root / f".{name}.saving"
                with temp.open("w", encoding="utf-8") as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, root / name)
            else:
                (root / name).write_text(text, encoding="utf-8")
            version = settled(base, version)
        assert "changed chapter" in log.read_text(encoding="utf-8")  # rebuilt in place, not as a whole
        same_site(served, root, tmp_path / "cold1", tmp_path / "cold-cache1")

        (root / "c.md").write_text("# Gamma\n\nA new chapter with ![a picture](pic.png).\n", encoding="utf-8")
        (root / "chapters-md.txt").write_text("a.md\nb.md\nc.md\n", encoding="utf-8")
        version = settled(base, version)
        (root / "pic.png").unlink()  # c.md's picture is now broken
        version = settled(base, version)
        (root / "book.toml").write_text('[book]\ntitle = "A new title"\n', encoding="utf-8")
        version = settled(base, version)
        (root / "b.md").write_text("# Beta\n\n## Old heading\n\nBack to [alpha](a.md#alpha-section).\n", encoding="utf-8")
        settled(base, version)
        same_site(served, root, tmp_path / "cold2", tmp_path / "cold-cache2")


def wait_text(page, text: str, timeout: float = 20.0) -> None:
    """Wait until the page (reloaded any number of times meanwhile) shows `text`."""
    from playwright.sync_api import Error

    def shows() -> bool:
        try:
            return text in page.inner_text("body", timeout=1000)
        except Error:  # the page is being replaced by its reload
            return False

    wait_for(shows, timeout)


def reloaded(page) -> bool:
    try:
        return page.evaluate("window.__before_edit === undefined")
    except Exception:  # noqa: BLE001 - the page is being replaced by its reload
        return False


@pytest.fixture
def book_and_page(tmp_book, tmp_path, browser):
    root = tmp_book({"chapters-md.txt": "a.md\nb.md\n", "a.md": "# Alpha\n\nFirst words.\n", "b.md": "# Beta\n\nOther words.\n"})
    port = free_port()
    page = browser.new_page()
    yield root, port, page
    page.close()


def test_an_open_page_reloads_on_a_save_and_shows_it(book_and_page, tmp_path):
    root, port, page = book_and_page
    with serving(root, tmp_path / "out", tmp_path / "cache", port=port) as base:
        page.goto(base + "/a.html")
        wait_text(page, "First words.")
        page.evaluate("window.__before_edit = true")
        (root / "a.md").write_text("# Alpha\n\nSecond words.\n", encoding="utf-8")
        wait_text(page, "Second words.")
        assert reloaded(page)
        page.evaluate("window.__before_edit = true")
        (root / "b.md").write_text("# Beta renamed\n\nOther words.\n", encoding="utf-8")  # another chapter's title: this page's navigation
        wait_text(page, "Beta renamed")
        assert reloaded(page)


def test_a_build_error_shows_over_the_page_and_a_fix_clears_it(book_and_page, tmp_path):
    root, port, page = book_and_page
    with serving(root, tmp_path / "out", tmp_path / "cache", port=port) as base:
        page.goto(base + "/a.html")
        wait_text(page, "First words.")
        (root / "a.md").write_text("# Alpha\n\nA link to [nowhere](missing.md).\n", encoding="utf-8")  # mid-edit
        page.wait_for_selector("#__build_errors", timeout=20000)
        assert "missing.md" in page.inner_text("#__build_errors")
        (root / "a.md").write_text("# Alpha\n\nA link to [beta](b.md).\n", encoding="utf-8")
        wait_text(page, "A link to beta")
        page.wait_for_selector("#__build_errors", state="detached", timeout=20000)
        (root / "book.toml").write_text("[book]\ncolour = 1\n", encoding="utf-8")  # no site at all: the last good one stays
        page.wait_for_selector("#__build_errors", timeout=20000)
        assert "unknown key 'colour'" in page.inner_text("#__build_errors")
        (root / "book.toml").unlink()
        page.wait_for_selector("#__build_errors", state="detached", timeout=20000)


def test_the_page_finds_a_restarted_server_and_reloads(book_and_page, tmp_path):
    root, port, page = book_and_page
    with serving(root, tmp_path / "out", tmp_path / "cache", port=port) as base:
        page.goto(base + "/a.html")
        wait_text(page, "First words.")
    page.evaluate("window.__before_edit = true")
    (root / "a.md").write_text("# Alpha\n\nWritten while no server ran.\n", encoding="utf-8")
    with serving(root, tmp_path / "out", tmp_path / "cache", port=port) as base:
        wait_text(page, "Written while no server ran.")
        assert reloaded(page)
        page.evaluate("window.__before_edit = true")
        (root / "a.md").write_text("# Alpha\n\nAnd after the restart.\n", encoding="utf-8")
        wait_text(page, "And after the restart.")
        assert "And after the restart." in fetch(base + "/a.html")


def test_a_copied_file_swapped_for_a_link_out_of_the_book_is_refused_at_the_next_rebuild(tmp_book, tmp_path):
    """A chapter-only rebuild reuses what the last build learnt about the book's files (tools/serve/live_site.py
    `refusals`); a change to one of those files makes a whole build, which asks again."""
    from tools.core.cache import Cache
    from tools.serve.live_site import LiveSite

    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\n![a picture](pic.png)\n", "pic.png": PNG})
    secret = tmp_path / "secret.png"
    secret.write_bytes(PNG + b"outside the book")
    out = tmp_path / "site"
    site = LiveSite(root, out, local=False, cache=Cache(tmp_path / "cache"))
    _, diagnostics = site.build()
    assert (out / "pic.png").read_bytes() == PNG and not diagnostics.errors

    chapter = os.path.realpath(root / "a.md")
    (root / "a.md").write_text("# Alpha\n\n![a picture](pic.png) again.\n", encoding="utf-8")
    _, diagnostics = site.build({chapter})
    assert site.done.startswith("1 changed chapter") and not diagnostics.errors

    (root / "pic.png").unlink()
    (root / "pic.png").symlink_to(secret)
    _, diagnostics = site.build({os.path.realpath(root) + "/pic.png"})
    assert site.done == "the whole book"
    assert [d.code for d in diagnostics.errors] == ["outside-root"]
    assert all(b"outside the book" not in path.read_bytes() for path in out.rglob("*") if path.is_file())

    (root / "a.md").write_text("# Alpha\n\n![a picture](pic.png) once more.\n", encoding="utf-8")
    _, diagnostics = site.build({chapter})
    assert site.done.startswith("1 changed chapter") and [d.code for d in diagnostics.errors] == ["outside-root"]
    assert all(b"outside the book" not in path.read_bytes() for path in out.rglob("*") if path.is_file())
