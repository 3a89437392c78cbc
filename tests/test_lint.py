"""The code checks of `make lint`: ruff and mypy run with the settings in pyproject.toml, find what they are meant
to find, and find nothing in the checkout."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

from conftest import REPO, require

# A module with one finding of each kind the settings promise: an unused import (F), imports out of order (I),
# typing.Callable (UP), an ambiguous name (E741); and a type error inside an unannotated function, which mypy only
# reports with check_untyped_defs.
PROBE = textwrap.dedent(
    """\
    import sys
    import os
    from typing import Callable


    def untyped():
        count: int = "three"
        l = [os.sep]
        return count, l, Callable
    """
)


def _tool(module: str) -> list[str]:
    require(importlib.util.find_spec(module) is not None, f"{module} is not installed (make install-dev installs it)")
    return [sys.executable, "-m", module]


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing_in_the_checkout():
    result = _run([*_tool("ruff"), "check", "--no-cache", "."])
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_applies_the_projects_rules(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    result = _run([*_tool("ruff"), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), "--output-format", "concise", str(probe)])
    assert result.returncode == 1, result.stdout + result.stderr
    for code in ("F401", "I001", "UP035", "E741"):
        assert code in result.stdout, f"{code} missing:\n{result.stdout}"


def test_mypy_checks_the_bodies_of_unannotated_functions(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    result = _run([*_tool("mypy"), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"), str(probe)])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "probe.py:7: error: Incompatible types in assignment" in result.stdout, result.stdout


def test_make_lint_runs_both_and_says_how_to_fix():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    lint = makefile[makefile.index("\nlint:") :]
    assert "ruff check ." in lint and "$(BIN)/mypy ||" in lint and "status=1" in lint
    assert "ruff check --fix" in lint and "[tool.mypy]" in lint
    assert "make lint" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
