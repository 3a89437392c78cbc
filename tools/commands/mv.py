"""`tools mv SRC DST` and `tools mv-links SRC DST`: reorganize the book without breaking a link.

`tools mv` moves the file or folder (`git mv` when git tracks it) and rewrites the links; `tools mv-links` only
rewrites the links, after a move made by other means. Both plan every change first and then write all of it or
nothing; `--dry-run` prints the plan as a unified diff and changes nothing.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tools.book.config import load_config
from tools.commands.common import EXIT_CODES, book_option, default_book

if TYPE_CHECKING:
    from tools.core.cache import Cache
    from tools.edit.move import MovePlan

# What plans and writes a move (the book, the parser) is imported when the command runs, not for its --help.

_PATHS = [  # kept as strings: an empty one (an unset shell variable) must be refused, not read as '.'
    click.argument("src", type=str),
    click.argument("dst", type=str),
]


def _options(function):
    for decorator in reversed(_PATHS):
        function = decorator(function)
    function = book_option(function)
    function = click.option("--dry-run", "-n", is_flag=True, help="Print what would change as a unified diff; write nothing.")(function)
    function = click.option("--no-cache", is_flag=True, help="Parse every markdown file again instead of reusing the build cache.")(function)
    return function


def _describe(plan: MovePlan, verb: str) -> str:
    files = {edit.file for edit in plan.edits}
    parts = [f"{verb} {plan.src}{'/' if plan.is_dir else ''} -> {plan.dst}{'/' if plan.is_dir else ''}"]
    parts.append(f"rewrote {len(plan.edits)} link{'s' if len(plan.edits) != 1 else ''} in {len(files)} file{'s' if len(files) != 1 else ''}")
    if plan.chapter_list is not None:
        parts.append(f"updated {plan.chapter_list.new_path}")
    if plan.config_change is not None:
        parts.append(f"updated the redirects in {plan.config_change.new_path}")
    return "; ".join(parts) + "."


def _cache(no_cache: bool, dry_run: bool) -> Cache | None:
    """The build cache, except for --dry-run, which writes nothing at all."""
    from tools.core.cache import Cache

    return None if no_cache or dry_run else Cache()


def _given(src: str, dst: str) -> tuple[str, str]:
    from tools.edit.move_paths import MoveError

    for what, value in (("SRC", src), ("DST", dst)):
        if not value.strip():
            raise MoveError(f"{what} is empty (an unset shell variable?); give the path of a file or folder of the book.")
    return src, dst


def _finish(plan: MovePlan, dry_run: bool) -> bool:
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    if dry_run:
        click.echo(plan.diff(), nl=False)
        return True
    return False


@click.command("mv-links", epilog=EXIT_CODES)
@_options
def mv_links(src: str, dst: str, book_dir: Path | None, dry_run: bool, no_cache: bool) -> None:
    """After SRC was moved to DST (a file or a folder), rewrite every link the move broke.

    Links into SRC from anywhere in the book, and links from the moved files to the rest of the book, are rewritten
    in place: fragments, titles, the ./ style, angle brackets and reference definitions are kept; raw-HTML href and
    src too; code and external links are never touched. The chapter list is updated.
    """
    config = load_config(book_dir or default_book())
    from tools.edit.move import plan_move, write_changes
    from tools.edit.move_write import preflight

    src, dst = _given(src, dst)
    plan = plan_move(config.root, src, dst, moved=True, config=config, cache=_cache(no_cache, dry_run))
    if _finish(plan, dry_run):
        return
    preflight(plan, moving=False)
    write_changes(plan)
    click.echo(_describe(plan, "links updated for"))


@click.command("mv", epilog=EXIT_CODES)
@_options
def mv(src: str, dst: str, book_dir: Path | None, dry_run: bool, no_cache: bool) -> None:
    """Move SRC to DST (git mv inside a git work tree) and rewrite every link the move would break.

    DST is the new path of SRC and must not exist. Every change is planned before anything moves; then the files
    move and all the link changes are written, or, on any error, nothing changes.
    """
    config = load_config(book_dir or default_book())
    from tools.edit.move import apply_move, plan_move

    src, dst = _given(src, dst)
    plan = plan_move(config.root, src, dst, moved=False, config=config, cache=_cache(no_cache, dry_run))
    if _finish(plan, dry_run):
        return
    how = apply_move(plan)
    click.echo(_describe(plan, f"moved ({how})"))


if __name__ == "__main__":
    sys.exit(mv())
