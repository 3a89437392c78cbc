"""`--out` where the tool cannot write: one sentence naming the path and what to do, exit 2, no traceback, and
nothing left behind; as root too, which permission bits do not stop (a path under a regular file, an immutable
folder, a read-only or full file system), and as a user, run here without privileges through a user namespace
(`unshare --user --map-user`: the user owns the files root owns outside it, and has no capability)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require, write_book

TIMEOUT = 300
FORMATS = {"html": "site", "pdf": "book.pdf", "epub": "book.epub", "all": "out"}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _book(tmp_path: Path) -> Path:
    return write_book(tmp_path / "book", {"README.md": "# Home\n\nSee [a](a.md).\n", "a.md": "# A\n\nWords.\n"})


def _tools(prefix: list[str], *args) -> subprocess.CompletedProcess:
    result = subprocess.run([*prefix, sys.executable, "-m", "tools", *map(str, args)], env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def _refused(result: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2 and one sentence (an `Error:` line, or the line of a write that failed) holding `words`."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=1)
def _as_user() -> tuple[str, ...] | None:
    """A command prefix that runs the tool as a user without privileges, or None."""
    if os.geteuid() != 0:
        return ()
    mapped = ("unshare", "--user", "--map-user=1000", "--map-group=1000")
    if shutil.which("unshare") and _works([*mapped, sys.executable, "-c", "import os, sys; sys.exit(os.geteuid() == 0)"]):
        return mapped
    nobody = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
    if shutil.which("setpriv") and _works([*nobody, sys.executable, "-c", "import tools"]):
        return nobody
    return None


def _user() -> list[str]:
    prefix = _as_user()
    require(prefix is not None, "no way to run as a user without privileges here (unshare --user, or setpriv with a Python nobody can run)")
    return list(prefix or ())


@functools.lru_cache(maxsize=1)
def _can_mount() -> bool:
    """Whether a file system can be mounted in a mount namespace of our own (root, or a user namespace's root)."""
    return bool(shutil.which("unshare")) and _works(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])


def _on_mount(options: str, mount: Path, *args) -> subprocess.CompletedProcess:
    """The tool run where `mount` is a tmpfs mounted with `options`, seen by that run only."""
    if not _can_mount():  # optional, as the brief of these tests says: the user case above is the one CI requires
        pytest.skip("no file system can be mounted here without privileges (unshare -rm)")
    script = f'mount -t tmpfs -o {options} tmpfs "$1" && shift && exec "$@"'
    return _tools(["unshare", "-rm", "sh", "-c", script, "sh", str(mount)], *args)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("depth", ["", "a/b/"], ids=["just-under", "deeper"])
def test_out_under_a_regular_file(tmp_path, fmt, depth):
    book, blocker = _book(tmp_path), tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    out = blocker / f"{depth}{FORMATS[fmt]}"
    line = _refused(_tools([], "build", fmt, "--book", book, "--out", out), f"'{blocker}' is a file, not a folder", "choose another path")
    assert line.startswith(f"Error: --out '{out}'")
    assert blocker.read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == ["book", "notes.txt"]


@pytest.mark.parametrize("fmt", ["html", "pdf"])
def test_out_in_a_folder_a_user_cannot_write(tmp_path, fmt):
    prefix = _user()
    book, folder = _book(tmp_path), tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        _refused(_tools(prefix, "build", fmt, "--book", book, "--out", folder / FORMATS[fmt]), f"the folder '{folder}' is not writable (its permissions)", "choose a folder you can write to")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("fmt", ["html", "pdf"])
def test_an_output_a_user_made_read_only_is_left_as_it_is(tmp_path, fmt):
    prefix = _user()
    book, out = _book(tmp_path), tmp_path / FORMATS[fmt]
    assert _tools(prefix, "build", fmt, "--book", book, "--out", out).returncode == 0
    before = out.stat().st_mtime_ns
    out.chmod(0o555 if fmt == "html" else 0o444)
    try:
        what = "folder" if fmt == "html" else "file"
        _refused(_tools(prefix, "build", fmt, "--book", book, "--out", out), f"the {what} '{out}' is not writable (its permissions), so the build cannot replace it", "make it writable")
        assert out.stat().st_mtime_ns == before
        assert not [p.name for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old", ".lock"))]
    finally:
        out.chmod(0o755 if fmt == "html" else 0o644)


def test_a_read_only_folder_inside_the_old_site_does_not_stop_its_replacement(tmp_path):
    prefix = _user()
    book, out = _book(tmp_path), tmp_path / "site"
    assert _tools(prefix, "build", "html", "--book", book, "--out", out).returncode == 0
    (out / "assets").chmod(0o555)  # the author's doing: the old site is still the tool's, and goes whole
    result = _tools(prefix, "build", "html", "--book", book, "--out", out)
    assert result.returncode == 0, result.stderr
    assert (out / "a.html").is_file()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old", ".lock"))]


def test_an_immutable_folder_stops_root_too(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root sets the immutable attribute; a user is stopped by the permission bits (above)")
    book, folder = _book(tmp_path), tmp_path / "frozen"
    folder.mkdir()
    immutable = shutil.which("chattr") is not None and _works(["chattr", "+i", str(folder)])
    if not immutable:  # a tmpfs or an overlay file system has no immutable attribute
        pytest.skip(f"chattr +i does not work on {tmp_path}'s file system")
    try:
        _refused(_tools([], "build", "html", "--book", book, "--out", folder / "site"), f"the folder '{folder}' is not writable, even for root (immutable? see lsattr)")
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


@pytest.mark.parametrize("fmt", ["html", "epub"])
def test_a_read_only_file_system(tmp_path, fmt):
    book, mount = _book(tmp_path), tmp_path / "mnt"
    mount.mkdir()
    _refused(_on_mount("ro", mount, "build", fmt, "--book", book, "--out", mount / FORMATS[fmt]), f"the folder '{mount}' is on a read-only file system", "choose a folder you can write to")


@pytest.mark.parametrize("fmt", ["html", "pdf", "epub"])
def test_a_full_file_system(tmp_path, fmt):
    """The checks pass, then a write fails: the sentence names the output (not a temporary file), nothing is left,
    and no half-written file is called built (ebooklib would have kept quiet)."""
    book, mount = _book(tmp_path), tmp_path / "mnt"
    mount.mkdir()
    out = mount / FORMATS[fmt]
    result = _on_mount("size=4k", mount, "build", fmt, "--book", book, "--out", out, "--no-cache")
    _refused(result, f"cannot write '{out}': No space left on device", "choose another path (--out)")
    assert "Built" not in result.stdout
