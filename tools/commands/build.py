"""`tools build FORMAT`: load the book once, check its links, write the output atomically, summarize."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from tools.book.config import load_config
from tools.commands.common import EXIT_CODES, book_option, default_book
from tools.core.atomic import staged
from tools.core.cache import Cache
from tools.core.outputs import FILE_FORMATS, check_output, out_option, output_lock
from tools.core.parallel import default_jobs
from tools.core.report import counts
from tools.core.report_formats import print_diagnostics
from tools.render import registry as formats


def output_root(config, out: Path | None) -> Path:
    if out is not None:
        return out
    return (config.root / config.output) if config.output else Path.cwd() / "_build"


class FormatChoice(click.Choice):
    """The registered formats, those of installed packages (entry points) and `all`, read from the registry
    (tools/render/registry.py) whenever click asks, so no other command looks the entry points up."""

    def __init__(self) -> None:
        super().__init__([])

    @property  # type: ignore[override]
    def choices(self) -> list[str]:
        return [*formats.names(), "all"]

    @choices.setter
    def choices(self, value) -> None:
        pass  # click.Choice sets it in __init__; the registry is the one list

    def convert(self, value, param, ctx):
        if value in ("all", *formats.builtin_names()):  # no need to look up every installed package's entry points
            return value
        return super().convert(value, param, ctx)


class BuildCommand(click.Command):
    """`tools build`, whose help names the formats registered at the moment it is shown."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(f"FORMAT is one of: {', '.join(FormatChoice().choices)}.")
        plugins = formats.load_entry_point_formats()
        if plugins:
            with formatter.indentation():
                formatter.write_paragraph()
                formatter.write_text("Formats of installed packages: " + ", ".join(f"{name} ({_package(entry)})" for name, entry in plugins.items()) + ".")


def _package(entry) -> str:
    return f"{entry.dist.name} {entry.dist.version}" if entry.dist is not None else entry.value


@click.command(cls=BuildCommand, epilog=EXIT_CODES)
@click.argument("fmt", metavar="FORMAT", type=FormatChoice())
@book_option
@click.option("--out", type=str, callback=out_option, default=None, help="Where to write: a folder for html, a file for pdf and epub (default: _build/<format>). With 'all', the folder that receives html/, book.pdf and book.epub.")
@click.option("--local", is_flag=True, help="Copy linked scripts and data into the site instead of linking them to the repository.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when there is any warning (after listing them all).")
@click.option("--no-cache", is_flag=True, help="Parse and render every chapter again instead of reusing .cache/build (BOOK_CACHE_DIR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Processes that parse and render chapters and lay out the PDF's chapters (default: one per CPU core).")
@click.option("--lang", "language", metavar="TAG", default=None, help="Build one language only: the book's own (e.g. en) or a translation's tag from book.toml (default: every language).")
@click.option("--no-wait", is_flag=True, help="When another build is writing the same output, fail at once (exit 2) instead of waiting for it.")
def build(fmt: str, book_dir: Path | None, out: Path | None, local: bool, strict: bool, no_cache: bool, jobs: int | None, language: str | None, no_wait: bool) -> None:
    """Build the book as FORMAT: html (a site), pdf, epub, or all of them. A format an installed package adds is
    built by its name (see below)."""
    jobs = jobs or default_jobs()
    config = load_config(book_dir or default_book())
    names = formats.builtin_names() if fmt == "all" else [fmt]
    if fmt != "all" and fmt not in formats.builtin_names() and fmt not in formats.names():
        raise click.UsageError(f"the format '{fmt}' is not available in this version; available: {', '.join(formats.names())}.")
    base = output_root(config, out if fmt == "all" else None)
    targets = {name: (out if (out is not None and fmt != "all") else base / formats.get(name).default_output) for name in names}
    source = "--out" if out is not None else f"{config.config_file or 'book.toml'}: output" if config.output else "the default output"
    if fmt == "all" or out is None:  # the folder that receives <format> outputs: never the root, nor holding it
        base = check_output(base, config.root, "all", source)
    from tools.book.translations import chosen_languages, language_output, languages

    chosen = chosen_languages(config, language)
    original = languages(config)[0]
    by_language = {tag: {name: language_output(target, config, tag, name not in FILE_FORMATS) for name, target in targets.items()} for tag in chosen}
    checked: dict[str, dict[str, Path]] = {}
    for tag, wanted in by_language.items():  # a translation's site lies inside the original's: html/zh/
        checked[tag] = {name: check_output(target, config.root, name, source, within=targets[name] if tag != original and name not in FILE_FORMATS else None,
                                           sites=tuple(config.translations) if tag == original else ())
                        for name, target in wanted.items()}
    with output_lock([path for wanted in checked.values() for path in wanted.values()], wait=not no_wait):  # a second build into the same output waits instead of mixing files
        scan_output = base if fmt == "all" or out is None else targets[fmt]
        _build(config, checked, scan_output, local, strict, no_cache, jobs)


def _build(config, targets: dict[str, dict[str, Path]], scan_output: Path, local: bool, strict: bool, no_cache: bool, jobs: int) -> None:
    from tools.book.translations import languages
    from tools.build.pipeline import build_languages
    from tools.core.errors import Diagnostics

    cache = Cache(enabled=not no_cache)
    options = formats.BuildOptions(local=local, cache=cache, jobs=jobs)
    with staged():  # every output is put in place at the end, together: an interrupted `all` changes none of them
        outcomes = build_languages(config, targets, options, scan_output)
    cache.prune()  # entries no build used for a month
    diagnostics = Diagnostics()
    for _, outcome in outcomes:  # a fallback chapter's findings are the original's: each is shown once
        diagnostics.extend(outcome.diagnostics)
    print_diagnostics(diagnostics)
    several = len(languages(config)) > 1
    for tag, outcome in outcomes:
        label = f" ({tag})" if several else ""
        for name, result, took in outcome.built:
            click.echo(f"Built {name}{label}: {len(outcome.book.chapters)} chapters, {result.summary}, {counts(outcome.of_format(name))} in {took:.1f}s (loading {outcome.loading:.1f}s) -> {result.path}")
    sys.exit(diagnostics.exit_code(strict))
