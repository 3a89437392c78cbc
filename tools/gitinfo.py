"""The git revision a build was made from, for covers and front pages."""
from __future__ import annotations

import subprocess
from pathlib import Path


def revision(root: Path) -> str:
    """Short commit id, with '+dirty' when the work tree has changes; 'unversioned' outside git."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unversioned"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return f"{commit}+dirty" if dirty else commit
