"""Outputs appear whole or not at all: written beside their destination, then renamed into place."""
from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tools.core.interrupt import check, deferred, note_written
from tools.core.outputs import write_stamp
from tools.core.safe_io import walk


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publishable(path: Path) -> None:
    """mkstemp/mkdtemp make private files; outputs get the modes a plain open() or mkdir() would give."""
    mask = _umask()
    if path.is_dir():
        for current, _dirs, files in walk(path):
            os.chmod(current, 0o777 & ~mask)
            for name in files:
                os.chmod(os.path.join(current, name), 0o666 & ~mask)
    else:
        os.chmod(path, 0o666 & ~mask)


_STAGE: list[tuple] | None = None  # (publish, cleanup) of each output made inside `staged()`
_STAGED_DIRS: dict[Path, Path] = {}  # a folder output waiting in the stage -> its temporary folder


@contextmanager
def staged():
    """Outputs made inside the block are put in place together when it ends, or not at all: `tools build all`
    interrupted while writing the PDF leaves the site as it was too."""
    global _STAGE, _STAGED_DIRS
    outer, _STAGE = _STAGE, []
    outer_dirs, _STAGED_DIRS = _STAGED_DIRS, {}
    stage = _STAGE
    try:
        yield
        with deferred():
            check()
            for publish, _ in stage:
                publish()
    finally:
        _STAGE, _STAGED_DIRS = outer, outer_dirs
        with deferred():  # a signal landing here would leave the rest of the copies behind
            for _, cleanup in stage:
                cleanup()


@contextmanager
def private_folder(prefix: str):
    """A new private folder in the system temp folder, removed when the block ends however it ends. Making and
    removing it hold signals back: a Ctrl-C that lands while it is made or emptied never leaves it behind."""
    folder = None
    try:
        with deferred():  # a signal held here is raised as the section ends: the folder is known by then
            folder = Path(tempfile.mkdtemp(prefix=prefix))
        yield folder
    finally:
        if folder is not None:
            with deferred():
                shutil.rmtree(folder, ignore_errors=True)


def _publish(publish, cleanup) -> bool:
    """Put an output in place now, or at the end of the stage; True: the caller must keep its temporary copy."""
    if _STAGE is not None:
        _STAGE.append((publish, cleanup))
        return True
    with deferred():
        check()  # a stop asked for while writing, even if something swallowed its exception
        publish()
    return False


def _remove_tree(path: Path) -> None:
    """Remove a folder the tool made (a temporary output, the old output it replaced), also where the author made a
    subfolder read-only: its parent is made writable and the removal tried again; what still resists stays."""

    def retry(function, name, _exc) -> None:
        try:
            parent = os.path.dirname(name)
            os.chmod(parent, os.stat(parent).st_mode | 0o700)
            function(name)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


_WRITING = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO})


def _named(exc: OSError, destination: Path, *temporary: Path | None) -> OSError:
    """`exc` naming the output instead of the temporary file or folder beside it where the write failed (or naming
    it at all: a full disk fails a write() that names no file), so the command says which output it could not write."""
    names = [str(temp) for temp in temporary if temp is not None]
    if any(str(exc.filename or "").startswith(name) for name in names) or (exc.filename is None and exc.errno in _WRITING):
        return OSError(exc.errno, exc.strerror, str(destination))
    return exc


def _replace_file(temp: Path, destination: Path) -> None:
    os.replace(temp, destination)
    note_written(destination)


def replace_bytes(path: Path | str, data: bytes, prefix: str, suffix: str = "", mode: int | None = None) -> None:
    """`data` in place of the file `path` (its folder exists) through a temporary sibling renamed over it, with
    `mode` if given: a reader sees the old bytes or the new ones. The sibling is made and named with signals held, so
    an interrupt or a failure at any point leaves none behind (the cache's entries, mv's new texts)."""
    path = Path(path)
    temp = None
    try:
        with deferred():  # a stop asked for meanwhile comes after, and finds the file below
            fd, temp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        if temp is not None:
            with deferred():
                Path(temp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_file(destination: Path):
    """Yield a temporary path in the destination's folder; on success it replaces the destination."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    temp_path = None
    try:
        with deferred():  # a signal between making the file and naming it here would leave it behind
            fd, temp = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
            os.close(fd)
            temp_path = Path(temp)
        # The new file keeps the mode of the one it replaces, or gets what open() would give; the caller may change it.
        os.chmod(temp_path, destination.stat().st_mode & 0o7777 if destination.exists() else 0o666 & ~_umask())
        yield temp_path
        written = temp_path
        if _publish(lambda: _replace_file(written, destination), lambda: written.unlink(missing_ok=True)):
            temp_path = None  # the stage puts it in place, or removes it
    except OSError as exc:
        raise _named(exc, destination, temp_path) from None
    finally:
        if temp_path is not None:
            with deferred():
                temp_path.unlink(missing_ok=True)


@contextmanager
def atomic_dir(destination: Path, fmt: str = "html", keep: tuple[str, ...] = ()):
    """Yield a fresh temporary folder; on success it replaces the destination folder. The new folder carries the
    stamp that lets a later build replace it (tools/core/outputs.py); callers check the destination first. `keep`: the
    old folder's subfolders of those names go on in the new one unless it has its own (a translation's site inside
    the original's). A folder whose parent waits in the stage is made inside that parent's new folder."""
    holder = _STAGED_DIRS.get(destination.parent) if _STAGE is not None else None
    if holder is not None:
        inner = holder / destination.name
        if inner.is_dir() and not inner.is_symlink():
            shutil.rmtree(inner)
        inner.mkdir()
        yield inner
        write_stamp(inner, fmt)
        _publishable(inner)
        return  # it is put in place with the folder that holds it
    destination.parent.mkdir(parents=True, exist_ok=True)
    temp = None
    try:
        with deferred():
            temp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent))
        yield temp
        write_stamp(temp, fmt)
        _publishable(temp)
        made = temp
        if _publish(lambda: _swap(made, destination, keep), lambda: _remove_tree(made)):
            _STAGED_DIRS[destination] = made
            temp = None
    except OSError as exc:
        raise _named(exc, destination, temp) from None
    finally:
        if temp is not None and temp.exists():
            with deferred():  # removed whole, even when the stop is asked for meanwhile
                _remove_tree(temp)


def _swap(temp: Path, destination: Path, keep: tuple[str, ...] = ()) -> None:
    """Move the old folder aside, the new one in, and remove the old one; called with signals held back."""
    old = None
    for name in keep:
        kept = destination / name
        if kept.is_dir() and not kept.is_symlink() and not os.path.lexists(temp / name):
            os.replace(kept, temp / name)
    if os.path.lexists(destination):
        old = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".old", dir=destination.parent))
        try:
            os.replace(destination, old / "site")
        except OSError:
            old.rmdir()  # the old output stays where it was
            raise
    try:
        os.replace(temp, destination)
    except OSError:
        if old is not None and not os.path.lexists(destination):
            os.replace(old / "site", destination)  # the last good output goes back in place
            _remove_tree(old)
        raise
    note_written(destination)
    if old is not None:
        _remove_tree(old)


def build_time() -> dt.datetime:
    """Now in UTC, or `SOURCE_DATE_EPOCH` when set, so that two builds of one revision can be identical."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC)
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def readable(path: Path) -> None:
    """Give a finished output the permissions of an ordinary new file (the umask's): the temporary file it was
    written to was created private (0600) by `tempfile.mkstemp`, and renaming keeps that mode."""
    umask = os.umask(0)
    os.umask(umask)
    path.chmod(0o666 & ~umask)
