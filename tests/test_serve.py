"""`tools serve` as an author uses it: a real server process, an edit, a broken build, a recovery."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode("utf-8")


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.fixture
def server(tmp_book, tmp_path):
    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\nFirst words.\n"})
    port = free_port()
    env = {"BOOK_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([sys.executable, "-m", "tools", "serve", "--book", str(root), "--out", str(tmp_path / "out"), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: fetch(base + "/__status"))
        yield root, base
    finally:
        process.terminate()
        process.wait(timeout=10)


def status(base: str) -> dict:
    return json.loads(fetch(base + "/__status"))


def test_serves_the_site_with_the_reload_script(server):
    _, base = server
    page = fetch(base + "/a.html")
    assert "First words." in page and "/__livereload.js" in page
    assert "location.reload" in fetch(base + "/__livereload.js")


def test_an_edit_is_rebuilt_and_served(server):
    root, base = server
    before = status(base)["version"]
    (root / "a.md").write_text("# Alpha\n\nSecond words.\n", encoding="utf-8")
    wait_for(lambda: status(base)["version"] > before)
    assert "Second words." in fetch(base + "/a.html")


def test_a_failed_build_is_shown_and_the_server_keeps_running(server):
    root, base = server
    (root / "book.toml").write_text("[book]\ncolour = 1\n", encoding="utf-8")
    errors = wait_for(lambda: status(base)["errors"])
    assert "unknown key 'colour'" in errors[0]
    assert "First words." in fetch(base + "/a.html")  # the last good site
    before = status(base)["version"]
    (root / "book.toml").unlink()
    wait_for(lambda: status(base)["version"] > before)
    assert status(base)["errors"] == []
