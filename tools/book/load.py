"""The book model: config, ordered chapters, their anchors and every link resolved against the whole book."""
from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import diagram_source, safe_io
from .cache import Cache, key_of
from .chapter_parts import ChapterEntries
from .collect import Collected, Heading, collect
from .config import BookConfig, load_config
from .errors import BookError, Diagnostics
from .git import repository_prefix
from .link_model import Link
from .link_resolve import MARKDOWN_SUFFIXES, FileIndex, resolve
from .math_syntax import report_math_errors
from .source_names import SKIPPED_DIRS, is_readme

if TYPE_CHECKING:
    from markdown_it.token import Token

# The parser (markdown-it) is imported only to parse: a book all from the cache loads without it (quick check-links).


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
    diagrams: list[tuple[int, str]] = field(default_factory=list)  # ```mermaid fences (line, source), drawn by tools/diagrams.py
    drawings: dict[str, diagram_source.Drawing] = field(default_factory=dict, repr=False)  # source -> its drawing, set by the build
    language: str = ""  # the language of its text (tools/translations.py): a translation's tag, the original's for a fallback
    fallback: bool = False  # in a translation's view: not translated yet, shown in the original's language

    @property
    def stem(self) -> str:
        return posixpath.splitext(self.path)[0]

    @property
    def tokens(self) -> list[Token]:
        """The token stream; a chapter loaded from the cache is parsed again on first use, its links re-resolved.
        A build never asks a light chapter for it (tools/pipeline.py keeps the tokens where they were parsed);
        a renderer called on its own does (`check-links --html`, the scripts)."""
        if self.parsed is None:
            tokens, env, found = parse_text(self.path, self.text)
            self.parsed, self.env, self.headings, self.anchors, self.links = tokens, env, found.headings, found.anchors, found.links
            if self.index is not None:
                resolve_links(self, self.index)
        return self.parsed

    def without_tokens(self) -> Chapter:
        """A light copy for the cache: the model without the token stream."""
        links = [replace(link, tokens=[]) for link in self.links]
        return replace(self, parsed=None, env={}, links=links, index=None)


@dataclass
class Book:
    config: BookConfig
    chapters: list[Chapter]
    index: FileIndex
    diagnostics: Diagnostics
    parts: list = field(default_factory=list)  # chapter_parts.Part, in order

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


PARSE_LOG = "TOOLS_PARSE_LOG"  # a file that gets the path of every chapter parsed (tests count parses with it)


def parse_text(path: str, text: str, md=None) -> tuple[list[Token], dict, Collected]:
    """The one parse of a chapter: its tokens, the parser's env and what `collect` finds in them. Every parse of a
    chapter goes through here, so that with TOOLS_PARSE_LOG set each one appends the chapter's path to that file
    (one write in append mode: forked workers' lines do not mix)."""
    log = os.environ.get(PARSE_LOG)
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.getpid()} {path}\n".encode())
        finally:
            os.close(fd)
    if md is None:
        from .markdown import create_markdown

        md = create_markdown()
    env: dict = {}
    tokens = md.parse(text, env)
    return tokens, env, collect(path, text, tokens, env)


def resolve_links(chapter: Chapter, index: FileIndex) -> None:
    """Resolve every link of the chapter against the whole book (a pure function of the link and the file index)."""
    chapter.index = index
    for link in chapter.links:
        link.target = resolve(chapter.path, link.href, index)


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def read_source(data: bytes, rel: str, diagnostics: Diagnostics) -> str:
    """A file's text with its line ends as written (mv edits it in place; markdown-it reads CRLF as LF). Bytes that
    are not UTF-8, and control characters (no XML output can hold them: the EPUB would stop), are reported with
    their line and replaced by U+FFFD."""
    text = _decode_source(data, rel, diagnostics)
    found = _CONTROL.search(text)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        col = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
        count = len(_CONTROL.findall(text))
        diagnostics.warning(
            rel, line, f"the file holds {count} control character{'s' if count != 1 else ''} (first U+{ord(found.group()):04X}); shown as \ufffd.",
            col=col, suggestion="Delete them: they are invisible on GitHub and not allowed in the EPUB.", code="control-character",
        )
        text = _CONTROL.sub("\ufffd", text)
    return text


def _decode_source(data: bytes, rel: str, diagnostics: Diagnostics) -> str:
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


