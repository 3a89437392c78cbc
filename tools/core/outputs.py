"""Outputs never destroy what the tool did not write.

Before a build writes, `check_output` refuses (BookError, exit 2) an output that is empty, is the book root or holds
it, holds the current folder, lies inside a site the tool built (its next build would delete it), is a symbolic
link or sits in one, has no writable folder, or already exists as something the tool did not write: a folder is
replaced only when it carries the stamp file `.tools-output` or is empty, a PDF or an EPUB only when its metadata
names this tool, and any other file only when it is empty. `output_lock` keeps two builds from writing the same
output at once: the second one waits for the first with one line saying so (as cargo does), or with `--no-wait`
refuses at once with a sentence (exit 2); never are their files mixed. Ctrl-C while it waits ends it as anywhere else.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path

from tools import __version__
from tools.core.errors import BookError
from tools.core.interrupt import deferred
from tools.core.source_names import OUTPUT_STAMP

STAMP = OUTPUT_STAMP  # in every site folder the tool writes
TOOL = "mlbook-tools"
MARKS = (b"mlbook-tools", b"mlbook tools")  # the PDF's Creator (templates/print.html), the EPUB's generator
STAMP_LIMIT = 4096


def stamp_text(fmt: str = "html") -> str:
    return json.dumps({"tool": TOOL, "version": __version__, "format": fmt}) + "\n"


def write_stamp(folder: Path, fmt: str = "html") -> None:
    (folder / STAMP).write_text(stamp_text(fmt), encoding="utf-8")


def has_stamp(folder: Path | str) -> bool:
    """Whether `folder` holds a stamp this tool wrote (a small regular file naming the tool)."""
    path = os.path.join(folder, STAMP)
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size > STAMP_LIMIT:
            return False
        with open(path, "rb") as handle:
            return json.loads(handle.read(STAMP_LIMIT)).get("tool") == TOOL
    except (OSError, ValueError, AttributeError):
        return False


WHOLE_PARSE_LIMIT = 256 * 1024 * 1024  # a PDF that `pdf_info` cannot read is parsed whole by pypdf only below this size


def _pdf_by_tool(path: Path) -> bool:
    try:
        import pypdf

        from tools.core.pdf_info import document_info

        with open(path, "rb") as handle:
            if handle.read(5) != b"%PDF-":
                return False
            size = os.fstat(handle.fileno()).st_size
            info = document_info(handle, size)  # the /Info object alone
            if info is None:  # laid out in a way only a whole parse follows: pypdf's, from the open file (no copy)
                if size > WHOLE_PARSE_LIMIT:  # every PDF the tool writes is read above: this one is somebody else's
                    return False
                handle.seek(0)
                info = pypdf.PdfReader(handle, strict=False).metadata or pypdf.DocumentInformation()
            return any(str(info.get(key, "")).encode().startswith(MARKS) for key in ("/Creator", "/Producer"))
    except Exception:  # noqa: BLE001 - a file pypdf cannot read is not one the tool wrote
        return False


def _epub_by_tool(path: Path) -> bool:
    import zipfile  # only when an existing EPUB is about to be replaced: `--help` stays light

    try:
        with zipfile.ZipFile(path) as archive:
            for entry in archive.infolist():
                if entry.filename.endswith(".opf") and entry.file_size <= 4 * 1024 * 1024:
                    data = archive.read(entry)
                    return any(b'content="' + mark in data for mark in MARKS)
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return False
    return False


def written_by_tool(path: Path, fmt: str) -> bool:
    return _pdf_by_tool(path) if fmt == "pdf" else _epub_by_tool(path) if fmt == "epub" else False


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _nearest_existing(path: str) -> str:
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _refuse(shown: str, why: str, fix: str) -> BookError:
    return BookError(f"{shown}: {why}; {fix}.")


FILE_FORMATS = ("pdf", "epub")  # every other format writes a folder, stamped like the site


def check_output(out: Path | str, book_root: Path, fmt: str, source: str = "--out", within: Path | str | None = None, sites: tuple[str, ...] = ()) -> Path:
    """The absolute output path after the checks above; `fmt`: html or a package's format (a folder), pdf or epub
    (a file), or "all"
    (the folder that receives each format's output; it is never replaced itself). `within`: the site a
    translation's site belongs in (`html/` for `html/zh/`), which the rule against writing inside a site allows.
    Raises BookError."""
    raw = str(out)
    shown = f"{source} '{raw}'"
    if not raw.strip():
        raise _refuse(f"{source} ''", "the output path is empty (an unset shell variable?)", "give the folder or file to write, e.g. --out _build/html")
    absolute = os.path.abspath(raw)
    parent, name = os.path.split(absolute)
    if not name:
        raise _refuse(shown, "is the file system's root folder", "choose a folder of its own, e.g. --out _build")
    for link in (absolute, parent):
        if os.path.islink(link):
            raise _refuse(shown, f"'{link}' is a symbolic link (to '{os.path.realpath(link)}'); the tool does not write through links", "give the real path or another folder")
    real = os.path.join(os.path.realpath(parent), name)
    root = os.path.realpath(book_root)
    if _inside(root, real):
        what = "is the book's root folder" if real == root else f"holds the book's root folder '{root}'"
        raise _refuse(shown, f"{what}; building there would replace the book's sources", "choose a folder of its own, e.g. --out _build")
    if _inside(os.path.realpath(os.getcwd()), real):
        raise _refuse(shown, "is the current folder or holds it; building there would replace what it holds", "choose a folder of its own, e.g. --out _build")
    ancestor = os.path.dirname(real)
    allowed = os.path.realpath(within) if within is not None else None
    while ancestor != os.path.dirname(ancestor):
        if has_stamp(ancestor) and ancestor != allowed:
            raise _refuse(shown, f"lies inside '{ancestor}', a site the tool built; its next build would delete it", "choose a folder outside it")
        ancestor = os.path.dirname(ancestor)
    existing = _nearest_existing(os.path.dirname(real))
    if not os.path.isdir(existing):
        raise _refuse(shown, f"'{existing}' is a file, not a folder, so nothing can be written under it", "choose another path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise _refuse(shown, f"the folder '{existing}' {_unwritable(existing)}", "choose a folder you can write to")
    if os.path.lexists(real):
        _check_existing(real, shown, fmt, sites)
        if not os.path.islink(real) and not os.access(real, os.W_OK | (os.X_OK if os.path.isdir(real) else 0)):
            what = "folder" if os.path.isdir(real) else "file"
            raise _refuse(shown, f"the {what} '{real}' {_unwritable(real)}, so the build cannot replace it", f"make it writable (chmod {'-R ' if what == 'folder' else ''}u+w '{real}') or choose another path")
    return Path(real)


def _unwritable(path: str) -> str:
    """Why `path` is not writable, as far as can be told: a read-only file system, else its permissions (or, for
    root, which permissions do not stop, an immutable attribute: `lsattr`)."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "is on a read-only file system"
    except OSError:
        pass
    if os.geteuid() == 0:
        return "is not writable, even for root (immutable? see lsattr)"
    return "is not writable (its permissions)"


def _only_sites(folder: str, sites: tuple[str, ...]) -> bool:
    """Whether every entry of `folder` is a site the tool built under one of the names `sites` (the translations'
    folders) (or it is empty): where `build --lang zh` made `html/zh/` alone, the original's site may go; a folder
    holding other sites (`docs/mysite/`) is not the original's to replace."""
    names = {site.casefold() for site in sites}
    with os.scandir(folder) as entries:
        return all(entry.name.casefold() in names and entry.is_dir(follow_symlinks=False) and has_stamp(entry.path) for entry in entries)


def _check_existing(real: str, shown: str, fmt: str, sites: tuple[str, ...] = ()) -> None:
    info = os.stat(real, follow_symlinks=False)
    if fmt not in FILE_FORMATS:  # html, all, and the formats of installed packages, which write a folder
        if not stat.S_ISDIR(info.st_mode):
            what = "the site" if fmt in ("html", "all") else f"the {fmt} output"
            raise _refuse(shown, f"is an existing file, not a folder; {what} would replace it", f"choose a folder, e.g. --out _build/{'html' if fmt == 'all' else fmt}")
        if fmt != "all" and not has_stamp(real) and not _only_sites(real, sites):
            raise _refuse(shown, f"is a folder the tool did not make (it has no {STAMP} stamp; a site built by a version before the stamp has none either) and is not empty; the build would replace everything in it", "choose an empty or new folder, e.g. --out _build/html, or remove this one if it is an old site")
        return
    if stat.S_ISDIR(info.st_mode):
        raise _refuse(shown, f"is a folder; the {fmt.upper()} is a file", f"give a file name, e.g. --out {os.path.join(real, 'book.' + fmt)}")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, "is not a regular file (a FIFO, socket or device)", f"give a file name, e.g. --out _build/book.{fmt}")
    if info.st_size and not written_by_tool(Path(real), fmt):
        raise _refuse(shown, "is an existing file the tool did not write; the build would replace it", f"give a new file name, e.g. --out _build/book.{fmt}, or remove the file first")


