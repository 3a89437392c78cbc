"""Tests of chapters/training/fault-tolerance/straggler_detector.py, the per-rank step-time outlier detector.

Hand-built inputs of 8 ranks whose healthy times are fixed per rank (1.00, 1.01, 0.99, 1.00,
1.02, 1.00, 0.98, 1.00 s), so every median, MAD and robust z-score can be computed by hand:
no straggler, one persistent straggler, a one-off spike, and a whole-cluster slowdown that
must not be blamed on any rank. The seeded synthetic example and the usage errors run as a
reader runs them, in a subprocess.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "fault-tolerance" / "straggler_detector.py"
BASE = [1.00, 1.01, 0.99, 1.00, 1.02, 1.00, 0.98, 1.00]
STEPS = 30
# Without outliers every step has median 1.00 and MAD 0.005, below the floor 0.01 x 1.00, so the
# scale is 1.4826 x 0.01 and the largest healthy score is 0.02 / 0.014826 = 1.35, under 3.5.
SCALE = 1.4826 * 0.01


def table(change=lambda step, rank, t: t) -> dict[int, dict[int, float]]:
    return {s: {r: change(s, r, t) for r, t in enumerate(BASE)} for s in range(STEPS)}


def csv_text(tab: dict[int, dict[int, float]]) -> str:
    rows = ["step,rank,seconds"] + [f"{s},{r},{t}" for s in sorted(tab) for r, t in sorted(tab[s].items())]
    return "\n".join(rows) + "\n"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          input=stdin)


@pytest.fixture(scope="module")
def sd():
    return load_script(SCRIPT)


def analyse(sd, tab, **params):
    return sd.analyse(tab, sd.Params(**{"window": 10, "persistence": 5, **params}))


def test_help():
    proc = run("--help")
    assert proc.returncode == 0
    assert "--persistence" in proc.stdout and "--synthetic" in proc.stdout


def test_step_scores_by_hand(sd):
    med, mad, z = sd.step_scores(dict(enumerate(BASE)), 0.01)
    assert (med, mad) == (pytest.approx(1.00), pytest.approx(0.005))
    assert z[4] == pytest.approx(0.02 / SCALE) and max(z.values()) < 3.5
    # a rank at 1.30: sorted deviations 0, 0, 0, .01, .01, .02, .02, .30 -> MAD 0.01
    med, mad, z = sd.step_scores({**dict(enumerate(BASE)), 5: 1.30}, 0.01)
    assert (med, mad) == (pytest.approx(1.00), pytest.approx(0.01))
    assert z[5] == pytest.approx(0.30 / SCALE)  # 20.23


def test_no_straggler(sd, tmp_path):
    rep = analyse(sd, table())
    assert rep.stragglers == [] and rep.transients == [] and rep.cluster_slow == []
    assert rep.typical_step_seconds == pytest.approx(1.00)
    assert rep.job_seconds == pytest.approx(1.02 * STEPS)
    path = tmp_path / "steps.csv"
    path.write_text(csv_text(table()))
    proc = run(str(path))
    assert proc.returncode == 0, proc.stderr
    assert "stragglers: none" in proc.stdout and "transient spikes: none" in proc.stdout


def test_one_persistent_straggler(sd, tmp_path):
    tab = table(lambda s, r, t: 1.30 if (r == 5 and s >= 10) else t)
    rep = analyse(sd, tab)
    assert [s.rank for s in rep.stragglers] == [5]
    s = rep.stragglers[0]
    # slow from step 10; the 5th slow step of the 10-step window is step 14
    assert (s.onset, s.flagged_at, s.slow_steps, s.slow_in_last_window) == (10, 14, 20, 10)
    assert s.median_z == pytest.approx(0.30 / SCALE, abs=0.01)
    assert s.median_slowdown == pytest.approx(1.30)
    # 20 steps at 1.30 against the next-slowest 1.02: 20 x 0.28 s
    assert s.lost_seconds == pytest.approx(5.6)
    assert rep.job_seconds == pytest.approx(10 * 1.02 + 20 * 1.30)
    assert rep.transients == [] and rep.cluster_slow == []
    path = tmp_path / "steps.csv"
    path.write_text(csv_text(tab))
    proc = run(str(path), "--window", "10", "--persistence", "5")
    assert proc.returncode == 1, proc.stderr
    assert "rank 5: flagged at step 14 (slow since step 10), 20 slow steps, 10 of the last 10" in proc.stdout
    assert "+30.0% against the step median" in proc.stdout and "5.60 s" in proc.stdout
    # the same data as JSON lines, from stdin, with a JSON report
    lines = "".join(json.dumps({"step": st, "rank": r, "seconds": t}) + "\n"
                    for st in sorted(tab) for r, t in sorted(tab[st].items()))
    proc = run("-", "--window", "10", "--persistence", "5", "--json", stdin=lines)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stragglers"][0]["rank"] == 5 and out["stragglers"][0]["flagged_at"] == 14


def test_persistence_not_reached_in_a_short_window(sd):
    # slow every third step from step 10 (10, 13, 16, ...): at most 4 slow steps in any 10 consecutive ones
    tab = table(lambda s, r, t: 1.30 if (r == 5 and s >= 10 and s % 3 == 1) else t)
    rep = analyse(sd, tab)
    assert rep.stragglers == []
    assert [t.rank for t in rep.transients] == [5]
    assert rep.transients[0].steps == [10, 13, 16, 19, 22, 25, 28]
    rep = analyse(sd, tab, persistence=3)
    assert [s.rank for s in rep.stragglers] == [5] and rep.stragglers[0].flagged_at == 16


def test_one_off_spike_is_not_a_straggler(sd, tmp_path):
    tab = table(lambda s, r, t: 3.0 if (r == 2 and s == 7) else t)
    rep = analyse(sd, tab)
    assert rep.stragglers == [] and rep.cluster_slow == []
    assert [(t.rank, t.steps, t.max_slowdown) for t in rep.transients] == [(2, [7], pytest.approx(3.0))]
    path = tmp_path / "spike.csv"
    path.write_text(csv_text(tab))
    proc = run(str(path))
    assert proc.returncode == 0, proc.stderr
    assert "rank 2: step 7, up to +200.0%" in proc.stdout


def test_whole_cluster_slowdown_is_not_blamed_on_a_rank(sd):
    tab = table(lambda s, r, t: round(t * 1.5, 6) if 10 <= s <= 14 else t)
    rep = analyse(sd, tab)
    assert rep.stragglers == [] and rep.transients == []
    assert rep.typical_step_seconds == pytest.approx(1.00)
    assert len(rep.cluster_slow) == 1
    c = rep.cluster_slow[0]
    assert (c.first, c.last) == (10, 14)
    assert c.median_seconds == pytest.approx(1.5) and c.factor == pytest.approx(1.5)


def test_synthetic_example_is_deterministic_and_found():
    first, second = run("--synthetic"), run("--synthetic")
    assert first.returncode == 1, first.stderr
    assert first.stdout == second.stdout
    assert "rank 11: flagged at step 90 (slow since step 80)" in first.stdout
    assert "steps 120-129: step median" in first.stdout
    assert "rank 3: steps 44, 50" in first.stdout
    emitted = run("--synthetic", "--emit")
    assert emitted.returncode == 0 and emitted.stdout.startswith("step,rank,seconds\n")
    assert len(emitted.stdout.splitlines()) == 1 + 16 * 200
    quiet = run("--synthetic", "--slow", "none", "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["stragglers"] == []


@pytest.mark.parametrize("args, message", [
    (["--synthetic", "--threshold", "-1"], "must be a finite number"),
    (["--synthetic", "--window", "3", "--persistence", "5"], "cannot exceed --window"),
    (["--synthetic", "--slow", "banana"], "RANK:FACTOR:FROM"),
    (["--synthetic", "--slow", "20:1.1:5"], "does not exist"),
    ([], "either an input file or --synthetic"),
    (["/no/such/file.csv"], "cannot read"),
])
def test_usage_errors(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


@pytest.mark.parametrize("text, message", [
    ("step,rank\n0,0\n", "missing: seconds"),
    ("step,rank,seconds\n0,0,1\n0,1,1\n0,0,1\n", "appears twice"),
    ("step,rank,seconds\n0,0,1\n0,1,1\n", "at least 3 ranks"),
    ("step,rank,seconds\n0,0,fast\n", "seconds a number"),
    ('{"step": 0, "rank": 0}\n', "keys step, rank and seconds"),
])
def test_bad_input_is_a_usage_error(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    proc = run(str(path))
    assert proc.returncode == 2
    assert message in proc.stderr
