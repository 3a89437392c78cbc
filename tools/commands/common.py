"""What every command shares: the --book option, the default book, the exit codes for --help."""
from __future__ import annotations

from pathlib import Path

import click

from ..errors import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

EXIT_CODES = f"""Exit codes: {EXIT_OK} success; {EXIT_PROBLEMS} problems were found (errors, or warnings with --strict);
{EXIT_USAGE} bad usage or an unusable book (unreadable book.toml, missing chapter list)."""

book_option = click.option("--book", "book_dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="The book's root folder (default: ./chapters when it has a chapter list, else the current folder).")


def default_book() -> Path:
    here = Path.cwd()
    for candidate in (here / "chapters", here):
        if any((candidate / name).is_file() for name in ("book.toml", "chapters-md.txt")):
            return candidate
    return here
