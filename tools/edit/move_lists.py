"""The chapter lists a move updates: the book's own (`chapters-md.txt`) and each translation's own list, whose
entries are relative to the translation's folder. Each entry under a moved path is rewritten in place; blank lines,
comments and part lines are kept as written."""
from __future__ import annotations

import posixpath
from pathlib import Path

from tools.book.config import BookConfig
from tools.book.parts import is_chapter_line
from tools.core.safe_io import CONFIG_LIMIT, UnsafeFile, read_bytes
from tools.edit.move_paths import MoveError


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _remap(path: str, moves: list[tuple[str, str]]) -> str:
    for src, dst in moves:
        if _under(path, src):
            return dst + path[len(src) :]
    return path


def plan_list(root: Path, list_rel: str, moves: list[tuple[str, str]], base: str = "") -> tuple[str, str, bool] | None:
    """(text before, text after, whether it starts with a BOM) of the chapter list `list_rel` once `moves` ((src,
    dst) pairs relative to the root) are made, or None when it stays as it is. `base`: the folder its entries are
    relative to (a translation's folder; '' for the book's own list)."""
    if any(_under(list_rel, src) for src, _ in moves):
        raise MoveError(f"the move would take the chapter list {list_rel} along; move it separately.")
    cut = len(base) + 1 if base else 0
    entry_moves = [(src[cut:], dst[cut:]) for src, dst in moves if not base or (_under(src, base) and src != base and _under(dst, base))]
    if not entry_moves:
        return None
    try:
        data = read_bytes(root / list_rel, root, CONFIG_LIMIT, shown=list_rel)
        text = data.decode("utf-8-sig")
    except UnsafeFile as exc:
        raise MoveError(f"{exc}; the chapter list must be updated by the move, so nothing was changed.") from None
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
        raise MoveError(f"{list_rel}:{bad_line}: the chapter list is not valid UTF-8 (byte 0x{data[exc.start]:02x}); save it as UTF-8. Nothing was changed.") from None
    lines = text.splitlines(keepends=True)
    changed = False
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        entry = body.strip()
        if not is_chapter_line(entry):  # blank, a comment or a part line: kept as written
            continue
        path = posixpath.normpath(entry.lstrip("/"))
        new = _remap(path, entry_moves)
        if new == path:
            continue
        written = ("/" if entry.startswith("/") else "") + new
        start = body.index(entry)
        lines[number] = body[:start] + written + body[start + len(entry) :] + line[len(body) :]
        changed = True
    if not changed:
        return None
    return text, "".join(lines), data.startswith(b"\xef\xbb\xbf")


def translation_lists(config: BookConfig, moves: list[tuple[str, str]]) -> list[tuple[str, str, str, str, bool]]:
    """(list, folder, text before, text after, BOM) of each translation's own chapter list the moves change."""
    found = []
    for translation in config.translations.values():
        if translation.chapters and not any(_under(translation.folder, src) for src, _ in moves):  # a moved folder: a note says so
            planned = plan_list(config.root, translation.chapters, moves, translation.folder)
            if planned is not None:
                found.append((translation.chapters, translation.folder, *planned))
    return found