def out_option(ctx, param, value):
    """click callback for --out: an empty value is refused (Path('') would mean the current folder)."""
    if value is None:
        return None
    if not str(value).strip():
        raise BookError("--out '': the output path is empty (an unset shell variable?); give the folder or file to write, e.g. --out _build/html.")
    return Path(value)


# --- one build at a time per output ------------------------------------------------------------------------------


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def _open_lock(target: Path, lock: Path) -> int:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise BookError(f"{target}: cannot write in '{target.parent}' ({exc.strerror}); choose a folder you can write to.") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BookError(f"{lock}: is not a regular file; remove it, it only guards '{target}' against two builds at once.")
    return fd


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it (`pid 123, tools serve`), or ''."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f" (held by {text})" if text and text.isprintable() else ""


def _note_holder(fd: int) -> None:
    """Write who holds the lock into it, for the message of a build that waits."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, tools {' '.join(sys.argv[1:2])}".encode(), 0)
    except OSError:
        pass


def _acquire(target: Path, wait: bool, say, held: list[tuple[int, Path]]) -> None:
    """Hold the lock beside `target` (added to `held`). Taken by another process: with `wait`, say so in one line and
    wait for it (outside any deferred section, so a signal ends the wait); else refuse at once."""
    import fcntl

    lock = _lock_path(target)
    told = False
    while True:
        with deferred():  # a signal between making the lock file and holding it would leave it behind
            fd = _open_lock(target, lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                free = True
            except BlockingIOError:
                free = False
            except BaseException:
                os.close(fd)
                raise
        if not free:
            if not wait:
                holder = _holder(fd)
                os.close(fd)
                raise BookError(f"{target}: another build is writing this output right now{holder}; run again without --no-wait to wait for it, or choose another --out.")
            try:
                if not told:
                    say(f"Blocking waiting for file lock on {target}: another build is writing it{_holder(fd)}.")
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C or SIGTERM raises here, and the command ends with 130 or 143
            except BaseException:
                os.close(fd)
                raise
        with deferred():
            try:  # the holder before us removes the file as it finishes: then lock the one that is there now
                same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                _note_holder(fd)
                held.append((fd, lock))
                return
            os.close(fd)


def _release(fd: int, lock: Path) -> None:
    try:
        os.unlink(lock)  # while still holding it, so no one else holds a removed file
    except OSError:
        pass
    os.close(fd)


def _missing_folders(folder: Path) -> list[Path]:
    """The folders from `folder` up that do not exist yet, deepest first."""
    missing = []
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextmanager
def output_lock(targets, wait: bool = True, say=_say):
    """Hold a lock beside every target (`.<name>.lock`, removed at the end) while the block writes them; one that
    another process holds is waited for (`wait`, with one line through `say`), else refused (BookError, exit 2)."""
    held: list[tuple[int, Path]] = []
    made = [folder for target in targets for folder in _missing_folders(Path(target).parent)]
    try:
        try:
            import fcntl  # noqa: F401 - no flock on this system: no lock
        except ImportError:
            yield
            return
        for target in targets:
            _acquire(Path(target), wait, say, held)
        yield
    finally:
        with deferred():
            for fd, lock in reversed(held):
                _release(fd, lock)
            for folder in made:  # folders made only to hold the lock, when nothing was written into them
                try:
                    os.rmdir(folder)
                except OSError:
                    pass
