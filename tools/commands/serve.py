"""`tools serve`: a local preview that rebuilds on save and reloads the browser."""
from __future__ import annotations

from pathlib import Path

import click

from tools.commands.common import EXIT_CODES, book_option, default_book
from tools.core.outputs import check_output, out_option, output_lock


@click.command("serve", epilog=EXIT_CODES)
@book_option
@click.option("--out", type=str, callback=out_option, default="_build/serve", show_default=True, help="Where the preview site is written.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port on 127.0.0.1 (0 picks a free one).")
@click.option("--local", is_flag=True, help="Copy linked scripts into the site instead of linking them to the repository.")
@click.option("--no-wait", is_flag=True, help="When a build is writing the same folder, fail at once (exit 2) instead of waiting for it.")
def serve_command(book_dir: Path | None, out: Path, port: int, local: bool, no_wait: bool) -> None:
    """Serve the site on 127.0.0.1, rebuild when a source changes, and reload the open pages."""
    from tools.book.config import load_config
    from tools.serve.server import serve

    book = load_config(book_dir or default_book()).root  # a missing or unusable book is refused before serving
    site = check_output(out, book, "html")  # the same rules as `tools build html --out`
    with output_lock([site], wait=not no_wait):  # a build into the same folder meanwhile would swap it under the server
        serve(book, site, port, local, log=lambda text: click.echo(text, err=True))
