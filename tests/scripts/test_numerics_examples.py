"""Tests of chapters/development/testing/numerics_examples.py, the examples of numerics.md."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTING = REPO / "chapters" / "development" / "testing"
EXAMPLES = TESTING / "numerics_examples.py"
GOLDEN = TESTING / "numerics_golden.json"


@pytest.fixture
def examples():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("numerics_examples", EXAMPLES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_all_examples_pass_under_pytest(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    shutil.copy(EXAMPLES, tmp_path)  # a scratch folder, so hypothesis' .hypothesis folder lands there
    shutil.copy(GOLDEN, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "UPDATE_GOLDEN"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "-p", "no:randomly", "numerics_examples.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = int(re.search(r"(\d+) passed", result.stdout).group(1))
    assert passed >= 13, result.stdout  # 16 with hypothesis installed, 13 without


def test_committed_golden_file_matches(examples) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["shape"] == [3, 4] and len(golden["values"]) == 12
    examples.test_golden_output()


def test_golden_update_then_check_then_catch_a_change(examples, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(examples, "GOLDEN", tmp_path / "golden.json")
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    with pytest.raises(pytest.fail.Exception, match="is missing; create it with UPDATE_GOLDEN=1"):
        examples.test_golden_output()
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(pytest.skip.Exception, match="rewrote golden.json"):
        examples.test_golden_output()
    monkeypatch.delenv("UPDATE_GOLDEN")
    examples.test_golden_output()
    data = json.loads(examples.GOLDEN.read_text())
    data["values"][5] += 1e-3
    examples.GOLDEN.write_text(json.dumps(data))
    with pytest.raises(AssertionError, match="golden file written with torch"):
        examples.test_golden_output()


def test_main_prints_the_tables(examples, capsys) -> None:
    assert examples.main() == 0
    out = capsys.readouterr().out
    for heading in ("machine epsilon", "fp32 dot products vs fp64", "chunked attention", "central difference"):
        assert heading in out
    assert re.search(r"torch\.bfloat16\s+eps=0\.007812", out)
