"""Tests for chapters/training/block_scaled_quant.py, the fake-quantization simulator of low-precision.md.

The element grids are checked against the bit layouts (and against torch's own FP8 and BF16 casts), the
scale rules against hand-computed blocks, and a full run against the properties the chapter reads from it.
"""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

from conftest import require

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "block_scaled_quant.py"
HAVE_NUMPY = importlib.util.find_spec("numpy") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def bsq():
    require(HAVE_NUMPY, "numpy is not installed (pip install -e '.[scripts]')")
    return load_script(SCRIPT)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def table_rows(out: str) -> dict[str, list[str]]:
    """The rows of the error table, keyed by format name, as lists of cell strings."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and cells[0] and not cells[0].startswith(":") and cells[0] != "format":
            rows[cells[0]] = cells
    return rows


def test_help():
    require(HAVE_NUMPY, "numpy is not installed")
    proc = run("--help")
    assert proc.returncode == 0
    assert "--mx-scale" in proc.stdout and "nvfp4" in proc.stdout


@pytest.mark.parametrize("args", [["--formats", "mxfp3"], ["--rows", "0"], ["--values", "1,x"],
                                  ["--cols", "1000"], ["--std", "-1"], ["--mx-scale", "round"]])
def test_bad_arguments_are_usage_errors(args):
    require(HAVE_NUMPY, "numpy is not installed")
    proc = run(*args)
    assert proc.returncode == 2, proc.stdout
    assert "usage:" in proc.stderr and "error:" in proc.stderr


def test_e2m1_grid_and_layout_limits(bsq):
    assert list(bsq.grid_of(bsq.ELEMENTS["e2m1"])) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    expected = {"e4m3": (448, 8, 127), "e5m2": (57344, 15, 124), "e2m3": (7.5, 2, 32), "e3m2": (28, 4, 32),
                "e2m1": (6, 2, 8)}
    for key, (largest, emax, count) in expected.items():
        e = bsq.ELEMENTS[key]
        assert (e.max, e.emax, len(bsq.grid_of(e))) == (largest, emax, count), key
    # smallest subnormals: 2^(1 - bias - M)
    assert bsq.grid_of(bsq.ELEMENTS["e4m3"])[1] == 2.0 ** -9
    assert bsq.grid_of(bsq.ELEMENTS["e5m2"])[1] == 2.0 ** -16


def test_round_to_element_ties_to_even_and_saturates(bsq):
    np = pytest.importorskip("numpy")
    e2m1 = bsq.ELEMENTS["e2m1"]
    x = np.array([5.0, -2.5, 1.25, 0.25, 0.75, 1.2, 7.0, -100.0, 0.2, 0.0])
    # 5 is halfway between 4 (even code) and 6; 2.5 between 2 (even) and 3; 1.25 between 1 (even) and 1.5;
    # 0.25 between 0 (even) and 0.5; 0.75 between 0.5 and 1 (even)
    assert list(bsq.round_to_element(x, e2m1)) == [4, -2, 1, 0, 1, 1, 6, -6, 0, 0]


def test_e4m3_e5m2_and_bf16_match_torch_casts(bsq):
    require(HAVE_TORCH, "torch is not installed")
    import torch
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(20000) * np.exp2(rng.integers(-12, 9, 20000))).astype(np.float32)
    for key, dtype, limit in (("e4m3", torch.float8_e4m3fn, 448.0), ("e5m2", torch.float8_e5m2, 57344.0)):
        inside = x[np.abs(x) <= limit]
        ours = bsq.round_to_element(inside.astype(np.float64), bsq.ELEMENTS[key])
        theirs = torch.from_numpy(inside).to(dtype).to(torch.float64).numpy()
        assert np.array_equal(ours, theirs), key
    ours = bsq.to_bf16(x)
    theirs = torch.from_numpy(x).to(torch.bfloat16).to(torch.float64).numpy()
    assert np.array_equal(ours, theirs)


def block(bsq, values, width=32):
    np = pytest.importorskip("numpy")
    x = np.zeros((1, width))
    x[0, :len(values)] = values
    return x


def test_mx_floor_scale_hand_computed(bsq):
    # amax 5: floor(log2 5) = 2; MXFP4 (emax 2) -> X = 2^0; MXFP8 E4M3 (emax 8) -> X = 2^-6
    x = block(bsq, [5.0, -2.5, 1.2, 0.1, 0.02])
    r4 = bsq.quantize(x, bsq.FORMATS["mxfp4"])
    assert list(r4.scales) == [1.0]
    assert list(r4.dequant[0, :5]) == [4, -2, 1, 0, 0]
    r8 = bsq.quantize(x, bsq.FORMATS["mxfp8"])
    assert list(r8.scales) == [2.0 ** -6]
    # 320 and -160 are E4M3 values; 76.8 -> 80; 6.4 -> 6.5; 1.28 -> 1.25 (all divided by 64 again)
    assert list(r8.dequant[0, :5]) == [5, -2.5, 80 / 64, 6.5 / 64, 1.25 / 64]


def test_mx_floor_clips_and_rceil_does_not(bsq):
    # amax 7: floor rule X = 2^(2 - 2) = 1, and 7 > 6 saturates; rceil X = 2^ceil(log2(7/6)) = 2
    x = block(bsq, [7.0, 1.0])
    floor = bsq.quantize(x, bsq.FORMATS["mxfp4"], "floor")
    rceil = bsq.quantize(x, bsq.FORMATS["mxfp4"], "rceil")
    assert (floor.scales[0], floor.clipped, floor.dequant[0, 0]) == (1.0, 1, 6.0)
    assert (rceil.scales[0], rceil.clipped, rceil.dequant[0, 0], rceil.dequant[0, 1]) == (2.0, 0, 8.0, 1.0)


def test_nvfp4_two_level_scale_hand_computed(bsq):
    # tensor amax 5: FP32 scale 5 / (448 x 6); block scale (5 / 6) / that = 448, an E4M3 value, so the decode
    # scale is 5/6 and the block maximum lands exactly on E2M1's 6
    x = block(bsq, [5.0, -2.5, 1.2, 0.1], width=16)
    r = bsq.quantize(x, bsq.FORMATS["nvfp4"])
    assert r.scales[0] == pytest.approx(5 / 6, rel=1e-6)
    got = r.dequant[0, :4]
    for value, want in zip(got, [5.0, -2.5, 1.25, 0.0]):  # 1.2 / (5/6) = 1.44 -> 1.5 -> 1.25
        assert value == pytest.approx(want, rel=1e-6)


def test_per_tensor_fp8_hand_computed(bsq):
    # amax 5 -> decode scale 5/448; 1.2 x 89.6 = 107.52 -> 104 (spacing 8 in [64, 128)); 0.1 -> 8.96 -> 9
    x = block(bsq, [5.0, 1.2, 0.1])
    r = bsq.quantize(x, bsq.FORMATS["fp8-tensor"])
    assert r.scales[0] == pytest.approx(5 / 448, rel=1e-7)
    assert r.dequant[0, 1] == pytest.approx(104 * 5 / 448, rel=1e-6)
    assert r.dequant[0, 2] == pytest.approx(9 * 5 / 448, rel=1e-6)


def test_block128_scale_is_a_power_of_two_that_never_clips(bsq):
    np = pytest.importorskip("numpy")
    x = bsq.make_tensor("normal", 8, 256, 1.0, 3)
    r = bsq.quantize(x, bsq.FORMATS["fp8-block128"])
    assert r.clipped == 0
    m, _ = np.frexp(r.scales)
    assert np.all(m == 0.5)


def test_bits_per_value(bsq):
    got = {n: bsq.FORMATS[n].bits_per_value() for n in ("bf16", "fp8-tensor", "mxfp8", "mxfp6", "mxfp4", "nvfp4")}
    assert got == {"bf16": 16, "fp8-tensor": 8, "mxfp8": 8.25, "mxfp6": 6.25, "mxfp4": 4.25, "nvfp4": 4.5}


def test_full_run_orders_the_formats_as_the_chapter_says():
    require(HAVE_NUMPY, "numpy is not installed")
    proc = run("--rows", "64", "--cols", "512")
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout)
    assert list(rows) == ["bf16", "fp8-tensor", "fp8-block128", "mxfp8", "mxfp6", "mxfp4", "nvfp4"]
    err = {k: float(v[5]) for k, v in rows.items()}
    assert err["bf16"] < err["fp8-tensor"] < err["nvfp4"] < err["mxfp4"]
    assert err["mxfp8"] < 0.04 and 0.08 < err["nvfp4"] < 0.11 < err["mxfp4"] < 0.13
    # SQNR is 20 log10(1 / rel. error)
    for cells in rows.values():
        assert float(cells[6]) == pytest.approx(-20 * math.log10(float(cells[5])), abs=0.3)
    assert run("--rows", "64", "--cols", "512").stdout == proc.stdout  # deterministic


def test_row_scales_defeat_one_scale_per_tensor():
    require(HAVE_NUMPY, "numpy is not installed")
    proc = run("--dist", "row-scales", "--rows", "64", "--cols", "256", "--formats", "fp8-tensor,mxfp8,nvfp4")
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout)
    flushed = {k: float(v[8].rstrip("%")) for k, v in rows.items()}
    row_err = {k: float(v[7]) for k, v in rows.items()}
    assert flushed["mxfp8"] == 0 and flushed["fp8-tensor"] > 10 and flushed["nvfp4"] > 10
    assert row_err["mxfp8"] < 0.04 < 0.2 < row_err["fp8-tensor"]


def test_grid_and_values_modes():
    require(HAVE_NUMPY, "numpy is not installed")
    proc = run("--grid", "e2m1")
    assert proc.returncode == 0 and proc.stdout.splitlines()[1] == "0 0.5 1 1.5 2 3 4 6"
    proc = run("--values", "5,-2.5,1.2", "--formats", "mxfp4,nvfp4")
    assert proc.returncode == 0, proc.stderr
    assert "| mxfp4 | 1 | 4 | -2 | 1 |" in proc.stdout
    assert "| nvfp4 | 0.833333 | 5 | -2.5 | 1.25 |" in proc.stdout
