"""Carrying out a move plan: all of it or nothing.

Before anything is written, every file to rewrite must still hold the bytes it was planned from, be a regular file
(not a link) that its owner may write, in a folder where a temporary file can be made; for `tools mv`, the folders
the move renames out of and into must be writable too. Then the files move and every rewritten file is staged as a
temporary sibling and renamed over the old one. If anything still fails half-way, what was already done is undone
(the original bytes written back, the files moved back, the folders made removed) and one sentence names the file.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from tools.core.atomic import replace_bytes
from tools.core.git import is_tracked, run_git
from tools.core.interrupt import deferred
from tools.core.safe_io import CHAPTER_LIMIT, UnsafeFile, read_bytes
from tools.edit.move_paths import MoveError, WriteFailed


def encoded(text: str, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def writable(path: Path, folder: bool = False) -> bool:
    """Whether `path` may be written: by permission, and by its mode (read-only bits are honoured even for root)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return os.access(path, os.W_OK | (os.X_OK if folder else 0)) and bool(mode & stat.S_IWUSR)


def _writable_folder(folder: Path, shown: str) -> None:
    if not writable(folder, folder=True):
        raise MoveError(f"{shown}: the folder '{folder.name or folder}' is read-only, so the file cannot be rewritten there; make it writable (chmod u+w) and run the command again. Nothing was changed.")


def _check_file(root: Path, rel_on_disk: str, shown: str) -> None:
    path = root / rel_on_disk
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise MoveError(f"{shown}: cannot be read ({exc.strerror}); nothing was changed.") from None
    if stat.S_ISLNK(info.st_mode):
        raise MoveError(f"{shown}: is a symbolic link; its links would be written into a copy that replaces the link. Rewrite the file it points to instead. Nothing was changed.")
    if not stat.S_ISREG(info.st_mode):
        raise MoveError(f"{shown}: is not a regular file; nothing was changed.")
    if not writable(path):
        raise MoveError(f"{shown}: the file is read-only, and its links must change; make it writable (chmod u+w) or move it too. Nothing was changed.")
    _writable_folder(path.parent, shown)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def preflight(plan, moving: bool) -> None:
    """Raise MoveError, having changed nothing, if any part of `plan` cannot be carried out."""
    root = plan.root
    changes = plan.files
    for change in changes:
        on_disk = change.old_path if moving else change.new_path
        _check_file(root, on_disk, on_disk)
    if not moving:
        return
    source = root / plan.src
    _writable_folder(source.parent, plan.src)
    if plan.is_dir and os.path.dirname(plan.src) != os.path.dirname(plan.dst) and not writable(source, folder=True):
        raise MoveError(f"{plan.src}: the folder is read-only, so it cannot move to another folder; make it writable (chmod u+w). Nothing was changed.")
    target_parent = (root / plan.dst).parent
    existing = _nearest_existing(target_parent)
    if not existing.is_dir():
        raise MoveError(f"{plan.dst}: '{existing.relative_to(root).as_posix()}' is a file, so the folder for the destination cannot be created. Nothing was changed.")
    if not writable(existing, folder=True):
        raise MoveError(f"{plan.dst}: the folder '{existing.relative_to(root).as_posix() or '.'}' is read-only, so the destination cannot be created there. Nothing was changed.")


