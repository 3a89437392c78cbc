"""What every command shares: the --book option, the default book, the exit codes for --help."""
from __future__ import annotations

from pathlib import Path

import click

from tools.core.errors import EXIT_CRASH, EXIT_OK, EXIT_PROBLEMS, EXIT_SIGINT, EXIT_SIGTERM, EXIT_USAGE

EXIT_CODES = f"""\b
Exit codes:
  {EXIT_OK}    success
  {EXIT_PROBLEMS}    problems found in the book (errors, or warnings with --strict)
  {EXIT_USAGE}    usage or configuration error: a bad option, book.toml or chapter list,
       an output the tool refuses or cannot write, another build writing it (--no-wait)
  {EXIT_CRASH}    internal error (a bug): the message names a report to attach to an issue
  {EXIT_SIGINT}  interrupted (Ctrl-C, SIGINT): the last good output is unchanged
  {EXIT_SIGTERM}  stopped by SIGTERM: the last good output is unchanged"""

book_option = click.option("--book", "book_dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="The book's root folder (default: ./chapters when it has a chapter list, else the current folder).")


def default_book() -> Path:
    here = Path.cwd()
    for candidate in (here / "chapters", here):
        if any((candidate / name).is_file() for name in ("book.toml", "chapters-md.txt")):
            return candidate
    return here
