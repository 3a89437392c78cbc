"""The harness of the bad-input battery (tests/test_bad_input*.py): one small book per case in a temp folder,
marker files outside its root, the real CLI in a subprocess under a deadline, and the checks every case shares.

A `Bench` owns the temp folder of one case:

    tmp/book/          the book (the only place the tool may read sources from)
    tmp/work/          the command's current folder, holding a user file the tool must never touch
    tmp/out/           where outputs go
    tmp/secret.*       files outside the root, each holding a marker string unique to the case
    tmp/tmpdir/        the command's private TMPDIR: it must be empty when the command ends
    tmp/cache/, tmp/links-cache/  the build and link caches (BOOK_CACHE_DIR, TOOLS_LINKS_CACHE_DIR)

`Bench.expect(...)` runs a command and checks, each with a label that says which check failed and the output:
HANG (no end before the deadline), TRACEBACK, EXIT (code not in the expected set), MESSAGE (the file or file:line
not named), LEAK (a marker in an output, a PDF's text, an EPUB member, a cache or the command's output), LOSS
(a file changed that had to stay byte-identical: sources, previous outputs, the user's files), LEFTOVER
(temporary files, TMPDIR entries).
"""
from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import struct
import subprocess
import sys
import time
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from bad_input_cases_readers import _squash, epub_members, pdf_image_sizes, pdf_text
from pdf_check import qpdf_problems
from tools.core.safe_io import walk

REPO = Path(__file__).resolve().parent.parent
DEADLINE = 30.0  # seconds a command may take before it counts as a hang (a good run of a tiny book takes < 5 s)
SECRET_SIZE = (7, 5)  # the outside PNG's size: an image of this size in a PDF is the outside image
PASSWD_LINE = "root:x:0:0:"
MAX_SHOWN = 3000  # characters of a command's output shown in a failure


