"""`tools build FORMAT`: load the book once, check its links, write the output atomically, summarize."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..atomic import staged
from ..book import load_book
from ..cache import Cache
from ..config import load_config
from ..formats import FORMATS
from ..links.check import check_book
from ..outputs import check_output, out_option, output_lock
from ..parallel import default_jobs
from ..render.site import site_prerenderer
from ..report import Timer, counts, print_diagnostics
from .common import EXIT_CODES, book_option, default_book


def output_root(config, out: Path | None) -> Path:
    if out is not None:
        return out
    return (config.root / config.output) if config.output else Path.cwd() / "_build"


@click.command(epilog=EXIT_CODES)
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["html", "pdf", "epub", "all"]))
@book_option
@click.option("--out", type=str, callback=out_option, default=None, help="Where to write: a folder for html, a file for pdf and epub (default: _build/<format>). With 'all', the folder that receives html/, book.pdf and book.epub.")
@click.option("--local", is_flag=True, help="Copy linked scripts and data into the site instead of linking them to the repository.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when there is any warning (after listing them all).")
@click.option("--no-cache", is_flag=True, help="Parse and render every chapter again instead of reusing .cache/build (BOOK_CACHE_DIR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Processes that parse and render chapters and lay out the PDF's chapters (default: one per CPU core).")
def build(fmt: str, book_dir: Path | None, out: Path | None, local: bool, strict: bool, no_cache: bool, jobs: int | None) -> None:
    """Build the book as FORMAT: html (a site), pdf, epub, or all of them."""
    timer = Timer()
    jobs = jobs or default_jobs()
    config = load_config(book_dir or default_book())
    names = [n for n in ("html", "pdf", "epub") if n in FORMATS] if fmt == "all" else [fmt]
    if fmt != "all" and fmt not in FORMATS:
        raise click.UsageError(f"the format '{fmt}' is not available in this version; available: {', '.join(FORMATS)}.")
    base = output_root(config, out if fmt == "all" else None)
    targets = {name: (out if (out is not None and fmt != "all") else base / FORMATS[name][0]) for name in names}
    source = "--out" if out is not None else f"{config.config_file or 'book.toml'}: output" if config.output else "the default output"
    if fmt == "all" or out is None:  # the folder that receives <format> outputs: never the root, nor holding it
        base = check_output(base, config.root, "all", source)
    targets = {name: check_output(target, config.root, name, source) for name, target in targets.items()}
    with output_lock(targets.values()):  # a second build into the same output refuses instead of mixing files
        _build(fmt, names, config, base, out, targets, local, strict, no_cache, jobs, timer)


def _build(fmt, names, config, base, out, targets, local, strict, no_cache, jobs, timer) -> None:
    cache = Cache(enabled=not no_cache)
    per_chapter = site_prerenderer(local, cache) if "html" in names else None
    output_jobs = jobs  # the PDF's parts and the EPUB's chapters are made in processes of their own
    if per_chapter is None:
        jobs = 1  # PDF and EPUB render in this process, which needs the tokens: parsing elsewhere would parse twice
    book = load_book(config.root, output=base if fmt == "all" or out is None else targets[fmt], config=config, cache=cache, jobs=jobs, per_chapter=per_chapter)
    diagnostics = check_book(book)
    loading = str(timer)
    built = []
    with staged():  # every output is put in place at the end, together: an interrupted `all` changes none of them
        for name in names:
            step = Timer()
            result = FORMATS[name][1](book, targets[name], diagnostics, {"local": local, "cache": cache, "jobs": output_jobs})
            built.append((name, result, str(step)))
    cache.prune()  # entries no build used for a month
    print_diagnostics(diagnostics)
    for name, result, took in built:
        click.echo(f"Built {name}: {len(book.chapters)} chapters, {result.summary}, {counts(diagnostics)} in {took} (loading {loading}) -> {result.path}")
    sys.exit(diagnostics.exit_code(strict))
