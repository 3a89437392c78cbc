"""Issue 14 for the commands beyond build: check-links (--external, --html, pathological markdown), check-programs,
mv and mv-links, fix-tables and check-style, on careless and hostile input. Each test runs the real CLI in a
subprocess under a deadline and asserts the exit status, the file (and line) named, no traceback, and sources left
byte-identical where they must be. Network tests talk to servers on 127.0.0.1 only."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, write_book

pytestmark = pytest.mark.xdist_group("safety-commands")


def run_tools(*args: str, cwd: Path | None = None, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    done = subprocess.run([sys.executable, "-m", "tools", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=environment)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def tree_hash(root: Path) -> dict[str, str]:
    """Every entry under `root` (not following links) and what it holds, to compare a tree before and after."""
    seen: dict[str, str] = {}
    for current, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(current) / name
            rel = path.relative_to(root).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = "link:" + os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + f":{stat.S_IMODE(info.st_mode):o}"
            else:
                seen[rel] = f"mode:{stat.S_IFMT(info.st_mode):o}"
    return seen


# ---------------------------------------------------------------- check-links --external: total deadlines


class RawServer:
    """A TCP server on 127.0.0.1 whose connections are handed to `serve(conn)` in threads (raw bytes, no http.server)."""

    def __init__(self, serve) -> None:
        self.serve = serve
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn) -> None:
        try:
            conn.settimeout(30)
            request = conn.recv(65536)
            if request.startswith(b"HEAD") and self.serve not in (redirect_loop, never_answer):
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return  # so that the checker asks again with GET, the request under test
            self.serve(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()


def trickle_body(conn, stop) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b"x")
        time.sleep(1)


def trickle_status(conn, stop) -> None:
    for byte in b"HTTP/1.1 200 OK\r\n" * 100:
        if stop.is_set():
            return
        conn.sendall(bytes([byte]))
        time.sleep(1)


def never_answer(conn, stop) -> None:
    stop.wait(60)


def endless_headers(conn, stop) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    number = 0
    while not stop.is_set():
        number += 1
        conn.sendall(b"X-Header-%d: value\r\n" % number)


def slow_headers(conn, stop) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.is_set():
        conn.sendall(b"X-Slow: 1\r\n")
        time.sleep(0.5)


def redirect_loop(conn, stop) -> None:
    conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /again?" + str(time.monotonic_ns()).encode() + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def huge_body(conn, stop) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
    chunk = b"<p>" + b"y" * 65536
    while not stop.is_set():
        conn.sendall(chunk)


def test_external_https_handshake_has_the_same_deadline(tmp_path):
    with RawServer(never_answer) as server:
        url = server.base.replace("http://", "https://")
        root = external_book(tmp_path, url)
        done, rows, elapsed = check_external(root, tmp_path)
    row = rows[url + "/page"]
    assert elapsed < 20
    assert row["status"] == "failed" and "no answer within 1s" in row["message"], row


def external_book(tmp_path: Path, url: str, timeout: float = 1) -> Path:
    return write_book(tmp_path / "book", {
        "README.md": f"# Links\n\nSee [the page]({url}/page).\n",
        "book.toml": f"[book]\nrepository_path = \"\"\n\n[links]\nhost_delay = 0.0\ntimeout = {timeout}\nretries = 1\nbackoff = 0.01\n",
    })


def check_external(root: Path, tmp_path: Path, deadline: float = 30) -> tuple[subprocess.CompletedProcess, dict, float]:
    started = time.monotonic()
    done = run_tools("check-links", "--book", str(root), "--external", "--format", "json", "--cache-dir", str(tmp_path / "cache"), timeout=deadline)
    elapsed = time.monotonic() - started
    rows = {row["url"]: row for row in json.loads(done.stdout)["external"]}
    return done, rows, elapsed


@pytest.mark.parametrize("serve, words", [
    (trickle_body, "timed out after 1s"),
    (trickle_status, "timed out after 1s"),
    (never_answer, "no answer within 1s"),
    (slow_headers, "timed out after 1s"),
    (endless_headers, "headers"),
    (redirect_loop, "redirects"),
    (huge_body, ""),
])
def test_external_requests_have_a_total_deadline(tmp_path, serve, words):
    with RawServer(serve) as server:
        root = external_book(tmp_path, server.base)
        done, rows, elapsed = check_external(root, tmp_path)
    row = rows[server.base + "/page"]
    assert elapsed < 20, elapsed  # one URL: at most HEAD, GET and a retry, 1 s each (the interpreter starts in ~1 s)
    if serve is huge_body:
        assert row["status"] == "ok"  # only the first 64 KiB is read
        return
    assert row["status"] == "failed", row
    assert words in row["message"], row
    assert done.returncode == 0  # a URL that could not be checked is a warning
    assert "README.md:3" in done.stderr + done.stdout or "README.md" in json.dumps(row["locations"])


# ---------------------------------------------------------------- check-programs


def peak_rss_kib(done: subprocess.CompletedProcess) -> int:
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1])
    raise AssertionError("no /usr/bin/time output: " + done.stderr[-500:])


def test_check_programs_keeps_a_bounded_tail_of_a_loud_script(tmp_path):
    if not Path("/usr/bin/time").exists():
        pytest.skip("/usr/bin/time is not installed")
    root = write_book(tmp_path / "book", {
        "README.md": "# Loud\n\nRun [loud.py](loud.py).\n",
        "loud.py": "import sys\nif __name__ == '__main__':\n    line = b'x' * 1023 + b'\\n'\n    for _ in range(200 * 1024):\n        sys.stdout.buffer.write(line)\n    print('usage: loud')\n",
    })
    environment = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "tools", "check-programs", "--book", str(root), "--no-shellcheck"], capture_output=True, text=True, timeout=120, env=environment)
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert peak_rss_kib(done) < 200 * 1024  # the script printed 200 MiB


def test_check_programs_kills_a_hanging_script_and_its_group(tmp_path):
    marker = tmp_path / "still-running"
    root = write_book(tmp_path / "book", {
        "README.md": "# Hang\n\nRun [hang.py](hang.py) and [stubborn.py](stubborn.py).\n",
        "hang.py": f"import subprocess, sys, time\nif __name__ == '__main__':\n    subprocess.Popen([sys.executable, '-c', 'import time, pathlib; time.sleep(6); pathlib.Path({str(marker)!r}).write_text(\"x\")'])\n    time.sleep(600)\n",
        "stubborn.py": "import signal, time\nif __name__ == '__main__':\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    print('usage', flush=True)\n    time.sleep(600)\n",
    })
    started = time.monotonic()
    done = run_tools("check-programs", "--book", str(root), "--no-shellcheck", "--timeout", "2", timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode == 1
    text = done.stdout + done.stderr
    assert "README.md:3" in text and "within 2 s" in text
    time.sleep(6)
    assert not marker.exists()  # the child the script started was killed with it


@pytest.mark.parametrize("make, words", [
    ("fifo", "FIFO"),
    ("outside", "outside"),
    ("large", "larger than"),
])
def test_check_programs_refuses_unsafe_scripts(tmp_path, make, words):
    ran = tmp_path / "ran"
    outside = tmp_path / "outside.py"
    outside.write_text(f"import pathlib\nif __name__ == '__main__':\n    pathlib.Path({str(ran)!r}).write_text('x')\n", encoding="utf-8")
    root = write_book(tmp_path / "book", {"README.md": "# S\n\nSee\n[the script](tool.py).\n"})
    script = root / "tool.py"
    if make == "fifo":
        os.mkfifo(script)
    elif make == "outside":
        script.symlink_to(outside)
    else:
        script.write_text(f"import pathlib\nif __name__ == '__main__':\n    pathlib.Path({str(ran)!r}).write_text('x')\n" + "#" * (17 * 1024 * 1024) + "\n", encoding="utf-8")
    before = tree_hash(root)
    done = run_tools("check-programs", "--book", str(root), "--no-shellcheck", "--timeout", "5", timeout=60)
    text = done.stdout + done.stderr
    assert done.returncode in (1, 2), text
    assert "README.md:4" in text or "tool.py" in text, text
    if done.returncode == 1:
        assert "README.md:4" in text and (words in text or "does not exist" in text), text
    assert not ran.exists()
    assert tree_hash(root) == before


# ---------------------------------------------------------------- mv and mv-links: all files or none


MV_BOOK = {
    "book.toml": '[book]\nrepository_path = ""\n',
    "chapters-md.txt": "README.md\nguide/setup.md\nguide/use.md\n",
    "README.md": "# Home\n\nRead [setup](guide/setup.md) and [use](guide/use.md#top).\n",
    "guide/setup.md": "# Setup\n\nThen [use](use.md) and [home](../README.md).\n",
    "guide/use.md": "# Top\n\nBack to [setup](setup.md).\n",
}


@pytest.fixture
def mv_book(tmp_path):
    root = write_book(tmp_path / "book", MV_BOOK)
    (tmp_path / "outside").mkdir()
    yield root
    for current, dirs, _files in os.walk(tmp_path):  # give pytest its temp folder back
        for name in dirs:
            os.chmod(os.path.join(current, name), 0o755)


def refused(root: Path, *args: str, words: str, code: int = 2, cwd: Path | None = None) -> subprocess.CompletedProcess:
    before = tree_hash(root.parent)
    done = run_tools(*args, "--book", str(root), "--no-cache", cwd=cwd or root)
    assert done.returncode == code, done.stdout + done.stderr
    assert words in done.stdout + done.stderr, done.stdout + done.stderr
    assert tree_hash(root.parent) == before
    return done


def test_mv_refuses_a_read_only_file_to_rewrite(mv_book):
    os.chmod(mv_book / "README.md", 0o444)
    refused(mv_book, "mv", "guide/use.md", "guide/usage.md", words="README.md: the file is read-only")


def test_mv_refuses_a_file_in_a_read_only_folder(mv_book):
    os.chmod(mv_book / "guide", 0o555)
    refused(mv_book, "mv", "README.md", "HOME.md", words="guide/setup.md: the folder 'guide' is read-only")


def test_mv_refuses_a_destination_folder_it_cannot_create(mv_book):
    (mv_book / "locked").mkdir()
    os.chmod(mv_book / "locked", 0o555)
    refused(mv_book, "mv", "guide/use.md", "locked/deeper/use.md", words="locked' is read-only")


def test_mv_links_refuses_a_read_only_file_to_rewrite(mv_book):
    os.rename(mv_book / "guide" / "use.md", mv_book / "guide" / "usage.md")
    os.chmod(mv_book / "guide" / "setup.md", 0o444)
    refused(mv_book, "mv-links", "guide/use.md", "guide/usage.md", words="guide/setup.md: the file is read-only")


@pytest.mark.parametrize("src, dst, words", [
    ("", "guide/x.md", "SRC is empty"),
    ("guide/use.md", "", "DST is empty"),
    ("guide/use.md", "../outside/use.md", "outside the book's root folder"),
    ("../outside", "moved", "outside the book's root folder"),
    ("guide/use.md", "elsewhere/use.md", "leads outside the book's root folder"),
    ("guide/use.md", "guide/setup.md", "already exists"),
    ("guide", "guide/sub/guide", "into itself"),
    ("guide/use.md", "guide/use.md", "the same"),
    ("guide/use.md", "./guide/../guide/use.md", "the same"),
    (".", "new", "root folder itself"),
    ("pipe.md", "pipe2.md", "FIFO"),
    ("guide/use.md", "chapters-md.txt", "chapter list"),
    ("guide/use.md", "book.toml", "configuration"),
    ("book.toml", "config.toml", "configuration"),
])
def test_mv_refuses_bad_paths(mv_book, src, dst, words):
    os.mkfifo(mv_book / "pipe.md")
    (mv_book / "elsewhere").symlink_to(mv_book.parent / "outside")
    refused(mv_book, "mv", src, dst, words=words)


def test_mv_refuses_a_fifo_chapter_without_hanging(mv_book):
    os.mkfifo(mv_book / "guide" / "stuck.md")
    done = run_tools("mv", "guide/use.md", "guide/usage.md", "--book", str(mv_book), "--no-cache", cwd=mv_book, timeout=60)
    assert done.returncode == 0, done.stderr  # the FIFO is left alone, never opened; the rest moves
    assert stat.S_ISFIFO(os.lstat(mv_book / "guide" / "stuck.md").st_mode)
    assert (mv_book / "guide" / "usage.md").is_file()


def test_mv_dry_run_writes_nothing(mv_book):
    before = tree_hash(mv_book.parent)
    done = run_tools("mv", "--dry-run", "guide", "manual", "--book", str(mv_book), cwd=mv_book, env={"BOOK_CACHE_DIR": ""})
    assert done.returncode == 0 and "+++ b/manual/setup.md" not in done.stdout and "b/README.md" in done.stdout
    assert tree_hash(mv_book.parent) == before


def test_mv_rolls_back_when_a_write_fails_half_way(mv_book, monkeypatch):
    from click.testing import CliRunner

    from tools.cli import main

    before = tree_hash(mv_book.parent)
    real = os.replace
    calls = []

    def flaky(a, b):
        calls.append(b)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(a, b)

    monkeypatch.setattr(os, "replace", flaky)
    monkeypatch.chdir(mv_book)
    result = CliRunner().invoke(main, ["mv", "guide", "manual", "--book", str(mv_book), "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "could not be written (No space left on device)" in result.output and "restored" in result.output
    assert "Traceback" not in result.output
    assert tree_hash(mv_book.parent) == before


def test_mv_refuses_a_file_changed_after_planning(mv_book, monkeypatch):
    from click.testing import CliRunner

    from tools.cli import main
    from tools.edit import move_write

    real = move_write.write_changes

    def meddle(plan):
        (mv_book / "README.md").write_text("# Home\n\nSomeone else edited this.\n", encoding="utf-8")
        return real(plan)

    monkeypatch.setattr("tools.edit.move_write.write_changes", meddle)
    monkeypatch.chdir(mv_book)
    before = tree_hash(mv_book.parent)
    result = CliRunner().invoke(main, ["mv", "guide", "manual", "--book", str(mv_book), "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "README.md: the file changed while the move was planned" in result.output
    after = tree_hash(mv_book.parent)
    assert after.pop("book/README.md") != before.pop("book/README.md")  # the other edit is kept, not overwritten
    assert after == before  # and the folder moved back


# ---------------------------------------------------------------- fix-tables and check-style


BROKEN_TABLE = "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
FIXED_TABLE = "# T\n\n| a   | b   |\n| --- | --- |\n| 1   | 2   |\n"


def lint_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with a good file to fix and every kind of bad entry beside it; the file outside it."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(BROKEN_TABLE, encoding="utf-8")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nwrapped\nparagraph\n", encoding="utf-8")
    os.mkfifo(folder / "fifo.md")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "socket.md"))
    server.close()
    (folder / "out.md").symlink_to(outside)
    (folder / "inside.md").symlink_to(folder / "good.md")  # the same file: checked once
    (folder / "gone.md").symlink_to(folder / "vanished.md")
    (folder / "loop").symlink_to(folder)
    (folder / "latin1.md").write_bytes("# T\n\nline two\ncaf\xe9\n".encode("latin-1"))
    try:  # a device node needs privileges: where there are none, the other kinds still run
        os.mknod(folder / "device.md", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        pass
    return folder, outside


@pytest.mark.parametrize("command", ["fix-tables", "check-style"])
def test_linters_report_bad_entries_and_process_the_rest(tmp_path, command):
    folder, outside = lint_folder(tmp_path)
    secret = outside.read_bytes()
    done = run_tools(command, str(folder), cwd=tmp_path, timeout=60)
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "docs/fifo.md: error: the file is a FIFO" in text
    assert "docs/socket.md: error: the file is a socket" in text
    assert "docs/out.md: error: the file leads outside" in text
    assert "docs/gone.md: error: the file does not exist" in text
    assert "docs/latin1.md:4: error: the file is not valid UTF-8" in text
    if (folder / "device.md").exists():
        assert "docs/device.md: error: the file is a device" in text
    assert "Secret" not in text and outside.read_bytes() == secret
    if command == "fix-tables":
        assert (folder / "good.md").read_text(encoding="utf-8") == FIXED_TABLE  # the others were still processed


def test_fix_tables_leaves_a_read_only_file_alone(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "locked.md").write_text(BROKEN_TABLE, encoding="utf-8")
    (folder / "open.md").write_text(BROKEN_TABLE, encoding="utf-8")
    os.chmod(folder / "locked.md", 0o444)
    done = run_tools("fix-tables", str(folder), cwd=tmp_path)
    assert done.returncode == 1
    assert "docs/locked.md: error: the file is read-only" in done.stdout + done.stderr
    assert (folder / "locked.md").read_text(encoding="utf-8") == BROKEN_TABLE
    assert stat.S_IMODE(os.stat(folder / "locked.md").st_mode) == 0o444
    assert (folder / "open.md").read_text(encoding="utf-8") == FIXED_TABLE


@pytest.mark.parametrize("command", ["fix-tables", "check-style"])
def test_linters_refuse_a_fifo_given_by_name_and_a_huge_file(tmp_path, command):
    os.mkfifo(tmp_path / "pipe.md")
    with open(tmp_path / "huge.md", "wb") as handle:
        handle.write(b"# Huge\n\n")
        handle.truncate(33 * 1024 * 1024)
    done = run_tools(command, "pipe.md", "huge.md", cwd=tmp_path, timeout=60)
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "pipe.md: error: the file is a FIFO" in text
    assert "huge.md: error: the file is larger than 32 MiB" in text


PATHOLOGICAL = {
    "rows.md": "# T\n\n| a | b |\n| --- | --- |\n" + "".join(f"| {i} | x |\n" for i in range(20000)),
    "tables.md": "# T\n\n" + "".join(f"| a | b |\n|---|---|\n| {i} | x |\n\n" for i in range(5000)),
    "line.md": "# T\n\n" + "word " * 200_000 + "\n",
    "pipes.md": "# T\n\n" + "|" * 10_000 + "\n| --- |\n" + "| x " * 10_000 + "|\n",
    "wrapped.md": "# T\n\n" + "line\n" * 50_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
@pytest.mark.parametrize("command", ["fix-tables", "check-style"])
def test_linters_are_linear_on_pathological_input(tmp_path, command, name):
    (tmp_path / name).write_text(PATHOLOGICAL[name], encoding="utf-8")
    started = time.monotonic()
    done = run_tools(command, *(["--check"] if command == "fix-tables" else []), name, cwd=tmp_path, timeout=60)
    assert done.returncode in (0, 1)
    assert time.monotonic() - started < 30


# ---------------------------------------------------------------- check-links --html (LinkChecker)


def _has_linkchecker() -> bool:
    from tools.checks.links.linkchecker import find_linkchecker
    from tools.core.errors import BookError

    try:
        find_linkchecker()
    except BookError:
        return False
    return True


@pytest.mark.xdist_group("linkchecker")
def test_linkchecker_never_reads_a_file_outside_the_site(tmp_path):
    if not _has_linkchecker():
        pytest.skip("LinkChecker is not installed")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # reading it would block until LinkChecker's deadline
    root = write_book(tmp_path / "book", {"README.md": f"# Home\n\nA [file URL]({fifo.as_uri()}) and [one more](file:///etc/hostname).\n"})
    started = time.monotonic()
    done = run_tools("check-links", "--book", str(root), "--html", "--no-cache", timeout=120, env={"TOOLS_LINKCHECKER_TIMEOUT": "60"})
    assert time.monotonic() - started < 50, done.stderr
    assert done.returncode in (0, 1), done.stdout + done.stderr


@pytest.mark.xdist_group("linkchecker")
def test_linkchecker_runs_under_a_total_deadline(tmp_path):
    if not _has_linkchecker():
        pytest.skip("LinkChecker is not installed")
    root = write_book(tmp_path / "book", {"README.md": "# Home\n\nText.\n"})
    started = time.monotonic()
    done = run_tools("check-links", "--book", str(root), "--html", "--no-cache", timeout=60, env={"TOOLS_LINKCHECKER_TIMEOUT": "0.2"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "LinkChecker did not finish within 0.2 s" in done.stderr
    assert time.monotonic() - started < 30


def test_linkcheckerrc_that_is_a_fifo_is_refused(tmp_path):
    if not _has_linkchecker():
        pytest.skip("LinkChecker is not installed")
    os.mkfifo(tmp_path / "rc")
    root = write_book(tmp_path / "book", {"README.md": "# Home\n\nText.\n"})
    done = run_tools("check-links", "--book", str(root), "--html", "--no-cache", "--linkcheckerrc", str(tmp_path / "rc"), timeout=60)
    assert done.returncode == 2
    assert "is a FIFO" in done.stderr


# ---------------------------------------------------------------- check-links (local): output and pathological input


@pytest.mark.parametrize("make, words", [
    ("fifo", "is not a regular file"),
    ("folder", "is a directory"),
    ("chapter", "one of the book's sources"),
    ("list", "one of the book's sources"),
])
def test_check_links_output_never_replaces_a_source_nor_blocks(tmp_path, make, words):
    root = write_book(tmp_path / "book", {"README.md": "# Home\n\n[gone](gone.md)\n"})
    target = {"fifo": tmp_path / "pipe", "folder": tmp_path / "dir", "chapter": root / "README.md", "list": root / "chapters-md.txt"}[make]
    if make == "fifo":
        os.mkfifo(target)
    elif make == "folder":
        target.mkdir()
    before = tree_hash(tmp_path)
    done = run_tools("check-links", "--book", str(root), "--no-cache", "--output", str(target), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr
    assert tree_hash(tmp_path) == before


def test_check_links_on_20000_autolinks_in_one_paragraph_finishes(tmp_path):
    root = write_book(tmp_path / "book", {"README.md": "# A\n\n" + " ".join(f"www.example{i}.com" for i in range(20000)) + "\n"})
    done = run_tools("check-links", "--book", str(root), "--no-cache", "--format", "json", timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout)["summary"]["links"] == 20000
