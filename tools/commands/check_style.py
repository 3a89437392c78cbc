"""`tools check-style`: report hard-wrapped prose paragraphs (the book keeps one line per paragraph)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from tools.checks.source.style import check_style, display_path, find_sources, read_markdown
from tools.commands.common import EXIT_CODES, default_book
from tools.core.errors import EXIT_OK, EXIT_PROBLEMS, Diagnostics
from tools.core.report import Timer
from tools.core.report_formats import print_diagnostics


@click.command("check-style", epilog=EXIT_CODES)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
def check_style_command(paths: tuple[Path, ...]) -> None:
    """Report prose paragraphs hard-wrapped over several lines, with file and line.

    PATHS are markdown files or folders (default: the book's folder, ./chapters). The book keeps one line per
    paragraph. Lists, quotes, tables, code, raw HTML and front matter are left alone, and so is a paragraph whose
    every line ends in a hard line break (two spaces or a backslash). Nothing is changed.
    """
    timer = Timer()
    unreadable: list[str] = []
    files = list(find_sources(paths or (default_book(),), unreadable))
    diagnostics = Diagnostics()
    for problem in unreadable:
        name, _, message = problem.partition(": ")
        diagnostics.error(name, 0, message + ".", code="unreadable")
    from tools.markdown.parser import create_markdown  # here, not at the top: `tools check-style --help` needs no parser

    md = create_markdown()
    for source in files:
        name = display_path(source.path)
        read = read_markdown(source, name, diagnostics)
        if read is None:
            continue
        text = read[1]
        for finding in check_style(text, md):
            diagnostics.error(name, finding.line, finding.message, suggestion=finding.suggestion, code=finding.code)
    print_diagnostics(diagnostics)
    found = len(diagnostics.errors)
    click.echo(f"Checked {len(files)} file{'s' if len(files) != 1 else ''}: {found} problem{'s' if found != 1 else ''} in {timer}.")
    sys.exit(EXIT_PROBLEMS if found else EXIT_OK)
