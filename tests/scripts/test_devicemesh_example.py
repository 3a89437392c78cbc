"""Tests for chapters/training/devicemesh_tp_fsdp.py, the composed DeviceMesh example of model-parallelism.md.

The argument checks and the single-process reference run in process or as a plain script; the parallel runs
use `torchrun --standalone` on CPU with the gloo backend: 4 ranks as dp=2 x tp=2 (TP inside FSDP2), and 2 ranks
as a 2-stage pipeline, each compared with the single-process reference by the script itself.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from launch_env import script_env as clean_env

from conftest import require

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "devicemesh_tp_fsdp.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
# the reference losses and gradient norms (before clipping to 1) of the default model and data (seed 0),
# printed by the script on CPU with torch 2.13
REFERENCE = [4.344289, 3.548801, 3.077055, 2.967632, 2.434819]
REFERENCE_NORMS = [1.31622, 1.24287, 1.17798, 1.05643, 1.00854]


@pytest.fixture(autouse=True)
def _needs_torch():
    require(HAVE_TORCH, "torch is not installed (pip install -e '.[scripts]')")


def run_plain(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=clean_env(**env), timeout=120, cwd=SCRIPT.parent)


def torchrun(nproc: int, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(SCRIPT), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=240, cwd=SCRIPT.parent)


def loss_rows(out: str) -> list[tuple[float, float, float, float]]:
    """(reference loss, parallel loss, reference grad norm, parallel grad norm) per step."""
    row = r"^\| \d+ \| ([\d.]+) \| ([\d.]+) \| [\d.e+-]+ \| ([\d.]+) \| ([\d.]+) \|$"
    return [tuple(float(v) for v in m) for m in re.findall(row, out, re.M)]


def test_help():
    proc = run_plain("--help")
    assert proc.returncode == 0
    assert "--tp" in proc.stdout and "--pp" in proc.stdout and "torchrun" in proc.stdout


@pytest.mark.parametrize("args, world, message", [
    (["--tp", "3"], "4", "not divisible"),
    (["--tp", "2", "--hidden", "33"], "2", "--hidden 33"),
    (["--pp", "2", "--tp", "1", "--layers", "3"], "2", "--layers 3"),
    (["--tp", "1", "--batch", "3"], "2", "--batch 3"),
    (["--steps", "0"], "1", "positive integer"),
    (["--lr", "abc"], "1", "positive number"),
    (["--clip", "0"], "1", "positive number"),
])
def test_bad_arguments_are_usage_errors(args, world, message):
    proc = run_plain(*args, WORLD_SIZE=world)
    assert proc.returncode == 2, proc.stdout
    assert "usage:" in proc.stderr and message in proc.stderr


def test_reference_alone_without_torchrun():
    proc = run_plain()
    assert proc.returncode == 0, proc.stderr
    assert "not launched by torchrun" in proc.stdout
    rows = re.findall(r"^\| \d+ \| ([\d.]+) \| ([\d.]+) \|$", proc.stdout, re.M)
    losses, norms = [float(a) for a, _ in rows], [float(b) for _, b in rows]
    assert losses == pytest.approx(REFERENCE, abs=2e-5)
    assert norms == pytest.approx(REFERENCE_NORMS, abs=2e-5)
    assert losses[-1] < 0.6 * losses[0]  # it learns: the targets are a fixed permutation of the tokens
    assert norms[0] > 1  # so the clipping to 1 is active in the first steps


def test_tp_inside_fsdp_on_four_ranks_matches_the_reference():
    proc = torchrun(4)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "mesh (pp, dp, tp) = (1, 2, 2)" in out and "[[[0, 1], [2, 3]]]" in out
    # a ColwiseParallel weight is split by TP on dim 0, then FSDP shards that shard again on dim 0:
    # 128 x 32 -> 64 x 32 per TP rank -> 32 x 32 per (dp, tp) rank
    assert "0.up.weight: global (128, 32), local (32, 32), mesh dims ('dp', 'tp')" in out
    assert "0.down.weight: global (32, 128), local (16, 64)" in out  # RowwiseParallel: dim 1 by TP
    # the RowwiseParallel bias is replicated over TP: the mesh-aware clipping must not count it twice
    assert "0.down.bias: global (32,), local (16,), mesh dims ('dp', 'tp'), placements (Shard(dim=0), Replicate())" in out
    rows = loss_rows(out)
    assert len(rows) == 5
    for ref, par, ref_norm, par_norm in rows:
        assert abs(ref - par) <= 1e-4
        assert abs(ref_norm - par_norm) <= 1e-4 * ref_norm
    assert [r[0] for r in rows] == pytest.approx(REFERENCE, abs=2e-5)
    assert "OK: largest loss difference" in out


def test_two_stage_pipeline_on_two_ranks_matches_the_reference():
    proc = torchrun(2, "--pp", "2", "--tp", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "mesh (pp, dp, tp) = (2, 1, 1)" in out
    rows = loss_rows(out)
    assert len(rows) == 5 and all(abs(a - b) <= 1e-4 and abs(na - nb) <= 1e-4 * na for a, b, na, nb in rows)
    assert "OK: largest loss difference" in out
