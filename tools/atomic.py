"""Outputs appear whole or not at all: written beside their destination, then renamed into place."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publishable(path: Path) -> None:
    """mkstemp/mkdtemp make private files; outputs get the modes a plain open() or mkdir() would give."""
    mask = _umask()
    if path.is_dir():
        for current, dirs, files in os.walk(path):
            os.chmod(current, 0o777 & ~mask)
            for name in files:
                os.chmod(os.path.join(current, name), 0o666 & ~mask)
    else:
        os.chmod(path, 0o666 & ~mask)


@contextmanager
def atomic_file(destination: Path):
    """Yield a temporary path in the destination's folder; on success it replaces the destination."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
    os.close(fd)
    temp_path = Path(temp)
    # The new file keeps the mode of the one it replaces, or gets what open() would give; the caller may change it.
    os.chmod(temp_path, destination.stat().st_mode & 0o7777 if destination.exists() else 0o666 & ~_umask())
    try:
        yield temp_path
        os.replace(temp_path, destination)
    finally:
        temp_path.unlink(missing_ok=True)


@contextmanager
def atomic_dir(destination: Path):
    """Yield a fresh temporary folder; on success it replaces the destination folder."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent))
    try:
        yield temp
        _publishable(temp)
        old = None
        if destination.exists():
            old = destination.with_name(f".{destination.name}.old-{os.getpid()}")
            os.replace(destination, old)
        os.replace(temp, destination)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
