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
