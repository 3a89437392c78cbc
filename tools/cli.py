"""`tools`: build a GitHub-style markdown book into a site, a PDF and an EPUB; check and move its links."""
from __future__ import annotations

import sys

import click

from . import __version__
from .commands.common import EXIT_CODES


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="tools")
def main() -> None:
    """The book tool: build, check and reorganize a markdown book laid out the GitHub way."""


def _register_commands() -> None:
    from .commands import build, check_links, check_programs, mv, serve

    main.add_command(build.build)
    main.add_command(serve.serve_command)
    main.add_command(check_programs.check_programs_command)
    main.add_command(check_links.check_links)
    main.add_command(mv.mv_links)
    main.add_command(mv.mv)
    from .commands import check_style, fix_tables

    main.add_command(fix_tables.fix_tables_command)
    main.add_command(check_style.check_style_command)


_register_commands()

if __name__ == "__main__":
    sys.exit(main())
