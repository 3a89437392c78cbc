"""What a link points at: a pure function of the linking chapter, the destination and the book's file index."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import unquote

from tools.book.link_model import Link, LinkKind, Problem, Target, TargetKind
from tools.core.source_names import is_readme, readme_preference

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_EMBEDDED_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class FileIndex:
    """Every file and folder under the book root (relative posix paths), and which files are chapters."""

    files: frozenset[str]
    dirs: frozenset[str]
    chapters: frozenset[str]
    repo_prefix: str = ""  # the book root inside the repository, for `/absolute` links as GitHub reads them
    # Entries under the root that are never read (a link out of the root, a FIFO, a loop) -> why, e.g. "is a socket..."
    refused: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # In a translation's view (tools/book/translations.py): its folder, whose files stand in for the original's files at
    # the same relative paths; a link is followed from the logical place of its chapter, then lands on the
    # translated file when there is one, else on the original.
    folder: str = ""

    def logical(self, path: str) -> str:
        """The path a file of the translation's folder stands for (`zh/a.md` -> `a.md`); any other is its own."""
        if self.folder and (path == self.folder or path.startswith(self.folder + "/")):
            return path[len(self.folder) + 1 :]
        return path

    def real(self, logical: str) -> str:
        """The file (or folder) the book keeps for a logical path: the translation's own when it has one."""
        if self.folder:
            own = posixpath.join(self.folder, logical) if logical else self.folder
            if own in self.files or own in self.dirs:
                return own
        return logical

    def refusal(self, path: str) -> str:
        """Why `path` (or a folder on the way to it) is not read; '' when nothing refuses it."""
        if path in self.refused:
            return self.refused[path]
        parts = path.split("/")
        for count in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:count])
            if folder in self.refused:
                return f"lies in '{folder}', which {self.refused[folder]}"
        return ""

    @cached_property
    def _readmes(self) -> dict[str, str]:
        """Each folder ('' for the root) -> its README, by the one rule of `tools/core/source_names.py`."""
        found: dict[str, str] = {}
        for path in sorted((f for f in self.files if is_readme(f)), key=readme_preference):
            found.setdefault(posixpath.dirname(path), path)
        return found

    def readme_of(self, directory: str) -> str:
        return self._readmes.get(directory, "")


def is_external(href: str) -> bool:
    return bool(_SCHEME.match(href)) or href.startswith("//")


def split_fragment(href: str) -> tuple[str, str]:
    """`path?query#frag` -> (path, frag); the query is dropped: files have none."""
    path, _, fragment = href.partition("#")
    return path.partition("?")[0], fragment


def web_address(href: str) -> str:
    """The URL GitHub makes of a `www.` autolink (GFM's extended autolinks): `http://` put before it."""
    return "http://" + href if href[:4].lower() == "www." else href


def resolve_link(source: str, link: Link, index: FileIndex) -> Target:
    """`resolve` for a link as written: an autolink whose destination starts with `www.` is the web address GitHub
    makes of it, whether the parser put `http://` before it already or not; any other link is what its text says
    (`[text](www.example.com)` is a relative path on GitHub too)."""
    if link.kind is LinkKind.AUTOLINK and link.href[:4].lower() == "www.":
        return Target(TargetKind.EXTERNAL, url=web_address(link.href))
    return resolve(source, link.href, index)


def resolve(source: str, href: str, index: FileIndex) -> Target:
    """Resolve `href` written in the chapter `source` (both relative to the book root)."""
    if not href.strip():
        return Target(TargetKind.BROKEN, problem=Problem.EMPTY, reason="the link is empty")
    if is_external(href):
        if len(_EMBEDDED_SCHEME.findall(href)) >= 3:
            return Target(TargetKind.BROKEN, url=href, problem=Problem.NESTED_URL, reason="the URL holds several other URLs, as if pasted into itself")
        return Target(TargetKind.EXTERNAL, url=href)
    raw_path, raw_fragment = split_fragment(href)
    path, fragment = unquote(raw_path), unquote(raw_fragment)
    if not path:
        return Target(TargetKind.FRAGMENT, path=source, fragment=fragment)
    if path.startswith("/"):
        prefix = index.repo_prefix.strip("/")
        inside = path.lstrip("/")
        if prefix:
            if inside != prefix and not inside.startswith(prefix + "/"):
                return Target(TargetKind.BROKEN, path=inside, problem=Problem.OUTSIDE_ROOT, reason="the link points outside the book's folder")
            inside = inside[len(prefix) :].lstrip("/")
        joined = inside
    else:
        joined = posixpath.join(posixpath.dirname(index.logical(source)), path)
    norm = posixpath.normpath(joined) if joined else "."
    norm = "" if norm == "." else norm
    if (norm == ".." or norm.startswith("../")) and not path.startswith("/") and index.logical(source) != source:
        # From a translated file, a link that climbs out of its folder (`../zh/a.md`, `../a.md`) is read as GitHub
        # reads it, from the file's real place, then stands for that logical path like any other link.
        real = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        norm = index.logical("" if real == "." else real)
    if norm == ".." or norm.startswith("../") or norm.startswith("/"):
        return Target(TargetKind.BROKEN, path=norm, fragment=fragment, problem=Problem.OUTSIDE_ROOT, reason="the link leaves the book's root folder")
    norm = index.real(norm)
    if norm in index.files and not path.endswith("/"):
        if norm in index.chapters:
            return Target(TargetKind.CHAPTER, path=norm, fragment=fragment)
        kind = TargetKind.MARKDOWN if norm.lower().endswith(MARKDOWN_SUFFIXES) else TargetKind.FILE
        return Target(kind, path=norm, fragment=fragment)
    if norm == "" or norm in index.dirs:
        return Target(TargetKind.DIRECTORY, path=norm, fragment=fragment, readme=index.readme_of(norm) or index.readme_of(index.logical(norm)))
    refusal = index.refusal(norm) if index.refused else ""
    if refusal:
        return Target(TargetKind.BROKEN, path=norm, fragment=fragment, problem=Problem.REFUSED, reason=refusal)
    return Target(TargetKind.BROKEN, path=norm, fragment=fragment, problem=Problem.MISSING_FILE, reason=f"there is no file '{norm}' in the book")
