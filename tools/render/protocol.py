"""What an output format is to the pipeline (tools/build/pipeline.py): the `Format` protocol and the values it exchanges.

A format works in three steps, so that each chapter is parsed once and its tokens never travel between processes:

1. `prepare(book, diagnostics, options)`, in the main process once every link is resolved and checked: for each
   chapter, the picklable inputs its rendering needs besides the tokens (the URL each link gets, the ids' prefix),
   and the cache key of its result. Whatever depends on the whole book (other chapters' anchors, the files to copy
   or embed) is settled here; what it reports to `diagnostics` is shown with the format's other findings.
2. `render_chapter(chapter, tokens, context)`, in the process that parsed the chapter, while its tokens are at
   hand; it returns a picklable result (a page body), which the cache keeps under the chapter's key.
3. `finish(book, prepared, results, out, diagnostics, options)`, in the main process: every chapter's result, in
   book order, becomes the output, written atomically.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # the protocol's types only: listing the formats imports no parser or model
    from markdown_it.token import Token

    from tools.book.model import Book, Chapter
    from tools.core.cache import Cache
    from tools.core.errors import Diagnostics


@dataclass
class Built:
    path: Path  # the file or folder a reader opens
    summary: str  # e.g. "62 pages, 14 files"


@dataclass
class BuildOptions:
    local: bool = False  # copy linked files into the output instead of linking them to the repository
    cache: Cache | None = None
    jobs: int = 1  # processes a format may use in `finish` (the PDF lays its chapters out in parallel)
    languages: tuple[Any, ...] = ()  # every language's site (tools/book/translations.py `LanguageSite`), for the site's language switcher
    refusals: dict | None = None  # book file -> why it may not be copied (None: it may); `tools serve` keeps it between rebuilds that change chapters only


@dataclass
class Prepared:
    """What `prepare` settled in the main process, handed to the workers (`contexts`) and to `finish` (`state`)."""

    contexts: list[Any]  # per chapter, in book order: what `render_chapter` needs besides the tokens (picklable);
    # empty: the format renders nothing per chapter (it writes everything in `finish`), so no chapter is parsed for it
    keys: list[str | None]  # per chapter: the cache key of its result; None: not cached
    state: Any = None  # what `finish` needs of this step (e.g. the link policy, which knows the files to copy)


@runtime_checkable
class Format(Protocol):
    name: str  # the name `tools build` takes, e.g. "html"
    default_output: str  # under the build folder: a folder for a site, a file name otherwise
    cache_namespace: str  # where the cache keeps this format's per-chapter results
    # Optional, not part of the protocol: `preload(sources)`, which imports what `render_chapter` needs for chapters
    # of those markdown texts; the chapter pool calls it before forking its workers, so they inherit those modules
    # (tools/build/chapter_pool.py). And `meanwhile(markdown_bytes)`, what `finish` will need in this process and which can
    # be done while the workers parse that much markdown (this process would wait otherwise): the pool calls it once
    # its workers have their chapters; an exception there is dropped, since `finish` does the same again and reports it.

    def prepare(self, book: Book, diagnostics: Diagnostics, options: BuildOptions) -> Prepared: ...

    def render_chapter(self, chapter: Chapter, tokens: list[Token], context: Any) -> Any: ...

    def finish(self, book: Book, prepared: Prepared, results: list[Any], out: Path, diagnostics: Diagnostics, options: BuildOptions) -> Built: ...
