"""One printer of diagnostics: `build` and `check-links` write the same finding the same way."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, write_book


def _tools(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_build_and_check_links_print_a_finding_alike(tmp_path):
    root = write_book(tmp_path / "book", {"README.md": "# Home\n\nSee [setup](README.md#setup) and [gone](gone.md).\n"})
    built = _tools("build", "html", "--book", ".", "--out", str(tmp_path / "site"), cwd=root)
    checked = _tools("check-links", "--book", ".", cwd=root)
    assert built.returncode == checked.returncode == 1
    expected = [
        "README.md:3:13: error: the link 'README.md#setup' points at '#setup', which is not an anchor of README.md.",
        "README.md:3:41: error: the link 'gone.md' points at a file that does not exist (gone.md).",
    ]
    assert checked.stdout.splitlines() == expected
    assert [line for line in built.stderr.splitlines() if line.startswith("README.md:")] == expected
    assert "\x1b[" not in built.stderr + checked.stdout  # no colour in a pipe
