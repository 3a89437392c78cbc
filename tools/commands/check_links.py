"""`tools check-links`: every link of the book checked against the book model, with an optional LinkChecker
cross-check of the built site (`--html`) and a polite check of every external URL (`--external`).

The local check reads the model that `load_book` builds (the one parser, the pure resolver). To stay well under a
second on a large book it keeps what the parser collected for each chapter (anchors, headings, links with their
spans) in a cache keyed by the chapter's bytes, and parses the chapters that changed in parallel.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import click

from ..book import Book, Chapter, parse_chapter, read_chapter_list, scan_files
from ..collect import Heading
from ..config import _git_prefix, load_config
from ..errors import EXIT_PROBLEMS, BookError, Diagnostic, Diagnostics, Severity
from ..links.check import check_book
from ..links.formats import FORMAT_NAMES, Report, render, step_summary, summary_line
from ..links.model import Link, LinkKind, TargetKind
from ..links.resolve import FileIndex, resolve
from .common import EXIT_CODES, book_option, default_book

PARSE_CACHE_VERSION = 1
_TOOLS = Path(__file__).resolve().parent.parent
_FINGERPRINT_FILES = ("markdown.py", "collect.py", "slug.py", "html_attrs.py", "book.py", "links/model.py")
PARALLEL_BYTES = 384 * 1024  # parse in several processes when at least this much markdown is not cached


def default_cache_dir() -> Path:
    """`$TOOLS_CACHE_DIR`, else `.cache/links` in the current folder (the repository root under `make`)."""
    return Path(os.environ.get("TOOLS_CACHE_DIR") or Path.cwd() / ".cache" / "links")


def _fingerprint() -> str:
    """Changes whenever the parser or the collector could collect something different."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.blake2b(str(PARSE_CACHE_VERSION).encode(), digest_size=16)
    for name in _FINGERPRINT_FILES:
        try:
            digest.update((_TOOLS / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    for package in ("markdown-it-py", "mdit-py-plugins", "linkify-it-py"):
        try:
            digest.update(version(package).encode())
        except PackageNotFoundError:
            pass
    return digest.hexdigest()


def _record(chapter: Chapter, diagnostics: Diagnostics) -> dict:
    """What the parser collected for one chapter, without the tokens: enough to check and move links."""
    return {
        "title": chapter.title,
        "headings": [[h.level, h.text, h.anchor, h.line] for h in chapter.headings],
        "anchors": chapter.anchors,
        "links": [[l.line, l.col, l.kind.value, l.href, l.raw, l.offset, l.title] for l in chapter.links],
        "diagnostics": [[d.severity.value, d.file, d.line, d.message, d.col, d.suggestion, d.code] for d in diagnostics.items],
    }


def _parse_records(root: str, entries: list[tuple[str, int]]) -> list[dict]:
    """Parse chapters (in a worker process or in this one) into cacheable records."""
    from ..markdown import create_markdown

    md = create_markdown()
    records = []
    for path, line in entries:
        diagnostics = Diagnostics()
        records.append(_record(parse_chapter(Path(root), path, line, diagnostics, md), diagnostics))
    return records


def _chapter_from_record(path: str, text: str, list_line: int, record: dict) -> tuple[Chapter, list[Diagnostic]]:
    headings = [Heading(level, heading_text, anchor, line, None) for level, heading_text, anchor, line in record["headings"]]
    links = [Link(path, line, col, LinkKind(kind), href, raw, offset, title) for line, col, kind, href, raw, offset, title in record["links"]]
    chapter = Chapter(path, text, [], {}, record["title"], headings, dict(record["anchors"]), links, list_line)
    diagnostics = [Diagnostic(Severity(s), file, line, message, col, suggestion, code) for s, file, line, message, col, suggestion, code in record["diagnostics"]]
    return chapter, diagnostics


def _parse_parallel(root: Path, todo: list[tuple[str, int]], sizes: dict[str, int], jobs: int) -> list[dict]:
    """Split the chapters into `jobs` batches of similar size and parse them in forked processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    batches: list[list[tuple[str, int]]] = [[] for _ in range(jobs)]
    weights = [0] * jobs
    order = sorted(range(len(todo)), key=lambda i: -sizes[todo[i][0]])
    placement: dict[int, tuple[int, int]] = {}
    for index in order:
        lightest = weights.index(min(weights))
        placement[index] = (lightest, len(batches[lightest]))
        batches[lightest].append(todo[index])
        weights[lightest] += sizes[todo[index][0]]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_parse_records, str(root), batch) for batch in batches]
        results = [future.result() for future in futures]
    return [results[b][i] for b, i in (placement[index] for index in range(len(todo)))]


class ParseCache:
    """Parser records per chapter, keyed by a digest of the chapter's bytes; one JSON file per book."""

    def __init__(self, directory: Path | None, root: Path) -> None:
        self.path = None if directory is None else directory / f"parsed-{hashlib.blake2b(str(root).encode(), digest_size=8).hexdigest()}.json"
        self.fingerprint = _fingerprint() if directory is not None else ""
        self.entries: dict[str, dict] = {}
        self.dirty = False
        if self.path is not None and self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if data.get("fingerprint") == self.fingerprint:
                    self.entries = data.get("chapters", {})
            except (OSError, ValueError):
                self.entries = {}

    def get(self, path: str, digest: str) -> dict | None:
        entry = self.entries.get(path)
        return entry["record"] if entry and entry.get("digest") == digest else None

    def put(self, path: str, digest: str, record: dict) -> None:
        self.entries[path] = {"digest": digest, "record": record}
        self.dirty = True

    def save(self, keep: set[str]) -> None:
        if self.path is None or not (self.dirty or set(self.entries) - keep):
            return
        from ..atomic import atomic_file

        data = {"fingerprint": self.fingerprint, "chapters": {k: v for k, v in self.entries.items() if k in keep}}
        try:
            with atomic_file(self.path) as temp:
                temp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        except OSError:
            pass  # a read-only place: the next run parses again, nothing else changes


def load_book_for_links(root: Path, cache_dir: Path | None = None, jobs: int | None = None, config=None) -> Book:
    """The book model as `load_book` builds it, minus the tokens (which only renderers need).

    Chapters whose bytes did not change since the last run come from the cache; the others are parsed by the one
    parser, in parallel when there is a lot of them. Every link is then resolved by `resolve`, as in `load_book`.
    """
    config = config or load_config(Path(root))
    diagnostics = Diagnostics()
    output = (config.root / config.output) if config.output else None
    files, dirs = scan_files(config.root, output)
    entries = read_chapter_list(config, files, diagnostics)
    cache = ParseCache(cache_dir, config.root)
    texts: dict[str, str] = {}
    digests: dict[str, str] = {}
    sizes: dict[str, int] = {}
    records: dict[str, dict] = {}
    todo: list[tuple[str, int]] = []
    for path, line in entries:
        data = (config.root / path).read_bytes()
        texts[path] = data.decode("utf-8-sig", errors="replace")
        digests[path] = hashlib.blake2b(data, digest_size=16).hexdigest()
        sizes[path] = len(data)
        record = cache.get(path, digests[path])
        if record is None:
            todo.append((path, line))
        else:
            records[path] = record
    if todo:
        jobs = jobs if jobs is not None else min(os.cpu_count() or 1, 8)
        pending = sum(sizes[path] for path, _ in todo)
        if jobs > 1 and len(todo) > 1 and pending >= PARALLEL_BYTES:
            fresh = _parse_parallel(config.root, todo, sizes, min(jobs, len(todo)))
        else:
            fresh = _parse_records(str(config.root), todo)
        for (path, _), record in zip(todo, fresh):
            records[path] = record
            cache.put(path, digests[path], record)
    cache.save({path for path, _ in entries})
    chapters = []
    for path, line in entries:
        chapter, found = _chapter_from_record(path, texts[path], line, records[path])
        chapters.append(chapter)
        for diag in found:
            diagnostics.add(diag)
    prefix = config.repository_path if config.repository_path is not None else _git_prefix(config.root)
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(c.path for c in chapters), prefix.strip("/"))
    for chapter in chapters:
        for link in chapter.links:
            link.target = resolve(chapter.path, link.href, index)
    return Book(config, chapters, index, diagnostics)


def _count_links(book: Book) -> tuple[int, int]:
    total = external = 0
    for link in book.links():
        total += 1
        if link.target is not None and link.target.kind is TargetKind.EXTERNAL:
            external += 1
    return total, external


def _emit(report: Report, fmt: str, output: Path | None) -> None:
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(render(report, fmt), encoding="utf-8")
    else:
        color = fmt == "text" and sys.stdout.isatty()
        text = render(report, fmt, color=color)
        if text:
            click.echo(text, nl=False, color=color)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        try:
            with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
                handle.write(step_summary(report))
        except OSError:
            pass
    click.echo(summary_line(report), err=True)


@click.command("check-links", epilog=EXIT_CODES)
@book_option
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES), default="text", show_default=True, help="text for people (colored on a terminal), json, github (Actions annotations) or sarif (code scanning).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the findings to this file instead of standard output.")
@click.option("--html", "html_check", is_flag=True, help="Also build the site (local mode) and cross-check it with LinkChecker, anchors included; its findings are mapped back to the chapters.")
@click.option("--external", is_flag=True, help="Also check every external URL (politely: one request at a time per host, cached).")
@click.option("--changed-since", "changed_since", metavar="REV", default=None, help="With --external: only URLs on lines added since the git revision REV (implies --external).")
@click.option("--exclude", multiple=True, metavar="REGEX", help="With --external: never fetch URLs matching REGEX (added to [links] exclude of book.toml). Repeatable.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when there is any warning too (after listing them all).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where the parse and external caches live (default: $TOOLS_CACHE_DIR or ./.cache/links).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write any cache.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Processes for parsing and hosts checked at once (default: the number of cores, and 8 hosts).")
@click.option("--linkcheckerrc", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="With --html: the LinkChecker configuration (default: build/linkcheckerrc).")
def check_links(book_dir, fmt, output, html_check, external, changed_since, exclude, strict, cache_dir, no_cache, jobs, linkcheckerrc) -> None:
    """Check every link and image of every chapter; report each finding at file:line:col with a suggestion.

    Local checks always run: missing files and anchors (GitHub ids, case-sensitive), fragments on folder links,
    links leaving the book, markdown files that are not chapters, missing chapter-list entries, empty links and
    URLs pasted into URLs. --html and --external add the cross-check of the built site and the external URLs.
    """
    started = time.perf_counter()
    config = load_config(book_dir or default_book())
    caches = None if no_cache else (cache_dir or default_cache_dir())
    if html_check:
        from ..book import load_book

        book = load_book(config.root, output=(config.root / config.output) if config.output else None, config=config)
    else:
        book = load_book_for_links(config.root, cache_dir=caches, jobs=jobs, config=config)
    diagnostics = check_book(book)
    total, external_count = _count_links(book)
    summary: dict = {"chapters": len(book.chapters), "links": total, "external_links": external_count}
    report = Report(config.root, diagnostics, summary)
    if html_check:
        from ..links.linkchecker import cross_check

        found = cross_check(book, diagnostics, rc=linkcheckerrc)
        summary["linkchecker"] = len(found.findings)
        summary["linkchecker_new"] = found.new
        summary["linkchecker_seconds"] = round(found.seconds, 3)
        report.linkchecker = [finding.as_json() for finding in found.findings]
    if external or changed_since:
        from ..links.external import check_external

        result = check_external(book, diagnostics, cache_dir=caches, changed_since=changed_since, extra_exclude=list(exclude), max_hosts=jobs)
        summary["external"] = result.counts()
        summary["external_from_cache"] = result.from_cache
        report.external = result.as_json()
    summary["errors"] = len(diagnostics.errors)
    summary["warnings"] = len(diagnostics.warnings)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    _emit(report, fmt, output)
    code = diagnostics.exit_code(strict)
    if code:
        sys.exit(EXIT_PROBLEMS)


__all__ = ["check_links", "load_book_for_links", "BookError"]
