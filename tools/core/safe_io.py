"""Safe reads: the tool reads only regular files whose real path lies inside the book root, and only so many bytes.

A symbolic link that leads out of the root, a FIFO (opening it blocks until a writer comes), a socket, a device, a
link loop or a file larger than its limit is refused with a sentence saying what it is; nothing is read from it.
Callers turn the refusal into a diagnostic at the file and line that named the file, or into an exit-2 error.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB
CHAPTER_LIMIT = 32 * MIB  # a markdown chapter; the largest chapter of a real book is well under 1 MiB
CONFIG_LIMIT = 1 * MIB  # book.toml, the chapter list
ASSET_LIMIT = 256 * MIB  # an image, a stylesheet, a copied script or data file, the cover


class UnsafeFile(Exception):
    """A file the tool will not read; `reason` completes the sentence "'<path>' ..."."""

    def __init__(self, path: str, reason: str, suggestion: str = ""):
        super().__init__(f"'{path}' {reason}")
        self.path = path
        self.reason = reason
        self.suggestion = suggestion


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO (named pipe)", "a socket", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // KIB} KiB" if limit >= KIB else f"{limit} bytes"


def is_inside(path: Path | str, root: Path | str) -> bool:
    """Whether `path` (already resolved) is `root` (already resolved) or lies below it."""
    path, root = str(path), str(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def real_path(path: Path | str) -> str:
    """`path` with every symbolic link resolved; a loop raises UnsafeFile instead of looping."""
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError as exc:
        raise UnsafeFile(str(path), "does not exist") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(str(path), "is a symbolic link loop", "Point the link at a real file.") from exc
        raise UnsafeFile(str(path), f"cannot be read ({exc.strerror})") from exc


def check_regular(path: Path | str, root: Path | str | None = None, limit: int | None = None, shown: str | None = None) -> str:
    """The real path of `path` after checking that it is a regular file inside `root` and at most `limit` bytes.

    Raises UnsafeFile (with `shown`, e.g. the path relative to the root, as the file's name) otherwise.
    """
    shown = shown if shown is not None else str(path)
    try:
        real = real_path(path)
    except UnsafeFile as exc:
        raise UnsafeFile(shown, exc.reason, exc.suggestion) from None
    if root is not None:
        real_root = os.path.realpath(root)
        if not is_inside(real, real_root):
            raise UnsafeFile(shown, f"leads outside the book's root folder (to '{real}'); it is not read", "Copy the file into the book instead of linking to it.")
    try:
        info = os.stat(real)
    except OSError as exc:
        raise UnsafeFile(shown, f"cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(shown, f"is {kind_of(info.st_mode)}, not a regular file; it is not read")
    if limit is not None and info.st_size > limit:
        raise UnsafeFile(shown, f"is larger than {_size(limit)} ({info.st_size:,} bytes), the limit for such a file; it is not read", "Split it or shrink it.")
    return real


def read_bytes(path: Path | str, root: Path | str | None = None, limit: int = CHAPTER_LIMIT, shown: str | None = None) -> bytes:
    """The bytes of a regular file inside `root` (when given), at most `limit` of them, or UnsafeFile.

    Opened without blocking and checked again on the open descriptor, so a file swapped for a FIFO between the check
    and the open is still refused rather than waited on.
    """
    shown = shown if shown is not None else str(path)
    real = check_regular(path, root, limit, shown)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise UnsafeFile(shown, f"cannot be read ({exc.strerror})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(shown, f"is {kind_of(info.st_mode)}, not a regular file; it is not read")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(4 * MIB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFile(shown, f"is larger than {_size(limit)}, the limit for such a file; it is not read", "Split it or shrink it.")
        return b"".join(chunks)
    except OSError as exc:
        raise UnsafeFile(shown, f"cannot be read ({exc.strerror})") from exc
    finally:
        os.close(fd)


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text (a BOM is dropped, CRLF and CR become LF), or UnsafeFile naming the line of the first bad byte."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnsafeFile(f"{shown}:{line}", f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line})", "Save the file as UTF-8.") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(path: Path | str, root: Path | str | None = None, limit: int = CONFIG_LIMIT, shown: str | None = None) -> str:
    shown = shown if shown is not None else str(path)
    return decode_text(read_bytes(path, root, limit, shown), shown)


def walk(top: Path | str, onerror=None):
    """`os.walk(top)` (top-down, symbolic links to folders not followed, `dirs` prunable in place) without recursion:
    on Python 3.11 `os.walk` recurses once per level, so a hostile tree a thousand folders deep would end the command
    with a RecursionError."""
    stack = [os.fspath(top)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                dirs: list[str] = []
                files: list[str] = []
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield current, dirs, files
        stack.extend(os.path.join(current, name) for name in reversed(dirs))
