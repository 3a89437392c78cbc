"""Tests of chapters/insights/training_budget.py, the training-budget calculator of the planning chapter.

The script runs as a reader runs it (a subprocess) on cases small enough to compute by hand, on
the Llama 2 70B example the chapter prints, and on inputs it must refuse; hypothesis then checks
in-process that a forward plan and a budget solve are inverses of each other.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "insights" / "training_budget.py"
HW = ["--peak-tflops", "1000", "--mfu", "0.5", "--gpus", "10"]


def load():
    return load_script(SCRIPT)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def run_json(*args: str) -> dict:
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_help_exits_zero():
    proc = run("--help")
    assert proc.returncode == 0
    assert "--tokens-per-param" in proc.stdout and "--failure-rate" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--params", "1B", "--tokens", "30B", "--mfu", "1.5", "--gpus", "1", "--accelerator", "h100"],
     "expected a fraction in (0, 1]"),
    (["--params", "1B", "--tokens", "30B", "--mfu", "0.5", "--gpus", "0", "--accelerator", "h100"],
     "expected a positive integer"),
    (["--params", "seven", "--tokens", "30B", *HW], "expected a positive number such as 7e10"),
    (["--params", "1B", "--tokens", "30B", "--mfu", "0.5", "--gpus", "1"], "exactly one of --accelerator"),
    (["--params", "1B", *HW], "needs both --params and --tokens"),
    ([*HW], "give --params and --tokens, or a budget"),
    (["--budget", "100", "--tokens-per-param", "20", *HW], "--budget needs --price"),
    (["--days", "3", *HW], "needs --tokens-per-param"),
    (["--params", "1B", "--tokens", "30B", "--days", "3", *HW], "not both"),
    (["--params", "1B", "--tokens", "30B", "--layers", "2", *HW], "needs all of --layers"),
    (["--params", "1B", "--tokens", "30B", "--goodput", "0.9", "--failure-rate", "1e-5", *HW],
     "--goodput or --failure-rate"),
    (["--params", "1B", "--tokens", "30B", "--accelerator", "tpu9", "--mfu", "0.5", "--gpus", "1"],
     "invalid choice"),
])
def test_bad_input_is_a_usage_error(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_hand_computed_forward_plan():
    # C = 6 x 1e9 x 3e10 = 1.8e20 FLOPs; R = 1000e12 x 0.5 = 5e14 FLOP/s;
    # H = 1.8e20 / (5e14 x 3600) = 100 accelerator-hours; wall = 100 / (10 x 0.8) = 12.5 h = 0.5208 days;
    # paid = 100 / 0.8 x 1.2 = 150 hours; money = 150 x 2 = 300.
    out = run_json("--params", "1B", "--tokens", "30B", *HW, "--goodput", "0.8", "--extra", "0.2", "--price", "2")
    assert out["flops"] == pytest.approx(1.8e20)
    assert out["useful_tflops"] == pytest.approx(500)
    assert out["productive_gpu_hours"] == pytest.approx(100)
    assert out["wall_days"] == pytest.approx(12.5 / 24)
    assert out["paid_gpu_hours"] == pytest.approx(150)
    assert out["money"] == pytest.approx(300)
    assert out["tokens_per_param"] == pytest.approx(30)
    assert out["inference_flops_per_token"] == pytest.approx(2e9)


def test_attention_term():
    # 12 x L x d x T = 12 x 2 x 1000 x 500 = 1.2e7 FLOPs per token on top of 6N = 6e9.
    out = run_json("--params", "1e9", "--tokens", "3e10", "--layers", "2", "--d-model", "1000",
                   "--seq-len", "500", *HW)
    assert out["attention_flops_per_token"] == pytest.approx(1.2e7)
    assert out["flops"] == pytest.approx((6e9 + 1.2e7) * 3e10)


def test_budget_solve_inverts_the_forward_plan():
    # 250 / 2 = 125 paid hours x 0.8 = 100 productive hours -> C = 1.8e20; N = sqrt(1.8e20 / (6 x 30)) = 1e9.
    out = run_json("--budget", "250", "--price", "2", "--tokens-per-param", "30", *HW, "--goodput", "0.8")
    assert out["params"] == pytest.approx(1e9)
    assert out["tokens"] == pytest.approx(3e10)
    assert out["money"] == pytest.approx(250)


def test_days_solve():
    # 0.5 days x 24 x 10 accelerators = 120 hours x goodput 1 / (1 + extra 0.2) = 100 productive hours -> N = 1e9.
    out = run_json("--days", "0.5", "--tokens-per-param", "30", *HW, "--extra", "0.2")
    assert out["params"] == pytest.approx(1e9)
    assert out["wall_days"] == pytest.approx(100 / 10 / 24)


def test_goodput_from_failures():
    # 10 accelerators at 1e-3 per accelerator-hour: M = 100 h = 360,000 s. Save 50 s:
    # tau = sqrt(2 x 50 x 360,000) = 6,000 s; losses 50/6000 = 0.8333%, 6000/720,000 = 0.8333%;
    # restart 36 min = 2,160 s / 360,000 = 0.6%; other 5% -> goodput = 0.95 x (1 - 0.022667) = 0.928467.
    out = run_json("--params", "1B", "--tokens", "30B", *HW, "--failure-rate", "1e-3", "--save-s", "50",
                   "--restart-min", "36", "--other-loss", "0.05")
    model = out["goodput_model"]
    assert model["job_mtbf_h"] == pytest.approx(100)
    assert model["interval_min"] == pytest.approx(100)
    assert model["save_loss"] == pytest.approx(50 / 6000)
    assert model["redo_loss"] == pytest.approx(6000 / 720_000)
    assert model["restart_loss"] == pytest.approx(0.006)
    assert out["goodput"] == pytest.approx(0.95 * (1 - 50 / 6000 - 6000 / 720_000 - 0.006))


def test_a_failure_model_with_no_productive_time_is_refused():
    proc = run("--params", "1B", "--tokens", "30B", *HW, "--failure-rate", "10", "--restart-min", "60")
    assert proc.returncode == 2
    assert "leaves no productive time" in proc.stderr


def test_llama2_70b_example_from_the_chapter():
    # 6 x 70e9 x 2e12 = 8.4e23; 8.4e23 / (989.5e12 x 0.40 x 3600) = 589,523 h; / 512 / 24 = 47.98 days.
    proc = run("--params", "70B", "--tokens", "2T", "--accelerator", "h100", "--mfu", "0.40", "--gpus", "512",
               "--price", "2")
    assert proc.returncode == 0, proc.stderr
    assert "8.4000e+23" in proc.stdout
    assert "5.8952e+05 accelerator-hours" in proc.stdout
    assert "47.98 days" in proc.stdout
    assert "1,179,047" in proc.stdout


def test_output_is_deterministic():
    args = ["--params", "8B", "--tokens", "15T", "--accelerator", "h100", "--mfu", "0.4", "--gpus", "1024",
            "--failure-rate", "2e-5"]
    assert run(*args).stdout == run(*args).stdout


@settings(max_examples=100, deadline=None)
@given(n=st.floats(1e7, 1e12), ratio=st.floats(1.0, 5000.0), mfu=st.floats(0.05, 1.0), gpus=st.integers(1, 100_000),
       goodput=st.floats(0.1, 1.0), extra=st.floats(0.0, 2.0), price=st.floats(0.1, 20.0))
def test_forward_then_solve_round_trips(n, ratio, mfu, gpus, goodput, extra, price):
    m = load()
    ap = m.build_parser()
    common = ["--peak-tflops", "989.5", "--mfu", repr(mfu), "--gpus", str(gpus), "--goodput", repr(goodput),
              "--extra", repr(extra), "--price", repr(price)]
    fwd = m.plan(ap.parse_args(["--params", repr(n), "--tokens", repr(n * ratio), *common]))
    back = m.plan(ap.parse_args(["--budget", repr(fwd["money"]), "--tokens-per-param", repr(ratio), *common]))
    assert back["params"] == pytest.approx(n, rel=1e-9)
    assert math.isclose(back["wall_days"], fwd["wall_days"], rel_tol=1e-9)
