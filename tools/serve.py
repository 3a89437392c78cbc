"""`tools serve`: build the site, serve it on 127.0.0.1, rebuild on every change and reload the open pages."""
from __future__ import annotations

import errno
import json
import os
import threading
import time
import traceback
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .book import SKIPPED_DIRS, load_book
from .cache import Cache
from .config import load_config
from .errors import BookError
from .links.check import check_book
from .outputs import STAMP
from .render.site import build_site
from .safe_io import walk

RELOAD_SCRIPT = b"""(function () {
  var seen = null;
  function overlay(errors) {
    var box = document.getElementById("__build_errors");
    if (!errors.length) { if (box) { box.remove(); } return; }
    if (!box) {
      box = document.createElement("pre");
      box.id = "__build_errors";
      box.style.cssText = "position:fixed;bottom:0;left:0;right:0;max-height:40vh;overflow:auto;margin:0;padding:1em;background:#300;color:#fdd;z-index:99;white-space:pre-wrap";
      document.body.appendChild(box);
    }
    box.textContent = "The last build failed; this page is from the build before it.\\n\\n" + errors.join("\\n");
  }
  function poll() {
    fetch("/__status", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (status) {
      if (seen !== null && status.version !== seen) { location.reload(); return; }
      seen = status.version;
      overlay(status.errors);
    }).catch(function () {}).then(function () { setTimeout(poll, 700); });
  }
  poll();
})();
"""


class Builder:
    """Rebuilds the site into `out` when a source changes; remembers the last error for the page overlay."""

    def __init__(self, book_dir: Path, out: Path, local: bool = False, log=print):
        self.book_dir, self.out, self.local, self.log = book_dir, out, local, log
        self.cache = Cache()
        self.version = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def snapshot(self) -> dict[str, float]:
        """Modification times of every source file (the output and caches excluded)."""
        stamps: dict[str, float] = {}
        out = self.out.resolve()
        for current, dirs, files in walk(self.book_dir):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and (Path(current) / d).resolve() != out
                       and not os.path.isfile(os.path.join(current, d, STAMP))]  # another site the tool built is no source
            for name in files:
                path = os.path.join(current, name)
                try:
                    stamps[path] = os.stat(path).st_mtime_ns
                except OSError:
                    pass
        return stamps

    def build(self) -> None:
        started = time.perf_counter()
        try:
            config = load_config(self.book_dir)
            book = load_book(config.root, output=self.out, config=config, cache=self.cache)
            diagnostics = check_book(book)
            build_site(book, self.out, diagnostics, local=self.local, cache=self.cache)
        except Exception as exc:  # noqa: BLE001 - any failure is shown, and the server keeps the last good site
            message = getattr(exc, "message", None) or "".join(traceback.format_exception_only(type(exc), exc)).strip()
            with self.lock:
                self.errors = [message]
            self.log(f"Build failed: {message} The last good site stays on line; fix the source and save to rebuild.")
            return
        with self.lock:
            self.errors = [str(d) for d in diagnostics.errors]
            self.version += 1
        for diag in diagnostics.items:
            self.log(str(diag))
        self.log(f"Rebuilt {len(book.chapters)} chapters in {time.perf_counter() - started:.2f}s ({len(diagnostics.errors)} errors) -> {self.out}")

    def status(self) -> bytes:
        with self.lock:
            return json.dumps({"version": self.version, "errors": self.errors}).encode()

    def watch(self, stop: threading.Event, interval: float = 0.4) -> None:
        before = self.snapshot()
        while not stop.wait(interval):
            now = self.snapshot()
            if now != before:
                before = now
                self.build()


class _Handler(SimpleHTTPRequestHandler):
    builder: Builder

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):  # noqa: N802 - the base class's name
        if self.path.startswith("/__status"):
            return self._send(self.builder.status(), "application/json")
        if self.path.startswith("/__livereload.js"):
            return self._send(RELOAD_SCRIPT, "text/javascript")
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if path.endswith(".html") and os.path.isfile(path):
            with open(path, "rb") as handle:
                page = handle.read()
            page = page.replace(b"</body>", b'<script src="/__livereload.js"></script></body>', 1)
            return self._send(page, "text/html; charset=utf-8")
        return super().do_GET()

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def _listen(port: int, handler, out: Path) -> ThreadingHTTPServer:
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=str(out)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BookError(f"--port {port}: the port is taken by another program; choose another one, or --port 0 for a free one.") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise BookError(f"--port {port}: this user may not listen on it (ports below 1024 need privileges); choose a port from 1024 to 65535, or --port 0.") from None
        raise BookError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror}); choose another port, or --port 0.") from None


def serve(book_dir: Path, out: Path, port: int, local: bool = False, log=print) -> None:
    builder = Builder(book_dir, out, local, log)
    handler = type("Handler", (_Handler,), {"builder": builder})
    server = _listen(port, handler, out)  # before building: a taken port is said at once
    try:
        builder.build()
        out.mkdir(parents=True, exist_ok=True)
    except BaseException:
        server.server_close()
        raise
    stop = threading.Event()
    watcher = threading.Thread(target=builder.watch, args=(stop,), daemon=True)
    watcher.start()
    log(f"Serving {out} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops); rebuilding on every change.")
    try:
        server.serve_forever(poll_interval=0.25)
    finally:  # Ctrl-C or SIGTERM: the command exits 130 or 143 (tools/cli.py) once a rebuild under way is done
        stop.set()
        server.server_close()
        watcher.join(60)
