"""Style checks of the markdown source that the book's authors rely on: one line per prose paragraph.

The book keeps each paragraph on one line, so that a diff shows the sentence that changed, `grep` finds a whole
sentence and no editor re-wraps a paragraph behind the author's back. A hard-wrapped paragraph renders the same,
which is why nobody notices it; this module finds them with the book's one parser (`tools.markdown.parser`): a
`paragraph_open` whose source spans several lines, outside lists and quotes. Tables, code, raw HTML and front
matter are other tokens and are never looked at. A paragraph whose every line ends in a hard break (two spaces
or a backslash: an address, a poem) is deliberate and not reported.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.core.errors import Diagnostics
from tools.core.safe_io import CHAPTER_LIMIT, UnsafeFile, read_bytes, walk
from tools.core.source_names import SKIPPED_DIRS

MARKDOWN_SUFFIXES = (".md", ".markdown")
MARKDOWN_LIMIT = CHAPTER_LIMIT

# Containers whose paragraphs are left alone: list items and quotes are often wrapped on purpose.
_CONTAINERS = {"bullet_list_open": "bullet_list_close", "ordered_list_open": "ordered_list_close", "blockquote_open": "blockquote_close"}
_CLOSERS = set(_CONTAINERS.values())


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based
    last_line: int
    code: str
    message: str
    suggestion: str = ""


def hard_wrapped_paragraphs(text: str, md=None) -> list[Finding]:
    """Prose paragraphs spread over several source lines (outside lists and quotes), in document order."""
    if md is None:
        from tools.markdown.parser import create_markdown  # the parser is imported when a file is checked, not for --help

        md = create_markdown()
    tokens = md.parse(text)
    findings: list[Finding] = []
    depth = 0
    for index, token in enumerate(tokens):
        if token.type in _CONTAINERS:
            depth += 1
        elif token.type in _CLOSERS:
            depth -= 1
        elif token.type == "paragraph_open" and depth == 0 and token.map:
            start, end = token.map
            lines = end - start
            if lines < 2:
                continue
            inline = tokens[index + 1]
            hard = sum(1 for child in inline.children or [] if child.type == "hardbreak")
            if hard >= lines - 1:  # every line break is a deliberate <br>
                continue
            findings.append(
                Finding(
                    start + 1,
                    end,
                    "hard-wrapped",
                    f"this paragraph is hard-wrapped over {lines} lines ({start + 1}-{end}); the book keeps one line per paragraph.",
                    "Join its lines into one (your editor's 'join lines'; keep a line break only as a list, a table or a new paragraph).",
                )
            )
    return findings


def check_style(text: str, md=None) -> list[Finding]:
    """Every style finding of one markdown document."""
    return hard_wrapped_paragraphs(text, md)


@dataclass(frozen=True)
class Source:
    """A markdown file to check: its path, and the folder it was found in (None when it was given by name)."""

    path: Path
    root: Path | None = None


def find_sources(paths: Iterable[Path], unreadable: list[str] | None = None) -> Iterator[Source]:
    """The files given, and the .md/.markdown files under the folders given (sorted, no hidden dirs).

    Folder links are not followed (a link loop cannot hang the walk); a file link is kept, and reading it refuses
    it when it leads outside the folder being checked. Folders that cannot be listed are added to `unreadable`.
    """
    seen: set[str] = set()

    def failed(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append(f"{error.filename}: the folder cannot be read ({error.strerror})")

    for path in paths:
        if path.is_dir():
            found: list[Path] = []
            for folder, dirs, files in walk(path, onerror=failed):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".") and not os.path.islink(os.path.join(folder, d)))
                found.extend(Path(folder) / f for f in files if f.lower().endswith(MARKDOWN_SUFFIXES))
            candidates = [Source(candidate, path) for candidate in sorted(found)]
        else:
            candidates = [Source(path)]
        for candidate in candidates:
            key = os.path.realpath(candidate.path)
            if key not in seen:
                seen.add(key)
                yield candidate


def find_markdown(paths: Iterable[Path]) -> Iterator[Path]:
    """The paths of `find_sources`."""
    for source in find_sources(paths):
        yield source.path


def read_markdown(source: Source, name: str, diagnostics: Diagnostics) -> tuple[bytes, str] | None:
    """(bytes, text) of a markdown file, or None after reporting why it is not read: not a regular file, a link
    leading outside the folder checked, larger than the limit, gone, or not UTF-8 (with the bad byte's line)."""
    try:
        data = read_bytes(source.path, source.root, MARKDOWN_LIMIT, shown=name)
    except UnsafeFile as exc:
        reason = exc.reason.replace("the book's root folder", "the folder being checked")
        diagnostics.error(name, 0, f"the file {reason}.", suggestion=exc.suggestion.replace("into the book", "into that folder"), code="unreadable")
        return None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        diagnostics.error(name, line, f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {col}); it was skipped.", suggestion="Save it as UTF-8.", code="not-utf8")
        return None


def display_path(path: Path) -> str:
    """A path as a reader types it: relative to the current folder when under it (a link keeps its own name)."""
    full = Path(os.path.abspath(path))
    try:
        return str(full.relative_to(Path(os.path.abspath(Path.cwd()))))
    except ValueError:
        try:
            return str(full.relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)
