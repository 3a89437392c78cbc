"""Tests of chapters/training/moe_all_to_all.py, the MoE all-to-all calculator of moe-at-scale.md.

The functions are checked in process against cases worked out by hand (written next to each
assertion), the command line for --help, usage errors (exit status 2) and one real run as a
subprocess whose table and JSON output are checked against the same hand-computed values.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "moe_all_to_all.py"

# A small case that is easy to do on paper: 100 tokens per GPU, hidden 1,000, top-2 of 8 experts,
# EP 4 over 2 nodes of 2 GPUs, FP8 dispatch (1 byte) and BF16 combine (2 bytes), intra-node 1 GB/s,
# inter-node 0.5 GB/s, expert FFN 500, 2 MoE layers, 0.001 TFLOPS (1 GFLOP/s).
SMALL = ["--hidden", "1000", "--experts", "8", "--top-k", "2", "--expert-ffn", "500", "--moe-layers", "2",
         "--dispatch-bytes", "1", "--combine-bytes", "2", "--tokens-per-gpu", "100", "--ep", "4",
         "--gpus-per-node", "2", "--intra-bw", "1", "--inter-bw", "0.5", "--tflops", "0.001"]


def mod():
    return load_script(SCRIPT)


def small_setup(**changes):
    fields = dict(hidden=1000, experts=8, top_k=2, expert_ffn=500, moe_layers=2, dispatch_bytes=1.0,
                  combine_bytes=2.0, tokens_per_gpu=100, ep=4, gpus_per_node=2, intra_gbps=1.0, inter_gbps=0.5,
                  tflops=0.001)
    fields.update(changes)
    return mod().Setup(**fields)


def row(out: str, label: str) -> list[float]:
    """The numbers on the first table line whose label is exactly `label`."""
    for line in out.splitlines():
        m = re.match(r"^\s+(.+?)\s{2,}([-\d.e+]+)(?:\s+([-\d.e+]+))?", line)
        if m and m[1] == label:
            return [float(x) for x in m.groups()[1:] if x is not None]
    raise AssertionError(f"no line {label!r} in:\n{out}")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_small_case_bytes_by_hand():
    r = mod().estimate(small_setup())
    d, c = r["dispatch"], r["combine"]
    # 100 tokens x 2 experts = 200 pairs of 1,000 bytes = 200,000 bytes; 1/4 stays, 1/4 to the other GPU
    # of the node, 2/4 to the other node. Combine sends the same pairs at 2 bytes per element.
    assert d["bytes_per_pair"] == 1000 and c["bytes_per_pair"] == 2000
    assert (d["self"], d["intra"], d["inter"], d["sent"]) == pytest.approx((50_000, 50_000, 100_000, 150_000))
    assert (c["self"], c["intra"], c["inter"]) == pytest.approx((100_000, 100_000, 200_000))
    lay = r["layout"]
    assert (lay["nodes"], lay["ep_ranks_per_node"], lay["experts_per_gpu"]) == (2, 2, 2)
    assert lay["tokens_per_expert_uniform"] == pytest.approx(100 * 4 * 2 / 8)  # 100


def test_small_case_times_by_hand():
    r = mod().estimate(small_setup())
    d, c, pl, ps = r["dispatch"], r["combine"], r["per_layer"], r["per_step"]
    # dispatch: intra 50,000 B / 1 GB/s = 50 us, inter 100,000 B / 0.5 GB/s = 200 us -> 200 us
    assert d["time_s"] == pytest.approx(200e-6)
    # combine: intra 100 us, inter 400 us -> 400 us; one forward layer: 600 us
    assert c["time_s"] == pytest.approx(400e-6)
    assert pl["comm_s"] == pytest.approx(600e-6)
    # expert GEMMs: 200 pairs x 2 x 3 x 1,000 x 500 = 6e8 FLOP; 0.001 TFLOPS is 1e9 FLOP/s, so 0.6 s
    assert pl["expert_flops"] == pytest.approx(6e8)
    assert pl["expert_gemm_s"] == pytest.approx(0.6)
    assert pl["comm_to_gemm"] == pytest.approx(600e-6 / 0.6)
    assert ps["comm_s"] == pytest.approx(1.2e-3) and ps["expert_gemm_s"] == pytest.approx(1.2)


def test_one_copy_per_node_by_hand():
    r = mod().estimate(small_setup())
    # 2 nodes of 4 experts: a token's 2 distinct experts both miss the other node with probability
    # C(4,2)/C(8,2) = 6/28 = 3/14, so it is sent there 1 - 3/14 = 11/14 times on average.
    assert mod().prob_not_hit(8, 4, 2) == pytest.approx(3 / 14)
    assert r["layout"]["expected_remote_nodes_per_token"] == pytest.approx(11 / 14)
    d = r["dispatch"]
    assert d["inter_one_copy_per_node"] == pytest.approx(100 * 11 / 14 * 1000)  # 78,571.43 bytes
    assert d["time_one_copy_per_node_s"] == pytest.approx(100 * 11 / 14 * 1000 / 0.5e9)  # 157.14 us
    assert r["per_layer"]["comm_one_copy_per_node_s"] == pytest.approx(3 * 100 * 11 / 14 * 1000 / 0.5e9)


def test_training_doubles_comm_and_triples_flops():
    fwd = mod().estimate(small_setup())["per_layer"]
    train = mod().estimate(small_setup(training=True))["per_layer"]
    assert train["passes"] == 2
    assert train["comm_s"] == pytest.approx(2 * fwd["comm_s"])
    assert train["expert_flops"] == pytest.approx(3 * fwd["expert_flops"])
    assert train["comm_to_gemm"] == pytest.approx(fwd["comm_to_gemm"] * 2 / 3)


def test_capacity_factor_pads_the_traffic():
    base = mod().estimate(small_setup())["dispatch"]
    padded = mod().estimate(small_setup(capacity_factor=1.25))["dispatch"]
    assert padded["inter"] == pytest.approx(1.25 * base["inter"])
    assert padded["time_s"] == pytest.approx(1.25 * base["time_s"])


def test_single_node_group_has_no_network_traffic():
    r = mod().estimate(small_setup(ep=2, gpus_per_node=8))
    assert r["layout"]["nodes"] == 1
    assert r["dispatch"]["inter"] == 0 and r["dispatch"]["inter_one_copy_per_node"] == 0
    # half of the 200,000 bytes go to the one other GPU at 1 GB/s: 100 us
    assert r["dispatch"]["time_s"] == pytest.approx(100e-6)


def test_deepseek_v3_preset_by_hand():
    m = mod()
    s = m.Setup(**m.PRESETS["deepseek-v3"], tokens_per_gpu=4096, ep=64, gpus_per_node=8, intra_gbps=450,
                inter_gbps=50, tflops=400)
    r = m.estimate(s)
    pairs_bytes = 4096 * 8 * 7168  # 234,881,024 bytes of FP8 dispatch per GPU per layer
    assert r["dispatch"]["inter"] == pytest.approx(pairs_bytes * 56 / 64)
    assert r["dispatch"]["intra"] == pytest.approx(pairs_bytes * 7 / 64)
    assert r["dispatch"]["time_s"] == pytest.approx(pairs_bytes * 56 / 64 / 50e9)  # 4.11 ms
    p_miss = math.comb(224, 8) / math.comb(256, 8)
    assert r["layout"]["expected_remote_nodes_per_token"] == pytest.approx(7 * (1 - p_miss))
    assert r["per_layer"]["expert_flops"] == pytest.approx(4096 * 8 * 6 * 7168 * 2048)
    assert r["per_step"]["comm_s"] == pytest.approx(58 * r["per_layer"]["comm_s"])


@pytest.mark.parametrize("changes,message", [
    (dict(experts=6), "must divide evenly"),
    (dict(ep=8, gpus_per_node=3), "fill whole nodes"),
    (dict(top_k=9), "cannot exceed"),
    (dict(inter_gbps=0.0), "must be positive"),
    (dict(capacity_factor=0.5), "at least 1"),
])
def test_check_rejects_impossible_setups(changes, message):
    with pytest.raises(ValueError, match=message):
        mod().estimate(small_setup(**changes))


def test_help():
    proc = run("--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage:") and "--tokens-per-gpu" in proc.stdout and "--preset" in proc.stdout


@pytest.mark.parametrize("args,message", [
    (["--tokens-per-gpu", "10", "--ep", "2"], "missing model field(s)"),
    (["--preset", "deepseek-v3", "--tokens-per-gpu", "4096", "--ep", "12"], "must divide evenly"),
    (["--preset", "deepseek-v3", "--tokens-per-gpu", "4096", "--ep", "16", "--gpus-per-node", "6"], "whole nodes"),
    (["--preset", "gpt-5", "--tokens-per-gpu", "1", "--ep", "1"], "invalid choice"),
    (["--preset", "deepseek-v3", "--tokens-per-gpu", "many", "--ep", "8"], "invalid int value"),
    (["--preset", "deepseek-v3", "--tokens-per-gpu", "8", "--ep", "8", "--inter-bw", "0"], "--inter-bw must be"),
])
def test_bad_arguments_exit_2(args, message):
    proc = run(*args)
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_cli_table_and_json_match_hand_values():
    proc = run(*SMALL)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "EP 4 over 2 node(s) x 2 GPU(s), 2 expert(s) per GPU" in out
    assert "distinct remote nodes per token: 0.7857" in out  # 11/14
    assert row(out, "inter-node") == pytest.approx([0.1, 0.2])  # MB: 100,000 and 200,000 bytes
    assert row(out, "inter-node, one copy per node") == pytest.approx([0.079, 0.157], abs=1e-3)
    assert row(out, "time (ms)") == pytest.approx([0.2, 0.4])
    assert row(out, "expert GEMM time (ms)") == pytest.approx([600.0])
    assert row(out, "all-to-all / GEMM")[0] == pytest.approx(0.001)
    data = json.loads(run(*SMALL, "--json", "--training").stdout)
    assert data["per_layer"]["comm_s"] == pytest.approx(1.2e-3)
    assert data["per_layer"]["expert_gemm_s"] == pytest.approx(1.8)
    assert data["setup"]["training"] is True
    assert run(*SMALL).stdout == out  # deterministic