def _refusal(path: Path, real_root: str, folder: bool = False) -> str:
    """Why the walk will not index `path` ('' when it may): only regular files (and folders) whose real path lies
    inside the root are read; `os.lstat` settles a plain file without resolving its parents, which the walk entered."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISREG(mode) or (folder and stat.S_ISDIR(mode)):
        return ""
    try:
        real = safe_io.real_path(path)
    except safe_io.UnsafeFile as exc:
        return exc.reason
    if not safe_io.is_inside(real, real_root):
        return f"is a symbolic link that leaves the book's root (to '{real}'); it is not read"
    if folder:
        return ""
    try:
        safe_io.check_regular(real)
    except safe_io.UnsafeFile as exc:
        return exc.reason
    return ""


MAX_ENTRIES = 200_000  # files and folders under a book root; real books have hundreds


def scan_files(root: Path, output: Path | None, refused: dict[str, str] | None = None) -> tuple[set[str], set[str]]:
    """The regular files and the folders under the root (relative posix paths). Whatever else the walk meets (a
    symbolic link leading out of the root or into a loop, a FIFO, a socket, a device) is left out of both and, when
    `refused` is given, recorded there with the reason, so that a link to it says what it is, not "missing"."""
    files: set[str] = set()
    dirs: set[str] = set()
    refused = refused if refused is not None else {}
    real_root = os.path.realpath(root)
    skip_output = os.path.realpath(output) if output else None
    for current, subdirs, names in safe_io.walk(root):
        if len(files) + len(dirs) + len(refused) > MAX_ENTRIES:  # `--book /` or `--book ~`: no book is that big
            raise BookError(f"{root}: the book's folder holds more than {MAX_ENTRIES:,} files and folders; is --book the folder of the book (the one with its chapter list)?")
        here = Path(current)
        keep = []
        for name in sorted(subdirs):
            full = here / name
            rel = full.relative_to(root).as_posix()
            # The walk enters no link, so a folder's real path is the root's plus its own (no realpath per level).
            if name in SKIPPED_DIRS or (skip_output and os.path.join(real_root, rel) == skip_output) or os.path.isfile(full / ".tools-output"):  # a site the tool built (isfile: an unreadable folder is no site)
                continue
            problem = _refusal(full, real_root, folder=True)
            if problem:
                refused[rel] = problem
                continue
            keep.append(name)
            dirs.add(rel)
        subdirs[:] = keep
        for name in names:
            rel = (here / name).relative_to(root).as_posix()
            problem = _refusal(here / name, real_root)
            if problem:
                refused[rel] = problem
            else:
                files.add(rel)
    return files, dirs


def _read_list(config: BookConfig) -> str:
    """The chapter list's text: a regular UTF-8 file inside the root (BOM and CRLF accepted), or an exit-2 error."""
    try:
        return safe_io.read_text(config.chapter_list, config.root, safe_io.CONFIG_LIMIT, shown=str(config.chapter_list))
    except safe_io.UnsafeFile as exc:
        if exc.reason == "does not exist":
            raise BookError(f"{config.chapter_list}: the chapter list does not exist; create it with one chapter path per line, or set 'chapters' in book.toml.") from None
        raise BookError(f"{exc.path}: the chapter list {exc.reason}. {exc.suggestion or 'Make it a plain text file in the book folder, one chapter per line.'}") from None


