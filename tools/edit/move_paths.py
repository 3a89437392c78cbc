"""What `tools mv` and `tools mv-links` refuse before planning anything: paths outside the book (also through a
symbolic link), the root itself, special files, a destination that exists, lies inside the source or is the book's
own chapter list or configuration. Each refusal is one sentence naming the path (exit 2)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from tools.book.config import BookConfig
from tools.core.errors import BookError
from tools.core.safe_io import is_inside, kind_of
from tools.core.source_names import SKIPPED_DIRS


class MoveError(BookError):
    pass


class WriteFailed(MoveError, OSError):
    """A write failed half-way and was rolled back: a sentence for the user (exit 2), and still an OSError."""

    def __init__(self, message: str) -> None:
        MoveError.__init__(self, message)

    def __str__(self) -> str:
        return self.message


def _real_root(config: BookConfig) -> str:
    return os.path.realpath(config.root)


def relative_to_root(config: BookConfig, given: str | Path, what: str) -> str:
    """`given` (relative to the current folder, or absolute) as a path relative to the book root, or MoveError."""
    if str(given).strip() == "":
        raise MoveError(f"{what} is empty; give the path of a file or folder of the book.")
    root = config.root.resolve()
    path = Path(given)
    full = Path(os.path.normpath(path if path.is_absolute() else Path.cwd() / path))
    try:
        rel = full.relative_to(root).as_posix()
    except ValueError:
        try:
            rel = full.resolve().relative_to(root).as_posix()
        except (ValueError, OSError, RuntimeError):
            raise MoveError(f"'{given}' is outside the book's root folder ({root}); only files of the book can be moved.") from None
    if rel in ("", "."):
        raise MoveError(f"{what} '{given}' is the book's root folder itself, which cannot be moved; give a file or folder inside it.")
    if any(part in SKIPPED_DIRS for part in rel.split("/")):
        raise MoveError(f"'{given}' is inside a folder the book ignores.")
    # A folder on the way that is a symbolic link would take the file out of the book (or bring one in).
    parent = os.path.realpath((root / rel).parent)
    if not is_inside(parent, _real_root(config)):
        raise MoveError(f"'{given}' leads outside the book's root folder (through a symbolic link, to '{parent}'); only files of the book can be moved.")
    return rel


def _special(path: Path) -> str:
    """'' for a regular file, a folder or a link inside the book; else what the path is."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return ""
    return kind_of(mode)


def check_move_paths(config: BookConfig, src_rel: str, dst_rel: str, src: str | Path, dst: str | Path, moved: bool) -> None:
    """Refuse a move that could lose or leak a file; nothing has been read or written yet."""
    root = config.root
    if src_rel == dst_rel:
        raise MoveError(f"the source and the destination are the same ('{src_rel}'); give a new path.")
    if dst_rel == src_rel + "/" or dst_rel.startswith(src_rel + "/"):
        raise MoveError(f"cannot move '{src_rel}' into itself ('{dst_rel}'); choose a destination outside it.")
    protected = {config.chapters or "chapters-md.txt", "book.toml"}
    if config.config_file is not None:
        protected.add(config.config_file.name)
    if dst_rel in protected:
        raise MoveError(f"'{dst}' is the book's {'configuration' if dst_rel.endswith('.toml') else 'chapter list'} path; moving a file there would replace it. Choose another name.")
    if not moved and src_rel in protected - {config.chapters}:
        raise MoveError(f"'{src}' is the book's configuration; it must stay at the root of the book.")
    on_disk = dst_rel if moved else src_rel
    kind = _special(root / on_disk)
    if kind:
        raise MoveError(f"'{dst if moved else src}' is {kind}, not a file or folder of the book; it is not moved.")
    link = root / on_disk
    if link.is_symlink():
        target = os.path.realpath(link)
        if not is_inside(target, _real_root(config)):
            raise MoveError(f"'{dst if moved else src}' is a symbolic link leading outside the book's root folder (to '{target}'); it is not moved.")


def translation_notes(config: BookConfig, src_rel: str, dst_rel: str) -> list[str]:
    """What `tools mv` leaves to the author in a book with translations (`[translations.<tag>]`): each translation's
    copy of SRC stays where it is, a translation's own chapter list keeps its entries, and a moved translation
    folder is still named by book.toml. Links inside the translations' folders are rewritten like any file's."""
    notes = []
    for language, translation in config.translations.items():
        folder = translation.folder
        if src_rel == folder or folder.startswith(src_rel + "/"):
            notes.append(f"book.toml: [translations.{language}] still says folder = \"{folder}\"; update it to the folder's new path.")
        elif src_rel.startswith(folder + "/"):
            if translation.chapters:
                notes.append(f"{translation.chapters}: the {language} translation's chapter list is not updated; rename its entry {src_rel[len(folder) + 1:]!r} by hand.")
        elif os.path.lexists(os.path.join(config.root, folder, src_rel)):
            moved = f"{folder}/{dst_rel}"
            notes.append(f"{folder}/{src_rel}, the {language} translation of {src_rel}, does not move with it; move it too: tools mv {folder}/{src_rel} {moved}")
    return notes
