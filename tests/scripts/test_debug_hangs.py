"""Tests of the scripts of chapters/development/debug/hangs.md: stack_diff.py, fr_compare.py and first_error.py.

Each script runs as a reader runs it, in a subprocess, on CPU; the demos start real gloo ranks.
"""
from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from launch_env import script_env as env
from script_loader import load_script

from conftest import require

REPO = Path(__file__).resolve().parents[2]
DEBUG = REPO / "chapters" / "development" / "debug"
STACK_DIFF = DEBUG / "stack_diff.py"
FR_COMPARE = DEBUG / "fr_compare.py"
FIRST_ERROR = DEBUG / "first_error.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def py(script: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env(),
                          timeout=timeout)


@pytest.mark.parametrize("script", [STACK_DIFF, FR_COMPARE, FIRST_ERROR], ids=lambda p: p.name)
def test_help(script: Path) -> None:
    result = py(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script.name}") and "--help" in result.stdout


@pytest.mark.parametrize("script,args,message", [
    (STACK_DIFF, ["no-such-dir"], "no such file or folder: no-such-dir"),
    (STACK_DIFF, ["demo", "--odd", "7", "--ranks", "4"], "--odd must be a rank between 0 and 3"),
    (FR_COMPARE, ["report", "no-such-dir"], "no-such-dir: no such folder"),
    (FR_COMPARE, ["demo", "--ranks", "1"], "--ranks must be between 2 and 8"),
    (FIRST_ERROR, ["no-such.log"], "no such file or folder: no-such.log"),
], ids=["stack-missing", "stack-odd", "fr-missing", "fr-ranks", "error-missing"])
def test_bad_arguments_exit_2(script: Path, args: list[str], message: str) -> None:
    result = py(script, *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


# ----------------------------------------------------------------------------------------- stack_diff
PYSPY = """=== vm pid {pid} rank {rank} local_rank {rank}: python train.py
Thread {pid} (idle): "MainThread"
{frames}
Thread {other} (idle): "pin_memory"
    wait (threading.py:320)
    _pin_memory_loop (pin_memory.py:55)
"""
COMMON = ["    all_reduce (torch/distributed/distributed_c10d.py:3252)", "    reduce_grads (train.py:40)",
          "    train_step (train.py:88)", "    main (train.py:120)", "    <module> (train.py:130)"]
ODD = ["    save_checkpoint (ckpt.py:12)", "    train_step (train.py:91)", "    main (train.py:120)",
       "    <module> (train.py:130)"]


def test_stack_diff_names_the_odd_rank_in_pyspy_dumps(tmp_path: Path) -> None:
    for rank in range(8):
        frames = ODD if rank == 5 else COMMON
        (tmp_path / f"vm-rank{rank}-pid{100 + rank}.txt").write_text(
            PYSPY.format(pid=100 + rank, rank=rank, other=900 + rank, frames="\n".join(frames)))
    (tmp_path / "vm-rank?-pid99.txt").write_text("=== vm pid 99 rank ? local_rank ?: torchrun\n")
    result = py(STACK_DIFF, str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("8 ranks, 2 distinct main-thread stack(s)")
    assert "[majority] ranks 0-4,6-7 (7): innermost first" in out
    assert "[different] rank 5: innermost first" in out
    assert ("rank 5: parts from it inside train_step: here save_checkpoint (ckpt.py:12), "
            "there reduce_grads (train.py:40)") in out
    assert "skipped" in result.stderr and "no rank" in result.stderr  # the launcher's dump has no rank


def test_stack_diff_reads_faulthandler_dumps(tmp_path: Path) -> None:
    body = ('Timeout (0:00:03)!\nThread 0x00007f0000000001 (most recent call first):\n'
            '  File "/x/threading.py", line 320 in wait\n'
            'Thread 0x00007f0000000002 (most recent call first):\n{frames}\n')
    frames = {0: '  File "/x/train.py", line 40 in reduce_grads\n  File "/x/train.py", line 130 in <module>',
              1: '  File "/x/train.py", line 40 in reduce_grads\n  File "/x/train.py", line 130 in <module>',
              2: '  File "/x/data.py", line 7 in next_batch\n  File "/x/train.py", line 130 in <module>'}
    for rank, text in frames.items():
        (tmp_path / f"stacks-rank{rank}.txt").write_text(body.format(frames=text))
    result = py(STACK_DIFF, *(str(p) for p in sorted(tmp_path.iterdir())))
    assert result.returncode == 0, result.stderr
    assert "[majority] ranks 0-1 (2)" in result.stdout
    assert "rank 2: parts from it inside <module>: here next_batch (data.py:7), there reduce_grads (train.py:40)" \
        in result.stdout


def test_stack_diff_ranges() -> None:
    module = load_script(STACK_DIFF)
    assert module.ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert module.ranges([3]) == "3"


@pytest.mark.xdist_group("torchrun")
def test_stack_diff_demo_finds_the_rank_that_skipped(tmp_path: Path) -> None:
    require(HAVE_TORCH, "torch is not installed")
    result = py(STACK_DIFF, "demo", "--ranks", "3", "--odd", "1", "--after", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[majority] ranks 0,2 (2)" in result.stdout
    assert "rank 1: parts from it inside demo_rank: here load_next_shard" in result.stdout
    assert len(list(tmp_path.glob("stacks-rank*.txt"))) == 3


# ----------------------------------------------------------------------------------------- fr_compare
def fr_entry(seq: int, name: str, sizes: list, line: int) -> dict:
    return {"collective_seq_id": seq, "p2p_seq_id": 0, "is_p2p": False, "process_group": ("0", "default_pg"),
            "profiling_name": name, "input_sizes": sizes, "input_dtypes": ["Float"], "state": "scheduled",
            "frames": [{"name": "all_reduce", "filename": "/site-packages/torch/distributed/distributed_c10d.py",
                        "line": 3245},
                       {"name": "train_step", "filename": "/job/train.py", "line": line}]}


def test_fr_compare_names_a_mismatched_operation(tmp_path: Path) -> None:
    common = [fr_entry(s, "nccl:all_reduce", [[1024]], 50) for s in range(1, 4)]
    dumps = {0: common + [fr_entry(4, "nccl:all_reduce", [[8]], 60)],
             1: common + [fr_entry(4, "nccl:broadcast", [[8]], 70)]}
    for rank, entries in dumps.items():
        data = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
                "pg_status": {}, "entries": entries}
        (tmp_path / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(data))
    result = py(FR_COMPARE, "report", str(tmp_path), "--prefix", "nccl_trace_rank_")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "FIRST MISMATCH #4: the ranks issued different collectives:" in out
    assert "rank 0: nccl:all_reduce sizes [[8]] Float at train_step (train.py:60)" in out
    assert "rank 1: nccl:broadcast sizes [[8]] Float at train_step (train.py:70)" in out


@pytest.mark.xdist_group("torchrun")
def test_fr_compare_demo_names_the_missing_rank(tmp_path: Path) -> None:
    require(HAVE_TORCH, "torch is not installed")
    result = py(FR_COMPARE, "demo", "--out", str(tmp_path), "--ranks", "2", "--steps", "3", "--timeout", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "ranks exited with [1, 0]" in out
    # 3 gradient all-reduces on both ranks, then the metric all-reduce (#4) on rank 0 only
    assert "rank 0: last collective #4 gloo:all_reduce sizes [[1]] Float" in out
    assert "rank 1: last collective #3 gloo:all_reduce sizes [[256]] Float" in out
    assert "FIRST MISMATCH #4: gloo:all_reduce sizes [[1]] Float issued by ranks [0], never by ranks [1]" in out
    assert "rank 1 stopped after #3, issued at: demo_rank (fr_compare.py:" in out


# ---------------------------------------------------------------------------------------- first_error
def test_first_error_tells_a_cause_from_its_echoes(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_text("\n".join([
        "[rank0]: step 100 loss 2.31",
        "[rank1]: step 100 loss 2.30",
        "[rank2]: step 100 loss 2.32",
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "train.py", line 88, in train_step',
        "[rank2]:     loss = model(batch)",
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "[rank0]: [E1128 07:01:02.000000 ProcessGroupNCCL.cpp:632] Watchdog caught collective operation timeout",
        "[rank1]: RuntimeError: Connection reset by peer",
        "[rank3]: step 100 loss 2.29",
    ]) + "\n")
    result = py(FIRST_ERROR, str(log))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("4 ranks in the logs; 3 logged an error")
    assert "rank   2 CAUSE? [out of memory] torch.OutOfMemoryError: CUDA out of memory." in out
    assert "rank   0 echo   [collective timeout]" in out
    assert "rank   1 echo   [peer went away]" in out
    assert "ranks without an error line: [3]" in out
    assert "look first at rank [2]: out of memory" in out


def test_first_error_classifies_cuda_errors(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (tmp_path / "rank1.log").write_text("RuntimeError: Timed out waiting 1800000ms for recv operation to complete\n")
    result = py(FIRST_ERROR, str(tmp_path))
    assert "rank   0 CAUSE? [CUDA error]" in result.stdout
    assert "rank   1 echo   [collective timeout]" in result.stdout


@pytest.mark.xdist_group("torchrun")
def test_first_error_demo_finds_the_failing_rank(tmp_path: Path) -> None:
    require(HAVE_TORCH, "torch is not installed")
    result = py(FIRST_ERROR, "demo", "--out", str(tmp_path), "--ranks", "3", "--bad-rank", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "torchrun exited with 1" in out
    assert "rank   1 CAUSE? [exception] ValueError: token id 50304 is out of range for a vocabulary of 50304" in out
    assert "torchrun's root cause: rank 1, exit code 1" in out
    assert "look first at rank [1]" in out