def _png(width: int, height: int, text: str) -> bytes:
    """A valid PNG of one colour with `text` in a tEXt chunk, so that a byte copy of it carries the marker."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xcc\x22\x22" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"tEXt", b"Comment\x00" + text.encode()) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@dataclass
class Result:
    args: list[str]
    rc: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    took: float
    peak_rss: int = 0  # bytes, when measured

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def shown(self) -> str:
        text = self.output
        if len(text) > MAX_SHOWN:
            text = text[: MAX_SHOWN // 2] + f"\n[... {len(text) - MAX_SHOWN} characters left out ...]\n" + text[-MAX_SHOWN // 2:]
        return f"$ tools {' '.join(self.args)}\n(exit {self.rc}, {self.took:.1f}s)\n{text}"


def snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple]:
    """Every entry under `root` (symlinks not followed, special files never opened): kind and content hash."""
    found: dict[str, tuple] = {}
    skipped = {str(p) for p in skip}
    for current, dirs, files in walk(root):  # not os.walk: it recurses per level (the deep-tree cases)
        dirs[:] = [d for d in dirs if os.path.join(current, d) not in skipped]
        for name in dirs + files:
            path = os.path.join(current, name)
            if path in skipped:
                continue
            rel = os.path.relpath(path, root)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", stat.S_IMODE(info.st_mode))
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256()
                try:
                    with open(path, "rb") as handle:
                        for block in iter(lambda: handle.read(1 << 20), b""):
                            digest.update(block)
                except OSError as exc:
                    digest.update(repr(exc).encode())
                found[rel] = ("file", digest.hexdigest(), stat.S_IMODE(info.st_mode))
            else:
                found[rel] = ("special", stat.S_IFMT(info.st_mode))
    return found


def _is_under(rel: str, prefixes: tuple[str, ...]) -> bool:
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in prefixes)


class Bench:
    """One case's temp folder, its marker files, the CLI runner and the shared checks."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.book = tmp_path / "book"
        self.work = tmp_path / "work"
        self.out = tmp_path / "out"
        self.tmpdir = tmp_path / "tmpdir"
        self.cache = tmp_path / "cache"
        self.links_cache = tmp_path / "links-cache"
        self.marker = "SECRETMARKER" + uuid.uuid4().hex
        self.forbidden = [self.marker, PASSWD_LINE]  # the outside files' marker, and /etc/passwd's first line
        for folder in (self.book, self.work, self.tmpdir, self.cache, self.links_cache):
            folder.mkdir(parents=True, exist_ok=True)
        (self.work / "notes.txt").write_text("the user's own notes, which no command may touch\n", encoding="utf-8")
        self.secrets = {
            "secret.md": f"# Secret chapter\n\n{self.marker}\n".encode(),
            "secret.txt": f"{self.marker}\n".encode(),
            "secret.css": f"body::after {{ content: '{self.marker}'; }}\n".encode(),
            "secret.svg": f'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="0" y="20">{self.marker}</text></svg>\n'.encode(),
            "secret.png": _png(*SECRET_SIZE, self.marker),
            "secret.py": f"#!/usr/bin/env python3\nprint('{self.marker}')\n".encode(),
            "secret_dir/inner.md": f"# Inner secret\n\n{self.marker}\n".encode(),
        }
        for rel, data in self.secrets.items():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(data)
        self._immutable: list[Path] = []
        self._processes: list[subprocess.Popen] = []
        self._deep: list[Path] = []

    # ---- building the book -------------------------------------------------------------------------------------

    def write(self, files: dict[str, str | bytes], chapters: list[str] | None = None) -> Path:
        """Write `files` under the book; a chapter list of the .md files (or `chapters`) is made when absent."""
        for rel, content in files.items():
            path = self.book / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        if "chapters-md.txt" not in files and not (self.book / "chapters-md.txt").exists():
            names = chapters if chapters is not None else [rel for rel in files if rel.endswith(".md")]
            (self.book / "chapters-md.txt").write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
        return self.book

    def secret(self, rel: str, text: str) -> Path:
        """One more file outside the root holding the marker (`text` gets it appended); never counted as a leak."""
        data = f"{text}\n{self.marker}\n".encode()
        (self.tmp / rel).write_bytes(data)
        self.secrets[rel] = data
        return self.tmp / rel

    def readonly(self, path: Path) -> None:
        """Make `path` unwritable, for root too (which ignores modes): chmod, and chattr +i where we are root."""
        mode = stat.S_IMODE(path.lstat().st_mode)
        path.chmod(mode & ~0o222)
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
            assert done.returncode == 0, f"harness: chattr +i {path} failed: {done.stderr}"
            self._immutable.append(path)

    def deep_tree(self, rel: str, depth: int) -> None:
        """`rel/d/d/.../d/x.md`, `depth` folders deep: deeper than Python's recursion limit when depth > 1000."""
        path = str(self.book / rel)
        os.mkdir(path)
        for _ in range(depth):
            path = os.path.join(path, "d")
            os.mkdir(path)
        with open(os.path.join(path, "x.md"), "w", encoding="utf-8") as handle:
            handle.write("# Deep\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
        self._deep.append(self.book / rel)

    def close(self) -> None:
        """Kill what is still running and undo chattr +i, so that pytest can remove the folder."""
        for process in self._processes:
            _kill_group(process)
        for path in self._deep:  # shutil.rmtree (pytest's clean-up) recurses per level on Python 3.11: rm does not
            subprocess.run(["rm", "-rf", str(path)], capture_output=True)
        for path in self._immutable:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
            try:
                path.chmod(stat.S_IMODE(path.lstat().st_mode) | 0o200)
            except OSError:
                pass

    # ---- running the CLI -----------------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = {
            "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.work),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(self.tmpdir),
            "BOOK_CACHE_DIR": str(self.cache),
            "TOOLS_LINKS_CACHE_DIR": str(self.links_cache),
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
        return env

    def start(self, *args: str, cwd: Path | None = None) -> subprocess.Popen:
        """Start the CLI in its own process group (so that a timeout kills it and every worker), stdin closed."""
        process = subprocess.Popen(
            [sys.executable, "-m", "tools", *map(str, args)], cwd=str(cwd or self.work), env=self.env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        self._processes.append(process)
        return process

    def run(self, *args: str, cwd: Path | None = None, deadline: float = DEADLINE, measure_memory: bool = False) -> Result:
        started = time.monotonic()
        process = self.start(*args, cwd=cwd)
        peak = [0]
        stop = None
        if measure_memory:
            stop = _watch_memory(process.pid, peak)
        try:
            out, err = process.communicate(timeout=deadline)
            rc = process.returncode
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, err = process.communicate()
            rc = None
        finally:
            if stop is not None:
                stop()
        _kill_group(process)  # workers left behind by a command that ended
        decode = lambda data: data.decode("utf-8", errors="replace")  # noqa: E731
        return Result([str(a) for a in args], rc, decode(out), decode(err), time.monotonic() - started, peak[0])

    def good(self, *args: str, cwd: Path | None = None, deadline: float = DEADLINE) -> Result:
        """Run a command that must succeed (a good build before the bad input): exit 0 and no traceback."""
        result = self.run(*args, cwd=cwd, deadline=deadline)
        assert result.rc == 0 and "Traceback" not in result.output, f"harness: the good run before the bad input failed\n{result.shown()}"
        return result

    # ---- the shared checks ---------------------------------------------------------------------------------------

    def state(self) -> dict[str, tuple]:
        return snapshot(self.tmp, skip=(self.cache, self.links_cache, self.tmpdir))

    def expect(
        self,
        *args: str,
        code: int | set[int] | tuple[int, ...],
        names: tuple[str, ...] | list[str] = (),
        outputs: tuple[Path, ...] | list[Path] = (),
        changes: tuple[Path, ...] | list[Path] = (),
        cwd: Path | None = None,
        deadline: float = DEADLINE,
        measure_memory: bool = False,
        before: dict | None = None,
        extra=None,
    ) -> Result:
        """Run `tools ARGS` and apply every shared check.

        code: the exit code or the set of acceptable ones. names: strings the output must contain (a file, or
        'file:line'). outputs: paths the command may write when it exits 0 or 1 (a failure must leave them
        byte-identical). changes: paths the command may change when it exits 0 (sources of mv, fix-tables).
        Everything else under the temp folder must stay byte-identical whatever happens.
        """
        codes = {code} if isinstance(code, int) else set(code)
        before = before if before is not None else self.state()
        result = self.run(*args, cwd=cwd, deadline=deadline, measure_memory=measure_memory)
        after = self.state()
        failures = []  # every check runs, so that one run shows every kind of failure of the case
        if result.rc is None:
            failures.append(f"HANG: no end within {deadline:g}s (the process group was killed)")
        if "Traceback" in result.output:
            failures.append("TRACEBACK in the output")
        leaks = self.leaks(result)
        if leaks:
            failures.append(f"LEAK: the outside marker reached {leaks[:8]}")
        allowed: tuple[str, ...] = ()
        if result.rc in (0, 1):
            allowed += tuple(os.path.relpath(p, self.tmp) for p in outputs)
        if result.rc == 0:
            allowed += tuple(os.path.relpath(p, self.tmp) for p in changes)
        changed = sorted(
            rel for rel in set(before) | set(after)
            if before.get(rel) != after.get(rel) and not _is_under(rel, allowed) and not _temporary(rel)
        )
        if changed:
            failures.append(f"LOSS: changed, added or removed though they had to stay byte-identical: {changed[:12]}")
        for rel in sorted(rel for rel in after if rel.endswith(".pdf") and after[rel][0] == "file" and before.get(rel) != after[rel]
                          and _is_under(rel, allowed) and not _temporary(rel)):  # every PDF this run wrote
            problems = qpdf_problems(self.tmp / rel)
            if problems:
                failures.append(f"PDF: {problems}")
        leftovers = sorted(rel for rel in after if _temporary(rel) and rel not in before)
        in_tmpdir = sorted(os.listdir(self.tmpdir)) if self.tmpdir.is_dir() else ["(TMPDIR itself was removed)"]
        if leftovers or in_tmpdir:
            failures.append(f"LEFTOVER: temporary files {leftovers[:12]}, TMPDIR entries {in_tmpdir[:12]}")
        if result.rc is not None and result.rc not in codes:
            failures.append(f"EXIT: exit code {result.rc}, expected {sorted(codes)}")
        missing = [name for name in names if name not in result.output]
        if result.rc is not None and missing:
            failures.append(f"MESSAGE: the output does not name {missing}")
        if extra is not None and result.rc is not None and not any(f.startswith("EXIT") for f in failures):
            try:
                extra(self, result)
            except AssertionError as exc:
                failures.append(str(exc).split("\n$ tools", 1)[0])
            except Exception as exc:  # noqa: BLE001 - an output a check cannot read is a failure of the case
                failures.append(f"OUTPUT: the case's check could not read the output: {exc!r}")
        assert not failures, "\n".join(failures) + "\n" + result.shown()
        return result

    def leaks(self, result: Result) -> list[str]:
        """Where the marker shows up: the command's output, and every file under the temp folder but the secrets."""
        found = []
        for text in self.forbidden:
            if text in result.output:
                found.append(f"the command's output ({text[:20]})")
        secrets = {str(self.tmp / rel) for rel in self.secrets}
        for current, _dirs, files in walk(self.tmp):
            for name in files:
                path = Path(current) / name
                if str(path) in secrets or not stat.S_ISREG(path.lstat().st_mode):
                    continue
                where = self._marker_in(path)
                if where:
                    found.append(f"{path.relative_to(self.tmp)}{where}")
        return found

    def _marker_in(self, path: Path) -> str:
        markers = [text.encode() for text in self.forbidden]
        try:
            data = path.read_bytes()
        except OSError:
            return ""
        if any(marker in data for marker in markers):
            return " (raw bytes)"
        if data[:4] == b"PK\x03\x04":
            try:
                for member, content in epub_members(path).items():
                    if any(marker in content for marker in markers):
                        return f" (member {member})"
            except (zipfile.BadZipFile, OSError):
                pass
        if data[:5] == b"%PDF-":
            try:
                if _squash(self.marker) in _squash(pdf_text(path)):
                    return " (PDF text)"
                if tuple(SECRET_SIZE) in pdf_image_sizes(path):
                    return " (PDF image: the outside secret.png)"
            except Exception as exc:  # noqa: BLE001 - an unreadable PDF is reported by the case, not as a leak
                return f" (unreadable PDF: {exc!r})" if "%%EOF" in data[-64:].decode("latin-1") else ""
        return ""


def _temporary(rel: str) -> bool:
    name = os.path.basename(rel)
    return name.endswith(".tmp") or re.search(r"\.old-\d+$", name) is not None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _watch_memory(pid: int, peak: list[int]):
    """Poll the resident memory of the process tree under `pid` every 50 ms; returns a function that stops it."""
    import threading

    import psutil

    done = threading.Event()

    def poll() -> None:
        try:
            root = psutil.Process(pid)
        except psutil.Error:
            return
        while not done.is_set():
            total = 0
            try:
                for proc in [root, *root.children(recursive=True)]:
                    try:
                        total += proc.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                break
            peak[0] = max(peak[0], total)
            done.wait(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()

    def stop() -> None:
        done.set()
        thread.join(timeout=5)

    return stop
