"""`tools fix-tables`: make every table render on GitHub (one-line header, blank line above), re-pad columns."""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import click

from tools.checks.source.style import MARKDOWN_LIMIT, Source, display_path, find_sources, read_markdown
from tools.checks.source.tables import DEFAULT_WIDTH, CellsChanged, fix_tables
from tools.commands.common import EXIT_CODES, default_book
from tools.core.atomic import atomic_file
from tools.core.errors import EXIT_OK, EXIT_PROBLEMS, Diagnostics
from tools.core.report import Timer
from tools.core.report_formats import print_diagnostics
from tools.core.safe_io import UnsafeFile, read_bytes
from tools.edit.move_write import writable


def write_keeping_mode(path: Path, text: str) -> None:
    """Replace `path` atomically with `text`, keeping its permissions and its bytes' line ends."""
    mode = path.stat().st_mode
    with atomic_file(path) as temp:
        temp.write_bytes(text.encode("utf-8"))
        os.chmod(temp, mode & 0o7777)


def write_fixed(source: Source, name: str, read: bytes, text: str, diagnostics: Diagnostics) -> bool:
    """Write the fixed text over the file it was read from (through a link, the file it points to); report why not."""
    real = Path(os.path.realpath(source.path))
    if not writable(real):
        diagnostics.error(name, 0, "the file is read-only, so its tables were not fixed; the file was left alone.", suggestion="Make it writable (chmod u+w), or run with --check.", code="read-only")
        return False
    try:
        if read_bytes(real, None, MARKDOWN_LIMIT, shown=name) != read:
            diagnostics.error(name, 0, "the file changed while its tables were being fixed; it was left alone.", suggestion="Run the command again.", code="changed")
            return False
        write_keeping_mode(real, text)
    except (OSError, UnsafeFile) as exc:
        reason = exc.reason if isinstance(exc, UnsafeFile) else (exc.strerror or str(exc))
        diagnostics.error(name, 0, f"the fixed file could not be written ({reason}); the file was left alone.", code="write-failed")
        return False
    return True


@click.command("fix-tables", epilog=EXIT_CODES)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--check", is_flag=True, help="Change no file; exit 1 when a table would change or cannot be fixed.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the changes as a unified diff (with --check: what would change).")
@click.option("--width", type=click.IntRange(min=0), default=DEFAULT_WIDTH, show_default=True, help="Pad every column to one width when the padded rows fit in this many characters; wider tables get one space around each cell (0: always pad).")
def fix_tables_command(paths: tuple[Path, ...], check: bool, show_diff: bool, width: int) -> None:
    """Fix the markdown tables that GitHub would not render, and re-pad the columns of the narrow ones.

    PATHS are markdown files or folders (default: the book's folder, ./chapters). GitHub renders a table only
    when its delimiter row (| --- |) is the table's second line and a blank line comes before it. This command
    joins a header spread over several lines into one (the lines joined with <br>), joins a row wrapped inside a
    cell the same way, inserts the missing blank line, and pads the columns to one width (a table wider than
    --width keeps one space around each cell, and is left alone when it renders). It reports what it cannot fix
    safely: a row with more cells than the header (GitHub drops the extra ones), a header whose cell count
    differs from the delimiter row's, a line without '|' right under a table. Code blocks, raw HTML and front
    matter are never touched, and every fixed table is parsed again to prove its cells did not change.
    """
    timer = Timer()
    unreadable: list[str] = []
    files = list(find_sources(paths or (default_book(),), unreadable))
    diagnostics = Diagnostics()
    for unread in unreadable:
        where, _, message = unread.partition(": ")
        diagnostics.error(where, 0, message + ".", code="unreadable")
    tables = changed_files = changed_tables = 0
    for source in files:
        name = display_path(source.path)
        read = read_markdown(source, name, diagnostics)
        if read is None:
            continue
        data, text = read
        try:
            result = fix_tables(text, width=width)
        except CellsChanged as error:
            diagnostics.error(name, 0, f"fixing its tables would change a cell ({error}); the file was left alone.", suggestion="This is a bug of fix-tables: please report it with the table.")
            continue
        tables += result.tables
        for problem in result.problems:
            diagnostics.error(name, problem.line, problem.message, suggestion=problem.suggestion, code="table")
        if not result.changed:
            continue
        changed_files += 1
        changed_tables += len(result.changes)
        verb = "would fix" if check else "fixed"
        for change in result.changes:
            click.echo(f"{click.style(f'{name}:{change.line}', bold=True)}: {verb}: {change.what}")
        if show_diff:
            click.echo("".join(difflib.unified_diff(text.splitlines(keepends=True), result.text.splitlines(keepends=True), f"a/{name}", f"b/{name}")), nl=False)
        if not check:
            write_fixed(source, name, data, result.text, diagnostics)
    print_diagnostics(diagnostics)
    problems = len(diagnostics.errors)
    action = "would change" if check else "changed"
    click.echo(
        f"Checked {tables} table{'s' if tables != 1 else ''} in {len(files)} file{'s' if len(files) != 1 else ''}: "
        f"{action} {changed_tables} in {changed_files} file{'s' if changed_files != 1 else ''}, "
        f"{problems} problem{'s' if problems != 1 else ''} to fix by hand, in {timer}."
    )
    failed = problems or (check and changed_tables)
    if check and changed_tables:
        click.echo("Run `tools fix-tables` on the same paths to apply the changes.")
    sys.exit(EXIT_PROBLEMS if failed else EXIT_OK)
