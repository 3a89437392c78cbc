"""The site of a running `tools serve`, kept in memory between rebuilds: a saved chapter costs its own parse and the
pages that changed, not a build of the book.

What it keeps: the opened book (file index, chapter list), every chapter's model (and tokens), every page body by
its cache key (the chapter and the URL each link got), the pages of the last build with their template inputs
(`PageMemo`), and what it wrote. When only chapters' bytes changed, the changed chapters are parsed again and their
links resolved; everything after that runs as in a build (check, URLs, page inputs), but a body whose key is known
is not rendered, a page whose inputs did not change is not rendered, and a file whose bytes did not change is not
written. So the site after any edits is the one a cold `tools build html` makes of the same sources. Any other change
(book.toml, the chapter list, a theme, a file added, removed or changed that is not a chapter) rebuilds everything,
as does a book with translations (through tools/build/pipeline.py).
"""
from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.book.config import BookConfig, load_config
from tools.book.load import open_book, parse_new_chapter, read_chapters
from tools.book.model import Book, Chapter, resolve_links
from tools.book.translations import explain_fallbacks, language_output, language_site, languages, mark_chapters
from tools.build.pipeline import build_languages
from tools.checks.links.local import check_book
from tools.core.atomic import atomic_file
from tools.core.cache import Cache
from tools.core.errors import Diagnostic, Diagnostics
from tools.core.git import head_commit
from tools.markdown.math import load_converter
from tools.render import registry
from tools.render.diagrams.stage import draw_diagrams
from tools.render.protocol import BuildOptions
from tools.render.site.write import SiteFiles, site_files, write_site
from tools.serve.page_memo import PageMemo

# A new file that is gone this soon was an editor's temporary file (written, flushed to disk, renamed over the
# chapter: its rename comes as the next change); one that stays is a new file of the book, rebuilt as a whole.
NEW_FILE_GRACE_S = 0.1


@dataclass
class _Copy:
    """A book file copied into the site, known by its stat: a copy is made again only when the file changed."""
    path: str
    stat: tuple[int, int, int]


@dataclass
class _Opened:
    """The book as opened (config, file index, chapter list) and each chapter with what parsing it reported."""
    config: BookConfig
    book: Book
    entries: list[tuple[str, int]]
    chapters: dict[str, tuple[Chapter, list[Diagnostic]]] = field(default_factory=dict)


def _stat(path: Path) -> tuple[int, int, int]:
    try:
        found = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (found.st_mtime_ns, found.st_size, found.st_ino)


