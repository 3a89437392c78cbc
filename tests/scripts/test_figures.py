"""Tests for chapters/figures/make_figures.py, the script that draws the book's data figures.

One run of the script writes every figure into a temporary folder. Each must be a valid SVG, every
derived figure must be byte-for-byte the file committed in the chapters (so the committed images can
always be regenerated), the measured figure's data must keep its series and their shape, and every
figure must be shown by a chapter with alt text.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import require

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = REPO / "chapters"
SCRIPT = CHAPTERS / "figures" / "make_figures.py"
MEASURED = {"training/images/loss-curves-lr.svg"}  # drawn from a training run: numbers may differ by CPU

HAVE_DEPS = all(importlib.util.find_spec(m) is not None for m in ("torch", "matplotlib"))


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> tuple[Path, list[str]]:
    require(HAVE_DEPS, "torch and matplotlib are needed (pip install -e '.[scripts]')")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    listed = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True, env=env,
                            timeout=60, check=True).stdout.split()
    out = tmp_path_factory.mktemp("figures")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out-root", str(out)], capture_output=True, text=True,
                          env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out, listed


def test_lists_at_least_fifteen_figures(drawn):
    _, listed = drawn
    assert len(listed) >= 15
    assert len(set(listed)) == len(listed)


def test_each_figure_is_valid_svg(drawn):
    out, listed = drawn
    for rel in listed:
        root = ET.parse(out / rel).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg", rel
        text = (out / rel).read_text()
        assert "<dc:date>" not in text, f"{rel}: a date makes the output change on every run"


def test_derived_figures_match_the_committed_files(drawn):
    out, listed = drawn
    for rel in listed:
        committed = CHAPTERS / rel
        assert committed.is_file(), f"{rel} is not committed; run {SCRIPT.name} and commit the image"
        if rel not in MEASURED:
            assert (out / rel).read_bytes() == committed.read_bytes(), \
                f"{rel} differs from what {SCRIPT.name} draws; rerun the script and commit the result"


def test_measured_loss_curves_keep_their_series_and_shape(drawn):
    out, _ = drawn
    new = json.loads((out / "training/images/loss-curves-lr.json").read_text())
    old = json.loads((CHAPTERS / "training/images/loss-curves-lr.json").read_text())
    assert list(new["runs"]) == list(old["runs"])
    for label, run in new["runs"].items():
        assert len(run["loss"]) == len(old["runs"][label]["loss"]) == len(run["grad_norm"])
    stable, noisy, blown = (new["runs"][k] for k in new["runs"])
    tail = {k: sum(r["loss"][-50:]) / 50 for k, r in new["runs"].items()}
    assert tail[list(tail)[0]] < tail[list(tail)[1]] < tail[list(tail)[2]]  # higher rate, worse end
    assert stable["loss"][-1] < 0.6 * stable["loss"][0]
    assert max(blown["loss"]) > 10 * new["uniform_loss"]  # the blow-up the chapter describes
    assert max(blown["grad_norm"]) > 10 * max(noisy["grad_norm"])


def test_every_figure_is_shown_with_alt_text(drawn):
    _, listed = drawn
    pages = {p: p.read_text() for p in CHAPTERS.rglob("*.md") if "zh" not in p.relative_to(CHAPTERS).parts}
    for rel in listed:
        target = CHAPTERS / rel
        shown = [m for page, text in pages.items()
                 for m in re.finditer(r"!\[([^\]]*)\]\(([^)]+)\)", text) if (page.parent / m[2]).resolve() == target]
        assert shown, f"no chapter shows {rel}"
        assert all(len(m[1].split()) >= 10 for m in shown), f"{rel}: alt text too short"
