"""`tools serve`: build the site, serve it on 127.0.0.1, rebuild on every change and reload the open pages.

Changes come from the operating system's file events through watchfiles (inotify, FSEvents, ...), not from
polling every file's modification time: a save is rebuilt `QUIET_MS` after the last write of a burst, in this
process, by tools/serve/live_site.py (a saved chapter costs its own parse and the pages that changed). Events under the
output, its temporary siblings, the build cache, a skipped folder (`tools/core/source_names.py`), another site the tool
built, and editors' swap and backup files are no change of the sources. The open pages hear of a rebuild at once,
from a Server-Sent Events stream (`/__events`), which the browser opens again after the server restarts.
"""
from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import threading
import time
import traceback
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from tools.core.cache import Cache
from tools.core.errors import BookError
from tools.core.source_names import SKIPPED_DIRS, skipped_path
from tools.serve.live_site import LiveSite

if TYPE_CHECKING:
    from watchfiles import Change

# A burst of writes is one change once no event came for this long: an editor's save (write a temporary file,
# rename it over the chapter) is a few events within a millisecond or two; a burst split in two is still right
# (a temporary file gone by the time its batch is rebuilt is no change), only one rebuild slower.
QUIET_MS = 20
BURST_MS = 1600  # the longest a burst is gathered before it is rebuilt anyway

# A page's stylesheets, scripts and images (a URL of the site's own: no scheme, query or fragment, not a page).
SUBRESOURCE = re.compile(rb'(<(?:script|link|img|source)\b[^>]*?\s(?:src|href)=")([^"#?:]+)(")', re.IGNORECASE)
FOREVER = "max-age=31536000, immutable"

RELOAD_SCRIPT = b"""(function () {
  var seen = document.currentScript.getAttribute("data-version");
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
  function connect() {
    var source = new EventSource("/__events");
    source.onmessage = function (event) {
      var status = JSON.parse(event.data);
      if (status.version !== seen) { source.close(); location.reload(); return; }
      overlay(status.errors);
    };
    source.onerror = function () {  // a server restarting: the browser tries again, or we do once it gave up
      if (source.readyState === EventSource.CLOSED) { setTimeout(connect, 500); }
    };
  }
  connect();
})();
"""
KEEP_ALIVE_S = 15  # an idle events stream gets a comment this often, so that a closed page ends its thread


class Builder:
    """Rebuilds the site into `out` when a source changes; remembers the last error for the page overlay, and wakes
    the open pages' event streams when either changes."""

    def __init__(self, book_dir: Path, out: Path, local: bool = False, log=print):
        self.book_dir, self.out, self.local, self.log = book_dir, out, local, log
        self.cache = Cache()
        self.site = LiveSite(book_dir, out, local, self.cache)
        self.instance = os.urandom(4).hex()  # a page from before a restart reloads: its version is another server's
        self.builds = 0
        self.errors: list[str] = []
        self.serial = 0  # counts every change of the version or the errors
        self.stopping = False
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
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
            return False  # the output being built beside itself (tools/core/atomic.py), or the old one on its way out
        if skipped_path(root, rel):  # in a folder no walk over the book enters, another site the tool built among them
            return False
        return not (os.path.basename(path) in SKIPPED_DIRS and os.path.isdir(path))

    @property
    def version(self) -> str:
        return f"{self.instance}-{self.builds}"

    def build(self, changed: set[str] | None = None) -> None:
        """Rebuild after the sources at `changed` (absolute real paths; None: anything) changed. In the watcher's
        thread, with one job: forking there is not safe."""
        started = time.perf_counter()
        try:
            book, diagnostics = self.site.build(changed)
        except Exception as exc:  # noqa: BLE001 - any failure is shown, and the server keeps the last good site
            message = getattr(exc, "message", None) or "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self._publish([message], built=False)
            self.log(f"Build failed: {message} The last good site stays on line; fix the source and save to rebuild.")
            return
        self._publish([str(d) for d in diagnostics.errors], built=True)
        for diag in diagnostics.items:
            self.log(str(diag))
        self.log(f"Rebuilt {len(book.chapters)} chapters in {time.perf_counter() - started:.3f}s ({self.site.done}; {len(diagnostics.errors)} errors) -> {self.out}")
        if self.site.done == "the whole book":  # the pages are out: get ready for the next edit
            try:
                self.site.warm()
            except Exception:  # noqa: BLE001 - only a speed-up: the next rebuild loads what it needs itself
                pass

    def _publish(self, errors: list[str], built: bool) -> None:
        with self.changed:
            self.errors = errors
            self.builds += built
            self.serial += 1
            self.changed.notify_all()

    def status(self) -> bytes:
        with self.lock:
            return json.dumps({"version": self.version, "errors": self.errors}).encode()

    def wait(self, serial: int, timeout: float) -> tuple[int, bytes] | None:
        """The next status after `serial` (its serial and JSON), or the same one after `timeout`; None when stopping."""
        with self.changed:
            self.changed.wait_for(lambda: self.serial != serial or self.stopping, timeout)
            if self.stopping:
                return None
            return self.serial, json.dumps({"version": self.version, "errors": self.errors}).encode()

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()

    def watch(self, stop: threading.Event) -> None:
        """Rebuild after every change of the sources until `stop` is set."""
        from watchfiles import watch

        while not stop.is_set():
            try:
                for changes in watch(self.book_dir, watch_filter=self.is_source, debounce=BURST_MS, step=QUIET_MS, stop_event=stop, raise_interrupt=False, ignore_permission_denied=True):
                    self.build({path for _, path in changes})
            except Exception as exc:  # noqa: BLE001 - the book folder gone or renamed, a limit on watches: keep serving
                self.log(f"Cannot watch {self.book_dir} for changes ({exc}); trying again every second.")
                self.build()  # the page shows what is wrong, e.g. that the book folder is gone
                if stop.wait(1.0):
                    return


