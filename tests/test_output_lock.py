"""Two commands writing one output: the second waits for the first with one line saying so (as cargo does),
`--no-wait` fails at once with exit 2, and Ctrl-C while waiting ends it cleanly with 130. Real `tools build` and
`tools serve` processes; the first is held still with SIGSTOP once it holds the lock, so the second always meets it."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, write_book

TIMEOUT = 120


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")


def _book(tmp_path: Path) -> Path:
    return write_book(tmp_path / "book", {"README.md": "# Home\n\nSee [a](a.md).\n", "a.md": "# A\n\nWords.\n"})


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tools", *args], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _holding(lock: Path, process: subprocess.Popen) -> None:
    """Wait until `process` holds the lock (it writes its pid into the lock file once it does)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            if f"pid {process.pid}," in lock.read_text(encoding="utf-8"):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError("the first command never took the lock")


def _line(process: subprocess.Popen, pattern: str) -> str:
    """Read standard error until a line matches `pattern` (the waiting command says why it waits)."""
    assert process.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if re.search(pattern, line):
            return line
        assert line or process.poll() is None, "the command ended without the line"
    raise AssertionError(f"no line matching {pattern}")


@pytest.fixture
def first_build_held(tmp_path):
    """A `tools build html` that holds the lock on `out`, stopped (SIGSTOP) until the test lets it go on."""
    book, out = _book(tmp_path), tmp_path / "site"
    first = _start("build", "html", "--book", str(book), "--out", str(out), "-j", "1")
    _holding(out.parent / ".site.lock", first)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        yield book, out, first
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.communicate(timeout=TIMEOUT)


def test_a_second_build_waits_for_the_first_then_builds(first_build_held):
    book, out, first = first_build_held
    second = _start("build", "html", "--book", str(book), "--out", str(out), "-j", "1")
    line = _line(second, "Blocking")
    assert line.strip() == f"Blocking waiting for file lock on {out}: another build is writing it (held by pid {first.pid}, tools build)."
    time.sleep(0.3)
    assert second.poll() is None  # still waiting: the first holds the lock
    os.kill(first.pid, signal.SIGCONT)
    assert first.wait(TIMEOUT) == 0, first.communicate()
    stdout, stderr = second.communicate(timeout=TIMEOUT)
    assert second.returncode == 0, stderr
    assert "Traceback" not in stdout + stderr and "Blocking" not in stderr  # said once
    assert (out / "a.html").is_file() and (out / ".tools-output").is_file()
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith((".lock", ".tmp", ".old"))]


def test_no_wait_fails_at_once_with_exit_2(first_build_held):
    book, out, first = first_build_held
    result = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(book), "--out", str(out), "--no-wait"], env=_env(),
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 2, result.stderr
    assert f"{out}: another build is writing this output right now (held by pid {first.pid}, tools build); run again without --no-wait to wait for it, or choose another --out." in result.stderr
    assert "Traceback" not in result.stdout + result.stderr and "Blocking" not in result.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_while_waiting_ends_cleanly(first_build_held, signum):
    book, out, first = first_build_held
    second = _start("build", "html", "--book", str(book), "--out", str(out), "-j", "1")
    _line(second, "Blocking")
    os.killpg(second.pid, signum)  # a terminal's Ctrl-C reaches the whole group
    stdout, stderr = second.communicate(timeout=TIMEOUT)
    assert second.returncode == (130 if signum == signal.SIGINT else 143), stderr
    assert "Traceback" not in stdout + stderr
    assert "Interrupted: the build stopped; the last good output is unchanged." in stderr
    os.kill(first.pid, signal.SIGCONT)
    assert first.wait(TIMEOUT) == 0  # the first one finishes as if nothing happened
    assert (out / "a.html").is_file()
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith((".lock", ".tmp", ".old"))]


def test_a_build_waits_for_a_preview_server_on_its_folder(tmp_path):
    book, out = _book(tmp_path), tmp_path / "preview"
    server = _start("serve", "--book", str(book), "--out", str(out), "--port", "0")
    try:
        _holding(tmp_path / ".preview.lock", server)
        refused = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(book), "--out", str(out), "--no-wait"], env=_env(),
                                 capture_output=True, text=True, timeout=TIMEOUT)
        assert refused.returncode == 2 and f"(held by pid {server.pid}, tools serve)" in refused.stderr, refused.stderr
        waiting = _start("build", "html", "--book", str(book), "--out", str(out))
        _line(waiting, rf"Blocking waiting for file lock on {re.escape(str(out))}: another build is writing it \(held by pid {server.pid}, tools serve\)\.")
        os.killpg(server.pid, signal.SIGINT)
        assert server.wait(TIMEOUT) == 130
        stdout, stderr = waiting.communicate(timeout=TIMEOUT)
        assert waiting.returncode == 0 and "Traceback" not in stdout + stderr, stderr
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
