"""Tests of chapters/training/fault-tolerance/goodput_model.py, the interruption and goodput model.

The hand-computed case uses 1,000 GPUs at 0.024 interruptions per GPU-day: 24 per day, a job
MTBF of exactly one hour, so every formula reduces to powers of e.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "fault-tolerance" / "goodput_model.py"
HOUR = ["--gpus", "1000", "--rate-per-gpu-day", "0.024"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_help():
    proc = run("--help")
    assert proc.returncode == 0 and "--restart-minutes" in proc.stdout


def test_hand_computed_case():
    # tau 30 min, delta 36 s = 0.01 h, R 6 min = 0.1 h, M = 1 h:
    # E[T] = e^0.1 x (e^0.51 - 1) = 1.10517 x 0.66529 = 0.73526 h, goodput 0.5 / 0.73526 = 0.680
    proc = run(*HOUR, "--interval", "30", "--checkpoint-seconds", "36", "--restart-minutes", "6",
               "--replica-groups", "10", "--heal-minutes", "6", "--step-seconds", "36", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["interruptions_per_day"] == pytest.approx(24)
    assert row["mtbf_hours"] == pytest.approx(1.0)
    assert row["p_day_without_failure"] == pytest.approx(math.exp(-24))
    assert row["goodput"] == pytest.approx(0.5 / (math.exp(0.1) * (math.exp(0.51) - 1)))
    assert row["goodput"] == pytest.approx(0.680, abs=5e-4)
    assert row["first_order_checkpoint"] == pytest.approx(0.01 / 0.51)
    assert row["first_order_rework"] == pytest.approx(0.255)
    assert row["first_order_restart"] == pytest.approx(0.1)
    assert row["young_interval_min"] == pytest.approx(math.sqrt(2 * 0.01 * 1.0) * 60)  # 8.49 min
    # one failure per hour idles 1/10 of the GPUs for 0.1 h + 0.01 h: 1 - 0.11 / 10
    assert row["per_step_goodput"] == pytest.approx(0.989)


def test_no_overheads_reduce_to_the_exponential():
    proc = run(*HOUR, "--interval", "30", "--checkpoint-seconds", "0", "--restart-minutes", "0", "--json")
    (row,) = json.loads(proc.stdout)
    assert row["goodput"] == pytest.approx(0.5 / (math.exp(0.5) - 1))  # 0.7707


def test_optimum_solves_the_stationarity_condition():
    # d/dtau [tau / (e^{(tau+delta)/M} - 1)] = 0  <=>  tau / M = 1 - e^{-(tau+delta)/M}, whatever R is
    mod = load_script(SCRIPT)
    for restart in (0.0, 0.25):
        tau = mod.optimal_interval(0.01, 1.0, restart)
        assert tau == pytest.approx(1 - math.exp(-(tau + 0.01)), rel=1e-6)
        assert tau == pytest.approx(0.1348, abs=5e-4)  # 8.09 min, against Young's 8.49


def test_default_rate_is_the_llama3_derivation():
    proc = run("--json")
    (row,) = json.loads(proc.stdout)
    assert row["gpus"] == 16384
    assert row["interruptions_per_day"] == pytest.approx(419 / 54)  # 7.76 per day
    assert row["mtbf_hours"] == pytest.approx(54 * 24 / 419)  # 3.09 h
    text = run("--gpus", "1024", "16384")
    assert text.returncode == 0
    assert "1,024" in text.stdout and "16,384" in text.stdout and "7.76" in text.stdout


def test_goodput_falls_with_size_and_rises_with_cheaper_recovery():
    mod = load_script(SCRIPT)
    sizes = [1024, 4096, 16384, 65536]
    slow = [mod.model(n, mod.LLAMA3_RATE, 60, 10, None).optimal_goodput for n in sizes]
    fast = [mod.model(n, mod.LLAMA3_RATE, 2, 5, None).optimal_goodput for n in sizes]
    assert slow == sorted(slow, reverse=True) and fast == sorted(fast, reverse=True)
    assert all(f > s for f, s in zip(fast, slow))


@pytest.mark.parametrize("args", [["--gpus", "0"], ["--rate-per-gpu-day", "-1"], ["--interval", "0"],
                                  ["--checkpoint-seconds", "nan"], ["--replica-groups", "0"]])
def test_usage_errors(args):
    proc = run(*args)
    assert proc.returncode == 2
    assert "error:" in proc.stderr
