"""`tools check-links --external` against local HTTP servers on 127.0.0.1 (never the internet): statuses, HEAD then
GET, redirects and meta refresh, 429 with Retry-After, 5xx retries, timeouts, the cache, exclusions,
`--changed-since`, and one request at a time per host, asserted from each server's own request log."""
from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import require_tool
from tools.checks.links.external import HostGate, meta_refresh, retry_after
from tools.cli import main

pytestmark = pytest.mark.xdist_group("external-http")


class Server:
    """A threaded HTTP server whose routes are functions; it logs every request with its start and end times."""

    def __init__(self, routes: dict) -> None:
        self.routes = routes
        self._log: list[dict] = []
        self.hits: dict[str, int] = {}
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the test output clean
                pass

            def _serve(self, method: str) -> None:
                start = time.monotonic()
                path = self.path.split("?")[0]
                with server.lock:
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                    server.hits[path] = server.hits.get(path, 0) + 1
                    hit = server.hits[path]
                try:
                    route = server.routes.get(path, lambda method, hit: (404, {}, b"not here"))
                    status, headers, body = route(method, hit)
                    self.send_response(status)
                    headers = {"Content-Type": "text/plain", **headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if method == "GET":
                        self.wfile.write(body)
                finally:
                    with server.lock:
                        server.inflight -= 1
                        server._log.append({"method": method, "path": self.path, "start": start, "end": time.monotonic()})

            def do_GET(self):
                self._serve("GET")

            def do_HEAD(self):
                self._serve("HEAD")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def log(self) -> list[dict]:
        """Every finished request; waits (up to 5 s) for handlers still running, which log only after the client
        already has its answer (on a loaded machine the command can end before the last handler logs)."""
        deadline = time.monotonic() + 5
        while self.inflight and time.monotonic() < deadline:
            time.sleep(0.01)
        with self.lock:
            return list(self._log)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def requests(self, path: str) -> list[dict]:
        """The requests for `path` in the order they arrived (the log itself is in the order they finished)."""
        return sorted((entry for entry in self.log if entry["path"].split("?")[0] == path), key=lambda entry: entry["start"])


def ok(method, hit):
    return 200, {}, b"ok"


def html_page(method, hit):
    return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<html><head><title>x</title></head><body>plain</body></html>"


def redirect(to: str, code: int = 301):
    return lambda method, hit: (code, {"Location": to}, b"")


ROUTES = {
    "/ok": ok,
    "/page": html_page,
    "/gone": lambda method, hit: (404, {}, b"gone"),
    "/head-refused": lambda method, hit: (405, {}, b"") if method == "HEAD" else (200, {}, b"fine"),
    "/r1": redirect("/r2", 301),
    "/r2": redirect("/r3", 302),
    "/r3": redirect("/ok", 308),
    "/temporary": redirect("/ok", 307),
    "/meta": lambda method, hit: (200, {"Content-Type": "text/html"}, b'<html><head><meta http-equiv="refresh" content="0; url=/ok"></head></html>'),
    "/limited": lambda method, hit: (429, {"Retry-After": "1"}, b"") if hit == 1 else (200, {}, b"ok"),
    "/busy": lambda method, hit: (503, {}, b"") if hit <= 2 else (200, {}, b"ok"),
    "/broken-server": lambda method, hit: (500, {}, b""),
    "/forbidden": lambda method, hit: (403, {}, b""),
    "/loop": redirect("/loop", 301),
}


def book_with(tmp_path: Path, text: str, links: str = "host_delay = 0.0\ntimeout = 3\nretries = 2\nbackoff = 0.05\n", name: str = "book") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "README.md").write_text(text, encoding="utf-8")
    (root / "chapters-md.txt").write_text("README.md\n", encoding="utf-8")
    (root / "book.toml").write_text("[book]\nrepository_path = \"\"\n\n[links]\n" + links, encoding="utf-8")
    return root


