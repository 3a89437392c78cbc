"""Tests of the scripts of chapters/development/debug/numerical-bugs.md: nan_locator.py and first_divergence.py.

Both run in a subprocess on CPU, float32 or bfloat16, with fixed seeds; the counts they print
are checked against what the chapter derives by hand.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require

REPO = Path(__file__).resolve().parents[2]
DEBUG = REPO / "chapters" / "development" / "debug"
NAN = DEBUG / "nan_locator.py"
DIVERGE = DEBUG / "first_divergence.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(autouse=True)
def _needs_torch():
    require(HAVE_TORCH, "torch is not installed (pip install -e '.[scripts]')")


def py(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)


@pytest.mark.parametrize("script", [NAN, DIVERGE], ids=lambda p: p.name)
def test_help_and_bad_argument(script: Path) -> None:
    result = py(script, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"usage: {script.name}")
    bad = py(script, "--case" if script is NAN else "--variant", "nonsense")
    assert bad.returncode == 2 and "invalid choice: 'nonsense'" in bad.stderr


def test_divergence_threshold_must_be_positive() -> None:
    result = py(DIVERGE, "--threshold", "0")
    assert result.returncode == 2 and "--threshold must be positive" in result.stderr


def test_masked_log_is_blamed_on_the_entropy_module() -> None:
    result = py(NAN, "--case", "where")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^case where: loss -?\d+\.\d{4} \(finite\)$", out, re.M), out
    # 8 rows x 4 allowed classes reach the logits with a NaN; the 2 masked ones get a zero gradient
    assert "first: backward: 'entropy' (MaskedEntropy) received a finite gradient and passed on 32 NaN" in out
    assert "parameter gradients with NaN or inf: 16 of 16" in out
    assert "Full backward hook" not in result.stderr


def test_duplicated_pair_is_blamed_on_the_distance_module() -> None:
    out = py(NAN, "--case", "sqrt").stdout
    # one pair, two 16-wide embeddings: 32 NaN; the head (2 tensors) is not upstream of the distance
    assert "first: backward: 'distance' (PairDistance) received a finite gradient and passed on 32 NaN" in out
    assert "parameter gradients with NaN or inf: 14 of 16" in out


def test_clean_step_reports_nothing() -> None:
    out = py(NAN, "--case", "none").stdout
    assert "parameter gradients with NaN or inf: 0 of 16" in out
    assert "no module made a NaN or inf, forward or backward" in out


@pytest.mark.parametrize("case,op", [("where", "MulBackward0"), ("sqrt", "PowBackward0")])
def test_anomaly_mode_names_the_op_after_the_inf(case: str, op: str) -> None:
    out = py(NAN, "--case", case, "--anomaly").stdout
    assert f"anomaly mode: RuntimeError: Function '{op}' returned nan values in its 0th output." in out
    assert f"Error detected in {op}. Traceback of forward call that caused the error:" in out
    assert "nan_locator.py" in out


def test_a_missing_key_is_a_jump_at_one_module() -> None:
    out = py(DIVERGE, "--variant", "missing-key").stdout
    assert "first module whose output differs by more than 0.05 while its input does not: 3.norm" in out
    rows = {ln.split()[0]: ln.split()[1:3] for ln in out.splitlines()[2:] if re.match(r"^\d", ln)}
    assert all(float(v) == 0.0 for name, vals in rows.items() if name < "3" for v in vals)
    assert float(rows["3.norm"][0]) == 0.0 and float(rows["3.norm"][1]) > 0.05


def test_bf16_is_a_drift_without_a_jump() -> None:
    out = py(DIVERGE, "--variant", "bf16").stdout
    rows = [ln.split() for ln in out.splitlines() if re.match(r"^\d", ln)]
    outputs = [float(r[2]) for r in rows]
    assert all(1e-4 < v < 2e-2 for v in outputs), outputs  # a few bfloat16 roundings, never a jump
    assert "no module jumps past 0.05" in out


def test_identical_copies_do_not_differ() -> None:
    assert "the largest output difference is 0.00e+00" in py(DIVERGE, "--variant", "same").stdout
