"""The chapter list (`chapters-md.txt`): the chapters in reading order, with their parts, each entry checked against
the file index and reported at its line when it is missing, refused, repeated or not markdown."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from tools.book.config import BookConfig
from tools.book.parts import ChapterEntries
from tools.book.resolve import MARKDOWN_SUFFIXES
from tools.core import safe_io
from tools.core.errors import BookError, Diagnostics
from tools.core.source_names import is_readme


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