class _Handler(SimpleHTTPRequestHandler):
    """The site's files, each page with the reload script in it. A page names each file it loads (stylesheets,
    scripts, images) with its version (`?v=` its ETag), and a file asked for at its current version may be kept by
    the browser for good: a reload asks for the page alone, and a changed file has a new URL in the new page. A file
    asked for otherwise is asked for again by its ETag ("304 Not Modified" while it is the same). Connections are
    kept alive."""

    builder: Builder
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):  # noqa: N802 - the base class's name
        if self.path.startswith("/__status"):
            return self._send(self.builder.status(), "application/json")
        if self.path.startswith("/__events"):
            return self._events()
        if self.path.startswith("/__livereload.js"):
            return self._send(RELOAD_SCRIPT, "text/javascript")
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if path.endswith(".html") and os.path.isfile(path):
            version = self.builder.version.encode()  # before the page is read: a rebuild meanwhile reloads it
            with open(path, "rb") as handle:
                page = handle.read()
            page = page.replace(b"</body>", b'<script data-version="' + version + b'">' + RELOAD_SCRIPT + b"</script></body>", 1)
            return self._send(self._versioned(page), "text/html; charset=utf-8")
        if os.path.isfile(path):
            return self._file(path)
        return super().do_GET()

    def _versioned(self, page: bytes) -> bytes:
        """The page with `?v=<ETag>` after each file of the site it loads (a URL that names no file stays as it is)."""
        here = posixpath.dirname(urlsplit(self.path).path) + "/"

        def versioned(match: re.Match) -> bytes:
            url = match.group(2).decode("utf-8", "replace")
            if url.endswith((".html", "/")):
                return match.group(0)
            path = self.translate_path(posixpath.join(here, url))
            try:
                found = os.stat(path)
            except OSError:
                return match.group(0)
            tag = f"{found.st_mtime_ns:x}-{found.st_size:x}".encode()
            return match.group(1) + match.group(2) + b"?v=" + tag + match.group(3)

        return SUBRESOURCE.sub(versioned, page)

    def _file(self, path: str) -> None:
        """A file of the site, or "304 Not Modified" when the browser holds this version of it (its ETag: the
        modification time in nanoseconds and the size, finer than Last-Modified's seconds)."""
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            return self.send_error(404, "File not found")
        with handle:
            found = os.fstat(handle.fileno())
            version = f"{found.st_mtime_ns:x}-{found.st_size:x}"
            tag = f'"{version}"'
            keep = FOREVER if parse_qs(urlsplit(self.path).query).get("v") == [version] else "no-cache"
            if self.headers.get("If-None-Match") == tag:
                self.send_response(304)
                self.send_header("ETag", tag)
                self.send_header("Cache-Control", keep)
                self.end_headers()
                return None
            body = handle.read()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", tag)
        self.send_header("Cache-Control", keep)
        self.end_headers()
        self.wfile.write(body)
        return None

    def _events(self) -> None:
        """A Server-Sent Events stream of the build's status: now, then at every change, until the page goes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")  # the stream ends with its connection
        self.end_headers()
        self.close_connection = True
        serial = -1
        try:
            while True:
                found = self.builder.wait(serial, KEEP_ALIVE_S)
                if found is None:
                    return
                if found[0] == serial:
                    self.wfile.write(b": still here\n\n")
                else:
                    serial = found[0]
                    self.wfile.write(b"retry: 300\ndata: " + found[1] + b"\n\n")
                self.wfile.flush()
        except OSError:  # the page closed or reloaded
            return

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    """The preview's HTTP server: a browser that goes away in the middle of a reply (a reload, a closed tab) is no
    error, and any other failure of one request is one line in the log, never a traceback."""

    log = staticmethod(print)

    def handle_error(self, request, client_address) -> None:
        import sys

        problem = sys.exc_info()[1]
        if isinstance(problem, (ConnectionError, TimeoutError)):  # a broken pipe, a reset or aborted connection
            return
        self.log(f"A request from {client_address[0]} failed ({type(problem).__name__}: {problem}); the server goes on serving.")


def _listen(port: int, handler, out: Path, log=print) -> ThreadingHTTPServer:
    try:
        server = _Server(("127.0.0.1", port), partial(handler, directory=str(out)))
        server.log = log
        return server
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BookError(f"--port {port}: the port is taken by another program; choose another one, or --port 0 for a free one.") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise BookError(f"--port {port}: this user may not listen on it (ports below 1024 need privileges); choose a port from 1024 to 65535, or --port 0.") from None
        raise BookError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror}); choose another port, or --port 0.") from None


def serve(book_dir: Path, out: Path, port: int, local: bool = False, log=print) -> None:
    builder = Builder(book_dir, out, local, log)
    handler = type("Handler", (_Handler,), {"builder": builder})
    server = _listen(port, handler, out, builder.log)  # before building: a taken port is said at once
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
        builder.stop()
        server.server_close()
        watcher.join(60)
