"""The one loader of a book, which `build`, `serve`, `check-links` (cold and warm), the translations' views and `mv`
all use.

1. `open_book(config, output)`: one language's view of the book (tools/book/translations.py) without its chapters
   yet: the file index (tools/book/files.py) and the chapter list (tools/book/chapter_list.py), and the (path, line)
   of every chapter to load.
2. `load_chapters(book, entries, cache, parse)`: each chapter from the cache when its bytes, its place in the list
   and the tool are those of the cached one (`chapter_key`, the one key of a chapter), the others parsed by `parse`
   (the build's chapter pool, check-links' forked parsers: `parse_in_processes`) or here; then every link resolved
   against the whole book and each chapter's language marked.

`load_book` does both in this process. A chapter's text is read through safe_io and decoded by `read_source`.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tools.book.chapter_list import read_chapter_list
from tools.book.config import BookConfig, load_config
from tools.book.files import scan_files
from tools.book.model import Book, Chapter, parse_text, resolve_links
from tools.book.resolve import FileIndex
from tools.book.translations import mark_chapters, view_files
from tools.core import safe_io
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostic, Diagnostics
from tools.core.git import repository_prefix
from tools.markdown.math import report_math_errors

# Parses the chapters the cache lacks (indexes into the entries; `light`: those it held) -> index: (chapter, problems)
ParseMissing = Callable[[list[int], dict[int, Chapter]], dict[int, tuple[Chapter, list[Diagnostic]]]]
PARALLEL_BYTES = 384 * 1024  # parse in several processes when at least this much markdown is not cached


def chapter_key(path: str, list_line: int, data: bytes) -> str:
    """The one cache key of a chapter's light model: its bytes, its place (path, line in the chapter list) and the
    tool's code (key_of folds in its fingerprint)."""
    return key_of("chapter", path, list_line, data)


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
    cached = cache.get("chapter", chapter_key(path, list_line, data))
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
    key = chapter_key(path, list_line, data)
    text = read_source(data, path, own)
    diagnostics.extend(own)
    tokens, env, found = parse_text(path, text, md)
    for line, problem in found.problems:  # content the parser could only show as text (nesting too deep)
        own.warning(path, line, problem, suggestion="Flatten the nesting.", code="too-deep")
    if found.html_notes:
        from tools.markdown.html_sanitize import report_note  # only when a chapter has raw-HTML notes

        for line, note in found.html_notes:
            report_note(own, path, line, note)
    report_math_errors(own, path, found.math_errors)
    diagnostics.extend(own)
    h1 = next((h for h in found.headings if h.level == 1), None)
    first = h1 or (found.headings[0] if found.headings else None)
    title = first.text if first and first.text else posixpath.splitext(posixpath.basename(path))[0]
    chapter = Chapter(path, text, tokens, env, title, found.headings, found.anchors, found.links, list_line, key, diagrams=found.diagrams,
                      images_without_alt=found.images_without_alt)
    if cache is not None:
        cache.put("chapter", key, (chapter.without_tokens(), own.items))
    return chapter


def open_book(config: BookConfig, output: Path | None = None) -> tuple[Book, list[tuple[str, int]]]:
    """Stage 1: the language's view of the book without its chapters, and the (path, line) of each chapter to load.
    The file index leaves out the other translations' folders (the original's leaves out every translation's), and
    a translation's chapters are listed at their real paths (`zh/a.md`) in the order of its chapter list."""
    diagnostics = Diagnostics()
    refused: dict[str, str] = {}
    all_files, all_dirs = scan_files(config.root, output, refused)
    view = view_files(config, all_files, all_dirs, refused)
    listed = read_chapter_list(config, view.logical_files, diagnostics, view.logical_dirs, view.logical_refused, view.sources)
    entries = [(view.sources.get(path, path), line) for path, line in listed]
    parts = [replace(part, chapters=[view.sources.get(path, path) for path in part.chapters]) for part in getattr(listed, "parts", [])]
    if config.repository_path is None:  # settled once here, so that every renderer's file links agree
        config = replace(config, repository_path=repository_prefix(config.root))
    prefix = (config.repository_path or "").strip("/")
    index = FileIndex(frozenset(view.files), frozenset(view.dirs), frozenset(path for path, _ in entries), prefix, view.refused, view.folder)
    return Book(config, [], index, diagnostics, parts), entries


def add_chapters(book: Book, parsed: list[tuple[Chapter, list]]) -> None:
    """Put the parsed chapters into the book in order, with what parsing them reported, and resolve their links."""
    for chapter, problems in parsed:
        resolve_links(chapter, book.index)
        for problem in problems:
            book.diagnostics.add(problem)
        book.chapters.append(chapter)
    book.by_path = {chapter.path: chapter for chapter in book.chapters}


def load_chapters(book: Book, entries: list[tuple[str, int]], cache: Cache | None = None, parse: ParseMissing | None = None) -> None:
    """Stage 2: every chapter (`read_chapters`), then into the book in order, its links resolved, its language marked."""
    add_chapters(book, read_chapters(book, entries, cache, parse))
    mark_chapters(book)


