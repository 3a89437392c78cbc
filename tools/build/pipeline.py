"""A build, stage by stage: what `tools build` and `tools serve` run.

1. **Load** (`open_book` of tools/book/load.py, for one language's view): the config (read by the caller), the file
   index, the chapter list. `build_languages` runs the stages once per language of the book, the original first.
2. **Parse and collect** (`load_chapters`, parsing with `ChapterPool.parse`, tools/build/chapter_pool.py): each chapter the cache lacks is parsed once,
   in the worker that will render it; the light model (headings, anchors, links) comes back, the tokens stay.
3. **Resolve** (`load_chapters` too): every link against the whole book.
4. **Check** (`links.check.check_book`): every link's problems, as diagnostics with file:line:col.
5. **Render per format**: `Format.prepare` in this process works out what each chapter's rendering needs (the URL of
   every link, which depends on other chapters' anchors), then every chapter is rendered for every format at once,
   by the process that holds its tokens (`ChapterPool.render`), unless the cache has the result.
6. **Write**: `Format.finish` turns the chapters' results into each output, written atomically.

Each chapter is parsed once per build: the cache holds the light model and every format's per-chapter result, and a
chapter taken from the cache is parsed (once, in a worker) only when some format's result is not cached.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tools.book.config import BookConfig
from tools.book.load import load_chapters, open_book
from tools.book.model import Book
from tools.book.translations import explain_fallbacks, language_site, view_config
from tools.build.chapter_pool import Asks, ChapterPool
from tools.checks.links.local import check_book
from tools.core.cache import Cache
from tools.core.errors import Diagnostics
from tools.render import registry
from tools.render.diagrams.stage import draw_diagrams
from tools.render.protocol import BuildOptions, Built, Format, Prepared


@dataclass
class Outcome:
    book: Book
    diagnostics: Diagnostics
    built: list[tuple[str, Built, float]]  # per format: its name, what it wrote, seconds its writing took
    loading: float  # seconds to load, parse, resolve, check and render the chapters
    shared: Diagnostics = field(default_factory=Diagnostics)  # the book's findings (links, diagrams): every format's
    own: dict[str, Diagnostics] = field(default_factory=dict)  # each format's findings (a PDF's missing fonts)

    def of_format(self, name: str) -> Diagnostics:
        """What counts against one output: the book's findings and that format's own."""
        found = Diagnostics()
        found.extend(self.shared)
        found.extend(self.own.get(name, Diagnostics()))
        return found


def render_chapters(book: Book, formats: Mapping[str, Format], prepared: Mapping[str, Prepared], pool: ChapterPool,
                    cache: Cache | None) -> dict[str, list[Any]]:
    """Stage 5's second half: every chapter's result for every format, from the cache or rendered by the pool (which
    puts what it renders in the cache)."""
    usable = cache if cache is not None and cache.enabled else None
    results: dict[str, list[Any]] = {name: [None] * len(book.chapters) for name in formats}
    asks: dict[int, Asks] = {}
    for name, fmt in formats.items():  # a format whose `prepare` gives no contexts renders nothing per chapter
        for index, (context, key) in enumerate(zip(prepared[name].contexts, prepared[name].keys)):
            hit = usable.get(fmt.cache_namespace, key) if usable is not None and key else None
            if hit is not None:
                results[name][index] = hit
            else:
                asks.setdefault(index, []).append((name, context, key if usable is not None else None))
    drawings = {index: book.chapters[index].drawings for index in asks}  # the workers forked before they were drawn
    for index, answers in pool.render(asks, drawings).items():
        for (name, _, _), value in zip(asks[index], answers):
            results[name][index] = value
    return results


def build(config: BookConfig, targets: Mapping[str, Path], options: BuildOptions, scan_output: Path | None = None,
          opened: tuple[Book, list[tuple[str, int]]] | None = None) -> Outcome:
    """Build the formats named in `targets` (name -> output path), in that order, for the language of `config` (a
    view, tools/book/translations.py; `opened`: that view's `open_book`, when the caller has it). `scan_output`: a folder
    the file scan leaves out (where the outputs go). `options.jobs` processes parse and render the chapters, and
    lay out the PDF's. Nothing is parsed twice; nothing but the outputs is written (and the cache)."""
    started = time.perf_counter()
    formats = {name: registry.get(name) for name in targets}
    book, entries = opened or open_book(config, scan_output)
    with ChapterPool(book, entries, formats, options.cache, options.jobs) as pool:
        load_chapters(book, entries, options.cache, pool.parse)  # stages 2 and 3: the loader, with the pool parsing
        diagnostics = explain_fallbacks(book, check_book(book))
        draw_diagrams(book, options.cache, diagnostics)  # in this process: a rebuild takes them from the cache
        shared = Diagnostics()
        shared.extend(diagnostics)
        prepared: dict[str, Prepared] = {}
        reports: dict[str, Diagnostics] = {}
        for name, fmt in formats.items():
            reports[name] = Diagnostics()  # the format's own findings: its summary line counts them, no other's
            prepared[name] = fmt.prepare(book, reports[name], options)
        results = render_chapters(book, formats, prepared, pool, options.cache)
        pool.release()  # the workers write their last cache entries and end while the formats are finished
        loading = time.perf_counter() - started
        built = []
        for name, fmt in formats.items():
            step = time.perf_counter()
            done = fmt.finish(book, prepared[name], results.pop(name), targets[name], reports[name], options)  # then let go
            diagnostics.extend(reports[name])  # shown with the book's findings, in format order
            built.append((name, done, time.perf_counter() - step))
    return Outcome(book, diagnostics, built, loading, shared, reports)


def build_languages(config: BookConfig, targets: Mapping[str, Mapping[str, Path]], options: BuildOptions,
                    scan_output: Path | None = None) -> list[tuple[str, Outcome]]:
    """`build` once per language of `targets` (language -> format name -> output path), the original first: each
    language's view is opened first, so that every site's language switcher knows every other site's pages."""
    from tools.book.translations import languages

    views = {language: view_config(config, language) for language in languages(config)}
    opened = {language: open_book(view, scan_output) for language, view in views.items()}
    sites = tuple(language_site(book) for book, _ in opened.values())
    outcomes = []
    for language, wanted in targets.items():
        own = replace(options, languages=sites)
        outcomes.append((language, build(views[language], wanted, own, scan_output, opened[language])))
    return outcomes
