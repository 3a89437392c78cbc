"""`tools system-packages`: the Debian packages the book's outputs need (tools/build/system_packages.py), one per
line with why; `make book` installs the missing ones (scripts/install-book-deps.sh)."""
from __future__ import annotations

from pathlib import Path

import click

from tools.commands.common import EXIT_CODES, book_option, default_book


@click.command("system-packages", epilog=EXIT_CODES)
@book_option
@click.option("--names", is_flag=True, help="Print the package names only, on one line (for apt-get install).")
def system_packages_command(book_dir: Path | None, names: bool) -> None:
    """List the Debian packages the book's outputs need, each with why.

    Derived from the book: the PDF's libraries and fonts, a font for each language it declares and each script its
    chapters are written in, and a browser and npm for mermaid diagrams. One line per package, the name, a tab and
    why; whether it is installed is not checked (`make book` does that with dpkg-query and installs what is missing).
    """
    from tools.book.config import load_config
    from tools.build.system_packages import needed_packages

    found = needed_packages(load_config(book_dir or default_book()))
    if names:
        click.echo(" ".join(need.package for need in found))
        return
    for need in found:
        click.echo(f"{need.package}\t{need.why}")
