"""Tests of the scripts of chapters/development/debug/performance-regressions.md: straggler_report.py,
bench_gate.py and trace_diff.py, run as a reader runs them, on CPU."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from launch_env import script_env as env

from conftest import require

REPO = Path(__file__).resolve().parents[2]
DEBUG = REPO / "chapters" / "development" / "debug"
STRAGGLER = DEBUG / "straggler_report.py"
GATE = DEBUG / "bench_gate.py"
TRACE = DEBUG / "trace_diff.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def py(script: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env(),
                          cwd=cwd, timeout=240)


@pytest.mark.parametrize("script", [STRAGGLER, GATE, TRACE], ids=lambda p: p.name)
def test_help(script: Path) -> None:
    result = py(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script.name}") and "--help" in result.stdout


@pytest.mark.parametrize("script,args,message", [
    (STRAGGLER, ["--ranks", "9"], "--ranks must be between 2 and 8"),
    (GATE, ["--baseline", "1"], "no benchmark command: put it after --"),
    (GATE, ["--metric", "no group", "--baseline", "1", "--", "true"], "--metric needs exactly one group"),
    (TRACE, ["a.json", "b.json"], "a.json: no such file"),
], ids=["straggler-ranks", "gate-command", "gate-metric", "trace-missing"])
def test_bad_arguments_exit_2(script: Path, args: list[str], message: str) -> None:
    result = py(script, *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.xdist_group("torchrun")
def test_straggler_is_the_rank_that_waits_least() -> None:
    require(HAVE_TORCH, "torch is not installed")
    result = py(STRAGGLER, "--ranks", "3", "--slow-rank", "1", "--extra-ms", "40", "--steps", "8")
    assert result.returncode == 0, result.stderr
    rows = {int(m[1]): (float(m[2]), float(m[3])) for m in
            re.finditer(r"^\s+(\d)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+$", result.stdout, re.M)}
    assert set(rows) == {0, 1, 2}, result.stdout
    assert rows[1][0] > rows[0][0] + 30 and rows[1][0] > rows[2][0] + 30  # 40 ms of extra compute
    assert rows[1][1] < rows[0][1] and rows[1][1] < rows[2][1]  # and the least time in the all-reduce
    assert "straggler: rank 1 computes" in result.stdout


def test_gate_verdicts_and_exit_codes(tmp_path: Path) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text("import sys\nprint(f'step_ms={sys.argv[1]}')\n")
    args = ["--metric", r"step_ms=([0-9.]+)", "--repeat", "3", "--tolerance", "0.1", "--"]
    base = tmp_path / "base.txt"
    record = py(GATE, "--record", str(base), *args, sys.executable, str(bench), "10")
    assert record.returncode == 0 and float(base.read_text()) == 10.0
    good = py(GATE, "--baseline-file", str(base), *args, sys.executable, str(bench), "10.9")
    assert good.returncode == 0 and "baseline 10, limit 11" in good.stdout and "verdict: good" in good.stdout
    bad = py(GATE, "--baseline-file", str(base), *args, sys.executable, str(bench), "11.5")
    assert bad.returncode == 1 and "verdict: regression" in bad.stdout
    faster = py(GATE, "--baseline", "100", "--higher-is-better", *args, sys.executable, str(bench), "80")
    assert faster.returncode == 1  # a throughput that fell by 20%
    broken = py(GATE, "--baseline", "10", *args, sys.executable, "-c", "raise SystemExit(3)")
    assert broken.returncode == 125 and "untestable" in broken.stdout


def test_gate_demo_bisects_to_the_commit_that_doubled_the_work() -> None:
    require(shutil.which("git") is not None, "git is not installed")
    result = py(GATE, "demo")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"git bisect run tested \d commits; first bad commit: \w{7} new config defaults", result.stdout)


def test_trace_diff_on_hand_made_traces(tmp_path: Path) -> None:
    def trace(ops: list[tuple[str, float, float]]) -> dict:
        events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
                   "ts": 0, "dur": 100}]
        events += [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": d} for n, ts, d in ops]
        return {"traceEvents": events}
    # aten::linear (40 us) contains aten::addmm (30 us): self times 10 and 30
    before = trace([("aten::linear", 0, 40), ("aten::addmm", 5, 30)])
    after = trace([("aten::linear", 0, 40), ("aten::addmm", 5, 30), ("aten::copy_", 50, 20)])
    (tmp_path / "a.json").write_text(json.dumps(before))
    (tmp_path / "b.json").write_text(json.dumps(after))
    out = py(TRACE, str(tmp_path / "a.json"), str(tmp_path / "b.json")).stdout
    assert "step time: 0.10 ms -> 0.10 ms (+0%), 1 and 1 steps" in out
    assert "self time per step, all listed events: 0.04 ms -> 0.06 ms" in out
    first_row = out.splitlines()[3]
    assert first_row.startswith("aten::copy_") and first_row.endswith("new") and "+0.02" in first_row


def test_trace_diff_demo_names_the_new_operators(tmp_path: Path) -> None:
    require(HAVE_TORCH, "torch is not installed")
    result = py(TRACE, "demo", "--out", str(tmp_path), "--steps", "3", "--top", "12")
    assert result.returncode == 0, result.stderr
    rows = {ln.split()[0]: ln for ln in result.stdout.splitlines() if ln.startswith("aten::")}
    assert rows["aten::erf"].endswith("new") and rows["aten::gelu"].endswith("gone")
    assert "3 -> 35" in rows["aten::mul"]
