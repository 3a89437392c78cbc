"""Outputs are never destroyed, interrupted builds leave nothing behind, and the exit codes keep their contract.

Every case runs the real CLI in a subprocess under a deadline (issue 14, items 1, 2 and 7)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import psutil
import pytest
from click.testing import CliRunner

from tests.conftest import REPO, write_book
from tests.pdf_check import assert_valid_pdf

TIMEOUT = 120


def _env(tmp: Path | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


def tools(*args, cwd=None, tmp=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools", *map(str, args)], cwd=cwd, env=_env(tmp), capture_output=True, text=True, timeout=TIMEOUT)


def tree(path: Path) -> dict:
    """Every file under `path` (or the file itself) -> its SHA-256; what 'byte-identical' compares."""
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    if not path.exists():
        return {}
    return {p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.rglob("*")) if p.is_file()}


def small_book(root: Path) -> Path:
    return write_book(root, {"README.md": "# Small\n\nSee [intro](intro.md).\n", "intro.md": "# Intro\n\nText.\n"})


def big_book(root: Path, chapters: int = 12) -> Path:
    section = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt. " * 25
    files = {f"ch{i:02}.md": f"# Chapter {i}\n\n" + "\n\n".join(f"## Part {j}\n\n{section}" for j in range(6)) for i in range(chapters)}
    return write_book(root, files)


def assert_refused(result, *words) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for word in words:
        assert word in result.stderr, result.stderr


# --- 1. the output guard -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "pdf", "epub", "all"])
def test_empty_out_is_refused(tmp_path, fmt):
    book = small_book(tmp_path / "book")
    (tmp_path / "keep.txt").write_text("mine")
    before = tree(tmp_path)
    assert_refused(tools("build", fmt, "--book", book, "--out", "", cwd=tmp_path), "--out ''", "empty")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("fmt", ["html", "pdf", "all"])
def test_book_root_and_its_parents_are_refused(tmp_path, fmt):
    book = small_book(tmp_path / "repo" / "book")
    before = tree(tmp_path)
    for out in (book, book.parent, tmp_path, Path("/")):
        assert_refused(tools("build", fmt, "--book", book, "--out", out, cwd=tmp_path), str(out) if out != Path("/") else "'/'")
    assert_refused(tools("build", fmt, "--book", "repo/book", "--out", ".", cwd=tmp_path), "--out '.'")
    assert tree(tmp_path) == before


def test_the_current_folder_is_refused_even_outside_the_book(tmp_path):
    book = small_book(tmp_path / "book")
    here = tmp_path / "work"
    here.mkdir()
    assert_refused(tools("build", "html", "--book", book, "--out", ".", cwd=here), "current folder")
    assert list(here.iterdir()) == []


def test_a_folder_the_tool_did_not_make_is_refused(tmp_path):
    book = small_book(tmp_path / "book")
    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    before = tree(mine)
    assert_refused(tools("build", "html", "--book", book, "--out", mine), "did not make", ".tools-output")
    assert_refused(tools("serve", "--book", book, "--out", mine, "--port", "0"), "did not make")
    assert tree(mine) == before


@pytest.mark.parametrize("fmt", ["pdf", "epub"])
def test_a_file_the_tool_did_not_write_is_refused(tmp_path, fmt):
    book = small_book(tmp_path / "book")
    user = tmp_path / f"user.{fmt}"
    user.write_bytes(b"%PDF-1.7\n% a user's own PDF\n" if fmt == "pdf" else b"PK\x03\x04 not ours")
    for target in (user, book / "intro.md", book / "README.md"):
        before = tree(target)
        assert_refused(tools("build", fmt, "--book", book, "--out", target), "did not write")
        assert tree(target) == before


def test_a_file_where_the_site_goes_is_refused(tmp_path):
    book = small_book(tmp_path / "book")
    assert_refused(tools("build", "html", "--book", book, "--out", book / "intro.md"), "not a folder")
    assert_refused(tools("build", "pdf", "--book", book, "--out", book / "intro.md" / "x.pdf"), "not a folder")
    (tmp_path / "folder").mkdir()
    assert_refused(tools("build", "pdf", "--book", book, "--out", tmp_path / "folder"), "is a folder")


def test_a_symlinked_output_folder_is_refused(tmp_path):
    book = small_book(tmp_path / "book")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    assert_refused(tools("build", "html", "--book", book, "--out", tmp_path / "link"), "symbolic link")
    assert_refused(tools("build", "pdf", "--book", book, "--out", tmp_path / "link" / "b.pdf"), "symbolic link")
    assert list(elsewhere.iterdir()) == []


def test_a_read_only_output_folder_is_a_sentence(tmp_path):
    book = small_book(tmp_path / "book")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    immutable = os.geteuid() == 0  # root ignores modes: the immutable flag makes the folder read-only for root too
    if immutable:
        done = subprocess.run(["chattr", "+i", str(locked)], capture_output=True, text=True)
        assert done.returncode == 0, f"chattr +i failed: {done.stderr}"
    try:
        assert_refused(tools("build", "pdf", "--book", book, "--out", locked / "b.pdf"), "not writable")
        assert list(locked.iterdir()) == []
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(locked)], capture_output=True)
        locked.chmod(0o755)


def test_an_output_inside_a_site_is_refused(tmp_path):
    book = small_book(tmp_path / "book")
    site = tmp_path / "site"
    assert tools("build", "html", "--book", book, "--out", site).returncode == 0
    assert_refused(tools("build", "pdf", "--book", book, "--out", site / "book.pdf"), "a site the tool built")


def test_book_toml_output_follows_the_same_rules(tmp_path):
    book = small_book(tmp_path / "book")
    for value in (".", ".."):
        (book / "book.toml").write_text(f'[book]\noutput = "{value}"\n')
        assert_refused(tools("build", "html", "--book", book, cwd=tmp_path), "book.toml", "output")


def test_what_the_tool_wrote_is_replaced(tmp_path):
    book = small_book(tmp_path / "book")
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "empty.pdf").write_bytes(b"")
    for fmt, out in (("html", tmp_path / "empty-dir"), ("pdf", tmp_path / "empty.pdf"), ("all", tmp_path / "all")):
        assert tools("build", fmt, "--book", book, "--out", out).returncode == 0
        again = tools("build", fmt, "--book", book, "--out", out)  # the tool's own output: replaced
        assert again.returncode == 0, again.stderr
    stamp = json.loads((tmp_path / "empty-dir" / ".tools-output").read_text())
    assert stamp["tool"] == "mlbook-tools" and stamp["format"] == "html"
    assert tools("build", "epub", "--book", book, "--out", tmp_path / "all" / "book.epub").returncode == 0
    assert tools("build", "pdf", "--book", book, "--out", tmp_path / "all" / "book.pdf").returncode == 0
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith((".tmp", ".lock", ".old"))]


def test_a_site_inside_the_book_is_never_read_back(tmp_path):
    from tools.book.files import scan_files

    book = small_book(tmp_path / "book")
    assert tools("build", "html", "--book", book, "--out", book / "_site").returncode == 0
    assert tools("build", "html", "--book", book, "--out", book / "other").returncode == 0
    files, dirs = scan_files(book, book / "other")
    assert not [d for d in dirs if d.startswith(("_site", "other"))]
    assert not [f for f in files if f.startswith(("_site/", "other/"))]


# --- 2. interrupts -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A 12-chapter book and a first build of everything (the last good outputs), with how long it took."""
    base = tmp_path_factory.mktemp("interrupts")
    book = big_book(base / "book")
    started = time.monotonic()
    result = tools("build", "all", "--book", book, "--out", base / "out", "-j", "2", "--no-cache")
    assert result.returncode == 0, result.stderr
    return book, base / "out", time.monotonic() - started


