#!/usr/bin/env python3
"""Draw the book's data figures with matplotlib, deterministically, into the chapters' images/ folders.

Every figure is computed here: most from formulas in the chapters (derived, with the inputs written
below next to their source), one from a tiny training run this script performs with torch on CPU
(measured). The SVG output is byte-for-byte reproducible for the derived figures: fixed hash salt,
no date or creator in the metadata, text kept as text instead of glyph outlines.

    python make_figures.py                     # write all figures into the book's chapters
    python make_figures.py --out-root /tmp/f   # write them under /tmp/f/<chapter folder>/images/
    python make_figures.py --only kv-cache-vs-context --list
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHAPTERS = Path(__file__).resolve().parents[1]
GB = 1e9
GIB = 1024**3

plt.rcParams.update({
    "svg.hashsalt": "ml-engineering-book",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "lines.linewidth": 1.6,
})

FIGURES: dict[str, tuple[str, Callable[[], plt.Figure]]] = {}


def figure(name: str, folder: str):
    """Register a function that draws one figure, saved as <folder>/images/<name>.svg."""
    def wrap(fn: Callable[[], plt.Figure]):
        FIGURES[name] = (folder, fn)
        return fn
    return wrap


def logspace(lo: float, hi: float, n: int = 200) -> list[float]:
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (n - 1)) for i in range(n)]


# ---------------------------------------------------------------- training: a measured tiny run

VOCAB, CTX, DIM, STEPS, BATCH = 64, 8, 32, 300, 64
LOSS_RUNS = (("lr 3e-3 (stable)", 3e-3), ("lr 3e-2 (noisy, spikes)", 3e-2), ("lr 3e-1 (blows up, then stuck)", 3e-1))
LOSS_YMAX = 8.0


def tiny_training_runs() -> dict:
    """Train a tiny next-token MLP on a synthetic Markov-chain corpus at three learning rates (CPU, seconds)."""
    import torch

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    logits = torch.full((VOCAB, VOCAB), -4.0)
    logits.scatter_(1, torch.randint(0, VOCAB, (VOCAB, 4), generator=gen), 2.0)  # 4 likely successors each
    draws = torch.multinomial(torch.softmax(logits, 1), 20000, replacement=True, generator=gen).tolist()
    seq, prev = [0], 0
    for i in range(1, 20000):
        prev = draws[prev][i]
        seq.append(prev)
    tokens = torch.tensor(seq)
    windows = tokens.unfold(0, CTX, 1)
    out: dict = {"setup": f"MLP next-token model, vocab {VOCAB}, context {CTX}, width {DIM}, AdamW betas (0.9, 0.95), "
                          f"no warmup, no clipping, batch {BATCH}, {STEPS} steps, 1 CPU thread",
                 "uniform_loss": math.log(VOCAB), "runs": {}}
    for label, lr in LOSS_RUNS:
        torch.manual_seed(1)
        model = torch.nn.Sequential(
            torch.nn.Embedding(VOCAB, DIM), torch.nn.Flatten(),
            torch.nn.Linear(CTX * DIM, 4 * DIM), torch.nn.GELU(),
            torch.nn.Linear(4 * DIM, 4 * DIM), torch.nn.GELU(),
            torch.nn.Linear(4 * DIM, VOCAB))
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
        batches = torch.Generator().manual_seed(2)
        losses, norms = [], []
        for _ in range(STEPS):
            idx = torch.randint(0, len(tokens) - CTX - 1, (BATCH,), generator=batches)
            loss = torch.nn.functional.cross_entropy(model(windows[idx]), tokens[idx + CTX])
            opt.zero_grad()
            loss.backward()
            norms.append(round(float(torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))), 4))
            opt.step()
            losses.append(round(loss.item(), 4))
        out["runs"][label] = {"lr": lr, "loss": losses, "grad_norm": norms}
    return out


MEASURED: dict[str, dict] = {}


@figure("loss-curves-lr", "training")
def loss_curves() -> plt.Figure:
    data = MEASURED.setdefault("loss-curves-lr", tiny_training_runs())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for label, run in data["runs"].items():
        steps = range(1, len(run["loss"]) + 1)
        ax1.plot(steps, run["loss"], label=label, linewidth=1)
        ax2.plot(steps, run["grad_norm"], label=label, linewidth=1)
    ax1.axhline(data["uniform_loss"], color="grey", linestyle=":", label="ln 64, uniform guess")
    peak = max(max(run["loss"]) for run in data["runs"].values())
    if peak > LOSS_YMAX:
        ax1.text(len(run["loss"]) * 0.3, LOSS_YMAX * 0.93, f"off scale: the highest loss is {peak:.0f}", fontsize=7)
    ax1.set(xlabel="step", ylabel="training loss (nats)", ylim=(0, LOSS_YMAX), title="Loss per step")
    ax2.set(xlabel="step", ylabel="gradient norm (before clipping)", yscale="log", title="Global gradient norm")
    ax1.legend(fontsize=7, loc="lower left")
    fig.suptitle("Measured: tiny MLP language model on a 2-core x86-64 CPU VM, three learning rates", fontsize=9)
    return fig


# ---------------------------------------------------------------- training: derived

# (name, parameters, hidden h, layers L, heads a); configs linked in model-parallelism.md
MODEL_SHAPES = (("7B", 7e9, 4096, 32, 32), ("13B", 13e9, 5120, 40, 40),
                ("70B", 70e9, 8192, 80, 64), ("405B", 405e9, 16384, 126, 128))


@figure("memory-breakdown-by-size", "training")
def memory_breakdown() -> plt.Figure:
    s, b = 4096, 1
    parts = (("bf16 weights (2 B/param)", lambda p, h, L: 2 * p),
             ("bf16 gradients (2 B/param)", lambda p, h, L: 2 * p),
             ("fp32 master + Adam moments (12 B/param)", lambda p, h, L: 12 * p),
             ("activations, FlashAttention (34·s·b·h·L)", lambda p, h, L: 34 * s * b * h * L),
             ("activations, full recompute (2·s·b·h·L)", lambda p, h, L: 2 * s * b * h * L))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.16
    for j, (label, fn) in enumerate(parts):
        xs = [i + (j - 2) * width for i in range(len(MODEL_SHAPES))]
        ys = [fn(p, h, L) / GB for _, p, h, L, _ in MODEL_SHAPES]
        ax.bar(xs, ys, width, label=label)
    ax.axhline(80, color="black", linestyle="--", linewidth=1)
    ax.text(3.45, 88, "80 GB", ha="right", fontsize=8)
    ax.set_xticks(range(len(MODEL_SHAPES)), [f"{n}\n(h={h}, L={L})" for n, _, h, L, _ in MODEL_SHAPES])
    ax.set(yscale="log", ylabel="GB (10⁹ bytes), unsharded", title="Derived: training memory by model size,\n"
           "mixed-precision Adam, sequence 4,096, micro-batch 1")
    ax.legend(fontsize=7, loc="upper left")
    return fig


@figure("activation-memory-vs-seq", "training")
def activation_vs_seq() -> plt.Figure:
    h, L, a, b = 4096, 32, 32, 1
    seqs = [2 ** k for k in range(9, 16)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.plot(seqs, [s * b * h * (34 + 5 * a * s / h) * L / GB for s in seqs], marker="o", label="naive attention, 34 + 5as/h")
    ax.plot(seqs, [34 * s * b * h * L / GB for s in seqs], marker="o", label="FlashAttention, 34")
    ax.plot(seqs, [2 * s * b * h * L / GB for s in seqs], marker="o", label="full recompute, 2 (layer inputs only)")
    ax.axhline(112, color="black", linestyle="--", linewidth=1, label="model states of 7B, 112 GB")
    ax.set(xscale="log", yscale="log", xlabel="sequence length s (tokens)", ylabel="activation memory, GB, 32 layers",
           title="Derived: activations of a 7B-shaped model\n(h=4096, a=32, 32 layers), micro-batch 1")
    ax.set_xticks(seqs, [f"{s // 1024}K" if s >= 1024 else str(s) for s in seqs])
    ax.legend(fontsize=7)
    return fig


@figure("pipeline-bubble", "training")
def pipeline_bubble() -> plt.Figure:
    ms = list(range(1, 129))
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for p in (2, 4, 8, 16):
        ax.plot(ms, [100 * (p - 1) / (m + p - 1) for m in ms], label=f"p = {p} stages")
        ax.plot([4 * p], [100 * (p - 1) / (5 * p - 1)], "ko", markersize=3)
    ax.annotate("dots: m = 4p", (16, 100 * 3 / 19), xytext=(30, 45), fontsize=8, arrowprops={"arrowstyle": "->"})
    ax.set(xscale="log", xlabel="micro-batches m per step", ylabel="idle fraction of each stage (%)",
           title="Derived: pipeline bubble (p−1)/(m+p−1)")
    ax.legend(fontsize=8)
    return fig


def lr_at(step: int, peak: float, warmup: int, total: int, kind: str = "cosine",
          floor_frac: float = 0.1, decay_frac: float = 0.2) -> float:
    """The schedule function printed in hyper-parameters.md, with two more shapes from its table."""
    if step < warmup:
        return peak * (step + 1) / warmup
    floor = peak * floor_frac
    if kind == "cosine":
        t = min(1.0, (step - warmup) / max(1, total - warmup))
        return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * t))
    if kind == "wsd":
        decay_start = int(total * (1 - decay_frac))
        if step < decay_start:
            return peak
        t = min(1.0, (step - decay_start) / max(1, total - decay_start))
        return peak - (peak - floor) * t
    if kind == "inverse-sqrt":
        return peak * math.sqrt(warmup / (step + 1))
    if kind == "multi-step":
        return peak * (1.0 if step < 0.8 * total else 0.316 if step < 0.9 * total else 0.1)
    raise ValueError(kind)


@figure("lr-schedules", "training")
def lr_schedules() -> plt.Figure:
    peak, warmup, total = 3e-4, 2000, 100_000
    steps = list(range(0, total, 100))
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for kind, label in (("cosine", "warmup + cosine to 10%"), ("wsd", "warmup–stable–decay, last 20%"),
                        ("inverse-sqrt", "inverse square root"), ("multi-step", "multi-step (31.6% at 80%, 10% at 90%)")):
        ax.plot(steps, [lr_at(s, peak, warmup, total, kind) * 1e4 for s in steps], label=label)
    ax.set(xlabel="optimizer step", ylabel="learning rate (×10⁻⁴)",
           title="Derived: schedule shapes, peak 3e-4,\n2,000 warmup steps, 100,000 steps")
    ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
    return fig


@figure("dtype-ranges", "training")
def dtype_ranges() -> plt.Figure:
    import torch

    rows = (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16),
            ("fp8 E5M2", torch.float8_e5m2), ("fp8 E4M3", torch.float8_e4m3fn))
    fig, ax = plt.subplots(figsize=(7.5, 3.0))
    for i, (name, dt) in enumerate(rows):
        fi = torch.finfo(dt)
        lo_sub, lo, hi = math.log2(fi.smallest_normal * fi.eps), math.log2(fi.smallest_normal), math.log2(fi.max)
        ax.barh(i, lo - lo_sub, left=lo_sub, height=0.35, color="lightsteelblue")
        ax.barh(i, hi - lo, left=lo, height=0.6, color="steelblue")
        ax.text(hi + 3, i, f"max {fi.max:.4g}, eps 2^{math.log2(fi.eps):.0f}", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set(xlim=(-160, 200), xlabel="log₂ of the magnitude (dark: normal numbers, light: subnormals)",
           title="Representable magnitudes, from torch.finfo (torch 2.13)")
    return fig


# ---------------------------------------------------------------- fault tolerance: derived

def daly(delta: float, m: float) -> float:
    if delta >= 2 * m:
        return m
    r = delta / (2 * m)
    return math.sqrt(2 * delta * m) * (1 + math.sqrt(r) / 3 + r / 9) - delta


@figure("young-interval", "training/fault-tolerance")
def young_interval() -> plt.Figure:
    mtbf_h = logspace(0.5, 1000)
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for delta_s, label in ((10, "δ = 10 s"), (120, "δ = 2 min"), (300, "δ = 5 min")):
        line, = ax.plot(mtbf_h, [math.sqrt(2 * delta_s * m * 3600) / 60 for m in mtbf_h], label=f"Young, {label}")
        ax.plot(mtbf_h, [daly(delta_s, m * 3600) / 60 for m in mtbf_h], linestyle="--", color=line.get_color(),
                linewidth=1, label=f"Daly, {label}")
    for m in (3.1, 99):
        ax.axvline(m, color="grey", linestyle=":", linewidth=1)
    ax.text(3.3, 700, "3.1 h", fontsize=7)
    ax.text(105, 700, "99 h", fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="job MTBF M (hours)", ylabel="optimal checkpoint interval τ (minutes)",
           title="Derived: τ = √(2δM) (Young) and Daly's refinement")
    ax.legend(fontsize=7, ncol=2)
    return fig


@figure("checkpoint-waste", "training/fault-tolerance")
def checkpoint_waste() -> plt.Figure:
    m_min = 3.1 * 60
    taus = logspace(1, 300)
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for delta_min, label in ((10 / 60, "δ = 10 s"), (2, "δ = 2 min"), (5, "δ = 5 min")):
        line, = ax.plot(taus, [100 * (delta_min / t + t / (2 * m_min)) for t in taus], label=label)
        t_opt = math.sqrt(2 * delta_min * m_min)
        ax.plot([t_opt], [100 * math.sqrt(2 * delta_min / m_min)], "o", color=line.get_color())
    ax.set(xscale="log", ylim=(0, 60), xlabel="checkpoint interval τ (minutes)", ylabel="time wasted (%)",
           title="Derived: waste δ/τ + τ/(2M) at M = 3.1 h\ndots at Young's optimum")
    ax.legend(fontsize=8)
    return fig


@figure("job-mtbf-vs-nodes", "training/fault-tolerance")
def job_mtbf() -> plt.Figure:
    node_mtbf = 6300.0
    nodes = [2 ** k for k in range(0, 13)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    ax1.plot(nodes, [node_mtbf / n for n in nodes], marker="o")
    for n in (64, 2048):
        ax1.annotate(f"{n} nodes: {node_mtbf / n:.3g} h", (n, node_mtbf / n), xytext=(5, 8),
                     textcoords="offset points", fontsize=7)
    ax1.set(xscale="log", yscale="log", xlabel="nodes in the job", ylabel="job MTBF (hours)",
            title="Job MTBF = 6,300 h / nodes")
    ax2.plot(nodes, [100 * math.exp(-24 * n / node_mtbf) for n in nodes], marker="o")
    ax2.set(xscale="log", xlabel="nodes in the job", ylabel="%", title="Chance of a 24-hour stretch with no failure")
    fig.suptitle("Derived: independent node failures, node MTBF 6,300 h (from the Llama 3 report)", fontsize=9)
    return fig


# ---------------------------------------------------------------- network: derived

FABRICS = (("NVLink 5, 900 GB/s", 900), ("NVLink 4, 450 GB/s", 450), ("NVLink 3, 300 GB/s", 300),
           ("PCIe 5.0 x16, 63 GB/s", 63), ("IB NDR per GPU, 50 GB/s", 50), ("IB HDR per GPU, 25 GB/s", 25))


@figure("allreduce-busbw-vs-size", "network")
def allreduce_busbw() -> plt.Figure:
    n, alpha = 8, 1e-6
    sizes = logspace(1e3, 1.6e10)
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for label, bw in FABRICS:
        b = bw * GB
        line, = ax.plot(sizes, [b * s / (s + n * alpha * b) / GB for s in sizes], label=label)
        ax.plot([n * alpha * b], [bw / 2], "o", color=line.get_color(), markersize=3)
    ax.set(xscale="log", yscale="log", xlabel="all-reduce size S (bytes)", ylabel="bus bandwidth (GB/s, per direction)",
           title="Derived: ring all-reduce, n = 8, α = 1 µs per step\ndots at S* = nαB, where half of B is reached")
    ax.legend(fontsize=7)
    return fig


@figure("allreduce-time-vs-ranks", "network")
def allreduce_time() -> plt.Figure:
    alpha, b = 1e-6, 50 * GB
    ranks = [2 ** k for k in range(1, 13)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for s, label in ((131072, "128 KiB (a decode-time TP all-reduce)"), (16 * 2**20, "16 MiB"), (2**30, "1 GiB")):
        line, = ax.plot(ranks, [1e3 * (2 * (n - 1) * alpha + 2 * (n - 1) / n * s / b) for n in ranks], marker="o",
                        markersize=3, label=label)
        ax.plot(ranks, [1e3 * 2 * (n - 1) * alpha for n in ranks], linestyle=":", color=line.get_color(), linewidth=1)
    ax.set(xscale="log", yscale="log", xlabel="ranks n", ylabel="time (ms)",
           title="Derived: ring all-reduce time, B = 50 GB/s, α = 1 µs\ndotted: the latency term 2(n−1)α alone")
    ax.set_xticks(ranks, [str(r) for r in ranks])
    ax.legend(fontsize=7)
    return fig


# ---------------------------------------------------------------- compute: derived

ACCELERATORS = (("H100 SXM", 989.5, 3.35), ("H200 SXM", 989.5, 4.8), ("B200", 2250, 8.0),
                ("MI300X", 1307.4, 5.3), ("Gaudi 3", 1835, 3.7))


@figure("roofline-accelerators", "compute/accelerator")
def roofline() -> plt.Figure:
    intensity = logspace(0.5, 5000, 400)
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    for name, tflops, tbs in ACCELERATORS:
        line, = ax.plot(intensity, [min(tflops, i * tbs) for i in intensity], label=f"{name}: ridge {tflops / tbs:.0f}")
        ax.plot([tflops / tbs], [tflops], "o", color=line.get_color(), markersize=3)
    for x, label in ((1, "decode, batch 1"), (62, "decode, batch 64"), (1024, "prefill, 2,048 tokens")):
        ax.axvline(x, color="grey", linestyle=":", linewidth=1)
        ax.text(x * 1.08, 1.3, label, rotation=90, fontsize=7, va="bottom")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="attainable dense BF16 TFLOPS",
           title="Derived: roofline min(peak, I × bandwidth) from vendor peaks")
    ax.legend(fontsize=7, loc="upper left")
    return fig


# ---------------------------------------------------------------- inference: derived

KV_MODELS = (("Llama 2 7B (MHA), 512 KiB/token", 512, 4096), ("Llama 3 8B, 128 KiB/token", 128, 131072),
             ("Llama 3 70B, 320 KiB/token", 320, 131072), ("Llama 3.1 405B, 504 KiB/token", 504, 131072))


@figure("kv-cache-vs-context", "inference")
def kv_cache() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for label, kib, max_ctx in KV_MODELS:
        ctx = [2 ** k for k in range(10, 18) if 2 ** k <= max_ctx]
        style = {"marker": "s", "markersize": 7, "fillstyle": "none"} if max_ctx == 4096 else {"marker": "o", "markersize": 3}
        ax.plot(ctx, [c * kib / 2**20 for c in ctx], label=label, **style)
    ctx = [2 ** k for k in range(10, 18)]
    ax.plot(ctx, [c * 160 / 2**20 for c in ctx], linestyle="--", label="Llama 3 70B, FP8 cache, 160 KiB/token")
    ax.axhline(80e9 / GIB, color="black", linestyle=":", linewidth=1)
    ax.text(1100, 80e9 / GIB * 1.1, "80 GB = 74.5 GiB", fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="tokens in the sequence", ylabel="KV cache per sequence (GiB)",
           title="Derived: 2 × layers × KV heads × head_dim × bytes per token,\nBF16 unless noted")
    ax.set_xticks(ctx, [f"{c // 1024}K" for c in ctx])
    ax.legend(fontsize=7)
    return fig


@figure("spec-decode-speedup", "inference")
def spec_decode() -> plt.Figure:
    alphas = [i / 100 for i in range(0, 96)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, c in zip(axes, (0.05, 0.2)):
        for gamma in (1, 2, 4, 8):
            ax.plot(alphas, [(1 - a ** (gamma + 1)) / ((1 - a) * (gamma * c + 1)) for a in alphas], label=f"γ = {gamma}")
        ax.axhline(1, color="black", linewidth=1)
        ax.set(xlabel="acceptance rate α", title=f"drafter step cost c = {c}")
    axes[0].set_ylabel("expected speedup")
    axes[0].legend(fontsize=8)
    fig.suptitle("Derived: speedup = (1 − α^(γ+1)) / ((1 − α)(γc + 1)), Leviathan et al.", fontsize=9)
    return fig


# parameters and embedding + output-head parameters (2 × vocab × hidden), as in prefill-decode.md
QUANT_MODELS = (("Llama 3 8B", 8.03e9, 2 * 128256 * 4096), ("Llama 3 70B", 70.55e9, 2 * 128256 * 8192),
                ("Llama 3.1 405B", 405.85e9, 2 * 128256 * 16384))


@figure("quantized-weight-memory", "inference")
def quantized_memory() -> plt.Figure:
    schemes = (("BF16", lambda n, e: 2 * n), ("8-bit (FP8 or INT8)", lambda n, e: n),
               ("4-bit, g = 128, 16-bit embeddings", lambda n, e: (n - e) * 4.125 / 8 + 2 * e))
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    for j, (label, fn) in enumerate(schemes):
        xs = [i + (j - 1) * 0.26 for i in range(len(QUANT_MODELS))]
        ys = [fn(n, e) / GB for _, n, e in QUANT_MODELS]
        bars = ax.bar(xs, ys, 0.26, label=label)
        ax.bar_label(bars, fmt="%.1f", fontsize=6)
    for y, label in ((80, "one 80 GB GPU"), (640, "eight 80 GB GPUs")):
        ax.axhline(y, color="black", linestyle=":", linewidth=1)
        ax.text(0.42, y * 1.08, label, fontsize=7)
    ax.set_xticks(range(len(QUANT_MODELS)), [m[0] for m in QUANT_MODELS])
    ax.set(yscale="log", ylim=(2, 20000), ylabel="weights, GB (10⁹ bytes)", title="Derived: weight memory by format")
    ax.legend(fontsize=7, loc="upper left")
    return fig


@figure("intensity-vs-tokens", "inference")
def intensity() -> plt.Figure:
    tokens = [2 ** k for k in range(0, 15)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for d in (4096, 8192):
        ax.plot(tokens, [t * d / (d + 2 * t) for t in tokens], marker="o", markersize=3, label=f"d × d linear layer, d = {d}")
    for x, (name, tflops, tbs) in zip((1, 4, 16), (("A100", 312, 2.039), ("H200", 989.5, 4.8), ("H100", 989.5, 3.35))):
        ax.axhline(tflops / tbs, linestyle=":", linewidth=1, color="grey")
        ax.text(x, tflops / tbs * 1.05, f"{name} ridge {tflops / tbs:.0f}", fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="tokens per forward pass T", ylabel="FLOP per byte",
           title="Derived: BF16 linear-layer intensity T·d / (d + 2T)")
    ax.set_xticks(tokens[::2], [str(t) for t in tokens[::2]])
    ax.legend(fontsize=7, loc="lower right")
    return fig


@figure("decode-batch-throughput", "inference")
def decode_batch() -> plt.Figure:
    weights, params, kv_token, bw, peak = 16.06e9, 8.03e9, 131072, 3.35e12, 989.5e12
    batches = [2 ** k for k in range(0, 11)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for ctx in (512, 4096):
        step = [max((weights + b * ctx * kv_token) / bw, 2 * params * b / peak) for b in batches]
        ax1.plot(batches, [1e3 * t for t in step], marker="o", markersize=3, label=f"mean context {ctx}")
        ax2.plot(batches, [b / t for b, t in zip(batches, step)], marker="o", markersize=3, label=f"mean context {ctx}")
    ax1.set(xscale="log", yscale="log", xlabel="batch B (sequences)", ylabel="ms", title="Decode step time")
    ax2.set(xscale="log", yscale="log", xlabel="batch B (sequences)", ylabel="tokens/s", title="Aggregate tokens per second")
    for ax in (ax1, ax2):
        ax.set_xticks(batches[::2], [str(b) for b in batches[::2]])
        ax.legend(fontsize=7)
    fig.suptitle("Derived: Llama 3 8B decode on one H100 SXM at vendor peaks,\nstep = max(memory time, compute time)",
                 fontsize=9)
    return fig


@figure("capacity-rate-vs-batch", "inference")
def capacity_rate() -> plt.Figure:
    # Worked example of inference/capacity-planning.md: Llama 3 70B in BF16 on 4 H100 SXM at vendor peaks,
    # mean prompt 1,000 and output 250 tokens; the same formulas as inference/capacity_plan.py.
    params, layers, d_attn, kv_token = 70.553706496e9, 80, 8192, 327680
    bw, flops, prompt, output = 4 * 3.35e12, 4 * 989.5e12, 1000, 250
    prefill = (2 * params * prompt + 2 * layers * prompt ** 2 * d_attn) / flops
    batches = list(range(1, 359))
    step = [max((2 * params + b * (prompt + output / 2) * kv_token) / bw, 2 * params * b / flops) for b in batches]
    rate = [b / (output * t + b * prefill) for b, t in zip(batches, step)]
    tpot = [1e3 * (t + b * prefill / output) for b, t in zip(batches, step)]
    fig, ax1 = plt.subplots(figsize=(6.5, 3.6))
    ax1.plot(batches, rate, label="requests/s a replica carries, λ(B)")
    ax1.set(xlabel="decode batch B (sequences)", ylabel="requests/s", ylim=(0, 25), xlim=(0, 360))
    ax2 = ax1.twinx()
    ax2.plot(batches, tpot, color="tab:orange", label="TPOT(B), ms")
    ax2.axhline(50, color="tab:orange", linestyle=":", linewidth=1)
    ax2.set(ylabel="TPOT (ms)", ylim=(0, 75))
    ax2.grid(False)
    ax1.axvline(230, color="grey", linestyle="--", linewidth=1)
    ax1.text(226, 1.5, "TPOT target\nreached at B = 230", fontsize=7, ha="right")
    ax1.axvline(358, color="black", linestyle="-", linewidth=1)
    ax1.text(300, 22.5, "cache full\nat B = 358", fontsize=7)
    handles = ax1.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax1.legend(handles, [h.get_label() for h in handles], fontsize=7, loc="upper left")
    ax1.set_title("Derived: Llama 3 70B BF16 on 4 H100 SXM at vendor peaks,\n"
                  "prompt 1,000 and output 250 tokens (mean)", fontsize=9)
    return fig


# ---------------------------------------------------------------- storage: derived

@figure("checkpoint-write-time", "storage")
def checkpoint_write() -> plt.Figure:
    per_node, aggregate = 10.0, 100.0
    nodes = [2 ** k for k in range(0, 10)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for label, size_gb in (("8B, 112 GB", 112), ("70B, 980 GB", 980), ("405B, 5.67 TB", 5670)):
        ax.plot(nodes, [size_gb / min(aggregate, per_node * n) for n in nodes], marker="o", markersize=3, label=label)
    ax.axvline(aggregate / per_node, color="grey", linestyle=":", linewidth=1)
    ax.text(11, 2, "aggregate limit\nreached at 10 nodes", fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="nodes writing in parallel", ylabel="write time (s)",
           title="Derived: full training state (14 B/param),\n10 GB/s per node, 100 GB/s aggregate")
    ax.set_xticks(nodes, [str(n) for n in nodes])
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------- topic modules

def load_topic_modules() -> None:
    """Import every `fig_<topic>.py` beside this script: each registers its figures with @figure.

    A topic module writes `from make_figures import figure, plt, logspace` (this module, even when it runs
    as a script), so each part of the book keeps its figures in a file of its own.
    """
    import importlib
    sys.modules.setdefault("make_figures", sys.modules[__name__])
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    for path in sorted(Path(here).glob("fig_*.py")):
        importlib.import_module(path.stem)


load_topic_modules()


# ---------------------------------------------------------------- driver

def write_all(out_root: Path, only: list[str] | None = None) -> list[Path]:
    written = []
    for name, (folder, draw) in FIGURES.items():
        if only and name not in only:
            continue
        target = out_root / folder / "images" / f"{name}.svg"
        target.parent.mkdir(parents=True, exist_ok=True)
        fig = draw()
        fig.tight_layout()
        fig.savefig(target, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(fig)
        written.append(target)
        if name in MEASURED:
            data_file = target.with_suffix(".json")
            data_file.write_text(json.dumps(MEASURED[name], indent=1) + "\n")
            written.append(data_file)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-root", type=Path, default=CHAPTERS,
                        help="folder that holds the chapter folders (default: the book's chapters)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="draw only these figures")
    parser.add_argument("--list", action="store_true", help="print the figure names and their folders, draw nothing")
    args = parser.parse_args(argv)
    if args.list:
        for name, (folder, _) in FIGURES.items():
            print(f"{folder}/images/{name}.svg")
        return 0
    unknown = sorted(set(args.only or []) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure(s): {', '.join(unknown)}; see --list")
    for path in write_all(args.out_root, args.only):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
