"""Tests of tensor_census.py, the leak finder of chapters/development/debug/gpu-memory.md.

The demo runs on CPU; the growth per step it prints is checked against the chapter's arithmetic.
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
CENSUS = REPO / "chapters" / "development" / "debug" / "tensor_census.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(autouse=True)
def _needs_torch():
    require(HAVE_TORCH, "torch is not installed (pip install -e '.[scripts]')")


def py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CENSUS), *args], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)


def growth(out: str) -> tuple[float, float, float, float]:
    m = re.search(r"growth per step: ([+-][\d.]+) storages \(([+-][\d.]+) MiB\), ([+-][\d.]+) nodes, "
                  r"([+-][\d.]+) MiB of saved activations", out)
    assert m, out
    return tuple(float(g) for g in m.groups())


def test_help_and_bad_arguments() -> None:
    result = py("--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: tensor_census.py")
    bad = py("--steps", "0")
    assert bad.returncode == 2 and "--steps must be between 1 and 100" in bad.stderr


def test_healthy_loop_is_flat() -> None:
    result = py("--leak", "none", "--steps", "3")
    assert result.returncode == 0, result.stderr
    # parameters 1024x4096 + 4096 + 4096x1024 + 1024 float32 = 32.02 MiB, and as much for the gradients
    assert "step 3: 9 tensor storages, 64.04 MiB (parameters 32.02)" in result.stdout
    assert growth(result.stdout) == (0.0, 0.0, 0.0, 0.0)


def test_eval_losses_keep_their_activations() -> None:
    out = py("--leak", "eval-list", "--steps", "3").stdout
    storages, mib, nodes, saved = growth(out)
    # saved per step: input 64x1024 (0.25 MiB), ReLU output 64x4096 (1 MiB), output and target (0.25 each)
    assert saved == 1.75
    assert nodes == 6.0  # MseLoss, 2 x Addmm, 2 x T, Relu; the AccumulateGrad nodes are shared
    assert mib == 2.0 and storages == 5.0  # the 1.75 MiB plus the loss, whose storage is 0.25 MiB here


def test_summing_losses_keeps_only_nodes() -> None:
    out = py("--leak", "train-sum", "--steps", "3").stdout
    storages, mib, nodes, saved = growth(out)
    assert (storages, mib, saved) == (0.0, 0.0, 0.0)
    assert nodes == 7.0  # the six of a step, plus the Add node of total + loss
