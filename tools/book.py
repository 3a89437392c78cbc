"""The book model: config, ordered chapters, their anchors and every link resolved against the whole book."""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field, replace
from pathlib import Path

from markdown_it.token import Token

from .collect import Heading, collect
from .cache import Cache, key_of
from .config import BookConfig, _git_prefix, load_config
from .errors import BookError, Diagnostics
from .links.model import Link
from .links.resolve import MARKDOWN_SUFFIXES, FileIndex, resolve
from .markdown import create_markdown
from .parallel import map_in_processes

SKIPPED_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".cache", ".pytest_cache", ".hypothesis"}


@dataclass
class Chapter:
    path: str  # relative to the book root, posix
    text: str
    parsed: list[Token] | None = field(repr=False)  # None when the chapter came from the cache without tokens
    env: dict = field(repr=False)
    title: str
    headings: list[Heading]
    anchors: dict[str, int]  # anchor -> 1-based line
    links: list[Link]
    list_line: int = 0  # its line in the chapter list
    key: str = ""  # hash of the bytes and of the tool's code: what the cached form depends on
    index: FileIndex | None = field(default=None, repr=False)
    extras: dict = field(default_factory=dict, repr=False)  # what output formats rendered while parsing

    @property
    def stem(self) -> str:
        return posixpath.splitext(self.path)[0]

    @property
    def tokens(self) -> list[Token]:
        """The token stream; a chapter loaded from the cache is parsed again on first use, its links re-resolved."""
        if self.parsed is None:
            env: dict = {}
            self.parsed = create_markdown().parse(self.text, env)
            found = collect(self.path, self.text, self.parsed, env)
            self.env, self.headings, self.anchors, self.links = env, found.headings, found.anchors, found.links
            if self.index is not None:
                for link in self.links:
                    link.target = resolve(self.path, link.href, self.index)
        return self.parsed

    def without_tokens(self) -> "Chapter":
        """A light copy for the cache: the model without the token stream."""
        links = [replace(link, tokens=[]) for link in self.links]
        return replace(self, parsed=None, env={}, links=links, index=None, extras={})


@dataclass
class Book:
    config: BookConfig
    chapters: list[Chapter]
    index: FileIndex
    diagnostics: Diagnostics

    def __post_init__(self) -> None:
        self.by_path = {chapter.path: chapter for chapter in self.chapters}

    @property
    def root(self) -> Path:
        return self.config.root

    @property
    def title(self) -> str:
        return self.config.title or (self.chapters[0].title if self.chapters else self.root.name)

    def links(self):
        for chapter in self.chapters:
            yield from chapter.links


