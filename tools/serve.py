"""`tools serve`: build the site, serve it on 127.0.0.1, rebuild on every change and reload the open pages.

Changes come from the operating system's file events through watchfiles (inotify, FSEvents, ...), not from
polling every file's modification time: a save is rebuilt about 50 ms after the last write of a burst. Events
under the output, its temporary siblings, the build cache, a skipped folder (`tools/source_names.py`), another
site the tool built, and editors' swap and backup files are no change of the sources.
"""
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
from typing import TYPE_CHECKING

from .cache import Cache
from .config import load_config
from .errors import BookError, Diagnostics
from .outputs import STAMP
from .pipeline import BuildOptions, build_languages
from .source_names import SKIPPED_DIRS
from .translations import language_output, languages

if TYPE_CHECKING:
    from watchfiles import Change

QUIET_MS = 50  # a burst of writes (an editor's save) is one change once no event came for this long
BURST_MS = 1600  # the longest a burst is gathered before it is rebuilt anyway

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
        from watchfiles import DefaultFilter

        self._not_litter = DefaultFilter(ignore_dirs=())  # editors' swap and backup files (*.swp, *~, #x#) are no change; folders: SKIPPED_DIRS
        self._real = os.path.realpath(book_dir), os.path.realpath(out)  # event paths are real: the watched root is
        self._real_cache = os.path.realpath(self.cache.directory)

    def is_source(self, change: Change, path: str) -> bool:
        """Whether an event at `path` is a change of the book's sources (a watchfiles filter)."""
        root, out = self._real
        rel = os.path.relpath(path, root)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or not self._not_litter(change, path):
            return False
        for ignored in (out, self._real_cache):
            if path == ignored or path.startswith(ignored + os.sep):
                return False
        if os.path.dirname(path) == os.path.dirname(out) and os.path.basename(path).startswith(f".{os.path.basename(out)}."):
            return False  # the output being built beside itself (tools/atomic.py), or the old one on its way out
        parts = rel.split(os.sep)
        if any(part in SKIPPED_DIRS for part in parts[:-1]) or (parts[-1] in SKIPPED_DIRS and os.path.isdir(path)):
            return False
        folder = root
        for part in parts[:-1]:  # another site the tool built is no source
            folder = os.path.join(folder, part)
            if os.path.isfile(os.path.join(folder, STAMP)):
                return False
        return True

    def build(self) -> None:
        started = time.perf_counter()
        try:
            config = load_config(self.book_dir)
            # every language's site (a translation's in `<out>/<tag>/`); one job: rebuilds run in the watcher
            # thread, where forking is not safe
            targets = {tag: {"html": language_output(self.out, config, tag, True)} for tag in languages(config)}
            outcomes = build_languages(config, targets, BuildOptions(local=self.local, cache=self.cache, jobs=1), self.out)
            diagnostics = Diagnostics()
            for _, outcome in outcomes:
                diagnostics.extend(outcome.diagnostics)
            book = outcomes[0][1].book
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

    def watch(self, stop: threading.Event) -> None:
        """Rebuild after every change of the sources until `stop` is set."""
        from watchfiles import watch

        while not stop.is_set():
            try:
                for _changes in watch(self.book_dir, watch_filter=self.is_source, debounce=BURST_MS, step=QUIET_MS, stop_event=stop, raise_interrupt=False, ignore_permission_denied=True):
                    self.build()
            except Exception as exc:  # noqa: BLE001 - the book folder gone or renamed, a limit on watches: keep serving
                self.log(f"Cannot watch {self.book_dir} for changes ({exc}); trying again every second.")
                self.build()  # the page shows what is wrong, e.g. that the book folder is gone
                if stop.wait(1.0):
                    return


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
