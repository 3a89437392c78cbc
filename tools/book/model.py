"""The book model: ordered chapters with their headings, anchors and links, and every link resolved against the
whole book (tools/book/resolve.py). The one parse of a chapter's text (`parse_text`) is here too, since a chapter
taken from the cache without its tokens parses itself again on first use. Loading is tools/book/load.py."""
from __future__ import annotations

import dataclasses
import os
import posixpath
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tools.book import diagrams as diagram_source
from tools.book.collect import Collected, Heading, collect
from tools.book.config import BookConfig
from tools.book.link_model import Link
from tools.book.resolve import FileIndex, resolve_link
from tools.core.errors import Diagnostics

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
    diagrams: list[tuple[int, str]] = field(default_factory=list)  # ```mermaid fences (line, source), drawn by tools/render/diagrams/stage.py
    drawings: dict[str, diagram_source.Drawing] = field(default_factory=dict, repr=False)  # source -> its drawing, set by the build
    language: str = ""  # the language of its text (tools/book/translations.py): a translation's tag, the original's for a fallback
    fallback: bool = False  # in a translation's view: not translated yet, shown in the original's language
    images_without_alt: list[tuple[int, int, str]] = field(default_factory=list)  # (line, col, the image as written): `image-alt` warnings

    @property
    def stem(self) -> str:
        return posixpath.splitext(self.path)[0]

    @property
    def tokens(self) -> list[Token]:
        """The token stream; a chapter loaded from the cache is parsed again on first use, its links re-resolved.
        A build never asks a light chapter for it (tools/build/pipeline.py keeps the tokens where they were parsed);
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
        from tools.markdown.parser import create_markdown

        md = create_markdown()
    env: dict = {}
    tokens = md.parse(text, env)
    return tokens, env, collect(path, text, tokens, env)


def resolve_links(chapter: Chapter, index: FileIndex) -> None:
    """Resolve every link of the chapter against the whole book (a pure function of the link and the file index)."""
    chapter.index = index
    for link in chapter.links:
        link.target = resolve_link(chapter.path, link, index)


def repository_config(book: Book) -> BookConfig:
    """The book's config with the root's place in the repository settled: `BookConfig.blob_url` asks git again on
    every call when `repository_path` is unset (one process per linked file), while loading already knows it."""
    config = book.config
    if config.repository_path is not None or not config.repository:
        return config
    prefix = book.index.repo_prefix.strip("/")
    return dataclasses.replace(config, repository_path=f"{prefix}/" if prefix else "")