def read_chapters(book: Book, entries: list[tuple[str, int]], cache: Cache | None = None, parse: ParseMissing | None = None) -> list[tuple[Chapter, list[Diagnostic]]]:
    """Each chapter with what reading it reported, in order: from the cache (taken here: starting workers for them
    would cost more), else parsed by `parse` or in this process."""
    found: dict[int, tuple[Chapter, list[Diagnostic]]] = {}
    for index, (path, line) in enumerate(entries):
        own = Diagnostics()
        chapter = cached_chapter(book.root, path, line, own, cache)
        if chapter is not None:
            found[index] = (chapter, own.items)
    todo = [index for index in range(len(entries)) if index not in found]
    if parse is not None:  # called even with nothing to parse: the pool keeps the light chapters it may render
        found.update(parse(todo, {index: chapter for index, (chapter, _) in found.items()}))
    for index in todo if parse is None else ():
        own = Diagnostics()
        found[index] = (parse_new_chapter(book.root, *entries[index], own, None, cache), own.items)
    return [found[index] for index in range(len(entries))]


def load_book(root: Path | str, output: Path | None = None, config: BookConfig | None = None, cache: Cache | None = None,
              parse: ParseMissing | None = None) -> Book:
    """The whole book (one language's view: `config` may be a translation's, tools/book/translations.py), every
    chapter from the cache or parsed (by `parse`, else here), every link resolved against the whole book."""
    config = config or load_config(Path(root))
    book, entries = open_book(config, output)
    load_chapters(book, entries, cache, parse)
    return book


def parse_in_processes(book: Book, entries: list[tuple[str, int]], cache: Cache | None, jobs: int) -> ParseMissing | None:
    """check-links' parser of what the cache lacks: `jobs` processes (this one and forked workers) share the
    chapters by size, each writes its entries into the cache once it has replied. None (parse here) on one core,
    without a cache, or when too little is missing for workers to pay."""
    if jobs < 2 or cache is None or not cache.enabled:
        return None

    def parse(todo: list[int], light: dict[int, Chapter]) -> dict[int, tuple[Chapter, list[Diagnostic]]]:  # noqa: ARG001 - the protocol's
        sizes = {index: _size(book.root, entries[index][0]) for index in todo}
        if len(todo) < 2 or sum(sizes.values()) < PARALLEL_BYTES:
            return {index: _parse_one(book.root, entries[index], cache) for index in todo}
        return _parse_forked(book.root, entries, todo, sizes, cache, min(jobs, len(todo)))

    return parse


def _size(root: Path, path: str) -> int:
    try:
        return os.stat(root / path).st_size
    except OSError:
        return 0


def _parse_one(root: Path, entry: tuple[str, int], cache: Cache | None, md=None) -> tuple[Chapter, list[Diagnostic]]:
    own = Diagnostics()
    return parse_new_chapter(root, entry[0], entry[1], own, md, cache), own.items


def _parse_forked(root: Path, entries, todo: list[int], sizes: dict[int, int], cache: Cache, jobs: int) -> dict[int, tuple[Chapter, list[Diagnostic]]]:
    # Imported once, before the fork, so the workers share them: the parser with its plugins, the raw-HTML scanner
    # and cleaner, and latex2mathml when there is display math (about 40 ms that each worker would import again).
    from tools.book import collect  # noqa: F401
    from tools.core.parallel import Workers
    from tools.markdown import html_attrs, html_sanitize  # noqa: F401
    from tools.markdown.math import load_converter
    from tools.markdown.parser import create_markdown

    md = create_markdown()
    load_converter(_texts(root, [entries[index][0] for index in todo]))
    batches: list[list[int]] = [[] for _ in range(jobs)]
    weights = [0] * jobs
    for index in sorted(todo, key=lambda i: -sizes[i]):
        lightest = weights.index(min(weights))
        batches[lightest].append(index)
        weights[lightest] += sizes[index]

    def work(batch: list[int]) -> list[tuple[int, Chapter, list[Diagnostic]]]:
        cache.hold()  # written once the reply is sent (`after`)
        return [(index, chapter.without_tokens(), problems) for index in batch for chapter, problems in [_parse_one(root, entries[index], cache, md)]]

    pool = Workers(work, after=cache.flush)
    failed = True
    found: dict[int, tuple[Chapter, list[Diagnostic]]] = {}
    try:  # jobs - 1 forked workers and this process share the chapters: no process waits idle
        pool.start(jobs - 1)
        for worker, batch in enumerate(batches[1:]):
            pool.send(worker, batch)
        found.update((index, _parse_one(root, entries[index], cache, md)) for index in batches[0])
        for replies in pool.gather(range(len(pool))).values():
            found.update((index, (chapter, problems)) for index, chapter, problems in replies)
        failed = False
    finally:
        pool.close(failed)  # ended at once on an interrupt or a failure
    return found


def _texts(root: Path, paths: list[str]):
    for path in paths:
        try:
            yield (root / path).read_text("utf-8", "replace")
        except OSError:
            continue
