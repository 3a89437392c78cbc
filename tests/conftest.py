"""Shared test helpers: system-tool and corpus requirements that skip on a laptop and fail in CI."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "the-art-of-debugging"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip with `reason` on a reader's machine; fail in CI, where nothing may be skipped."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def require_tool(name: str) -> str:
    """Return the path of a system tool, or skip/fail with a clear reason when it is missing."""
    path = shutil.which(name)
    require(path is not None, f"the system tool '{name}' is not installed (make test installs it)")
    return path or name


@pytest.fixture(scope="session", autouse=True)
def _private_build_cache(tmp_path_factory):
    """Builds in tests cache under a temporary folder, not the checkout's .cache/build: every run starts cold."""
    if "BOOK_CACHE_DIR" not in os.environ:
        os.environ["BOOK_CACHE_DIR"] = str(tmp_path_factory.mktemp("build-cache"))
    yield


@pytest.fixture(scope="session")
def corpus_root() -> Path:
    """The shared test corpus beside the repository (absent in a reader's clone)."""
    require(CORPUS.is_dir(), f"the shared corpus is not at {CORPUS}")
    return CORPUS


def write_book(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (path -> text or bytes) under `root`; a chapter list is made from the .md files when absent."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if "chapters-md.txt" not in files:
        chapters = [rel for rel in files if rel.endswith(".md")]
        (root / "chapters-md.txt").write_text("\n".join(chapters) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def tmp_book(tmp_path):
    """`tmp_book({...})` builds a book in a temp dir and returns its root."""
    return lambda files, name="book": write_book(tmp_path / name, files)


@pytest.fixture(scope="session")
def browser():
    """One Chromium per test process, shared by every test that drives a page (tests/browser/ and the feature
    books): Playwright's sync API allows one running instance per process."""
    from browser.support import CHROMIUM_ARGS, chromium_path

    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    require(sync_playwright is not None, "the Python package playwright is not installed (make install-dev installs it)")

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def run_tools(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI of this checkout in a subprocess; a traceback in its output fails the test."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def build_all_cleanly(tmp: Path, files: dict) -> Path:
    """`tools build all` of a book made of `files`, which must succeed with no warning; the output folder."""
    root = write_book(tmp / "book", files)
    result = run_tools(tmp, "build", "all", "--book", str(root), "--out", str(tmp / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 warnings" in result.stdout and "warning:" not in result.stderr, result.stdout + result.stderr
    return tmp / "out"