def check(root: Path, cache: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["check-links", "--book", str(root), "--external", "--cache-dir", str(cache), "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def by_url(data: dict) -> dict[str, dict]:
    return {row["url"]: row for row in data.get("external", [])}


def test_statuses_redirects_and_retries(tmp_path):
    with Server(ROUTES) as server:
        b = server.base
        text = "# External\n\n" + "\n".join(f"- [{path}]({b}{path}#part)" if path == "/meta" else f"- [{path}]({b}{path})" for path in ROUTES) + "\n- <mailto:someone@example.com>\n"
        root = book_with(tmp_path, text)
        code, data = check(root, tmp_path / "cache")
    rows = by_url(data)
    status = {url[len(b):]: row["status"] for url, row in rows.items() if url.startswith(b)}
    assert status == {
        "/ok": "ok", "/page": "ok", "/gone": "broken", "/head-refused": "ok", "/r1": "redirected", "/r2": "redirected",
        "/r3": "redirected", "/temporary": "redirected", "/meta": "redirected", "/limited": "ok", "/busy": "ok",
        "/broken-server": "failed", "/forbidden": "forbidden", "/loop": "failed",
    }
    assert rows["mailto:someone@example.com"]["status"] == "skipped"
    assert code == 1  # /gone is an error
    # The redirect chain is reported with its final URL; the permanent part is what the link should become.
    assert rows[b + "/r1"]["hops"] == [[301, b + "/r2"], [302, b + "/r3"], [308, b + "/ok"]]
    assert rows[b + "/r1"]["final_url"] == b + "/ok"
    findings = {(f["line"], f["code"]): f for f in data["findings"]}
    r1 = findings[(7, "external-redirect")]
    assert "redirects (301, 302, 308) to " + b + "/ok" in r1["message"]
    assert r1["suggestion"] == f"Link to '{b}/r2' instead (it then redirects to {b}/ok)."
    assert findings[(10, "external-redirect-temporary")]["severity"] == "info"
    meta = findings[(11, "external-redirect")]
    assert "meta refresh" in meta["message"] and meta["suggestion"] == f"Link to '{b}/ok' instead."
    assert findings[(5, "external-broken")]["severity"] == "error" and "HTTP 404" in findings[(5, "external-broken")]["message"]
    assert findings[(14, "external-failed")]["severity"] == "warning"
    assert findings[(15, "external-forbidden")]["severity"] == "warning"
    # HEAD first, GET when HEAD is refused.
    assert [r["method"] for r in server.requests("/head-refused")] == ["HEAD", "GET"]
    assert [r["method"] for r in server.requests("/ok")][:1] == ["HEAD"]
    # 429 with Retry-After: 1 -> the second request waits at least a second after the first one ended.
    limited = server.requests("/limited")
    assert len(limited) == 2 and limited[1]["start"] - limited[0]["end"] >= 0.95
    # 503 twice, then fine: HEAD fails once, GET is retried with backoff until it works.
    assert len(server.requests("/busy")) == 3
    # A server that keeps failing gets HEAD, then GET and its retries (2), then is reported.
    assert len(server.requests("/broken-server")) == 1 + 1 + 2
    assert data["summary"]["external"]["ok"] == 5


def test_one_request_at_a_time_per_host_and_hosts_in_parallel(tmp_path):
    """Two hosts (two ports), several URLs each: each server never sees two requests at once, the configured delay
    separates them, and the two hosts are served at the same time (each /sync waits for the other server's)."""
    events = {"a": threading.Event(), "b": threading.Event()}
    met = {"a": False, "b": False}

    def slow(method, hit):
        time.sleep(0.05)
        return 200, {}, b"ok"

    def sync(me: str, other: str):
        def route(method, hit):
            events[me].set()
            met[me] = met[me] or events[other].wait(5)
            return 200, {}, b"ok"
        return route

    with Server({"/slow": slow, "/sync": sync("a", "b")}) as a, Server({"/slow": slow, "/sync": sync("b", "a")}) as b:
        links = []
        for server in (a, b):
            links.append(f"[sync]({server.base}/sync)")
            links += [f"[{i}]({server.base}/slow?n={i})" for i in range(4)]
        root = book_with(tmp_path, "# Hosts\n\n" + "\n\n".join(links) + "\n", links="host_delay = 0.2\ntimeout = 10\nretries = 0\n")
        _, data = check(root, tmp_path / "cache", "--jobs", "4")
    assert data["summary"]["external"]["ok"] == 10
    for server in (a, b):
        assert server.max_inflight == 1
        entries = sorted(server.log, key=lambda e: e["start"])
        assert len(entries) == 5  # one HEAD per URL: a plain-text 200 needs no GET
        for previous, following in zip(entries, entries[1:]):
            assert following["start"] >= previous["end"]  # never overlapping
            assert following["start"] - previous["end"] >= 0.19  # host_delay between two requests
    assert met == {"a": True, "b": True}


def test_timeouts_are_retried_then_reported(tmp_path):
    def hang(method, hit):
        time.sleep(1.5)
        return 200, {}, b"late"

    with Server({"/hang": hang}) as server:
        root = book_with(tmp_path, f"# T\n\n[late]({server.base}/hang)\n", links="host_delay = 0.0\ntimeout = 0.3\nretries = 1\nbackoff = 0.01\n")
        started = time.monotonic()
        code, data = check(root, tmp_path / "cache")
        elapsed = time.monotonic() - started
        requests = server.hits.get("/hang", 0)  # counted on arrival: the sleeping handlers log only when done
    row = by_url(data)[server.base + "/hang"]
    assert row["status"] == "failed" and "no answer within 0.3s" in row["message"]
    assert requests == 3  # HEAD, GET, one retry of the GET
    assert code == 0  # a timeout is a warning: the next run checks it again
    assert elapsed < 10


def test_the_cache_spares_a_rerun_and_expires(tmp_path):
    with Server(ROUTES) as server:
        b = server.base
        root = book_with(tmp_path, f"# C\n\n[a]({b}/ok) [b]({b}/gone) [c]({b}/broken-server) [d]({b}/r3)\n", links="host_delay = 0.0\ntimeout = 3\nretries = 0\nbackoff = 0.01\n")
        cache = tmp_path / "cache"
        check(root, cache)
        first = len(server.log)
        _, data = check(root, cache)
        second = len(server.log) - first
        assert data["summary"]["external_from_cache"] == 3
        assert {e["path"] for e in server.log[first:]} == {"/broken-server"}  # failures are never cached
        assert second == 2
        stored = json.loads((cache / "external.json").read_text())
        for entry in stored["urls"].values():
            entry["checked_at"] -= 8 * 86400  # older than the default maximum age of 7 days
        (cache / "external.json").write_text(json.dumps(stored))
        before = len(server.log)
        _, data = check(root, cache)
        assert data["summary"]["external_from_cache"] == 0
        assert {e["path"] for e in server.log[before:]} == {"/ok", "/gone", "/broken-server", "/r3"}
    assert by_url(data)[b + "/r3"]["final_url"] == b + "/ok"


def test_exclusions_from_book_toml_and_the_command_line(tmp_path):
    with Server(ROUTES) as server:
        b = server.base
        root = book_with(tmp_path, f"# E\n\n[a]({b}/ok) [b]({b}/gone) [c]({b}/forbidden)\n", links="exclude = [\"/gone$\"]\nhost_delay = 0.0\n")
        code, data = check(root, tmp_path / "cache", "--exclude", "forbid")
        paths = {e["path"] for e in server.log}
    assert paths == {"/ok"}
    assert data["summary"]["external"]["excluded"] == 2 and code == 0


def test_changed_since_checks_only_added_lines(tmp_path):
    git = require_tool("git")
    with Server(ROUTES) as server:
        b = server.base
        root = book_with(tmp_path, f"# G\n\nOld [link]({b}/gone).\n", links="host_delay = 0.0\n")
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
            subprocess.run([git, *args], cwd=root, check=True, env=env)
        readme = root / "README.md"
        readme.write_text(readme.read_text() + f"\nNew [link]({b}/ok) and [another]({b}/r3).\n", encoding="utf-8")
        (root / "new.md").write_text(f"# New\n\n[fresh]({b}/page)\n", encoding="utf-8")
        (root / "chapters-md.txt").write_text("README.md\nnew.md\n", encoding="utf-8")
        code, data = check(root, tmp_path / "cache", "--changed-since", "HEAD")
        paths = {e["path"] for e in server.log}
    assert paths == {"/ok", "/r3", "/page"}  # not /gone: its line did not change
    assert code == 0
    bad = CliRunner().invoke(main, ["check-links", "--book", str(root), "--changed-since", "no-such-rev", "--cache-dir", str(tmp_path / "c2")])
    assert bad.exit_code == 2 and "not a git revision" in bad.output


def test_the_summary_line_counts_by_status(tmp_path):
    with Server(ROUTES) as server:
        b = server.base
        root = book_with(tmp_path, f"# S\n\n[a]({b}/ok) [b]({b}/gone) [c]({b}/r3) <mailto:x@example.com>\n")
        result = CliRunner().invoke(main, ["check-links", "--book", str(root), "--external", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 1
    assert "external URLs: 1 ok, 1 redirected, 1 broken, 1 skipped" in result.stderr
    assert "README.md:3:" in result.stdout and "is broken: HTTP 404" in result.stdout


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("7") == 7.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert retry_after("soon") is None and retry_after(None) is None


@pytest.mark.parametrize("page, target", [
    (b'<meta http-equiv="refresh" content="0; url=https://example.org/new">', "https://example.org/new"),
    (b"<META HTTP-EQUIV='Refresh' CONTENT=\"3;URL='../moved.html'\">", "../moved.html"),
    (b'<meta http-equiv="refresh" content="30">', None),
    (b'<meta name="viewport" content="width=device-width">', None),
])
def test_meta_refresh(page, target):
    assert meta_refresh(page) == target


def test_the_gate_waits_between_requests_to_one_host():
    clock = [0.0]
    sleeps = []
    gate = HostGate(0.5, clock=lambda: clock[0], sleep=lambda s: (sleeps.append(s), clock.__setitem__(0, clock[0] + s)))
    gate.call("a", lambda: None)
    gate.call("b", lambda: None)  # another host: no wait
    gate.call("a", lambda: None)
    gate.back_off("a", 3.0)
    gate.call("a", lambda: None)
    assert sleeps == [0.5, 3.0]


def test_a_host_asking_for_a_long_pause_is_left_alone(tmp_path):
    with Server({"/later": lambda method, hit: (429, {"Retry-After": "3600"}, b"")}) as server:
        root = book_with(tmp_path, f"# L\n\n[later]({server.base}/later)\n")
        code, data = check(root, tmp_path / "cache")
        requests = len(server.log)
    row = by_url(data)[server.base + "/later"]
    assert row["status"] == "failed" and "asks to wait 3600s" in row["message"]
    assert requests == 1 and code == 0  # no GET behind its back, no retry: the next run asks again
