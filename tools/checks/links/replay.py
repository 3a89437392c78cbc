"""`tools check-links` replayed: a run whose every input is unchanged prints what the last such run printed, before
click, the parser or the link model is imported (tools/__main__.py calls `replay` first when run as the command).

What a run depends on is recorded before it reads anything (`snapshot`): the stat (size, mtime, ctime, inode,
device, mode) of every file and folder under the book's root that the file index could see (a folder's times change
when an entry appears, disappears or is renamed in it; folders the index skips by name are left out, those skipped
by their `.tools-output` marker are kept with their own stat), of the files that choose the default
`--book`, of the tool's own files, of the libraries' `__init__.py` (their versions) and of `sys.path`'s folders but
the current one (a package installed beside them).
The entry's key is the command line, the current folder, the interpreter, the terminal and the environment the
output depends on. A replay re-takes the snapshot and uses the entry only when it is equal; any difference, an
unreadable, truncated or unsigned entry, a signal, or any error falls back to the full run. Nothing here imports
beyond the standard library and `cache_signing`/`source_names`.

A file changed within `RACY_NS` of the snapshot might keep its stat through a second change in the same clock tick
(git's "racily clean" entries): such a run stores nothing, and the next one does.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable

NAMESPACE = "check-links"
VERSION = "check-links-replay-1"
MAGIC = b"mlbook-replay-1\n"
RACY_NS = 1_000_000_000  # a stat younger than this (a second) could hide a change made in the same tick
MAX_ENTRIES = 50_000  # a folder this big is no book (`--book ~`): store nothing rather than walk it twice
ENTRY_LIMIT = 256 * 1024 * 1024
SENTINELS = (987654321.125, 123456789.375)  # stand-ins for the run's own seconds, replaced at replay
ENV_PREFIXES = ("TOOLS_", "BOOK_", "GITHUB_", "LC_", "PYTHON")
ENV_NAMES = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "LANG", "HOME", "XDG_CACHE_HOME", "CI")
LIBRARIES = ("markdown_it", "mdit_py_plugins", "mdurl", "yaml", "emoji", "latex2mathml", "click")  # what the findings depend on
PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/, all of it


def _stamp(path: str, follow: bool = True):
    try:
        s = os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return ["error", exc.errno]
    return [s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev]


def _walk(top: str, names: frozenset, skipped: Callable[[str], bool], stamps: dict, prefix: str) -> bool:
    """Stamp `top` and everything under it as the file index sees it (`names`: folders left out, `skipped`: folders
    stamped but not entered); False when it is too big to be worth it."""
    stack = [""]
    stamps[prefix] = _stamp(top)
    while stack:
        relative = stack.pop()
        folder = os.path.join(top, relative) if relative else top
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = prefix + (relative + "/" if relative else "") + entry.name
                    try:
                        link = entry.is_symlink()
                        is_dir = not link and entry.is_dir(follow_symlinks=False)
                    except OSError:
                        link = is_dir = False
                    if is_dir and entry.name in names:
                        continue
                    stamp = _stamp(entry.path, follow=False)
                    stamps[name] = [stamp, _stamp(entry.path)] if link else stamp
                    if is_dir and not skipped(entry.path):  # a site the tool built: its own stat only
                        stack.append((relative + "/" if relative else "") + entry.name)
                    if len(stamps) > MAX_ENTRIES:
                        return False
        except OSError as exc:
            stamps[prefix + relative + "/?"] = ["unreadable", exc.errno]
    return True


def _libraries() -> list[str]:
    from importlib.util import find_spec

    origins = []
    for name in LIBRARIES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origins.append(spec.origin if spec is not None and spec.origin else f"missing:{name}")
    return origins


def _take(book: str, libraries: list[str]) -> dict | None:
    """Every stat the result depends on (see the module's docstring), or None when there are too many."""
    from tools.core.source_names import SKIPPED_DIRS, skipped_folder

    root = os.path.realpath(book)  # `--book` through a symbolic link that now points elsewhere is another book
    stamps: dict = {"root": root}
    cwd = os.getcwd()  # the default --book: ./chapters when it has a chapter list or book.toml, else the current folder
    marks = [os.path.join(cwd, folder, name) for folder in ("chapters", "") for name in ("book.toml", "chapters-md.txt")]
    folders = [p for p in sys.path if p and os.path.abspath(p) != cwd]  # `-m` puts the current folder first: any new file would count
    for extra in (*marks, *folders, *libraries):
        stamps["extra:" + extra] = _stamp(extra)
    if not _walk(PACKAGE, frozenset({"__pycache__"}), lambda path: False, stamps, "tool:") or not _walk(root, SKIPPED_DIRS, skipped_folder, stamps, "book:"):
        return None
    return stamps


def _key(argv: list[str]) -> str:
    streams = [(s.isatty(), s.encoding, s.errors) if s is not None else None for s in (sys.stdout, sys.stderr)]
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES)
    parts = [VERSION, argv, os.getcwd(), sys.executable, sys.version, sys.path, streams, env]
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogateescape")).hexdigest()


