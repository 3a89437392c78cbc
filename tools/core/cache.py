"""A content-addressed cache of parsed chapters and rendered pages, so a rebuild redoes only what changed.

Keys hash everything an entry depends on (the chapter's bytes, the tool's own code and templates, and for rendered
pages the URL each link got), so a stale entry can never be used: a changed input is a different key.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from tools.core.cache_signing import signature as _signature
from tools.core.extensions import active

PACKAGE = Path(__file__).resolve().parent.parent  # tools/: every layer's code and the theme, not only core/


LIBRARIES = ("markdown_it", "mdit_py_plugins", "emoji", "pygments", "jinja2", "latex2mathml", "ziamath", "ziafont")  # what parsed chapters and rendered pages depend on


def library_stamp(name: str) -> bytes:
    """What changes with the library's version: its `__init__.py`, which holds `__version__`. It is found without
    importing the library, and without importlib.metadata, whose import (email, zipfile, csv) would cost `tools
    check-links` on a small book a fifth of its start-up."""
    from importlib.util import find_spec

    spec = find_spec(name)
    origin = spec.origin if spec is not None else None
    return f"{name}=".encode() + (Path(origin).read_bytes() if origin else b"missing")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the tool's code and templates (tools/render/theme/, inside the package) and of the libraries' versions:
    any change to them invalidates every entry."""
    digest = hashlib.sha256()
    for library in LIBRARIES:
        digest.update(library_stamp(library))
    files = []  # the templates are package data: tools/render/theme/ is under PACKAGE
    for folder, subfolders, names in os.walk(PACKAGE):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        files += [os.path.join(folder, name) for name in names if name.endswith((".py", ".html", ".css", ".js"))]
    for path in sorted(files):  # strings, not Paths: sorting Paths took as long as hashing the files
        digest.update(os.path.relpath(path, PACKAGE).replace(os.sep, "/").encode())
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def key_of(*parts) -> str:
    """A key over the tool's fingerprint, the book's extensions (its markdown plugins and their versions, its theme
    files: tools/core/extensions.py) and `parts`."""
    digest = hashlib.sha256(code_fingerprint().encode())
    digest.update(active().fingerprint)
    for part in parts:
        digest.update(b"\0")
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
    return digest.hexdigest()


MAGIC = b"mlbook-cache-1\n"
ENTRY_LIMIT = 1024 * 1024 * 1024  # a cached PDF part of a very large chapter stays well below this


def default_dir() -> Path:
    return Path(os.environ.get("BOOK_CACHE_DIR", Path.cwd() / ".cache" / "build"))


class Cache:
    """Pickles under `<dir>/<namespace>/<key>`; unreadable entries count as misses."""

    def __init__(self, directory: Path | None = None, enabled: bool = True):
        self.directory = directory or default_dir()
        self.enabled = enabled
        self.held: list[tuple[str, str, object]] | None = None  # puts waiting for `flush` (see `hold`)
        self.hits = 0
        self.misses = 0

    def _path(self, namespace: str, key: str) -> Path:
        return self.directory / namespace / key[:2] / key

    def get(self, namespace: str, key: str):
        if not self.enabled:
            return None
        import hmac
        import pickle

        from tools.core.safe_io import UnsafeFile, read_bytes

        path = self._path(namespace, key)
        try:
            data = read_bytes(path, limit=ENTRY_LIMIT)  # a regular file, never a FIFO a planted link points at
            head = len(MAGIC) + 32
            if data[: len(MAGIC)] != MAGIC or not hmac.compare_digest(data[len(MAGIC) : head], _signature(namespace, key, data[head:])):
                raise UnsafeFile(str(path), "is not an entry this user's tool wrote")
            value = pickle.loads(data[head:])
            os.utime(path)  # used now: `prune` keeps it
        except (OSError, UnsafeFile, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def contains(self, namespace: str, key: str) -> bool:
        return self.enabled and self._path(namespace, key).is_file()

    def prune(self, max_age_days: float = 30, every_hours: float = 24) -> int:
        """Delete entries no build has used for `max_age_days` (every edit adds entries; nothing else removes them).
        Walks the folder at most once per `every_hours`; returns how many entries it deleted."""
        import time

        marker = self.directory / ".pruned"
        now = time.time()
        try:
            if not self.enabled or now - marker.stat().st_mtime < every_hours * 3600:
                return 0
        except FileNotFoundError:
            if not self.directory.is_dir():
                return 0
        removed = 0
        for path in self.directory.glob("*/*/*"):
            try:
                if now - path.stat().st_mtime > max_age_days * 86400:
                    path.unlink()
                    removed += 1
            except OSError:
                pass
        try:
            marker.touch()
        except OSError:
            pass
        return removed

    def hold(self) -> None:
        """Keep the next puts until `flush`: a worker writes its entries after it has replied, while the main
        process works on the reply (the values must not change meanwhile)."""
        if self.held is None:
            self.held = []

    def flush(self) -> None:
        """Write the puts held since `hold`, and put at once again. A SIGTERM meanwhile takes effect once they are
        written: a worker ended while it flushes (the main process failed or was stopped) leaves no temporary file."""
        import signal

        held, self.held = self.held, None
        if not held:
            return
        blocks = hasattr(signal, "pthread_sigmask")
        if blocks:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            for namespace, key, value in held:
                self.put(namespace, key, value)
        finally:
            if blocks:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    def put(self, namespace: str, key: str, value) -> None:
        if not self.enabled:
            return
        if self.held is not None:
            self.held.append((namespace, key, value))
            return
        import pickle  # imported by the entries' users only: a command with the cache off never pays for them

        from tools.core.atomic import replace_bytes

        path = self._path(namespace, key)
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_bytes(path, MAGIC + _signature(namespace, key, payload) + payload, prefix=".tmp-")  # `prune` knows the prefix
        except OSError:
            pass  # a cache that cannot be written only costs time
