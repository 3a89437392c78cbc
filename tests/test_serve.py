"""`tools serve` as an author uses it: a real server process, an edit, a broken build, a recovery."""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
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



def test_a_page_names_each_file_it_loads_by_version_so_a_reload_asks_for_the_page_alone(tmp_book, tmp_path):
    """A file asked for at the version the page names may be kept for good; any other request is revalidated, and
    a changed file gets a new URL in the pages that load it."""
    import re

    png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")
    root = tmp_book({"chapters-md.txt": "a.md\n", "a.md": "# Alpha\n\n![a picture](pic.png)\n\n[elsewhere](https://example.org/x.css)\n", "pic.png": png})

    def headers(url: str, tag: str | None = None) -> tuple[int, str]:
        request = urllib.request.Request(url, headers={"If-None-Match": tag} if tag else {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.headers["Cache-Control"]
        except urllib.error.HTTPError as answer:
            return answer.code, answer.headers["Cache-Control"]

    with serving(root, tmp_path / "out", tmp_path / "cache") as base:
        page = fetch(base + "/a.html")
        named = dict(re.findall(r'(?:src|href)="([^"?]+)\?v=([^"]+)"', page))
        assert {"assets/style.css", "assets/search.js", "pic.png"} <= set(named)
        assert not [url for url in named if url.endswith(".html") or "://" in url]
        assert "https://example.org/x.css" in page and '?v=' not in page.split('https://example.org/x.css')[1][:3]
        assert headers(f"{base}/pic.png?v={named['pic.png']}") == (200, "max-age=31536000, immutable")
        assert headers(f"{base}/pic.png") == (200, "no-cache")
        assert headers(f"{base}/pic.png?v=0-0") == (200, "no-cache")  # a version that is not the file's
        assert headers(f"{base}/pic.png", f'"{named["pic.png"]}"') == (304, "no-cache")

        before = status(base)["version"]
        (root / "pic.png").write_bytes(png + b"\0")  # an edited picture: a whole build
        wait_for(lambda: status(base)["version"] != before)
        again = dict(re.findall(r'(?:src|href)="([^"?]+)\?v=([^"]+)"', fetch(base + "/a.html")))
        assert again["pic.png"] != named["pic.png"]  # the new picture has a new URL: no browser holds it
        assert urllib.request.urlopen(f"{base}/pic.png?v={again['pic.png']}", timeout=5).read() == png + b"\0"

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
