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


def test_make_lint_runs_the_contract():
    """`make lint` is where the contract bites: its recipe runs lint-imports and fails when it does."""
    recipe = (REPO / "Makefile").read_text(encoding="utf-8").split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/lint-imports || { status=1;" in recipe


def test_an_upward_import_breaks_the_layers(sources):
    _append(sources / "tools" / "book" / "collect.py", "from tools.render import html as _html  # the model importing a renderer")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.book is not allowed to import tools.render" in done.stdout
    assert "tools.book.collect -> tools.render.html" in done.stdout


def test_core_importing_the_model_breaks_the_layers(sources):
    _append(sources / "tools" / "core" / "cache.py", "from tools.book.load import Book as _Book  # core knows no book")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.core is not allowed to import tools.book" in done.stdout


def test_the_checks_and_the_editor_stay_apart(sources):
    _append(sources / "tools" / "edit" / "move.py", "from tools.checks.links import local as _local  # independent siblings")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.edit is not allowed to import tools.checks" in done.stdout


def test_a_cycle_inside_a_folder_is_refused(sources):
    # book.load imports collect; collect importing load closes a cycle that the layers alone allow (same folder)
    _append(sources / "tools" / "book" / "collect.py", "from tools.book import load as _load  # a cycle")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "No cycles are allowed in tools.book" in done.stdout
    assert ".collect -> .load" in done.stdout or ".load -> .collect" in done.stdout


def test_a_new_module_takes_its_folders_layer(sources):
    (sources / "tools" / "book" / "newcomer.py").write_text('"""A new module of the model."""\nfrom tools.core import errors as _errors\n', encoding="utf-8")
    done = _lint_imports(sources)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_module_no_layer_names_is_refused(sources):
    (sources / "tools" / "unplaced.py").write_text('"""A new module nobody put in a layer."""\n', encoding="utf-8")
    done = _lint_imports(sources)
    assert done.returncode == 1, done.stdout
    assert "tools.unplaced" in done.stdout
