"""Style checks of the markdown source that the book's authors rely on: one line per prose paragraph.

The book keeps each paragraph on one line, so that a diff shows the sentence that changed, `grep` finds a whole
sentence and no editor re-wraps a paragraph behind the author's back. A hard-wrapped paragraph renders the same,
which is why nobody notices it; this module finds them with the book's one parser (`tools.markdown`): a
`paragraph_open` whose source spans several lines, outside lists and quotes. Tables, code, raw HTML and front
matter are other tokens and are never looked at. A paragraph whose every line ends in a hard break (two spaces
or a backslash: an address, a poem) is deliberate and not reported.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .markdown import create_markdown

MARKDOWN_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".cache", ".pytest_cache", ".hypothesis", "_build"}

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
    md = md or create_markdown()
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


def find_markdown(paths: Iterable[Path]) -> Iterator[Path]:
    """Markdown files: the files given, and the .md/.markdown files under the folders given (sorted, no hidden dirs)."""
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found = []
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
                found.extend(Path(folder) / f for f in files if f.lower().endswith(MARKDOWN_SUFFIXES))
            candidates = sorted(found)
        else:
            candidates = [path]
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                yield candidate


def display_path(path: Path) -> str:
    """A path as a reader types it: relative to the current folder when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
