"""Tests of chapters/inference/capacity_plan.py, the serving capacity planner of the capacity-planning chapter.

The script runs as a reader runs it (a subprocess) on a case small enough to
compute by hand and on inputs it must refuse; hypothesis then checks in-process
that the plan moves the right way: more traffic, longer prompts or tighter
targets never need fewer accelerators, more memory or bandwidth never more.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "inference" / "capacity_plan.py"

# 1e9 parameters in BF16 (2 GB), 10 layers x 10 KV heads x head_dim 100: 40,000 bytes of cache per token.
HAND = ["--params", "1e9", "--layers", "10", "--hidden", "1000", "--heads", "10",
        "--memory-gb", "10", "--bandwidth-tbs", "1", "--tflops", "100", "--tp", "1",
        "--rate", "900", "--prompt-tokens", "100", "--output-tokens", "100",
        "--ttft-ms", "1000", "--tpot-ms", "10"]
LLAMA3_70B = ["--layers", "80", "--hidden", "8192", "--heads", "64", "--kv-heads", "8",
              "--intermediate", "28672", "--vocab", "128256"]


def load():
    return load_script(SCRIPT)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_help_exits_zero():
    proc = run("--help")
    assert proc.returncode == 0
    assert "--tpot-ms" in proc.stdout


def test_hand_computed_case():
    # weights 2 GB; cache budget 10 x 0.9 - 2 = 7 GB -> 175,000 tokens -> 875 sequences of 200 tokens.
    # step: weights 2e9 / 1e12 = 2 ms; cache per sequence 150 x 40,000 / 1e12 = 6 us; compute 2e9 / 1e14 = 20 us.
    # prefill: (2e9 x 100 + 2 x 10 x 100^2 x 1000) / 1e14 = 2.002 ms, i.e. 20.02 us per output token.
    # TPOT 10 ms: min((10 - 2) / (0.006 + 0.02002), 10 / (0.020 + 0.02002)) = min(307.5, 249.9) -> 249 sequences.
    # step(249) = max(2 + 1.494, 4.98) = 4.98 ms (compute-bound);
    # capacity = 249 / (100 x 4.98 ms + 249 x 2.002 ms) = 249 / 0.996498 s = 249.875 req/s; planned x 0.8 = 199.9.
    # 900 / 199.9 = 4.50 -> 5 replicas of 1 GPU.
    proc = run(*HAND, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["kv_bytes_per_token"] == 40_000
    row = out["best"]
    assert row["weights_gb_per_gpu"] == pytest.approx(2.0)
    assert row["cache_tokens_per_replica"] == pytest.approx(175_000)
    assert row["max_seqs_memory"] == 875
    assert row["max_seqs_tpot"] == 249
    assert row["step_ms"] == pytest.approx(4.98)
    assert row["step_bound"] == "compute"
    assert row["prefill_ms"] == pytest.approx(2.002)
    assert row["capacity_rps"] == pytest.approx(249 / 0.996498, rel=1e-6)
    assert row["planned_rps"] == pytest.approx(0.8 * 249 / 0.996498, rel=1e-6)
    assert (row["replicas"], row["gpus"]) == (5, 5)
    assert row["limit"] == "TPOT (decode step, compute-bound)"
    text = run(*HAND)
    assert text.returncode == 0
    assert "plan: 5 GPUs = 5 replicas x TP 1" in text.stdout


def test_parameter_count_matches_the_prefill_decode_chapter():
    # 70.55 B for Llama 3 70B, as counted in chapters/inference/prefill-decode.md.
    proc = run(*LLAMA3_70B, "--memory-gb", "80", "--bandwidth-tbs", "3.35", "--tflops", "989.5", "--rate", "20",
               "--peak-to-mean", "2", "--prompt-tokens", "1000", "--prompt-p-tokens", "4000", "--output-tokens",
               "250", "--ttft-ms", "2000", "--tpot-ms", "50", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["params"] / 1e9 == pytest.approx(70.55, abs=0.005)
    assert out["kv_bytes_per_token"] == 320 * 1024
    rows = {r["tp"]: r for r in out["rows"]}
    assert rows[1]["limit"] == "weights do not fit"
    assert rows[4]["cache_tokens_per_replica"] == pytest.approx(448_281, abs=1)
    assert (out["best"]["tp"], out["best"]["gpus"]) == (4, 12)


def test_ttft_can_be_the_limit():
    mod = load()
    proc = run(*HAND[:-4], "--ttft-ms", "10", "--tpot-ms", "10", "--json")
    out = json.loads(proc.stdout)
    row = out["best"]
    assert row["limit"] == "TTFT (prefill queue)"
    # the p99 wait at that rate plus one prefill is the target
    wait = mod.mm1_wait_quantile(row["ttft_limit_rps"], row["prefill_ms"] / 1e3, 0.99)
    assert (wait + row["prefill_ms"] / 1e3) * 1e3 == pytest.approx(10, rel=1e-6)


def test_nothing_fits_exits_one():
    proc = run(*[("2" if a == "10" and i == HAND.index("--memory-gb") + 1 else a) for i, a in enumerate(HAND)])
    assert proc.returncode == 1
    assert "weights do not fit" in proc.stdout
    assert "no tensor-parallel degree meets the targets" in proc.stdout


@pytest.mark.parametrize("change, message", [
    (("--rate", "-1"), "expected a positive float"),
    (("--tpot-ms", "fast"), "expected a positive float"),
    (("--memory-gb", "0"), "expected a positive float"),
    (("--tp", "1,0"), "expected comma-separated positive integers"),
    (("--heads", "7"), "is not a multiple of --heads"),
    (("--memory-utilization", "1.5"), "expected a fraction in (0, 1]"),
    (("--percentile", "99"), "--percentile must be in (0, 1)"),
])
def test_bad_input_is_a_usage_error(change, message):
    args = list(HAND)
    flag, value = change
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_kv_heads_must_divide_heads():
    proc = run(*HAND, "--kv-heads", "3")
    assert proc.returncode == 2
    assert "must be a multiple of --kv-heads" in proc.stderr


def test_shape_needs_mlp_and_vocab_without_params():
    args = HAND[2:]  # drop --params
    proc = run(*args)
    assert proc.returncode == 2
    assert "give --intermediate and --vocab" in proc.stderr


def gpus(**kw) -> float:
    mod = load()
    model = mod.Model(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336, vocab=128256)
    acc = mod.Accelerator(memory_gb=kw.get("memory", 80), bandwidth_tbs=kw.get("bandwidth", 3.35), tflops=989.5)
    traffic = mod.Traffic(rate=kw.get("rate", 10), prompt_tokens=kw.get("prompt", 1000), output_tokens=200)
    slo = mod.Slo(ttft_ms=kw.get("ttft", 1000), tpot_ms=kw.get("tpot", 40))
    _, best = mod.plan(model, acc, traffic, slo, [1, 2, 4, 8])
    return best.gpus if best else math.inf


rates = st.floats(0.1, 500)
memories = st.floats(20, 300)
bandwidths = st.floats(0.5, 10)
prompts = st.floats(10, 8000)
tpots = st.floats(5, 200)
ttfts = st.floats(50, 10_000)


@settings(max_examples=60, deadline=None)
@given(rates, rates)
def test_more_traffic_never_needs_fewer_gpus(r1, r2):
    lo, hi = sorted((r1, r2))
    assert gpus(rate=lo) <= gpus(rate=hi)


@settings(max_examples=40, deadline=None)
@given(memories, memories, bandwidths, bandwidths)
def test_more_memory_or_bandwidth_never_needs_more_gpus(m1, m2, b1, b2):
    (m_lo, m_hi), (b_lo, b_hi) = sorted((m1, m2)), sorted((b1, b2))
    assert gpus(memory=m_hi) <= gpus(memory=m_lo)
    assert gpus(bandwidth=b_hi) <= gpus(bandwidth=b_lo)


@settings(max_examples=40, deadline=None)
@given(prompts, prompts, tpots, tpots, ttfts, ttfts)
def test_longer_prompts_or_tighter_targets_never_need_fewer_gpus(p1, p2, t1, t2, f1, f2):
    (p_lo, p_hi), (t_lo, t_hi), (f_lo, f_hi) = sorted((p1, p2)), sorted((t1, t2)), sorted((f1, f2))
    assert gpus(prompt=p_lo) <= gpus(prompt=p_hi)
    assert gpus(tpot=t_hi) <= gpus(tpot=t_lo)
    assert gpus(ttft=f_hi) <= gpus(ttft=f_lo)
