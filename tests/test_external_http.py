"""`check-links --external` on httpx: one connection per host kept alive, and the proxies of the environment
honoured as before (urllib's `http_proxy`), against local servers on 127.0.0.1 only."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from tools.cli import main

pytestmark = pytest.mark.xdist_group("external-http")


class _Counting(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.connections = 0
        self.paths: list[str] = []

    def process_request(self, request, client_address):
        self.connections += 1
        super().process_request(request, client_address)


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()


def _serve(handler=_Ok):
    server = _Counting(handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _check(tmp_path, links: list[str]) -> dict:
    root = tmp_path / "book"
    root.mkdir()
    (root / "README.md").write_text("# Links\n\n" + "\n".join(f"- [{n}]({url})" for n, url in enumerate(links)) + "\n", encoding="utf-8")
    (root / "chapters-md.txt").write_text("README.md\n", encoding="utf-8")
    (root / "book.toml").write_text('[book]\nrepository_path = ""\n\n[links]\nhost_delay = 0.0\ntimeout = 5\nretries = 0\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["check-links", "--book", str(root), "--external", "--format", "json", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_one_host_is_checked_over_one_kept_alive_connection(tmp_path, monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server = _serve()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        data = _check(tmp_path, [f"{base}/page/{n}" for n in range(30)])
    finally:
        server.shutdown()
        server.server_close()
    assert data["summary"]["external"]["ok"] == 30
    assert len(server.paths) == 30 and server.connections == 1


def test_the_environments_http_proxy_carries_the_requests(tmp_path, monkeypatch):
    proxy = _serve()  # answers every request itself, as a proxy that fetched the page would
    try:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.setenv("no_proxy", "localhost")
        data = _check(tmp_path, ["http://book-example.invalid/page"])
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert data["summary"]["external"]["ok"] == 1
    assert proxy.paths == ["http://book-example.invalid/page"]  # the absolute form a proxy receives