def read_source(data: bytes, rel: str, diagnostics: Diagnostics) -> str:
    """A file's text; bytes that are not UTF-8 are reported with their line and replaced."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        diagnostics.error(
            rel, line, f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x}); it was read with replacement characters.",
            col=col, suggestion="Save it as UTF-8.", code="not-utf8",
        )
        return data.decode("utf-8-sig", errors="replace")


def scan_files(root: Path, output: Path | None) -> tuple[set[str], set[str]]:
    files: set[str] = set()
    dirs: set[str] = set()
    skip_output = output.resolve() if output else None
    for current, subdirs, names in os.walk(root):
        here = Path(current)
        keep = []
        for name in sorted(subdirs):
            full = here / name
            if name in SKIPPED_DIRS or (skip_output and full.resolve() == skip_output):
                continue
            keep.append(name)
            dirs.add(full.relative_to(root).as_posix())
        subdirs[:] = keep
        for name in names:
            files.add((here / name).relative_to(root).as_posix())
    return files, dirs


def read_chapter_list(config: BookConfig, files: set[str], diagnostics: Diagnostics) -> list[tuple[str, int]]:
    """(path, line) of every chapter in order; a missing or repeated entry is reported with the list's line."""
    if not config.chapters:
        found = sorted(f for f in files if f.lower().endswith(MARKDOWN_SUFFIXES) and "/" not in f or f.lower().endswith(MARKDOWN_SUFFIXES))
        found.sort(key=lambda f: (f.count("/"), posixpath.basename(f).lower() not in ("readme.md",), f))
        if not found:
            raise BookError(f"{config.root}: no chapter list (chapters-md.txt) and no markdown files; create chapters-md.txt with one chapter path per line.")
        diagnostics.warning(str(config.root), 0, f"no chapter list found; using all {len(found)} markdown files.", suggestion="Create chapters-md.txt to set the order.", code="no-chapter-list")
        return [(path, 0) for path in found]
    list_path = config.chapter_list
    if not list_path.is_file():
        raise BookError(f"{list_path}: the chapter list does not exist; create it with one chapter path per line, or set 'chapters' in book.toml.")
    entries: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    list_name = config.chapters
    for number, line in enumerate(list_path.read_text(encoding="utf-8").splitlines(), 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        path = posixpath.normpath(entry.lstrip("/"))
        if path.startswith("../"):
            diagnostics.error(list_name, number, f"the chapter '{entry}' is outside the book's root folder.", code="chapter-outside-root")
            continue
        if path not in files:
            hint = _did_you_mean(path, [f for f in files if f.endswith(MARKDOWN_SUFFIXES)])
            diagnostics.error(list_name, number, f"the chapter '{entry}' does not exist.", suggestion=hint, code="missing-chapter")
            continue
        if path in seen:
            diagnostics.warning(list_name, number, f"the chapter '{entry}' is listed twice (first on line {seen[path]}); the repeat is ignored.", code="duplicate-chapter")
            continue
        seen[path] = number
        entries.append((path, number))
    if not entries:
        raise BookError(f"{list_path}: the chapter list names no existing chapter.")
    return entries


def _did_you_mean(wanted: str, candidates) -> str:
    import difflib

    close = difflib.get_close_matches(wanted, list(candidates), n=1, cutoff=0.6)
    return f"Did you mean '{close[0]}'?" if close else ""


def cached_chapter(root: Path, path: str, list_line: int, diagnostics: Diagnostics, cache: Cache | None) -> Chapter | None:
    """The chapter as the cache holds it (without tokens), or None when its bytes, place or the tool changed."""
    if cache is None or not cache.enabled:
        return None
    cached = cache.get("chapter", key_of("chapter", path, list_line, (root / path).read_bytes()))
    if cached is None:
        return None
    chapter, problems = cached
    for problem in problems:
        diagnostics.add(problem)
    return chapter


def parse_chapter(root: Path, path: str, list_line: int, diagnostics: Diagnostics, md=None, cache: Cache | None = None) -> Chapter:
    cached = cached_chapter(root, path, list_line, diagnostics, cache)
    if cached is not None:
        return cached
    data = (root / path).read_bytes()
    key = key_of("chapter", path, list_line, data)
    own = Diagnostics()
    text = read_source(data, path, own)
    diagnostics.extend(own)
    md = md or create_markdown()
    env: dict = {}
    tokens = md.parse(text, env)
    found = collect(path, text, tokens, env)
    for line, problem in found.problems:  # content the parser could only show as text (nesting too deep)
        own.warning(path, line, problem, suggestion="Flatten the nesting.", code="too-deep")
    diagnostics.extend(own)
    h1 = next((h for h in found.headings if h.level == 1), None)
    first = h1 or (found.headings[0] if found.headings else None)
    title = first.text if first and first.text else posixpath.splitext(posixpath.basename(path))[0]
    chapter = Chapter(path, text, tokens, env, title, found.headings, found.anchors, found.links, list_line, key)
    if cache is not None:
        cache.put("chapter", key, (chapter.without_tokens(), own.items))
    return chapter


def load_book(root: Path | str, output: Path | None = None, config: BookConfig | None = None, cache: Cache | None = None, jobs: int = 1, per_chapter=None) -> Book:
    """Read the config and chapter list, parse every chapter once, resolve every link against the whole book.

    `per_chapter(book)` may return a function that each parsed chapter is handed to, in the process that parsed it
    (an output format renders there while the tokens are at hand); its results land in `chapter.extras`.
    """
    config = config or load_config(Path(root))
    diagnostics = Diagnostics()
    files, dirs = scan_files(config.root, output)
    entries = read_chapter_list(config, files, diagnostics)
    prefix = config.repository_path if config.repository_path is not None else _git_prefix(config.root)
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(path for path, _ in entries), prefix.strip("/"))
    book = Book(config, [], index, diagnostics)
    md = create_markdown()
    extra = per_chapter(book) if per_chapter is not None else None
    parent = os.getpid()

    def finish(chapter: Chapter, found: Diagnostics):
        chapter.index = index
        for link in chapter.links:
            link.target = resolve(chapter.path, link.href, index)
        extras = extra(chapter) if extra is not None else None
        if os.getpid() != parent:  # send the model back, not the token stream
            chapter = chapter.without_tokens()
        return chapter, found.items, extras

    def one(entry: tuple[str, int]):
        found = Diagnostics()
        return finish(parse_chapter(config.root, entry[0], entry[1], found, md, cache), found)

    def from_cache(entry: tuple[str, int]):
        found = Diagnostics()
        chapter = cached_chapter(config.root, entry[0], entry[1], found, cache)
        return finish(chapter, found) if chapter is not None else None

    # What the cache holds is taken here: starting workers for it would cost more than it saves.
    results = [from_cache(entry) for entry in entries]
    missing = [number for number, result in enumerate(results) if result is None]
    parsed, _ = map_in_processes(one, [entries[number] for number in missing], jobs)
    for number, result in zip(missing, parsed):
        results[number] = result
    for chapter, problems, extras in results:  # type: ignore[misc]
        chapter.index = index  # a chapter made in a worker came back pickled, without it and without its tokens
        chapter.extras = extras or {}
        for problem in problems:
            diagnostics.add(problem)
        book.chapters.append(chapter)
    book.by_path = {chapter.path: chapter for chapter in book.chapters}
    return book
