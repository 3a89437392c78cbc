"""The book's configuration: optional `book.toml` at the book root, with defaults for any GitHub-style book."""
from __future__ import annotations

import re
from functools import lru_cache
import subprocess
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from .errors import BookError

CONFIG_NAME = "book.toml"
DEFAULT_CHAPTER_LISTS = ("chapters-md.txt", "SUMMARY.txt", "chapters.txt")


@dataclass
class LinkConfig:
    """`[links]`: settings for `tools check-links --external`."""

    exclude: list[str] = field(default_factory=list)  # regexes of URLs never fetched
    cache_max_age_days: float = 7.0
    host_delay: float = 1.0  # seconds between two requests to one host
    timeout: float = 15.0
    retries: int = 3
    backoff: float = 1.0  # seconds before the first retry (doubled each time) when the server gives no Retry-After


@dataclass
class BookConfig:
    """`[book]`: what a reader sees on the cover and where the tool finds things."""

    root: Path
    title: str = ""
    authors: list[str] = field(default_factory=list)
    language: str = "en"
    description: str = ""
    subject: str = ""
    repository: str = ""  # e.g. https://github.com/owner/name, for links to files that are not chapters
    branch: str = "main"
    repository_path: str | None = None  # the book root inside the repository; found with git when unset
    chapters: str = ""  # the chapter list, relative to the root
    output: str = ""  # outputs go to <output>/<format>; default: _build in the current folder
    cover: str = ""  # a cover image, relative to the root
    links: LinkConfig = field(default_factory=LinkConfig)
    config_file: Path | None = None

    @property
    def chapter_list(self) -> Path:
        return self.root / self.chapters

    def blob_url(self, rel_path: str, is_dir: bool = False) -> str:
        """The repository URL of a file of the book, or '' when no repository is configured."""
        if not self.repository:
            return ""
        prefix = self.repository_path if self.repository_path is not None else _git_prefix(self.root)
        path = f"{prefix}{rel_path}".strip("/")
        kind = "tree" if is_dir else "blob"
        return f"{self.repository.rstrip('/')}/{kind}/{self.branch}/{path}"


_BOOK_KEYS = {f.name for f in fields(BookConfig)} - {"root", "links", "config_file"}
_LINK_KEYS = {f.name for f in fields(LinkConfig)}
_ALIASES = {"author": "authors", "repo": "repository", "repo_url": "repository", "lang": "language", "chapter_list": "chapters", "output_dir": "output"}


@lru_cache(maxsize=64)
def _git_prefix(root: Path) -> str:
    """The book root's path inside its git work tree ('' at the top or outside git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--show-prefix"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return 0


def _unknown(path: Path, text: str, table: str, key: str, known: set[str]) -> BookError:
    line = _line_of(text, key)
    where = f"{path}:{line}" if line else str(path)
    return BookError(f"{where}: unknown key '{key}' in [{table}]; known keys are: {', '.join(sorted(known))}.")


def _check_type(path: Path, text: str, key: str, value, expected) -> None:
    if expected is float and isinstance(value, int):
        return
    if not isinstance(value, expected):
        line = _line_of(text, key)
        where = f"{path}:{line}" if line else str(path)
        raise BookError(f"{where}: '{key}' must be a {expected.__name__}, not {type(value).__name__} ({value!r}).")


def load_config(root: Path) -> BookConfig:
    """Read `book.toml` when present; fill in the defaults of a plain GitHub-style book otherwise."""
    root = root.resolve()
    if not root.is_dir():
        raise BookError(f"The book root '{root}' is not a directory; pass --book DIR pointing at the folder with the chapter list.")
    config = BookConfig(root=root)
    path = root / CONFIG_NAME
    if path.is_file():
        config.config_file = path
        text = path.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BookError(f"{path}: not valid TOML: {exc}.") from exc
        for table in data:
            if table not in ("book", "links"):
                raise BookError(f"{path}:{_line_of(text, '[' + table) or 0}: unknown table [{table}]; use [book] and [links].")
        for key, value in data.get("book", {}).items():
            name = _ALIASES.get(key, key)
            if name not in _BOOK_KEYS:
                raise _unknown(path, text, "book", key, _BOOK_KEYS)
            if name == "authors" and isinstance(value, str):
                value = [value]
            expected = list if name == "authors" else str
            _check_type(path, text, key, value, expected)
            setattr(config, name, value)
        for key, value in data.get("links", {}).items():
            if key not in _LINK_KEYS:
                raise _unknown(path, text, "links", key, _LINK_KEYS)
            expected = {"exclude": list, "retries": int}.get(key, float)
            _check_type(path, text, key, value, expected)
            setattr(config.links, key, value)
        for pattern in config.links.exclude:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise BookError(f"{path}:{_line_of(text, 'exclude')}: the exclusion pattern {pattern!r} is not a valid regex: {exc}.") from exc
    if not config.chapters:
        config.chapters = next((name for name in DEFAULT_CHAPTER_LISTS if (root / name).is_file()), "")
    return config
