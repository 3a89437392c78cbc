"""The `[redirects]` part of a move: book.toml's table updated in the same all-or-nothing write as the links, so
every old URL of the published site still leads to its page (tools/book/redirects.py holds the rules)."""
from __future__ import annotations

import posixpath

from tools.book.config import BookConfig
from tools.book.redirects import after_move, edit_table
from tools.book.resolve import MARKDOWN_SUFFIXES
from tools.core.errors import BookError
from tools.core.safe_io import CONFIG_LIMIT, UnsafeFile, read_bytes
from tools.edit.move_paths import MoveError


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _listed_under(config: BookConfig, src: str) -> set[str]:
    """The chapter list's entries under `src`, read as `plan_chapter_list` reads them: after a move by hand
    (`mv-links`) they name files that are no longer there, which the book's own reading of the list leaves out."""
    if not config.chapters:
        return set()
    try:
        text = read_bytes(config.chapter_list, config.root, CONFIG_LIMIT, shown=config.chapters).decode("utf-8-sig")
    except (UnsafeFile, UnicodeDecodeError):
        return set()  # plan_chapter_list refuses the move with the reason
    entries = (posixpath.normpath(line.strip().lstrip("/")) for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
    return {entry for entry in entries if _under(entry, src) and entry.lower().endswith(MARKDOWN_SUFFIXES)}


def plan_redirects(config: BookConfig, src: str, dst: str, chapters, moved_files: list[tuple[str, str]], notes: list[str]) -> tuple[str, str, str, bool] | None:
    """book.toml's change for moving `src` to `dst`: (name, text before, text after, whether it starts with a BOM),
    or None when the table stays as it is.

    `chapters`: the chapters before the move. A book without book.toml gets a note, not a new file: a config file
    that appears by itself would surprise the author more than the missing redirect, which the note explains.
    """
    moved_chapters = sorted({c for c in chapters if _under(c, src)} | _listed_under(config, src))
    new = after_move(config.redirects, src, dst, moved_chapters, [after for _, after in moved_files])
    if new == config.redirects:
        return None
    if config.config_file is None:
        notes.append(f"the book has no book.toml, so no redirect from the old URL of {src} was recorded; create one (it may be empty) and moves will add a [redirects] table to it.")
        return None
    name = config.config_file.name
    try:
        data = read_bytes(config.config_file, config.root, CONFIG_LIMIT, shown=name)
        text = data.decode("utf-8-sig")
    except (UnsafeFile, UnicodeDecodeError) as exc:
        raise MoveError(f"{name}: {exc}; its [redirects] table must be updated by the move, so nothing was changed.") from None
    try:
        after = edit_table(text, config.redirects, new, name)
    except BookError as exc:
        raise MoveError(f"{exc.message} Nothing was changed.") from None
    return name, text, after, data.startswith(b"\xef\xbb\xbf")