class LiveSite:
    """Builds the book's site into `out` and keeps what a rebuild after an edit needs."""

    def __init__(self, book_dir: Path, out: Path, local: bool, cache: Cache):
        self.book_dir, self.out, self.local, self.cache = book_dir, out, local, cache
        self.opened: _Opened | None = None  # None: the next build is a whole one
        self.memo = PageMemo()
        self.bodies: dict[str, tuple] = {}  # a page body by its cache key (tools/render/site/write.py `site_key`)
        self.written: dict[str, bytes | _Copy] = {}  # every file of the site as last written
        self.done = ""  # what the last build did, for the log
        self.refusals: dict = {}  # the link policy's answers about the book's files, which only a whole build can change
        self.in_git = True  # outside git a rebuild asks git nothing (the watcher ignores .git: a `git init` shows at the next whole build)

    def build(self, changed: set[str] | None = None) -> tuple[Book, Diagnostics]:
        """Rebuild after the sources at `changed` (absolute real paths; None: anything) changed."""
        try:
            chapters = self._changed_chapters(changed)
            if chapters is None:
                return self._whole()
            return self._update(chapters)
        except BaseException:
            self.opened = None  # what is kept may be half updated: the next build starts afresh
            raise

    def _changed_chapters(self, changed: set[str] | None) -> set[str] | None:
        """The chapters whose bytes alone changed, or None when something else changed too."""
        opened = self.opened
        if opened is None or changed is None:
            return None
        root = os.path.realpath(self.book_dir)
        index = opened.book.index
        chapters, new = set(), []
        for path in changed:
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel in opened.chapters and os.path.isfile(path) and not os.path.islink(path):
                chapters.add(rel)
            elif rel in index.files or rel in index.dirs:
                return None  # a file of the book: the file index, the config or a copied file may change
            elif os.path.lexists(path):
                new.append(path)
            # else: a file made and gone within the burst (an editor's temporary file, renamed already)
        deadline = time.monotonic() + NEW_FILE_GRACE_S
        while new and time.monotonic() < deadline:  # a temporary file the editor is about to rename over a chapter
            time.sleep(0.005)
            new = [path for path in new if os.path.lexists(path)]
        return None if new else chapters

    def _whole(self) -> tuple[Book, Diagnostics]:
        self.done = "the whole book"
        self.opened, self.memo, self.bodies, self.refusals = None, PageMemo(), {}, {}
        config = load_config(self.book_dir)
        if config.translations:  # every language's site, through the build pipeline
            targets = {tag: {"html": language_output(self.out, config, tag, True)} for tag in languages(config)}
            outcomes = build_languages(config, targets, BuildOptions(local=self.local, cache=self.cache, jobs=1), self.out)
            diagnostics = Diagnostics()
            for _, outcome in outcomes:
                diagnostics.extend(outcome.diagnostics)
            self.written = {}
            return outcomes[0][1].book, diagnostics
        book, entries = open_book(config, self.out)
        opened = _Opened(config, book, entries)
        self.in_git = bool(head_commit(config.root))
        for (path, _), (chapter, problems) in zip(entries, read_chapters(book, entries, self.cache)):
            resolve_links(chapter, book.index)
            opened.chapters[path] = (chapter, problems)
        built, diagnostics, made = self._site(opened)
        write_site(built, made, self.out, diagnostics, ())
        self.written = self._files(made)
        self.opened = opened
        return built, diagnostics

    def warm(self) -> None:
        """After a whole build, whose page bodies may all have come from the cache: load what rendering a chapter
        needs, as the chapter pool does before it forks (the LaTeX converter, then the site format's `preload`: the
        Pygments lexers of the book's fence languages), and collect the build's garbage now, so that the first edit's
        rebuild pays for neither (about 50 ms of its 80 on the upstream-sized book)."""
        if self.opened is None:
            return
        texts = [chapter.text for chapter, _ in self.opened.chapters.values()]
        load_converter(texts)
        preload = getattr(registry.get("html"), "preload", None)  # optional in the Format protocol, as in tools/build/chapter_pool.py
        if preload is not None:
            preload(texts)
        gc.collect()

    def _update(self, chapters: set[str]) -> tuple[Book, Diagnostics]:
        opened = self.opened
        assert opened is not None
        lines = dict(opened.entries)
        for path in chapters:
            own = Diagnostics()
            chapter = parse_new_chapter(opened.config.root, path, lines[path], own, None, self.cache)
            resolve_links(chapter, opened.book.index)
            opened.chapters[path] = (chapter, own.items)
        built, diagnostics, made = self._site(opened)
        written = self._write_changes(self._files(made))
        self.done = f"{len(chapters)} changed chapter{'s' if len(chapters) != 1 else ''}, {written} file{'s' if written != 1 else ''} written"
        return built, diagnostics

    def _site(self, opened: _Opened) -> tuple[Book, Diagnostics, SiteFiles]:
        """Stages 3 to 6 of a build (tools/build/pipeline.py) for the site alone, with the bodies and pages known reused."""
        template = opened.book
        book = Book(template.config, [], template.index, Diagnostics(), template.parts)
        book.diagnostics.extend(template.diagnostics)
        for path, _ in opened.entries:
            chapter, problems = opened.chapters[path]
            for problem in problems:
                book.diagnostics.add(problem)
            book.chapters.append(chapter)
        book.by_path = {chapter.path: chapter for chapter in book.chapters}
        mark_chapters(book)
        diagnostics = explain_fallbacks(book, check_book(book))
        draw_diagrams(book, self.cache, diagnostics)
        site = registry.get("html")
        options = BuildOptions(local=self.local, cache=self.cache, jobs=1, languages=(language_site(book),), refusals=self.refusals)
        report = Diagnostics()
        prepared = site.prepare(book, report, options)
        bodies, known = [], {}
        for chapter, urls, key in zip(book.chapters, prepared.contexts, prepared.keys):
            body = self.bodies.get(key) if key else None
            if body is None:
                body = self.cache.get(site.cache_namespace, key) if key else None
            if body is None:
                body = site.render_chapter(chapter, chapter.tokens, urls)
                if key:
                    self.cache.put(site.cache_namespace, key, body)
            if key:
                known[key] = body
            bodies.append(body)
        self.bodies = known
        diagnostics.extend(report)
        git: tuple[str, dict[str, str]] | None = None if self.in_git else ("", {})  # in git: the revision's "+dirty" may change with any edit
        made = site_files(book, diagnostics, self.local, None, self.cache, bodies, prepared.state, None, options.languages, self.memo, git)
        return book, diagnostics, made

    def _files(self, made: SiteFiles) -> dict[str, bytes | _Copy]:
        """Every file of the site: the copies over the files made before them, under those made after."""
        files: dict[str, bytes | _Copy] = {}
        made.complete()  # a memo's build has its search index at once; this is for any other
        items = list(made.files.items())
        files.update(items[: made.copied_at])
        files.update((path, _Copy(path, _stat(self.book_dir / path))) for path in sorted(made.copies))
        files.update(items[made.copied_at :])
        return files

    def _write_changes(self, files: dict[str, bytes | _Copy]) -> int:
        """Write each file whose bytes (or source) changed, each atomically, and remove the files that went; how
        many were written."""
        from tools.core import safe_io

        written = 0
        root = self.book_dir
        for name, value in files.items():
            if self.written.get(name) == value:
                continue
            if isinstance(value, _Copy):
                try:
                    data = safe_io.read_bytes(root / value.path, root, safe_io.ASSET_LIMIT, shown=value.path)
                except safe_io.UnsafeFile:
                    self.opened = None  # a whole build reports it
                    continue
            else:
                data = value
            with atomic_file(self.out / name) as temp:
                temp.write_bytes(data)
            written += 1
        for name in set(self.written) - set(files):
            gone = self.out / name
            gone.unlink(missing_ok=True)
            folder = gone.parent
            while folder != self.out and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent
        self.written = files
        return written
