"""A content-addressed cache of parsed chapters and rendered pages, so a rebuild redoes only what changed.

Keys hash everything an entry depends on (the chapter's bytes, the tool's own code and templates, and for rendered
pages the URL each link got), so a stale entry can never be used: a changed input is a different key.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the tool's code and templates: any change to them invalidates every entry."""
    from .render.templates import TEMPLATES

    from importlib.metadata import version

    digest = hashlib.sha256()
    for library in ("markdown-it-py", "mdit-py-plugins", "pygments", "jinja2"):
        digest.update(f"{library}={version(library)}".encode())
    for base in (PACKAGE, TEMPLATES):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".html", ".css", ".js"):
                digest.update(path.relative_to(base).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def key_of(*parts) -> str:
    digest = hashlib.sha256(code_fingerprint().encode())
    for part in parts:
        digest.update(b"\0")
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
    return digest.hexdigest()


def default_dir() -> Path:
    return Path(os.environ.get("BOOK_CACHE_DIR", Path.cwd() / ".cache" / "build"))


class Cache:
    """Pickles under `<dir>/<namespace>/<key>`; unreadable entries count as misses."""

    def __init__(self, directory: Path | None = None, enabled: bool = True):
        self.directory = directory or default_dir()
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    def _path(self, namespace: str, key: str) -> Path:
        return self.directory / namespace / key[:2] / key

    def get(self, namespace: str, key: str):
        if not self.enabled:
            return None
        path = self._path(namespace, key)
        try:
            with open(path, "rb") as handle:
                value = pickle.load(handle)
            os.utime(path)  # used now: `prune` keeps it
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
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

    def put(self, namespace: str, key: str, value) -> None:
        if not self.enabled:
            return
        path = self._path(namespace, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, path)
        except OSError:
            pass  # a cache that cannot be written only costs time
