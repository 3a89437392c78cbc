"""`tools check-links`: every link of the book checked against the book model, with an optional LinkChecker
cross-check of the built site (`--html`) and a polite check of every external URL (`--external`).

The local check reads the model that the one loader builds (the one parser, the pure resolver) through the build
cache, so a chapter whose bytes did not change is not parsed again; when many chapters did change, they are parsed
in parallel processes, which fill the cache for the next run.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from tools.book.config import load_config
from tools.book.link_model import TargetKind
from tools.book.model import Book
from tools.checks.links.local import check_book
from tools.commands.common import EXIT_CODES, book_option, default_book
from tools.core.cache import Cache
from tools.core.errors import EXIT_PROBLEMS, BookError, Diagnostics
from tools.core.report_formats import FORMAT_NAMES, Report, render, step_summary, summary_line


def default_cache_dir() -> Path:
    """Where the external-URL cache lives: `$TOOLS_LINKS_CACHE_DIR`, else `.cache/links` in the current folder."""
    return Path(os.environ.get("TOOLS_LINKS_CACHE_DIR") or Path.cwd() / ".cache" / "links")


def load_book_for_links(root: Path, cache: Cache | None = None, jobs: int | None = None, config=None) -> Book:
    """The book through the one loader (tools/book/load.py), through the build cache, what the cache lacks parsed in
    `jobs` processes; for a language's view (tools/book/translations.py), that language's book."""
    from tools.book.load import load_chapters, open_book, parse_in_processes
    from tools.core.parallel import default_jobs

    config = config or load_config(Path(root))
    output = (config.root / config.output) if config.output else None
    book, entries = open_book(config, output)
    load_chapters(book, entries, cache, parse_in_processes(book, entries, cache, jobs if jobs is not None else min(default_jobs(), 8)))
    return book


def in_book_order(book: Book, diagnostics: Diagnostics) -> Diagnostics:
    """Findings sorted as a reader meets them: the chapter list, then each chapter in order, by line and column."""
    rank = {book.config.chapters: 0}
    for number, chapter in enumerate(book.chapters, 1):
        rank.setdefault(chapter.path, number)
    ordered = Diagnostics()
    for diag in sorted(diagnostics.items, key=lambda d: (rank.get(d.file, len(rank)), d.file, d.line, d.col)):
        ordered.add(diag)
    return ordered


def _count_links(book: Book) -> tuple[int, int]:
    total = external = 0
    for link in book.links():
        total += 1
        if link.target is not None and link.target.kind is TargetKind.EXTERNAL:
            external += 1
    return total, external


def _check_output(output: Path, book: Book) -> None:
    """--output may name a new file or a regular file that is not one of the book's sources; nothing else."""
    real = Path(os.path.realpath(output))
    if output.is_symlink() or (output.exists() and not output.is_file()):
        raise BookError(f"--output '{output}' exists and is not a regular file (a folder, a link, a FIFO...); give the path of a report file.")
    sources = {book.root / chapter.path for chapter in book.chapters}
    sources |= {book.config.chapter_list} if book.config.chapters else set()
    sources |= {book.config.config_file} if book.config.config_file is not None else set()
    if any(real == Path(os.path.realpath(source)) for source in sources):
        raise BookError(f"--output '{output}' is one of the book's sources; writing the report there would replace it. Choose another path.")


def _emit(report: Report, fmt: str, output: Path | None) -> None:
    if output is not None:
        from tools.core.atomic import atomic_file

        try:
            with atomic_file(output) as temp:
                temp.write_text(render(report, fmt), encoding="utf-8")
        except OSError as exc:
            raise BookError(f"--output '{output}' cannot be written ({exc.strerror or exc}); choose a writable path.") from None
    else:
        color = fmt == "text" and sys.stdout.isatty()
        text = render(report, fmt, color=color)
        if text:
            click.echo(text, nl=False, color=color)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY") or ""
    if fmt == "github" and summary_file and (os.path.isfile(summary_file) or not os.path.lexists(summary_file)):  # never block on a FIFO
        try:
            with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
                handle.write(step_summary(report))
        except OSError:
            pass
    click.echo(summary_line(report), err=True)


def _regexes(ctx, param, values):
    """--exclude: every value must be a valid regular expression (exit 2 with the pattern and the reason otherwise)."""
    import re

    for value in values:
        try:
            re.compile(value)
        except re.error as exc:
            raise click.BadParameter(f"'{value}' is not a valid regular expression ({exc}); escape special characters, e.g. '\\[' for a bracket.") from exc
    return values


