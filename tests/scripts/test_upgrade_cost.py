"""Tests of chapters/compute/upgrade_cost.py, the cost-per-useful-FLOP calculator of the upgrade chapter.

The script runs as a reader runs it (a subprocess, options from JSON, TOML or the
command line) on a case small enough to compute by hand; hypothesis then checks
in-process that the break-even budget really is where the two totals meet.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "compute" / "upgrade_cost.py"

# Hand-computed case (see test_hand_computed_case for the arithmetic).
RENTED = {"name": "rented", "peak_tflops": 1000, "mfu": 0.5, "rental_per_hour": 2.0}
OWNED = {"name": "owned", "peak_tflops": 2000, "mfu": 0.5, "purchase_price": 26280, "amortisation_years": 3,
         "utilisation": 0.5, "power_kw": 1.0, "pue": 1.5, "overhead_per_hour": 0.2, "migration_cost": 3000,
         "memory_gb": 8, "scale_up_domain": 8}


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
    assert "break-even" in proc.stdout


@pytest.mark.parametrize("args, message", [
    ([], "give --options FILE or at least one --option"),
    (["--option", "name=a,peak_tflops=100,mfu=1.5,rental_per_hour=1"], "mfu is a fraction in (0, 1]"),
    (["--option", "name=a,peak_tflops=100,mfu=0.5"], "either rental_per_hour or purchase_price"),
    (["--option", "name=a,peak_tflops=100,mfu=0.5,rental_per_hour=1,colour=red"], "is not key=value"),
    (["--option", "name=a,peak_tflops=100,mfu=0.5,rental_per_hour=1", "--baseline", "b"], "is not the name of any option"),
    (["--option", "name=a,peak_tflops=100,mfu=0.5,rental_per_hour=1", "--gpus", "0"], "expected a positive integer"),
])
def test_bad_input_is_a_usage_error(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_hand_computed_case(tmp_path):
    # rented: useful = 1000 x 0.5 = 500 TFLOP/s; 2.00 per hour / 0.5 PFLOP/s = 4.00 per PFLOP-hour.
    #   3.6e21 FLOPs / (500e12 x 3600) = 2000 accelerator-hours -> 4000 money; 2000 / 10 / 24 = 8.333 days.
    # owned: capital = 26280 / (3 x 8760 x 0.5) = 2.00 per used hour; power 1.0 kW x 1.5 x 0.2 = 0.30;
    #   overhead 0.20 -> 2.50 per hour; useful 1000 TFLOP/s -> 2.50 per PFLOP-hour;
    #   1000 accelerator-hours -> 2500 + 3000 migration = 5500; 4.167 days.
    # break-even (no time value): 3000 / ((4.0 - 2.5) / 3.6e18) = 7.2e21 FLOPs = 2000 PFLOP-hours.
    path = tmp_path / "options.json"
    path.write_text(json.dumps([RENTED, OWNED]))
    out = run_json("--options", str(path), "--flops", "3.6e21", "--gpus", "10", "--price-per-kwh", "0.2")
    rented, owned = out["results"]
    assert out["baseline"] == "rented"
    assert rented["useful_tflops"] == pytest.approx(500)
    assert rented["cost_per_useful_pflop_hour"] == pytest.approx(4.0)
    assert rented["accelerator_hours"] == pytest.approx(2000)
    assert rented["money"] == pytest.approx(4000)
    assert rented["days"] == pytest.approx(2000 / 10 / 24)
    assert owned["cost_per_accelerator_hour"] == pytest.approx(2.5)
    assert owned["cost_per_useful_pflop_hour"] == pytest.approx(2.5)
    assert owned["accelerator_hours"] == pytest.approx(1000)
    assert owned["money"] == pytest.approx(5500)
    assert owned["break_even_flops"] == pytest.approx(7.2e21)
    assert owned["gates"] == []


def test_time_value_moves_the_break_even(tmp_path):
    # At 240 per day on 10 accelerators, a FLOP also costs 240 / (useful x 3600 x 10 x 24):
    #   rented 5.5556e-19, owned 2.7778e-19 on top of 1.1111e-18 and 6.9444e-19 of money.
    #   saving = 1.6667e-18 - 9.7222e-19 = 6.9444e-19 -> break-even 3000 / 6.9444e-19 = 4.32e21 FLOPs.
    path = tmp_path / "options.toml"
    path.write_text("\n".join(
        ["[[option]]"] + [f"{k} = {json.dumps(v)}" for k, v in RENTED.items()]
        + ["", "[[option]]"] + [f"{k} = {json.dumps(v)}" for k, v in OWNED.items()]))
    out = run_json("--options", str(path), "--flops", "3.6e21", "--gpus", "10", "--price-per-kwh", "0.2",
                   "--value-per-day", "240")
    rented, owned = out["results"]
    assert rented["time_value"] == pytest.approx(2000 / 10 / 24 * 240)
    assert owned["break_even_flops"] == pytest.approx(4.32e21)


def test_gates_are_reported():
    # 1e9 parameters x 16 bytes = 16 GB of state; 8 GB per accelerator needs 2, and --gpus is 1.
    owned = ",".join(f"{k}={v}" for k, v in OWNED.items())
    proc = run("--option", owned, "--params", "1e9", "--gpus", "1", "--need-domain", "72")
    assert proc.returncode == 0, proc.stderr
    assert "GATE owned: memory: the model state needs at least 2 accelerators" in proc.stdout
    assert "GATE owned: interconnect: scale-up domain 8 < 72 needed" in proc.stdout


def test_plot_writes_the_same_svg_for_the_same_inputs(tmp_path):
    pytest.importorskip("matplotlib")
    args = ["--flops", "3.6e21", "--gpus", "10", "--price-per-kwh", "0.2", "--value-per-day", "240",
            "--option", ",".join(f"{k}={v}" for k, v in RENTED.items()),
            "--option", ",".join(f"{k}={v}" for k, v in OWNED.items())]
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for path in (first, second):
        proc = run(*args, "--plot", str(path))
        assert proc.returncode == 0, proc.stderr
    text = first.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "break-even owned" in text
    assert first.read_bytes() == second.read_bytes()


def test_a_dearer_option_without_a_saving_never_breaks_even():
    out = run_json("--option", "name=old,peak_tflops=1000,mfu=0.5,rental_per_hour=1",
                   "--option", "name=new,peak_tflops=1000,mfu=0.4,rental_per_hour=2,migration_cost=10")
    assert out["results"][1]["break_even_flops"] is None


options = st.builds(
    dict,
    peak_tflops=st.floats(50, 10_000),
    mfu=st.floats(0.05, 1.0),
    rental_per_hour=st.floats(0.1, 20.0),
    migration_cost=st.floats(0.0, 1e6),
)


@settings(max_examples=200, deadline=None)
@given(base=options, new=options, gpus=st.integers(1, 100_000), value_per_day=st.floats(0.0, 1e6))
def test_totals_meet_at_the_break_even(base, new, gpus, value_per_day):
    m = load()
    a = m.make_option({"name": "base", **base})
    b = m.make_option({"name": "new", **new})
    flops = m.break_even_flops(a, b, 0.0, gpus, value_per_day)
    if flops is None or flops == 0.0:
        return
    args = argparse.Namespace(flops=flops, gpus=gpus, price_per_kwh=0.0, value_per_day=value_per_day,
                              baseline=None, params=0.0, bytes_per_param=16.0, need_domain=0)
    ra, rb = m.evaluate([a, b], args)
    assert ra["total"] == pytest.approx(rb["total"], rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(option=options, factor=st.floats(1.01, 4.0))
def test_higher_mfu_lowers_the_cost_per_useful_flop_in_proportion(option, factor):
    m = load()
    option["mfu"] = min(option["mfu"], 0.99 / factor)
    low = m.make_option({"name": "low", **option})
    high = m.make_option({"name": "high", **option, "mfu": option["mfu"] * factor})
    ratio = m.cost_per_pflop_hour(low, 0.0) / m.cost_per_pflop_hour(high, 0.0)
    assert ratio == pytest.approx(factor)
