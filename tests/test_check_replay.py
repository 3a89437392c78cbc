"""`tools check-links` replays an unchanged book's last result before importing click (tools/checks/links/replay.py): every
format, flag and exit status is the full run's, every kind of change to the book is seen, and a damaged entry only
costs the full run. Whether a run was replayed is read from `python -X importtime` (click imported or not), never
from a clock; each book is made a second before its first run, since a file changed within the last second is never
trusted (tools/checks/links/replay.py, RACY_NS)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, write_book

CHANGES = ("edit-chapter", "edit-same-size", "touch-config", "chapter-list", "add-target", "delete-target", "rename-file", "new-file-in-folder")

BOOK = {
    "README.md": "# Start\n\nSee [next](guide/next.md#usage), ![figure](figure.png) and [gone](missing.png).\n\n[other](other.md)\n",
    "guide/next.md": "# Next\n\n## Usage\n\nBack to [the start](../README.md#start) and [the folder](../assets/).\n\n![a picture](pic.png)\n",
    "other.md": "# Other\n\nSee [a broken anchor](guide/next.md#nowhere).\n",
    "figure.png": b"\x89PNG\r\n\x1a\n",
    "assets/README.md": "# Assets\n",
    "book.toml": "[book]\ntitle = \"Replay\"\n",
    "chapters-md.txt": "README.md\nguide/next.md\nother.md\n",
}


def run(cwd: Path, cache: Path, *args: str) -> tuple[str, str, int, bool]:
    """stdout, stderr (without import times), exit status, and whether the run was replayed (click not imported)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), BOOK_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tools", "check-links", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines(keepends=True)
    imports = [line for line in lines if line.startswith("import time:")]
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    assert "Traceback" not in stderr, stderr
    replayed = not any(re.search(r"\|\s*click$", line.rstrip()) for line in imports)
    return done.stdout, stderr, done.returncode, replayed


def timeless(text: str) -> str:
    return re.sub(r"(\"seconds\": )[0-9.]+|( in )[0-9.]+s", r"\1\2<t>", text)


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """One copy of the book per test, all made at once and a second old before any test runs."""
    base = tmp_path_factory.mktemp("replay")
    made = {name: write_book(base / name / "book", BOOK) for name in ("formats", "corrupt", "linked", *CHANGES)}
    made["other"] = write_book(base / "linked" / "other", {**BOOK, "other.md": "# Other\n\nNo link here.\n"})
    time.sleep(1.2)
    return made


@pytest.mark.parametrize("args", [("--format", "text"), ("--format", "json"), ("--format", "github"), ("--format", "sarif"),
                                  ("--format", "json", "--strict"), ("--format", "text", "--no-local")])
def test_a_replay_prints_what_the_full_run_printed(books, args):
    book = books["formats"]
    cache = book.parent / "cache"
    where = ("--book", str(book), *args)
    full = run(book.parent, cache, *where)
    again = run(book.parent, cache, *where)
    assert not full[3] and again[3], "the second run is replayed"
    assert timeless(again[0]) == timeless(full[0])
    assert timeless(again[1]) == timeless(full[1])
    assert again[2] == full[2] == (0 if "--no-local" in args else 1)
    if "json" in args:
        assert '"code": "missing-image"' in again[0] and '"seconds": ' in again[0]


def change(book: Path, kind: str) -> None:
    if kind == "edit-chapter":
        (book / "other.md").write_text("# Other\n\nFixed: [next](guide/next.md#usage).\n", encoding="utf-8")
    elif kind == "edit-same-size":
        text = (book / "other.md").read_text(encoding="utf-8")
        (book / "other.md").write_text(text.replace("#nowhere", "#nowhera"), encoding="utf-8")
    elif kind == "touch-config":
        os.utime(book / "book.toml")
    elif kind == "chapter-list":
        (book / "chapters-md.txt").write_text("README.md\nguide/next.md\n", encoding="utf-8")
    elif kind == "add-target":
        (book / "missing.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    elif kind == "delete-target":
        (book / "figure.png").unlink()
    elif kind == "rename-file":
        (book / "guide" / "next.md").rename(book / "guide" / "later.md")
    elif kind == "new-file-in-folder":
        (book / "guide" / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # only guide/ changes, not the root


@pytest.mark.parametrize("kind", CHANGES)
def test_every_kind_of_change_is_seen(books, kind):
    book = books[kind]
    cache = book.parent / "cache"
    where = ("--book", str(book), "--format", "json")
    before = run(book.parent, cache, *where)
    assert run(book.parent, cache, *where)[3], "an unchanged book is replayed"
    change(book, kind)
    after = run(book.parent, cache, *where)
    truth = run(book.parent, cache, *where, "--no-cache")
    assert not after[3], f"{kind}: the changed book was replayed"
    assert (timeless(after[0]), after[2]) == (timeless(truth[0]), truth[2])
    if kind != "touch-config":
        assert timeless(after[0]) != timeless(before[0]), f"{kind}: the change changes the findings"


def test_a_damaged_entry_falls_back_to_the_full_run(books):
    book = books["corrupt"]
    cache = book.parent / "cache"
    where = ("--book", str(book), "--format", "json")
    truth = run(book.parent, cache, *where)
    entries = list((cache / "check-links").glob("*/*"))
    assert len(entries) == 1
    entry = entries[0]
    data = entry.read_bytes()
    for damaged in (data[: len(data) // 2], data[:-1] + b"x", b"", data.replace(b'"code": 1', b'"code": 0')):
        entry.write_bytes(damaged)
        result = run(book.parent, cache, *where)
        assert not result[3]
        assert (timeless(result[0]), result[2]) == (timeless(truth[0]), truth[2])
    entry.unlink()
    entry.mkdir()  # a folder where the entry should be
    result = run(book.parent, cache, *where)
    assert (timeless(result[0]), result[2]) == (timeless(truth[0]), truth[2])
    shutil.rmtree(entry)


def test_a_book_named_through_a_link_that_now_points_elsewhere_is_checked_again(books):
    """`--book current` where `current` is a symbolic link: pointed at another book, the other book is checked."""
    folder = books["linked"].parent
    cache = folder / "cache"
    current = folder / "current"
    current.symlink_to(books["linked"])
    where = ("--book", str(current), "--format", "json")
    before = run(folder, cache, *where)
    assert run(folder, cache, *where)[3]
    current.unlink()
    current.symlink_to(books["other"])
    after = run(folder, cache, *where)
    truth = run(folder, cache, *where, "--no-cache")
    assert not after[3]
    assert (timeless(after[0]), after[2]) == (timeless(truth[0]), truth[2]) and after[0] != before[0]
