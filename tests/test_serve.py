"""`tools serve` as an author uses it: a real server process, an edit, a broken build, a recovery."""
from __future__ import annotations

import contextlib
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
        time.sleep(0.05)
    raise AssertionError("timed out")

@contextlib.contextmanager
def serving(root, out, cache, port: int | None = None, env: dict | None = None, log=None):
    """`tools serve` on a free port (or `port`) in a subprocess, until the block ends; yields the server's base URL.
    `env`: more environment variables; `log`: a file that gets what the server says."""
    port = port or free_port()
    env = {"BOOK_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", **(env or {})}
    output = open(log, "w", encoding="utf-8") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    process = subprocess.Popen([sys.executable, "-m", "tools", "serve", "--book", str(root), "--out", str(out), "--port", str(port)], stdout=output, stderr=subprocess.STDOUT, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: fetch(base + "/__status"))
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)
        if log:
            output.close()


@pytest.fixture
def server(tmp_book, tmp_path):
    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\nFirst words.\n"})
    with serving(root, tmp_path / "out", tmp_path / "cache") as base:
        yield root, base


def status(base: str) -> dict:
    return json.loads(fetch(base + "/__status"))


def test_serves_the_site_with_the_reload_script(server):
    _, base = server
    page = fetch(base + "/a.html")
    assert "First words." in page and "new EventSource" in page
    assert "location.reload" in fetch(base + "/__livereload.js")


def test_an_edit_is_rebuilt_and_served(server):
    root, base = server
    before = status(base)["version"]
    (root / "a.md").write_text("# Alpha\n\nSecond words.\n", encoding="utf-8")
    wait_for(lambda: status(base)["version"] != before)
    assert "Second words." in fetch(base + "/a.html")


def test_a_failed_build_is_shown_and_the_server_keeps_running(server):
    root, base = server
    (root / "book.toml").write_text("[book]\ncolour = 1\n", encoding="utf-8")
    errors = wait_for(lambda: status(base)["errors"])
    assert "unknown key 'colour'" in errors[0]
    assert "First words." in fetch(base + "/a.html")  # the last good site
    before = status(base)["version"]
    (root / "book.toml").unlink()
    wait_for(lambda: status(base)["version"] != before)
    assert status(base)["errors"] == []


@pytest.fixture
def serve_inside(tmp_book, tmp_path):
    """A server whose output folder lies inside the book, beside a folder the book skips."""
    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\nFirst words.\n"})
    with serving(root, root / "site", root / ".cache" / "build") as base:
        yield root, base


def test_a_new_chapter_in_a_new_folder_is_picked_up(server):
    root, base = server
    before = status(base)["version"]
    (root / "part").mkdir()
    (root / "part" / "b.md").write_text("# Beta\n\nNew chapter.\n", encoding="utf-8")
    (root / "chapters-md.txt").write_text("a.md\npart/b.md\n", encoding="utf-8")
    wait_for(lambda: "New chapter." in fetch(base + "/part/b.html"))
    wait_for(lambda: status(base)["version"] != before)  # the files are written before the version says so
    before = status(base)["version"]
    (root / "part" / "b.md").write_text("# Beta\n\nEdited again.\n", encoding="utf-8")
    wait_for(lambda: "Edited again." in fetch(base + "/part/b.html"))
    wait_for(lambda: status(base)["version"] != before)


def test_a_renamed_chapter_fails_the_build_and_renaming_it_back_recovers(server):
    root, base = server
    (root / "a.md").rename(root / "moved.md")
    errors = wait_for(lambda: status(base)["errors"])
    assert "a.md" in errors[0]
    assert "First words." in fetch(base + "/a.html")  # the last good site stays
    before = status(base)["version"]
    (root / "moved.md").rename(root / "a.md")
    wait_for(lambda: status(base)["version"] != before and not status(base)["errors"])


def test_the_output_the_cache_and_skipped_folders_are_no_change(serve_inside):
    root, base = serve_inside
    wait_for(lambda: (root / "site" / "a.html").is_file())
    time.sleep(1.0)  # the first build's own writes settle
    before = status(base)["version"]
    (root / "site" / "extra.html").write_text("x", encoding="utf-8")
    (root / ".cache" / "build" / "note").write_text("x", encoding="utf-8")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.md").write_text("# X\n", encoding="utf-8")
    (root / ".a.md.swp").write_text("swap", encoding="utf-8")
    time.sleep(1.5)  # far longer than the 20 ms after which a change is rebuilt
    assert status(base)["version"] == before
    (root / "a.md").write_text("# Alpha\n\nChanged.\n", encoding="utf-8")
    wait_for(lambda: status(base)["version"] != before)
    assert "Changed." in fetch(base + "/a.html")


def test_a_browser_that_goes_away_mid_reply_is_no_error(tmp_book, tmp_path):
    """A reload or a closed tab resets the connection while the server writes: nothing is printed, and it serves on."""
    import struct

    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\n" + "Many words here. " * 20_000 + "\n"})
    log = tmp_path / "serve.log"
    with serving(root, tmp_path / "out", tmp_path / "cache", log=log) as base:
        port = int(base.rsplit(":", 1)[1])
        for path in ("/a.html", "/assets/style.css", "/__status", "/missing", "/__events"):
            for _ in range(5):
                with socket.create_connection(("127.0.0.1", port)) as sock:
                    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        with socket.create_connection(("127.0.0.1", port)) as sock:  # half a request, then gone
            sock.sendall(b"GET /a.html HTTP/1.1\r\nHo")
        time.sleep(0.5)
        assert "Many words here." in fetch(base + "/a.html")
    said = log.read_text(encoding="utf-8")
    assert "Traceback" not in said and "Exception occurred" not in said and "Error" not in said, said
