"""Tests of chapters/training/fault-tolerance/replica_fingerprint.py, the cross-replica weight fingerprint check.

The fingerprint and the comparison are checked in process against hand-made tensors
and fingerprints; the whole script then runs as 2 gloo ranks under torchrun, once
clean and once with a flipped bit that the next check must report.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from launch_env import script_env as env
from script_loader import load_script

from conftest import require

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "fault-tolerance" / "replica_fingerprint.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env=env())


def torchrun(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(SCRIPT), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env(), cwd=SCRIPT.parent)


def test_help_and_usage_errors():
    proc = run("--help")
    assert proc.returncode == 0 and "--flip-bit" in proc.stdout
    proc = run("--flip-bit", "one")
    assert proc.returncode == 2 and "RANK:STEP" in proc.stderr
    proc = run()  # not under torchrun
    assert proc.returncode == 2 and "launch with torchrun" in proc.stderr


def test_compare_names_the_odd_replica():
    mod = load_script(SCRIPT)
    assert mod.compare(["w", "b"], [[5, 7], [5, 7], [5, 7]]) == []
    (line,) = mod.compare(["w", "b"], [[5, 7], [5, 9], [5, 7]])
    assert line == "  b: rank(s) [1] differ from the majority of 2 of 3"
    (line,) = mod.compare(["w"], [[1], [2]])
    assert "no majority among 2 replicas" in line and "rank 1 0x0000000000000002" in line


def test_fingerprint_is_exact_and_order_free():
    require(HAVE_TORCH, "torch is not installed")
    import torch

    mod = load_script(SCRIPT)
    t = torch.tensor([1.0, -2.5, 3.25, 0.0])
    ints = t.view(torch.int32).tolist()
    (fp,) = mod.fingerprint([("t", t)], torch).tolist()
    assert fp == sum(ints)
    (shuffled,) = mod.fingerprint([("t", t[[2, 0, 3, 1]].contiguous())], torch).tolist()
    assert shuffled == fp
    mod.flip_bit(t, 20, torch)  # the first element, 1.0 = 0x3f800000, gains 2^20
    (flipped,) = mod.fingerprint([("t", t)], torch).tolist()
    assert flipped - fp == 1 << 20
    assert t[0].item() == pytest.approx(1.125)  # mantissa bit 20 is worth 2^-3
    half = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)  # 0x3f80 + 0x4000
    assert mod.fingerprint([("h", half)], torch).tolist() == [0x3F80 + 0x4000]


def test_two_ranks_agree():
    require(HAVE_TORCH, "torch is not installed")
    clean = torchrun("--steps", "10")
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert "step 5: 2 replicas agree on all 4 tensors" in clean.stdout
    assert "step 10: 2 replicas agree on all 4 tensors" in clean.stdout


def test_two_ranks_catch_a_flipped_bit():
    require(HAVE_TORCH, "torch is not installed")
    flipped = torchrun("--steps", "10", "--flip-bit", "1:7")
    assert flipped.returncode != 0  # the ranks exit 1; torchrun reports the failed worker
    assert "step 5: 2 replicas agree on all 4 tensors" in flipped.stdout
    assert "rank 1: flipped bit 20 of 0.weight[0] after step 7" in flipped.stdout
    assert "step 10: MISMATCH between the 2 replicas in 1 of 4 tensors" in flipped.stdout
    assert "0.weight: no majority among 2 replicas" in flipped.stdout
