"""Reads stay inside the book root and finish; configuration errors name file:line (issue 14, items 3 and 4).

Each case builds a tiny book beside a folder holding a marker file, runs the real CLI in a subprocess under a
deadline, and checks the exit code, the file:line in the message, that no traceback is printed and that the
marker is in no output: no site file, no PDF text, no EPUB member.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, write_book
from pdf_check import assert_valid_pdf

MARKER = "SECRET-MARKER-7f3a"
INTRO = "# Intro\n\nSome text.\n"


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    result.output = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the book whose files must never reach an output."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# Secret {MARKER}\n\n{MARKER}\n", encoding="utf-8")
    (folder / "secret.png").write_bytes(b"\x89PNG\r\n\x1a\n" + MARKER.encode())
    (folder / "secret.csv").write_text(f"a,b\n{MARKER},1\n", encoding="utf-8")
    (folder / "list.txt").write_text("a.md\n", encoding="utf-8")
    return folder


def output_texts(out: Path):
    """(name, text) of everything a reader gets: site files, the PDF's text, each EPUB member."""
    found = [Path(folder) / name for folder, _, names in os.walk(out) for name in names]
    assert found, f"nothing was written under {out}"
    for path in sorted(found):
        if path.suffix == ".pdf":
            from pypdf import PdfReader

            assert_valid_pdf(path)
            yield str(path), "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
            yield str(path), path.read_bytes().decode("latin-1")
        elif path.suffix == ".epub":
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    yield f"{path}!{name}", archive.read(name).decode("utf-8", "replace")
        else:
            yield str(path), path.read_bytes().decode("utf-8", "replace")


def assert_no_leak(out: Path, *secrets: str) -> None:
    for name, text in output_texts(out):
        for secret in (MARKER, *secrets):
            assert secret not in text, f"{secret!r} leaked into {name}"


# --- chapters that may not be read --------------------------------------------------------------------------------


