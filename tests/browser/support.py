"""What the browser tests need besides pytest: Chromium, axe-core, a local web server, built sites, page helpers.

- Chromium is Debian's (`/usr/bin/chromium`, package `chromium` in build/apt-packages.txt, installed by
  `make test`); Playwright only drives it, so `playwright install` (a browser download) is never needed.
- axe-core is a devDependency in package.json (`AXE_VERSION`), installed into node_modules/ by
  scripts/install-node-deps.sh (`make test`). Without it, the first browser test run fetches it with npm into
  `.cache/axe-core/<version>/` (ignored by git; `make clean` removes it).
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from conftest import REPO, require

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-default-apps", "--disable-sync", "--metrics-recording-only", "--no-default-browser-check"]
AXE_VERSION = "4.14.1"
AXE_DIR = REPO / ".cache" / "axe-core" / AXE_VERSION
SCREENSHOTS = REPO / "_build" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str:
    """Debian's Chromium (or $CHROMIUM); skips on a reader's machine without it, fails under CI=true."""
    candidates = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else list(CHROMIUM_CANDIDATES)
    found = next((c for c in candidates if Path(c).is_file() and os.access(c, os.X_OK)), None)
    require(found is not None, f"Chromium is not installed at {' or '.join(candidates)} (make test installs the Debian package 'chromium')")
    return found or ""


def axe_source() -> str:
    """The text of axe.min.js: node_modules/'s (package.json), else fetched from the npm registry with npm on first use."""
    installed = REPO / "node_modules" / "axe-core" / "axe.min.js"
    if installed.is_file():
        return installed.read_text(encoding="utf-8")
    target = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    if not target.is_file():
        npm = shutil.which("npm")
        require(npm is not None, f"axe-core {AXE_VERSION} is not in {AXE_DIR} and npm is not installed to fetch it")
        AXE_DIR.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{AXE_VERSION}.", dir=AXE_DIR.parent))
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(staging), "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--ignore-scripts", f"axe-core@{AXE_VERSION}"],
                capture_output=True, text=True, timeout=300,
            )
            fetched = staging / "node_modules" / "axe-core" / "axe.min.js"
            require(done.returncode == 0 and fetched.is_file(), f"npm could not fetch axe-core {AXE_VERSION}: {done.stderr.strip()[-600:]}")
            if AXE_DIR.exists():
                shutil.copytree(staging, AXE_DIR, dirs_exist_ok=True)
            else:
                os.replace(staging, AXE_DIR)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target.read_text(encoding="utf-8")


# --- a web server on 127.0.0.1 -------------------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    """A page the browser leaves resets its connections mid-reply: that is no failure to print."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class Server:
    root: Path
    httpd: http.server.ThreadingHTTPServer
    thread: threading.Thread

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def serve(root: Path) -> Server:
    """Serve `root` on 127.0.0.1 on a free port, in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, name=f"serve {root.name}", daemon=True)
    thread.start()
    return Server(root, httpd, thread)


# --- a built site and how to open it --------------------------------------------------------------------------------


@dataclass
class Site:
    """A built site: where its files are, the book it came from, and its two addresses."""

    name: str
    book_root: Path
    out: Path
    chapters: list[tuple[str, str]]  # (page path under out, title) in book order
    server: Server | None = None
    extra: dict = field(default_factory=dict)

    def url(self, page: str = "index.html", scheme: str = "http") -> str:
        if scheme == "file":
            return (self.out / page).resolve().as_uri()
        assert self.server is not None
        return self.server.base + page

    def page_of(self, url: str) -> str:
        """The page path under `out` that a URL opens (fragment and query dropped)."""
        parts = urlsplit(url)
        if parts.scheme == "file":
            from urllib.request import url2pathname

            return Path(url2pathname(parts.path)).resolve().relative_to(self.out.resolve()).as_posix()
        return parts.path.lstrip("/")


def build(book_root: Path, out: Path, name: str) -> Site:
    """Build the HTML site of `book_root` with the tool (broken links of unfinished chapters do not stop it)."""
    from click.testing import CliRunner

    from tools.book.config import load_config
    from tools.book.load import load_book
    from tools.cli import main
    from tools.render.pages import page_path

    result = CliRunner().invoke(main, ["build", "html", "--book", str(book_root), "--out", str(out)])
    assert (out / "index.html").is_file(), result.output
    config = load_config(book_root)
    book = load_book(config.root, config=config)
    chapters = [(page_path(c.path), c.title) for c in book.chapters]
    return Site(name, book_root, out, chapters, extra={"build_output": result.output, "exit_code": result.exit_code})


# --- watching a page: console errors, requests that leave 127.0.0.1, failed loads --------------------------------------


@dataclass
class Watch:
    """Everything a page did that a test must fail on."""

    console_errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [f"console error: {e}" for e in self.console_errors] + [f"request leaving the local server: {u}" for u in self.outside] + [f"failed request: {f}" for f in self.failed]


def is_local(url: str, allowed_base: str | None) -> bool:
    scheme = urlsplit(url).scheme
    if scheme in ("file", "data", "blob", "about"):
        return True
    return allowed_base is not None and url.startswith(allowed_base)


def outside_pattern(allowed_base: str | None) -> re.Pattern:
    """Every network URL except those under `allowed_base` (file: and data: URLs are not network requests)."""
    keep = f"(?!{re.escape(allowed_base)})" if allowed_base else ""
    return re.compile(f"^{keep}(https?|wss?|ftp)://", re.IGNORECASE)


def new_context(browser, site: Site, scheme: str, watch: Watch, **options):
    """A fresh browser context (its own storage) in which every request that leaves the site is refused and noted.

    The route's pattern is a regular expression, which Playwright matches inside the browser's driver: requests to
    the local server are never stopped on their way, so the interception costs nothing on every page load."""
    context = browser.new_context(**options)
    allowed = site.server.base if site.server is not None and scheme == "http" else None

    def refuse(route, request):
        watch.outside.append(request.url)
        route.abort()

    context.route(outside_pattern(allowed), refuse)

    def on_page(page):
        page.on("console", lambda message: watch.console_errors.append(f"{message.text} ({message.location.get('url', '')})") if message.type == "error" else None)
        page.on("pageerror", lambda error: watch.console_errors.append(f"uncaught: {error}"))
        page.on("requestfailed", lambda request: watch.failed.append(f"{request.url}: {request.failure}") if is_local(request.url, allowed) else None)
        page.on("response", lambda response: watch.failed.append(f"{response.url}: HTTP {response.status}") if response.status >= 400 else None)

    context.on("page", on_page)
    return context
