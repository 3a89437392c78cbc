"""Tests of the scripts of chapters/development/debug/recipes.md and of the testing chapter's example module.

Each script runs as a reader runs it, in a subprocess, on CPU (gloo for two ranks).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from launch_env import script_env as env

from conftest import require

REPO = Path(__file__).resolve().parents[2]
DEBUG = REPO / "chapters" / "development" / "debug"
TESTING = REPO / "chapters" / "development" / "testing"
sys.path.insert(0, str(TESTING))

from testing_utils import get_free_port, run_cmd  # noqa: E402

ACTIVATIONS = DEBUG / "activation_dump.py"
OOM = DEBUG / "oom_snapshot.py"
PYSPY_ALL = DEBUG / "pyspy_all_ranks.py"
TRACER = DEBUG / "rank_tracer.py"
MISMATCH = DEBUG / "collective_mismatch.py"
SCRIPTS = [ACTIVATIONS, OOM, PYSPY_ALL, TRACER, MISMATCH]


def py(script: Path, *args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=env(), cwd=cwd, timeout=timeout)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help(script: Path) -> None:
    result = py(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script.name}") and "--help" in result.stdout


# ------------------------------------------------------------------ activation_dump
def test_activation_dump_saves_the_calls_before_a_nan(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    dump = tmp_path / "dump.pt"
    result = py(ACTIVATIONS, "--out", str(dump), "--keep", "3")
    assert result.returncode == 0, result.stderr
    assert "stopped: NonFiniteActivation: non-finite output of 0 (Linear) at call 19" in result.stdout
    saved = torch.load(dump, weights_only=False)
    records = saved["records"]
    assert [r["module"] for r in records] == ["4", "<model>", "0"]  # batch 2 ends, batch 3 starts
    bad = records[-1]
    # the NaN sits in row 1 of a 4x8 input; each of the 16 outputs of that row depends on it
    assert bad["inputs"][0]["nan"] == 1 and bad["outputs"][0]["nan"] == 16
    assert torch.isnan(bad["input_tensors"][0][1, 5]) and bad["output_tensors"][0].shape == (4, 16)
    assert not list(tmp_path.glob("*.partial"))


def test_activation_dump_on_an_exception_names_the_open_calls(tmp_path: Path) -> None:
    result = py(ACTIVATIONS, "--out", str(tmp_path / "d.pt"), "--inject", "error")
    assert result.returncode == 0, result.stderr
    assert "mat1 and mat2 shapes cannot be multiplied (4x7 and 8x16)" in result.stdout
    assert "0                  entered with inputs [4, 7], never returned" in result.stdout


def test_activation_dump_saves_nothing_when_all_is_well(tmp_path: Path) -> None:
    result = py(ACTIVATIONS, "--out", str(tmp_path / "d.pt"), "--inject", "none")
    assert "no problem in 5 batches; nothing saved" in result.stdout
    assert not (tmp_path / "d.pt").exists()


# --------------------------------------------------------------------- oom_snapshot
def test_oom_snapshot_without_cuda_profiles_the_cpu(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this test covers the CPU path")
    result = py(OOM, "--hidden", "256", "--steps", "2", "--out", str(tmp_path / "s.pickle"))
    assert result.returncode == 0, result.stderr
    assert "CUDA is not available: no snapshot" in result.stdout
    # derived: per step two weight gradients of 256x1024 float32 (1 MiB each) and one
    # 64x1024 input gradient (0.25 MiB), all made by aten::mm: 2 x 2.25 = 4.50 MiB
    assert re.search(r"^aten::mm\s+4\.50 MiB\s+6$", result.stdout, re.M), result.stdout
    assert not (tmp_path / "s.pickle").exists()


# -------------------------------------------------------------- collective_mismatch
@pytest.mark.xdist_group("torchrun")
@pytest.mark.parametrize("mismatch,aspect", [("shape", "Tensor shapes: 4vs 5"), ("op", "Op type: ALLREDUCEvs BROADCAST")])
def test_detail_names_the_mismatch(mismatch: str, aspect: str) -> None:
    result = py(MISMATCH, "--mismatch", mismatch, "--debug", "detail", "--timeout", "30")
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("[rank ")]
    caught = [ln for ln in lines if "caught RuntimeError: Detected mismatch between collectives on ranks." in ln]
    assert len(caught) == 2, result.stdout
    rank0 = next(ln for ln in caught if ln.startswith("[rank 0]"))
    assert "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE" in rank0
    assert aspect in rank0
    assert "ranks exited with [1, 1]" in result.stdout


@pytest.mark.xdist_group("torchrun")
def test_detail_names_the_rank_that_never_came() -> None:
    result = py(MISMATCH, "--mismatch", "skip", "--debug", "detail", "--timeout", "5")
    assert "[rank 0] caught RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 5000 ms" in result.stdout
    assert "[rank 1] no error raised" in result.stdout


# ------------------------------------------------------------------ pyspy_all_ranks
@pytest.mark.xdist_group("torchrun")
def test_pyspy_dumps_every_rank_of_a_hung_job(tmp_path: Path) -> None:
    py_spy = Path(sys.executable).with_name("py-spy")
    require(py_spy.exists() or shutil.which("py-spy") is not None, "py-spy is not installed (pip install py-spy)")
    job = tmp_path / "hung_job.py"  # a unique path, so the pattern matches this job only
    shutil.copy(MISMATCH, job)
    proc = subprocess.Popen([sys.executable, str(job), "--mismatch", "skip", "--debug", "off", "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), start_new_session=True)
    try:
        ready = [proc.stdout.readline() for _ in range(2)]
        assert all("ready" in line for line in ready), ready
        for _attempt in range(60):  # rank 0 prints "ready" just before it enters the collective
            out = tmp_path / f"stacks{_attempt}"
            result = subprocess.run([sys.executable, str(PYSPY_ALL), "--pattern", re.escape(str(job)), "--out", str(out)],
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stderr
            dumps = {p.name.split("-")[1]: p.read_text() for p in out.glob("*-rank[01]-pid*.txt")}
            if "all_reduce" in dumps.get("rank0", "") and "busy_elsewhere" in dumps.get("rank1", ""):
                break
        assert set(dumps) == {"rank0", "rank1"}, list(out.iterdir())
        assert "all_reduce" in dumps["rank0"] and "run_rank" in dumps["rank0"]
        assert "busy_elsewhere" in dumps["rank1"] and "all_reduce" not in dumps["rank1"]
        assert len(list(out.glob("*-rank?-pid*.txt"))) == 3  # the launcher too, without a RANK
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_pyspy_all_ranks_reports_no_match() -> None:
    result = py(PYSPY_ALL, "--pattern", "no-process-has-this-name-1e9f")
    assert result.returncode == 1 and "no process matches" in result.stderr


# ---------------------------------------------------------------------- rank_tracer
@pytest.mark.xdist_group("torchrun")
def test_rank_tracer_writes_one_file_per_rank(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "toy.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n"
        "dist.init_process_group('gloo')\nrank = dist.get_rank()\nt = torch.ones(2) * (rank + 1)\n"
        "if rank == 1:\n    t = t * 10\ndist.all_reduce(t)\nprint(f'rank {rank}: {t.tolist()}')\n"
        "dist.destroy_process_group()\n")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(get_free_port()),
           str(TRACER), "--out", "traces", "--", "toy.py"]
    run_cmd(cmd, cwd=str(tmp_path), env=env(), timeout=180, echo=False)
    traces = {r: (tmp_path / "traces" / f"trace-rank{r}.txt").read_text().splitlines() for r in (0, 1)}
    for rank, lines in traces.items():
        assert lines and all(line.startswith(f"[rank {rank}] toy.py:") for line in lines), lines
        assert lines[-1] == f"[rank {rank}] toy.py:11: dist.destroy_process_group()"
    assert "[rank 1] toy.py:8: t = t * 10" in traces[1]
    assert not any("t = t * 10" in line for line in traces[0])


def test_rank_tracer_refuses_a_missing_script(tmp_path: Path) -> None:
    result = py(TRACER, "--out", str(tmp_path), "--", "nothing-here.py")
    assert result.returncode == 2 and "nothing-here.py: no such script" in result.stderr


# ------------------------------------------------------ the testing chapter's example
@pytest.mark.xdist_group("torchrun")
def test_the_distributed_example_module_passes() -> None:
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "test_distributed_example.py"], capture_output=True, text=True, cwd=TESTING,
                            env=env(), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^3 passed", result.stdout, re.M), result.stdout
