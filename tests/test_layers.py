"""The import contract of ARCHITECTURE.md ("Layers") holds, and it bites: `lint-imports` (run by `make lint`) fails on
a copy of the sources with one upward import, one import cycle, or one module no layer names."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the sources under `root`, which come first on the path (not the installed checkout)."""
    require(LINT_IMPORTS.exists(), "import-linter is not installed (pip install -e '.[dev]')")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def sources(tmp_path) -> Path:
    """A copy of the package and of the contract (pyproject.toml), to break."""
    shutil.copytree(REPO / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_sources_keep_the_contract(sources):
    done = _lint_imports(sources)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_upward_import_breaks_the_layers(sources):
    _append(sources / "tools" / "collect.py", "from .render import site as _site  # the model importing a renderer")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.collect is not allowed to import tools.render" in done.stdout


def test_infrastructure_importing_the_model_breaks_the_layers(sources):
    _append(sources / "tools" / "cache.py", "from .book import Book as _Book  # infrastructure importing the model")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.cache is not allowed to import tools.book" in done.stdout


def test_a_cycle_inside_a_layer_is_refused(sources):
    # book imports collect; collect importing book closes a cycle that the layers alone allow (same layer)
    _append(sources / "tools" / "collect.py", "from . import book as _book  # a cycle")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "No cycles are allowed in tools" in done.stdout
    assert ".collect -> .book" in done.stdout or ".book -> .collect" in done.stdout


def test_a_module_no_layer_names_is_refused(sources):
    (sources / "tools" / "unplaced.py").write_text('"""A new module nobody put in a layer."""\n', encoding="utf-8")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.unplaced" in done.stdout