def _entry_problem(root: Path, entry: str, path: str, files: set[str], dirs, refused: dict[str, str], sources=None) -> tuple[str, str, str]:
    """(sentence, suggestion, code) of what is wrong with one entry of the chapter list, or ('', '', '')."""
    if entry.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", entry):
        return (f"the chapter '{entry}' is an absolute path.", f"Write it relative to the book's root folder, e.g. '{posixpath.normpath(entry.lstrip('/'))}'.", "chapter-absolute")
    if path == ".." or path.startswith("../"):
        return (f"the chapter '{entry}' is outside the book's root folder.", "List only files inside the book.", "chapter-outside-root")
    if path in refused or any(parent in refused for parent in _parents(path)):
        reason = refused.get(path) or next(f"lies in '{p}', which {refused[p]}" for p in _parents(path) if p in refused)
        outside = "outside the book" in reason or "leaves the book" in reason
        hint = "Copy the chapter into the book instead of linking to it." if outside else "List a regular markdown file."
        return (f"the chapter '{entry}' {reason}.", hint, "chapter-outside-root" if outside else "unsafe-chapter")
    if path in dirs or path == ".":
        return (f"the chapter '{entry}' is a folder, not a markdown file.", f"List the file inside it, e.g. '{posixpath.join(path, 'README.md')}'.", "chapter-is-folder")
    if path not in files:
        hint = _did_you_mean(path, [f for f in files if f.endswith(MARKDOWN_SUFFIXES)])
        return (f"the chapter '{entry}' does not exist.", hint, "missing-chapter")
    if not path.lower().endswith(MARKDOWN_SUFFIXES):
        return (f"the chapter '{entry}' is not a markdown file.", "List only .md files; link to other files from a chapter.", "chapter-not-markdown")
    try:  # one stat: a chapter over the size limit (or swapped since the scan) is reported here, at its line
        safe_io.check_regular(root / (sources or {}).get(path, path), root, safe_io.CHAPTER_LIMIT, shown=entry)
    except safe_io.UnsafeFile as exc:
        return (f"the chapter {exc}.", exc.suggestion, "unsafe-chapter")
    return ("", "", "")


def _parents(path: str) -> list[str]:
    return ["/".join(path.split("/")[:n]) for n in range(1, path.count("/") + 1)]


def read_chapter_list(config: BookConfig, files: set[str], diagnostics: Diagnostics, dirs=frozenset(), refused: dict[str, str] | None = None, sources=None) -> list[tuple[str, int]]:
    """(path, line) of every chapter in order (with the list's `parts`); a missing, refused or repeated entry is reported with the list's line (`sources`: where a translation's view reads a listed logical path)."""
    refused = refused or {}
    if not config.chapters:
        found = sorted(f for f in files if f.lower().endswith(MARKDOWN_SUFFIXES) and "/" not in f or f.lower().endswith(MARKDOWN_SUFFIXES))
        found.sort(key=lambda f: (f.count("/"), not is_readme(f), f))
        if not found:
            raise BookError(f"{config.root}: no chapter list (chapters-md.txt) and no markdown files; create chapters-md.txt with one chapter path per line.")
        diagnostics.warning(str(config.root), 0, f"no chapter list found; using all {len(found)} markdown files.", suggestion="Create chapters-md.txt to set the order.", code="no-chapter-list")
        return [(path, 0) for path in found]
    seen: dict[str, int] = {}
    entries = ChapterEntries(list_name := config.chapters, diagnostics)
    for number, line in enumerate(_read_list(config).split("\n"), 1):
        entry = line.strip()
        if entries.skip(entry, number):
            continue
        if "\ufeff" in entry or any(ord(char) < 32 or ord(char) == 127 for char in entry):
            diagnostics.error(list_name, number, f"the chapter entry {entry!r} holds a byte-order mark or a control character.", suggestion="Retype the line as a plain path.", code="chapter-list-control")
            continue
        if entry != line.rstrip("\n").lstrip():
            diagnostics.warning(list_name, number, f"the chapter '{entry}' is followed by spaces or tabs; they are ignored.", suggestion="Remove the trailing blanks.", code="chapter-list-blanks")
        path = posixpath.normpath(entry)
        problem, hint, code = _entry_problem(config.root, entry, path, files, dirs, refused, sources)
        if problem:
            diagnostics.error(list_name, number, problem, suggestion=hint, code=code)
            continue
        if path in seen:
            diagnostics.warning(list_name, number, f"the chapter '{entry}' is listed twice (first on line {seen[path]}); the repeat is ignored.", code="duplicate-chapter")
            continue
        seen[path] = number
        entries.append((path, number))
    if not entries.finish():  # the problems found on the way are the reason: show them with the error that stops the command
        found_problems = "".join(f"{problem}\n" for problem in diagnostics.errors if problem.file == list_name)
        raise BookError(f"{found_problems}{list_name}: the chapter list names no chapter that can be read; write one markdown file per line, relative to the book's root (lines starting with '#' are comments).")
    return entries


def _did_you_mean(wanted: str, candidates) -> str:
    import difflib

    close = difflib.get_close_matches(wanted, list(candidates), n=1, cutoff=0.6)
    return f"Did you mean '{close[0]}'?" if close else ""