def test_a_chapter_linked_out_of_the_root_is_refused_in_every_format(tmp_path, outside):
    book = write_book(tmp_path / "book", {"a.md": INTRO, "chapters-md.txt": "a.md\nleak.md\n"})
    (book / "leak.md").symlink_to(outside / "secret.md")
    result = run(tmp_path, "build", "all", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.output
    assert "chapters-md.txt:2" in result.output and "leaves the book's root" in result.output
    assert (tmp_path / "out" / "book.pdf").is_file() and (tmp_path / "out" / "book.epub").is_file()
    assert_no_leak(tmp_path / "out")
    checked = run(tmp_path, "check-links", "--book", str(book))
    assert checked.returncode == 1 and "chapters-md.txt:2" in checked.output


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


@pytest.mark.parametrize("make, words", [(_fifo, "FIFO"), (_socket, "socket"), (_device, "leaves the book's root"), (_loop, "loop")])
@pytest.mark.parametrize("command", ["build", "check-links"])
def test_a_chapter_that_is_no_regular_file_is_reported_at_its_list_line(tmp_path, make, words, command):
    book = write_book(tmp_path / "book", {"a.md": INTRO, "chapters-md.txt": "a.md\nspecial.md\n"})
    make(book / "special.md")
    args = ["build", "html", "--book", str(book), "--out", str(tmp_path / "out")] if command == "build" else ["check-links", "--book", str(book)]
    result = run(tmp_path, *args)
    assert result.returncode == 1, result.output
    assert "chapters-md.txt:2" in result.output and words in result.output


def test_folder_symlink_loops_do_not_stop_scanning(tmp_path):
    book = write_book(tmp_path / "book", {"a.md": INTRO + "\n[d](d/)\n", "d/x.txt": "x\n", "chapters-md.txt": "a.md\n"})
    (book / "d" / "up").symlink_to("..")
    (book / "self").symlink_to(".")
    (book / "loop").symlink_to("loop")
    (book / "away").symlink_to("/")
    for args in (["build", "html", "--book", str(book), "--out", str(tmp_path / "out"), "--local"], ["check-links", "--book", str(book)]):
        result = run(tmp_path, *args)
        assert result.returncode == 0, result.output


# --- images and files named by a chapter --------------------------------------------------------------------------


IMAGES = "# Intro\n\n![pic](pic.png)\n\n<img src=\"raw.png\" alt=\"raw\">\n\n<picture><source srcset=\"ok.png 1x, set.png 2x\"><img src=\"ok.png\" alt=\"ok\"></picture>\n"


@pytest.mark.parametrize("fmt", ["html", "epub"])
def test_images_leading_out_of_the_root_are_reported_at_their_line(tmp_path, outside, fmt):
    book = write_book(tmp_path / "book", {"a.md": IMAGES, "ok.png": b"\x89PNG\r\n\x1a\n"})
    (book / "pic.png").symlink_to(outside / "secret.png")
    (book / "raw.png").symlink_to("/etc/passwd")
    (book / "set.png").symlink_to(outside / "secret.png")
    out = tmp_path / "out"
    if fmt == "epub":
        out.mkdir()
    result = run(tmp_path, "build", fmt, "--book", str(book), "--out", str(out if fmt == "html" else out / "book.epub"))
    assert result.returncode == 1, result.output
    for where in ("a.md:3:", "a.md:5:", "a.md:7:"):
        assert where in result.output, result.output
    assert_no_leak(out, "root:x:0")
    if fmt == "html":
        assert (out / "ok.png").is_file() and not (out / "pic.png").exists() and not (out / "set.png").exists()


@pytest.mark.parametrize("fmt", ["html", "epub"])
def test_an_image_that_is_a_fifo_is_reported_and_never_opened(tmp_path, fmt):
    book = write_book(tmp_path / "book", {"a.md": "# Intro\n\n![pic](pipe.png)\n"})
    os.mkfifo(book / "pipe.png")
    result = run(tmp_path, "build", fmt, "--book", str(book), "--out", str(tmp_path / ("out" if fmt == "html" else "o.epub")))
    assert result.returncode == 1 and "a.md:3:" in result.output and "FIFO" in result.output


def test_local_copies_never_follow_a_link_out_of_the_root(tmp_path, outside):
    book = write_book(tmp_path / "book", {"a.md": "# Intro\n\nThe [data](data.csv) and [pipe](pipe.csv).\n"})
    (book / "data.csv").symlink_to(outside / "secret.csv")
    os.mkfifo(book / "pipe.csv")
    result = run(tmp_path, "build", "html", "--local", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "a.md:3:" in result.output
    assert not (tmp_path / "out" / "data.csv").exists() and not (tmp_path / "out" / "pipe.csv").exists()
    assert_no_leak(tmp_path / "out")
    checked = run(tmp_path, "check-links", "--book", str(book))
    assert checked.returncode == 1 and "leaves the book's root" in checked.output and "does not exist" not in checked.output


def test_the_pdf_fetches_nothing_outside_the_root_and_nothing_remote(tmp_path, outside):
    chapter = (
        "# Intro\n\nText.\n\n"
        '<div style="background: url(leak.png)">a</div>\n\n'
        f'<object data="file://{outside}/secret.png"></object>\n\n'
        '<p style="background-image: url(https://example.invalid/x.png)">b</p>\n\n'
        '<div style="background: url(pipe.png)">c</div>\n'
    )
    book = write_book(tmp_path / "book", {"a.md": chapter})
    (book / "leak.png").symlink_to(outside / "secret.png")
    os.mkfifo(book / "pipe.png")
    out = tmp_path / "out"
    out.mkdir()
    result = run(tmp_path, "build", "pdf", "--book", str(book), "--out", str(out / "book.pdf"))
    assert result.returncode == 1, result.output  # outside the root or a FIFO: errors at their line; remote: a warning
    for where in ("a.md:5", "a.md:7", "a.md:9", "a.md:11"):
        assert where in result.output, result.output
    assert "FIFO" in result.output and "remote" in result.output
    assert_no_leak(out)


# --- book.toml -----------------------------------------------------------------------------------------------------


CONFIG_ERRORS = [
    (b"[book]\ntitle = \"ok\"\ndescription = \"caf\xe9\"\n", "book.toml:3", "UTF-8"),
    (b"[book]\ntitle = \"unterminated\n", "book.toml:2:", "TOML"),
    (b"[book]\nauthors = [1, 2]\n", "book.toml:2", "authors"),
    (b"[book]\ntitle = \"a\\u0001b\"\n", "book.toml:2", "U+0001"),
    (b"[book]\ndescription = \"a\\u2028b\"\n", "book.toml:2", "U+2028"),
    (b"[book]\nsubject = 3\n", "book.toml:2", "string"),
    (b"[book]\nlanguage = \"English (UK)\"\n", "book.toml:2", "language tag"),
    (b"[book]\nrepository = \"git@github.com:o/n.git\"\n", "book.toml:2", "http(s) URL"),
    (b"[book]\nbranch = \"my branch\"\n", "book.toml:2", "branch"),
    (b"[book]\ncover = \"missing.png\"\n", "book.toml:2", "does not exist"),
    (b"[book]\ncover = \"a.md\"\n", "book.toml:2", "not an image"),
    (b"[book]\nchapters = \"../outside/list.txt\"\n", "book.toml:2", "outside the book"),
    (b"[book]\nchapters = \"nope.txt\"\n", "book.toml:2", "does not exist"),
    (b"[links]\ntimeout = 0\n", "book.toml:2", "more than 0"),
    (b"[links]\nretries = -1\n", "book.toml:2", "at least 0"),
    (b"[links]\nhost_delay = nan\n", "book.toml:2", "host_delay"),
    (b"[links]\nexclude = \"^https://x\"\n", "book.toml:2", "list of regular expressions"),
    (b"[links]\nexclude = [1]\n", "book.toml:2", "list of regular expressions"),
    (b"[links]\nretries = true\n", "book.toml:2", "whole number"),
    (b"book = \"x\"\n", "book.toml:1", "table"),
    (b"[book]\ntitle = \"x\"\n[colophon]\n", "book.toml:3", "unknown table"),
]


@pytest.mark.parametrize("config, where, words", CONFIG_ERRORS, ids=[c[2] + str(i) for i, c in enumerate(CONFIG_ERRORS)])
def test_configuration_errors_name_the_line_and_exit_2(tmp_path, outside, config, where, words):
    book = write_book(tmp_path / "book", {"a.md": INTRO, "book.toml": config})
    result = run(tmp_path, "build", "html", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.output
    assert where in result.output and words in result.output, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target", ["outside", "fifo", "large"])
def test_a_book_toml_that_is_no_plain_file_is_refused(tmp_path, outside, target):
    book = write_book(tmp_path / "book", {"a.md": INTRO})
    if target == "outside":
        (outside / "book.toml").write_text(f'[book]\ntitle = "{MARKER}"\n', encoding="utf-8")
        (book / "book.toml").symlink_to(outside / "book.toml")
    elif target == "fifo":
        os.mkfifo(book / "book.toml")
    else:
        (book / "book.toml").write_text("# " + "x" * (2 * 1024 * 1024) + "\n", encoding="utf-8")
    result = run(tmp_path, "build", "html", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "book.toml" in result.output and MARKER not in result.output


def test_a_cover_linked_out_of_the_root_is_refused(tmp_path, outside):
    book = write_book(tmp_path / "book", {"a.md": INTRO, "book.toml": '[book]\ntitle = "T"\ncover = "cover.png"\n'})
    (book / "cover.png").symlink_to(outside / "secret.png")
    result = run(tmp_path, "build", "epub", "--book", str(book), "--out", str(tmp_path / "o.epub"))
    assert result.returncode == 2 and "book.toml:3" in result.output and "outside the book's root" in result.output


@pytest.mark.parametrize("book_arg", ["missing", "file", "loop"])
def test_an_unusable_book_folder_is_one_sentence(tmp_path, book_arg):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    (tmp_path / "loop").symlink_to("loop")
    result = run(tmp_path, "build", "html", "--book", str(tmp_path / book_arg), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and book_arg in result.output


# --- the chapter list ----------------------------------------------------------------------------------------------


LIST_PROBLEMS = [
    ("a.md\nsub\n", 1, "chapters-md.txt:2", "is a folder"),
    ("a.md\n/etc/passwd\n", 1, "chapters-md.txt:2", "absolute path"),
    ("a.md\n../outside/secret.md\n", 1, "chapters-md.txt:2", "outside the book"),
    ("a.md\nnotes.txt\n", 1, "chapters-md.txt:2", "not a markdown file"),
    ("a.md\n\ufeffb.md\n", 1, "chapters-md.txt:2", "byte-order mark"),
    ("a.md\nb.md \t\n", 0, "chapters-md.txt:2", "spaces or tabs"),
    ("# nothing listed\n\n", 2, "chapters-md.txt", "names no chapter"),
    (b"a.md\n\xff.md\n", 2, "chapters-md.txt:2", "UTF-8"),
]


@pytest.mark.parametrize("listing, code, where, words", LIST_PROBLEMS, ids=[p[3] for p in LIST_PROBLEMS])
def test_chapter_list_problems_name_the_line(tmp_path, outside, listing, code, where, words):
    book = write_book(tmp_path / "book", {"a.md": INTRO, "b.md": "# B\n", "sub/c.md": "# C\n", "notes.txt": "n\n", "chapters-md.txt": listing})
    result = run(tmp_path, "build", "html", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == code, result.output
    assert where in result.output and words in result.output, result.output
    if code != 2:
        assert_no_leak(tmp_path / "out", "root:x:0")


def test_bom_and_crlf_are_read_as_plain_text(tmp_path):
    chapter = "# Intro\n\nSee [the section](#part) and [b](b.md#b).\n\n## Part\n\n```\ncode\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    files = {"a.md": chapter, "b.md": "# B\n", "chapters-md.txt": "a.md\nb.md\n", "book.toml": '[book]\ntitle = "T"\nauthors = ["A"]\n'}
    plain = write_book(tmp_path / "lf", files)
    crlf = write_book(tmp_path / "crlf", {name: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode() for name, text in files.items()})
    pages = []
    for book in (plain, crlf):
        result = run(tmp_path, "build", "html", "--book", str(book), "--out", str(tmp_path / f"{book.name}-out"))
        assert result.returncode == 0, result.output
        pages.append((tmp_path / f"{book.name}-out" / "a.html").read_text(encoding="utf-8"))
    assert pages[0] == pages[1]
    broken = {name: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode() for name, text in files.items()}
    broken["a.md"] = broken["a.md"].replace(b"#part", b"#nope")
    write_book(tmp_path / "crlf2", broken)
    result = run(tmp_path, "check-links", "--book", str(tmp_path / "crlf2"))
    assert result.returncode == 1 and "a.md:3:" in result.output


def test_control_characters_in_a_chapter_are_a_warning_not_a_crash(tmp_path):
    book = write_book(tmp_path / "book", {"a.md": "# Title\x01 here\n\nText \x1b[31m red.\n\n## Part\x02\n"})
    result = run(tmp_path, "build", "epub", "--book", str(book), "--out", str(tmp_path / "o.epub"))
    assert result.returncode == 0, result.output
    assert "a.md:1:" in result.output and "control character" in result.output


def test_srcset_candidates_are_copied_checked_and_moved(tmp_path):
    chapter = '# A\n\n<picture><source srcset="img/d.png 1x, img/e.png 2x"><img src="img/d.png" alt="d"></picture>\n'
    book = write_book(tmp_path / "book", {"a.md": chapter, "img/d.png": b"\x89PNG d", "img/e.png": b"\x89PNG e"})
    result = run(tmp_path, "build", "html", "--book", str(book), "--out", str(tmp_path / "out"))
    assert result.returncode == 0 and (tmp_path / "out" / "img" / "e.png").is_file(), result.output
    (book / "img" / "e.png").unlink()
    result = run(tmp_path, "check-links", "--book", str(book))
    assert result.returncode == 1 and "a.md:3:" in result.output and "img/e.png" in result.output
    (book / "img" / "e.png").write_bytes(b"\x89PNG e")
    result = run(tmp_path, "mv", "--book", str(book), str(book / "img"), str(book / "pics"))
    assert result.returncode == 0, result.output
    assert 'srcset="pics/d.png 1x, pics/e.png 2x"' in (book / "a.md").read_text(encoding="utf-8")