@click.command("check-links", epilog=EXIT_CODES)
@book_option
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES), default="text", show_default=True, help="text for people (colored on a terminal), json, github (Actions annotations) or sarif (code scanning).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the findings to this file instead of standard output.")
@click.option("--html", "html_check", is_flag=True, help="Also build the site (local mode) and cross-check it with LinkChecker, anchors included; its findings are mapped back to the chapters.")
@click.option("--external", is_flag=True, help="Also check every external URL (politely: one request at a time per host, cached).")
@click.option("--changed-since", "changed_since", metavar="REV", default=None, help="With --external: only URLs on lines added since the git revision REV (implies --external).")
@click.option("--exclude", multiple=True, metavar="REGEX", callback=_regexes, help="With --external: never fetch URLs matching REGEX (added to [links] exclude of book.toml). Repeatable.")
@click.option("--local/--no-local", "local", default=True, show_default=True, help="--no-local: leave the local findings out of the report and the exit status (CI reports them in another job).")
@click.option("--strict", is_flag=True, help="Exit with status 1 when there is any warning too (after listing them all).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where the external-URL cache lives (default: $TOOLS_LINKS_CACHE_DIR or ./.cache/links); parsed chapters then go to its 'parsed' folder instead of the build cache.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write any cache.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Processes for parsing and hosts checked at once (default: the number of cores, and 8 hosts).")
@click.option("--linkcheckerrc", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="With --html: the LinkChecker configuration (default: the one shipped with tools).")
@click.option("--lang", "language", metavar="TAG", default=None, help="Check one language only: the book's own (e.g. en) or a translation's tag from book.toml (default: every language).")
def check_links(book_dir, fmt, output, html_check, external, changed_since, exclude, local, strict, cache_dir, no_cache, jobs, linkcheckerrc, language) -> None:
    """Check every link and image of every chapter; report each finding at file:line:col with a suggestion.

    Local checks always run: missing files and anchors (GitHub ids, case-sensitive), fragments on folder links,
    links leaving the book, markdown files that are not chapters, missing chapter-list entries, empty links and
    URLs pasted into URLs. --html and --external add the cross-check of the built site and the external URLs.
    """
    from tools.book.translations import chosen_languages, explain_fallbacks, view_config

    started = time.perf_counter()
    parse_cache = None if no_cache else Cache(cache_dir / "parsed" if cache_dir else None)
    snapshot = _replay_snapshot(book_dir, parse_cache, fmt, output is None and not (html_check or external or changed_since))
    config = load_config(book_dir or default_book())
    caches = None if no_cache else (cache_dir or default_cache_dir())
    # every language's book (the original first): a translation's findings name its own files, a fallback's are the original's
    books = [load_book_for_links(config.root, cache=parse_cache, jobs=jobs, config=view_config(config, tag)) for tag in chosen_languages(config, language)]
    if output is not None:
        for book in books:
            _check_output(output, book)
    local_findings = Diagnostics()
    for book in books:
        local_findings.extend(in_book_order(book, explain_fallbacks(book, check_book(book))))
    diagnostics = local_findings if local else Diagnostics()
    counted = [_count_links(book) for book in books]
    summary: dict = {"chapters": sum(len(book.chapters) for book in books), "links": sum(total for total, _ in counted), "external_links": sum(count for _, count in counted)}
    report = Report(config.root, diagnostics, summary)
    if html_check:
        from tools.checks.links.linkchecker import cross_check

        report.linkchecker = []
        for book in books:
            found = cross_check(book, diagnostics, rc=linkcheckerrc, cache=parse_cache, known=local_findings)
            summary["linkchecker"] = summary.get("linkchecker", 0) + len(found.findings)
            summary["linkchecker_new"] = summary.get("linkchecker_new", 0) + found.new
            summary["linkchecker_seconds"] = round(summary.get("linkchecker_seconds", 0) + found.seconds, 3)
            report.linkchecker += [finding.as_json() for finding in found.findings]
    if external or changed_since:
        from tools.checks.links.external import check_external

        # each language's URLs: those the original shares with a translation come from the cache the second time
        results = [check_external(book, diagnostics, cache_dir=caches, changed_since=changed_since, extra_exclude=list(exclude), max_hosts=jobs) for book in books]
        summary["external"] = {kind: sum(result.counts().get(kind, 0) for result in results) for kind in results[0].counts()}
        summary["external_from_cache"] = sum(result.from_cache for result in results)
        report.external = [entry for result in results for entry in result.as_json()]
    summary["errors"] = len(diagnostics.errors)
    summary["warnings"] = len(diagnostics.warnings)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    _emit(report, fmt, output)
    code = EXIT_PROBLEMS if diagnostics.exit_code(strict) else 0
    if snapshot is not None and not (config.theme or config.extensions.plugins):
        snapshot.store(lambda seconds: _rendered(report, fmt, seconds), code)
    if code:
        sys.exit(code)


def _replay_snapshot(book_dir, parse_cache: Cache | None, fmt: str, local_only: bool):
    """The inputs of this run, for tools/checks/links/replay.py, when its result can be replayed: run as the command, a
    local check to standard output, the cache on, no parse log or step summary to write."""
    from tools.book.model import PARSE_LOG
    from tools.core import interrupt

    if parse_cache is None or not local_only or not interrupt.EARLY or sys.argv[1:2] != ["check-links"]:
        return None
    if os.environ.get(PARSE_LOG) or (fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY")):
        return None
    from tools.checks.links.replay import Snapshot

    return Snapshot(str(book_dir or default_book()), str(parse_cache.directory))


def _rendered(report: Report, fmt: str, seconds: float) -> tuple[str, str]:
    """What `_emit` printed (standard output, standard error), with `seconds` as the run's time."""
    report.summary["seconds"] = seconds
    color = fmt == "text" and sys.stdout.isatty()
    return render(report, fmt, color=color), summary_line(report) + "\n"