def _replace_with(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary sibling, keeping the file's mode."""
    replace_bytes(path, data, prefix=f".{path.name}.", suffix=".tmp", mode=stat.S_IMODE(os.stat(path).st_mode))


def write_changes(plan) -> None:
    """Write every changed file, or none: temporary files first, then renames; a failure restores what was replaced."""
    root = plan.root
    changes = plan.files
    staged: list[tuple[Path, Path, bytes, str]] = []  # (temp, destination, previous bytes, shown)
    try:
        for change in changes:
            destination = root / change.new_path
            try:
                previous = read_bytes(destination, root, CHAPTER_LIMIT, shown=change.new_path)
            except UnsafeFile as exc:
                raise MoveError(f"{change.new_path}: {exc.reason}; nothing was changed.") from None
            if previous != encoded(change.before, change.bom):
                raise MoveError(f"{change.new_path}: the file changed while the move was planned; run the command again. Nothing was changed.")
            try:
                with deferred():  # staged as soon as it exists: the cleanup below finds it
                    fd, temp_name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
                    staged.append((Path(temp_name), destination, previous, change.new_path))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(encoded(change.after, change.bom))
                os.chmod(temp_name, stat.S_IMODE(os.stat(destination).st_mode))
            except OSError as exc:
                raise MoveError(f"{change.new_path}: could not be written ({exc.strerror or exc}); nothing was changed.") from None
    except BaseException:
        with deferred():
            for temp, _, _, _ in staged:
                temp.unlink(missing_ok=True)
        raise
    done: list[tuple[Path, bytes, str]] = []
    try:
        for temp, destination, previous, shown in staged:
            os.replace(temp, destination)
            done.append((destination, previous, shown))
    except BaseException as exc:
        failed = next((shown for temp, _, _, shown in staged if temp.exists()), "a file")
        with deferred():
            lost = _restore(done)
            for temp, _, _, _ in staged:
                temp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise WriteFailed(f"{failed}: could not be written ({exc.strerror or exc}); " + (f"could not restore {', '.join(lost)}." if lost else "every file was restored; nothing was changed.")) from None
        raise


def _restore(done: list[tuple[Path, bytes, str]]) -> list[str]:
    """Write back the original bytes of the files already replaced; the ones that could not be restored."""
    lost = []
    for destination, previous, shown in reversed(done):
        try:
            _replace_with(destination, previous)
        except OSError:
            lost.append(shown)
    return lost


def _make_parents(root: Path, rel: str) -> list[Path]:
    """Create the folders `rel` needs; the ones made, deepest last."""
    made: list[Path] = []
    missing = []
    folder = (root / rel).parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except OSError as exc:
            _remove_folders(made)
            raise MoveError(f"{rel}: the folder '{folder.relative_to(root).as_posix()}' cannot be created ({exc.strerror}); nothing was changed.") from None
        made.append(folder)
    return made


def _remove_folders(made: list[Path]) -> None:
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            pass


def move_files(root: Path, src: str, dst: str) -> tuple[str, list[Path]]:
    """Move `src` to `dst` (relative to `root`): `git mv` when git tracks it, a rename otherwise.

    Returns how, and the folders made for it (removed again by `undo_move`).
    """
    made = _make_parents(root, dst)
    how = "rename"
    try:
        if is_tracked(root, src):
            done = run_git(root, "mv", "--", src, dst)
            if not done.ok:
                raise MoveError(f"{src}: git mv failed: {done.stderr.strip()}; nothing was changed.")
            how = "git mv"
        else:
            os.rename(root / src, root / dst)
    except OSError as exc:
        _remove_folders(made)
        raise MoveError(f"{src}: could not be moved to '{dst}' ({exc.strerror or exc}); nothing was changed.") from None
    except BaseException:
        _remove_folders(made)
        raise
    return how, made


def undo_move(root: Path, src: str, dst: str, how: str, made: list[Path]) -> None:
    """Put the files moved from `src` to `dst` back."""
    (root / src).parent.mkdir(parents=True, exist_ok=True)
    if how == "git mv":
        run_git(root, "mv", "--", dst, src)
    if (root / dst).exists() or (root / dst).is_symlink():
        os.rename(root / dst, root / src)
    _remove_folders(made)


def _prune_empty(root: Path, rel: str) -> None:
    """Remove the folders a move left empty (git does not keep empty folders either)."""
    parts = rel.split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        try:
            (root / "/".join(parts[:depth])).rmdir()
        except OSError:
            break


def apply_move(plan) -> str:
    """Move the files, then write the link changes; on a failure, put the files back."""
    preflight(plan, moving=True)
    how, made = move_files(plan.root, plan.src, plan.dst)
    try:
        write_changes(plan)
    except BaseException:
        try:
            undo_move(plan.root, plan.src, plan.dst, how, made)
        except OSError as exc:
            raise MoveError(f"{plan.dst}: the link changes failed and the move could not be undone ({exc.strerror}); move it back to '{plan.src}' by hand.") from None
        raise
    _prune_empty(plan.root, plan.src)
    return how
