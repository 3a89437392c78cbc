"""`tools serve`: a local preview that rebuilds on save and reloads the browser."""
from __future__ import annotations

from pathlib import Path

import click

from .common import book_option, default_book


@click.command("serve")
@book_option
@click.option("--out", type=click.Path(path_type=Path), default=Path("_build/serve"), show_default=True, help="Where the preview site is written.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port on 127.0.0.1 (0 picks a free one).")
@click.option("--local", is_flag=True, help="Copy linked scripts into the site instead of linking them to the repository.")
def serve_command(book_dir: Path | None, out: Path, port: int, local: bool) -> None:
    """Serve the site on 127.0.0.1, rebuild when a source changes, and reload the open pages."""
    from ..serve import serve

    serve((book_dir or default_book()).resolve(), out.resolve(), port, local, log=lambda text: click.echo(text, err=True))
