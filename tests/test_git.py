"""The one git helper: a git that hangs, is missing or fails never stops a command nor shows a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, require_tool, write_book
from tools.core.git import GitError, repository_prefix, revision, run_git


def _fake_git(folder: Path, body: str) -> dict[str, str]:
    """An environment whose PATH finds a `git` that runs the shell `body` instead of git."""
    folder.mkdir()
    script = folder / "git"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}", "PYTHONPATH": str(REPO)}


def test_a_hanging_git_is_ended_at_its_deadline(tmp_path, monkeypatch):
    marker = tmp_path / "grandchild-alive"
    # git starts a grandchild that holds the pipes open: the deadline must end the whole group anyway
    env = _fake_git(tmp_path / "bin", f"(sleep 3; touch {marker}) & sleep 600")
    monkeypatch.setenv("PATH", env["PATH"])
    started = time.monotonic()
    with pytest.raises(GitError, match=r"git status did not finish within 0\.5 s"):
        run_git(tmp_path, "status", deadline=0.5)
    assert time.monotonic() - started < 5
    time.sleep(3.5)
    assert not marker.exists()


def test_a_missing_git_is_a_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError, match="git could not be started"):
        run_git(tmp_path, "status")
    assert revision(tmp_path) == ""
    repository_prefix.cache_clear()
    assert repository_prefix(tmp_path) == ""


def test_a_failing_git_leaves_builds_and_moves_working(tmp_path):
    env = _fake_git(tmp_path / "bin", "echo 'fatal: broken' >&2; exit 128")
    root = write_book(tmp_path / "book", {"README.md": "# Home\n\n[guide](guide.md)\n", "guide.md": "# Guide\n"})
    out = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(root), "--out", str(out)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr
    front = (out / "index.html").read_text(encoding="utf-8")
    assert "Home" in front and "revision" not in front and "unversioned" not in front
    moved = subprocess.run([sys.executable, "-m", "tools", "mv", "--book", str(root), str(root / "guide.md"), str(root / "manual.md")], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert moved.returncode == 0, moved.stderr
    assert "(rename)" in moved.stdout + moved.stderr
    assert (root / "README.md").read_text(encoding="utf-8") == "# Home\n\n[guide](manual.md)\n"


def test_revision_of_a_work_tree(tmp_path):
    git = require_tool("git")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    root = write_book(tmp_path / "repo" / "book", {"README.md": "# Home\n"})
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([git, *args], cwd=root.parent, check=True, env=env)
    commit = subprocess.run([git, "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert revision(root) == commit
    (root / "README.md").write_text("# Changed\n", encoding="utf-8")
    assert revision(root) == f"{commit}+dirty"
    assert repository_prefix(root) == "book/"
