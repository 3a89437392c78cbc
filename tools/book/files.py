"""The book's files as the file index knows them: every regular file and folder under the root, walked once, with
what the walk refuses (links leaving the root, FIFOs, devices) and why. The folders no walk over a book enters
(`skipped_folder`, tools/core/source_names.py) are decided in one place for every reader."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from tools.core import safe_io
from tools.core.errors import BookError
from tools.core.source_names import skipped_folder


def _refusal(path: Path, real_root: str, folder: bool = False) -> str:
    """Why the walk will not index `path` ('' when it may): only regular files (and folders) whose real path lies
    inside the root are read; `os.lstat` settles a plain file without resolving its parents, which the walk entered."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISREG(mode) or (folder and stat.S_ISDIR(mode)):
        return ""
    try:
        real = safe_io.real_path(path)
    except safe_io.UnsafeFile as exc:
        return exc.reason
    if not safe_io.is_inside(real, real_root):
        return f"is a symbolic link that leaves the book's root (to '{real}'); it is not read"
    if folder:
        return ""
    try:
        safe_io.check_regular(real)
    except safe_io.UnsafeFile as exc:
        return exc.reason
    return ""


MAX_ENTRIES = 200_000  # files and folders under a book root; real books have hundreds


def scan_files(root: Path, output: Path | None, refused: dict[str, str] | None = None) -> tuple[set[str], set[str]]:
    """The regular files and the folders under the root (relative posix paths). Whatever else the walk meets (a
    symbolic link leading out of the root or into a loop, a FIFO, a socket, a device) is left out of both and, when
    `refused` is given, recorded there with the reason, so that a link to it says what it is, not "missing"."""
    files: set[str] = set()
    dirs: set[str] = set()
    refused = refused if refused is not None else {}
    real_root = os.path.realpath(root)
    skip_output = os.path.realpath(output) if output else None
    for current, subdirs, names in safe_io.walk(root):
        if len(files) + len(dirs) + len(refused) > MAX_ENTRIES:  # `--book /` or `--book ~`: no book is that big
            raise BookError(f"{root}: the book's folder holds more than {MAX_ENTRIES:,} files and folders; is --book the folder of the book (the one with its chapter list)?")
        here = Path(current)
        keep = []
        for name in sorted(subdirs):
            full = here / name
            rel = full.relative_to(root).as_posix()
            # The walk enters no link, so a folder's real path is the root's plus its own (no realpath per level).
            if skipped_folder(str(full)) or (skip_output and os.path.join(real_root, rel) == skip_output):
                continue
            problem = _refusal(full, real_root, folder=True)
            if problem:
                refused[rel] = problem
                continue
            keep.append(name)
            dirs.add(rel)
        subdirs[:] = keep
        for name in names:
            rel = (here / name).relative_to(root).as_posix()
            problem = _refusal(here / name, real_root)
            if problem:
                refused[rel] = problem
            else:
                files.add(rel)
    return files, dirs