def cache_directory(argv: list[str]) -> str | None:
    """Where check-links keeps parsed chapters for this command line (`--cache-dir X`: X/parsed, else the build
    cache), or None with `--no-cache`. A misread command line only misses: the entry's key is the whole line."""
    directory = None
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word == "--no-cache":
            return None
        if word == "--cache-dir" and index + 1 < len(argv):
            directory = os.path.join(argv[index + 1], "parsed")
        elif word.startswith("--cache-dir="):
            directory = os.path.join(word.split("=", 1)[1], "parsed")
    return directory or os.environ.get("BOOK_CACHE_DIR") or os.path.join(os.getcwd(), ".cache", "build")


def _entry_path(directory: str, key: str) -> str:
    return os.path.join(directory, NAMESPACE, key[:2], key)


class Snapshot:
    """The inputs of one run, taken before it reads any of them; `store` saves the run's result under them."""

    def __init__(self, book: str, directory: str):
        self.argv = sys.argv[1:]
        self.directory = directory
        self.started = time.time_ns()
        self.book = os.path.abspath(book)
        self.libraries = _libraries()
        self.stamps = _take(self.book, self.libraries)

    def store(self, render, code: int) -> bool:
        """Save `render(seconds) -> (stdout, stderr)` and the exit code, when no input is racily new."""
        if self.stamps is None or any(_too_new(stamp, self.started) for stamp in self.stamps.values()):
            return False
        texts = [render(seconds) for seconds in SENTINELS]
        (out_a, err_a), (out_b, err_b) = texts
        (json_a, line_a), (json_b, line_b) = (_shown(seconds) for seconds in SENTINELS)
        if out_a.replace(json_a, json_b) != out_b or err_a.replace(line_a, line_b) != err_b:
            return False  # the seconds are not where the replay would put them: store nothing
        entry = {"version": VERSION, "book": self.book, "libraries": self.libraries, "stamps": self.stamps,
                 "stdout": out_a, "stderr": err_a, "code": code}
        return _write(self.directory, _key(self.argv), json.dumps(entry, ensure_ascii=False).encode("utf-8", "surrogateescape"))


def _too_new(stamp, started: int) -> bool:
    if stamp and isinstance(stamp[0], list):  # a symbolic link: its own stat and its target's
        return any(_too_new(part, started) for part in stamp)
    return isinstance(stamp, list) and len(stamp) == 6 and max(stamp[2], stamp[3]) >= started - RACY_NS


def _shown(seconds: float) -> tuple[str, str]:
    """How the run's seconds appear: in the JSON report (`summary.seconds`) and in the summary line."""
    return json.dumps(seconds), f" in {seconds:.2f}s"


def _write(directory: str, key: str, payload: bytes) -> bool:
    from tools.core.atomic import replace_bytes
    from tools.core.cache_signing import signature

    path = _entry_path(directory, key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        replace_bytes(path, MAGIC + signature(NAMESPACE, key, payload) + payload, prefix=".tmp-")
    except OSError:
        return False  # a cache that cannot be written only costs time
    return True


def _read(directory: str, key: str) -> dict | None:
    import hmac
    import stat

    from tools.core.cache_signing import signature

    try:
        fd = os.open(_entry_path(directory, key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > ENTRY_LIMIT:
            return None
        data = handle.read()
    head = len(MAGIC) + 32
    if data[: len(MAGIC)] != MAGIC or not hmac.compare_digest(data[len(MAGIC) : head], signature(NAMESPACE, key, data[head:])):
        return None
    entry = json.loads(data[head:].decode("utf-8", "surrogateescape"))
    return entry if isinstance(entry, dict) and entry.get("version") == VERSION else None


def replay() -> None:
    """Print the stored result and exit when every input is as it was; return (to the full run) otherwise."""
    started = time.perf_counter()
    if sys.stdout is None or sys.stderr is None:
        return  # a closed standard stream: the full run says what it says about that
    try:
        argv = sys.argv[1:]
        directory = cache_directory(argv)
        entry = _read(directory, _key(argv)) if directory else None
        if entry is None or _take(entry["book"], entry["libraries"]) != entry["stamps"]:
            return
        seconds = round(time.perf_counter() - started, 3)
        (json_stored, line_stored), (json_now, line_now) = _shown(SENTINELS[0]), _shown(seconds)
        stdout = entry["stdout"].replace(json_stored, json_now)
        stderr = entry["stderr"].replace(line_stored, line_now)
        code = int(entry["code"])
    except Exception:  # noqa: BLE001 - a corrupt entry, a vanished folder: the full run decides
        return
    from tools.core import interrupt

    if interrupt.received() or interrupt.pending_signal():
        return  # the full run reports the signal as every command does
    try:
        sys.stdout.write(stdout)
        sys.stdout.flush()
        sys.stderr.write(stderr)
        sys.stderr.flush()
    except BrokenPipeError:
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
    except (OSError, ValueError):
        code = 1
    signum = interrupt.pending_signal()
    if signum:
        try:
            sys.stderr.write("Interrupted: tools check-links stopped.\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        code = interrupt.exit_code(signum)
    os._exit(code)