def read_chapter_bytes(root: Path, path: str, diagnostics: Diagnostics) -> bytes:
    """A chapter's bytes through safe_io: a file swapped since the scan (a FIFO, a link out, too big) reads as empty."""
    try:
        return safe_io.read_bytes(root / path, root, safe_io.CHAPTER_LIMIT, shown=path)
    except safe_io.UnsafeFile as exc:
        diagnostics.error(path, 0, f"the chapter {exc}.", suggestion=exc.suggestion, code="unsafe-chapter")
        return b""


def cached_chapter(root: Path, path: str, list_line: int, diagnostics: Diagnostics, cache: Cache | None) -> Chapter | None:
    """The chapter as the cache holds it (without tokens), or None when its bytes, place or the tool changed."""
    if cache is None or not cache.enabled:
        return None
    try:
        data = safe_io.read_bytes(root / path, root, safe_io.CHAPTER_LIMIT, shown=path)
    except safe_io.UnsafeFile:
        return None  # parse_chapter reports it
    cached = cache.get("chapter", key_of("chapter", path, list_line, data))
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
    return parse_new_chapter(root, path, list_line, diagnostics, md, cache)


def parse_new_chapter(root: Path, path: str, list_line: int, diagnostics: Diagnostics, md=None, cache: Cache | None = None) -> Chapter:
    """Read and parse the chapter (the caller knows the cache lacks it); the light model goes into the cache."""
    own = Diagnostics()
    data = read_chapter_bytes(root, path, own)
    key = key_of("chapter", path, list_line, data)
    text = read_source(data, path, own)
    diagnostics.extend(own)
    tokens, env, found = parse_text(path, text, md)
    for line, problem in found.problems:  # content the parser could only show as text (nesting too deep)
        own.warning(path, line, problem, suggestion="Flatten the nesting.", code="too-deep")
    if found.html_notes:
        from .html_sanitize import report_note

        for line, note in found.html_notes:
            report_note(own, path, line, note)
    report_math_errors(own, path, found.math_errors)
    diagnostics.extend(own)
    h1 = next((h for h in found.headings if h.level == 1), None)
    first = h1 or (found.headings[0] if found.headings else None)
    title = first.text if first and first.text else posixpath.splitext(posixpath.basename(path))[0]
    chapter = Chapter(path, text, tokens, env, title, found.headings, found.anchors, found.links, list_line, key, diagrams=found.diagrams)
    if cache is not None:
        cache.put("chapter", key, (chapter.without_tokens(), own.items))
    return chapter


def open_book(config: BookConfig, output: Path | None = None) -> tuple[Book, list[tuple[str, int]]]:
    """The first stage of loading: the file index and the chapter list, as a book without chapters yet, and the
    (path, line in the chapter list) of every chapter to parse."""
    diagnostics = Diagnostics()
    refused: dict[str, str] = {}
    files, dirs = scan_files(config.root, output, refused)
    entries = read_chapter_list(config, files, diagnostics, dirs, refused)
    if config.repository_path is None:  # settled once here, so that every renderer's file links agree
        config = replace(config, repository_path=repository_prefix(config.root))
    prefix = config.repository_path or ""
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(path for path, _ in entries), prefix.strip("/"), refused)
    return Book(config, [], index, diagnostics, getattr(entries, "parts", [])), entries


def add_chapters(book: Book, parsed: list[tuple[Chapter, list]]) -> None:
    """Put the parsed chapters into the book in order, with what parsing them reported, and resolve their links."""
    for chapter, problems in parsed:
        resolve_links(chapter, book.index)
        for problem in problems:
            book.diagnostics.add(problem)
        book.chapters.append(chapter)
    book.by_path = {chapter.path: chapter for chapter in book.chapters}


def load_book(root: Path | str, output: Path | None = None, config: BookConfig | None = None, cache: Cache | None = None) -> Book:
    """Read the config and chapter list, parse every chapter once in this process (its tokens kept), resolve every
    link against the whole book. `tools build` goes through tools/pipeline.py, which parses in worker processes."""
    config = config or load_config(Path(root))
    book, entries = open_book(config, output)
    md = None  # each parse makes its own parser (0.3 ms) only when a chapter is not in the cache
    parsed = []
    for path, line in entries:
        found = Diagnostics()
        parsed.append((parse_chapter(config.root, path, line, found, md, cache), found.items))
    add_chapters(book, parsed)
    return book