def _descendants(pid: int) -> set:
    try:
        return set(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return set()


def _interrupt(tmp_path, book, args, signum, delay, group):
    """Start a build, send `signum` after `delay` seconds; (result, every child process it had, stdout+stderr)."""
    private = tmp_path / "tmp"
    private.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "tools", "build", *map(str, args), "--book", str(book), "-j", "2", "--no-cache"]
    process = subprocess.Popen(command, env=_env(private), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    children: set = set()
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and process.poll() is None:
        children |= _descendants(process.pid)
        time.sleep(0.02)
    if process.poll() is not None:
        out, err = process.communicate()
        return None, children, out + err
    children |= _descendants(process.pid)
    (os.killpg if group else os.kill)(process.pid, signum)
    out, err = process.communicate(timeout=TIMEOUT)
    return process.returncode, children, out + err


@pytest.mark.parametrize("fmt", ["pdf", "all"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", [0.15, 0.45, 0.75])
def test_an_interrupted_build_changes_nothing_and_leaves_nothing(built, tmp_path, fmt, signum, moment):
    book, out, took = built
    target = out / "book.pdf" if fmt == "pdf" else out
    group = moment != 0.45  # a terminal's Ctrl-C signals the whole group; `kill` signals the main process only
    for attempt in range(4):  # a loaded machine may finish before the signal: try earlier
        before = tree(out)  # what the last finished build wrote
        code, children, output = _interrupt(tmp_path, book, [fmt, "--out", target], signum, took * moment / (2 ** attempt), group)
        if code is not None and "stopped after writing" not in output:  # else it had put every output in place: earlier
            break
    assert code == (130 if signum == signal.SIGINT else 143), output
    assert "Interrupted: the build stopped; the last good output is unchanged." in output
    assert "Traceback" not in output
    assert tree(out) == before  # byte-identical
    leftovers = [p.name for p in out.parent.rglob("*") if p.name.endswith((".tmp", ".lock", ".old")) or p.name.startswith(".tmp")]
    assert leftovers == []
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing left in the system temp folder
    time.sleep(0.2)
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"worker processes outlived the build: {alive}"


def test_two_builds_into_one_output_never_mix(built, tmp_path):
    book, _, _ = built
    out = tmp_path / "shared"
    command = [sys.executable, "-m", "tools", "build", "all", "--book", str(book), "--out", str(out), "-j", "2"]
    first = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = [(p.wait(TIMEOUT), *p.communicate()) for p in (first, second)]
    for code, stdout, stderr in results:  # the second waits for the first (one line saying so when it had to), then builds
        assert code == 0, stderr
        assert "Traceback" not in stdout + stderr
        assert stderr.count("Blocking waiting for file lock") <= 1
    assert (out / "html" / "index.html").is_file() and (out / "html" / ".tools-output").is_file()
    assert (out / "book.pdf").read_bytes().startswith(b"%PDF") and (out / "book.epub").is_file()
    assert_valid_pdf(out / "book.pdf")
    assert not [p.name for p in out.rglob("*") if p.name.endswith((".tmp", ".lock", ".old"))]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


# --- 3. exit codes -----------------------------------------------------------------------------------------------


def test_help_lists_the_exit_codes():
    result = tools("--help")
    assert result.returncode == 0
    for code in ("Exit codes", "0 ", "1 ", "2 ", "3 ", "130", "143"):
        assert code in result.stdout
    assert "130" in tools("build", "--help").stdout


def test_usage_errors_exit_2():
    assert_refused(tools("build", "nope"), "nope")
    assert_refused(tools("no-such-command"), "no-such-command")


def test_serve_port_out_of_range_and_taken(tmp_path):
    book = small_book(tmp_path / "book")
    assert_refused(tools("serve", "--book", book, "--port", "70000", "--out", tmp_path / "s"), "70000")
    assert_refused(tools("serve", "--book", book, "--port", "-1", "--out", tmp_path / "s"), "-1")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert_refused(tools("serve", "--book", book, "--port", port, "--out", tmp_path / "s"), f"--port {port}", "taken")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_cleanly_on_a_signal(tmp_path, signum):
    book = small_book(tmp_path / "book")
    site = tmp_path / "site"
    command = [sys.executable, "-m", "tools", "serve", "--book", str(book), "--out", str(site), "--port", "0"]
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (site / "index.html").is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    process.send_signal(signum)
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == (130 if signum == signal.SIGINT else 143), err
    assert "Traceback" not in out + err and "Interrupted" in err
    assert (site / "index.html").is_file() and not list(tmp_path.glob(".*.lock"))


def test_a_refused_read_that_escapes_is_a_sentence():
    from tools.cli import main
    from tools.core.safe_io import UnsafeFile

    @click.command("unsafe")
    def unsafe():
        raise UnsafeFile("chapters/x.md", "is a FIFO (named pipe), not a regular file; it is not read")

    main.add_command(unsafe)
    try:
        result = CliRunner().invoke(main, ["unsafe"])
    finally:
        main.commands.pop("unsafe")
    assert result.exit_code == 2
    assert "'chapters/x.md' is a FIFO" in result.output and "Traceback" not in result.output


def test_an_internal_error_is_one_sentence_and_a_report(tmp_path, monkeypatch):
    import tempfile

    from tools.cli import main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    @click.command("explode")
    def explode():
        raise ValueError("something impossible")

    main.add_command(explode)
    try:
        result = CliRunner().invoke(main, ["explode"])
    finally:
        main.commands.pop("explode")
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert "internal error: ValueError: something impossible. This is a bug in tools" in result.output
    reports = list(tmp_path.glob("tools-crash-*.txt"))
    assert len(reports) == 1 and str(reports[0]) in result.output
    assert "Traceback" in reports[0].read_text() and "something impossible" in reports[0].read_text()


def test_an_os_error_naming_a_file_is_a_sentence(tmp_path):
    from tools.cli import main

    @click.command("deny")
    def deny():
        raise PermissionError(13, "Permission denied", "/somewhere/book.pdf")

    main.add_command(deny)
    try:
        result = CliRunner().invoke(main, ["deny"])
    finally:
        main.commands.pop("deny")
    assert result.exit_code == 2
    assert "cannot write '/somewhere/book.pdf': Permission denied" in result.output
    assert "Traceback" not in result.output
