"""Figures of the Insights part: scaling laws, budgets, the economics of a GPU-hour, vendor numbers, goodput.

Every figure here is derived: computed from the formulas of the chapters in chapters/insights/ and
from the sourced inputs written next to them below. Nothing is random and nothing is measured, so
each SVG is byte-for-byte reproducible.
"""
from __future__ import annotations

import math

from make_figures import figure, logspace, plt

FOLDER = "insights"

# ---------------------------------------------------------------- scaling laws

# Chinchilla's parametric loss L(N, D) = E + A / N^alpha + B / D^beta, as refitted by Besiroglu et al.,
# "Chinchilla Scaling: A replication attempt", arXiv:2404.10102 (https://arxiv.org/abs/2404.10102).
# Hoffmann et al. (arXiv:2203.15556) printed E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28; the
# replication shows that those rounded values misplace the optimum, and its refit agrees with the
# paper's other two approaches (about 20 tokens per parameter), so the chapter plots the refit.
REFIT = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}


def loss(n: float, d: float, f: dict = REFIT) -> float:
    return f["E"] + f["A"] / n ** f["alpha"] + f["B"] / d ** f["beta"]


def optimum(c: float, f: dict = REFIT) -> tuple[float, float]:
    """Compute-optimal N and D for C = 6ND: N* = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta))."""
    a, b = f["alpha"], f["beta"]
    g = (a * f["A"] / (b * f["B"])) ** (1 / (a + b))
    n = g * (c / 6) ** (b / (a + b))
    return n, c / (6 * n)


def tokens_for_loss(n: float, target: float, f: dict = REFIT) -> float:
    """Tokens D that bring a model of N parameters to the target loss; inf if it never gets there."""
    gap = target - f["E"] - f["A"] / n ** f["alpha"]
    return (f["B"] / gap) ** (1 / f["beta"]) if gap > 0 else math.inf


@figure("chinchilla-isoflop", FOLDER)
def isoflop() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for c in (1e21, 1e22, 1e23, 1e24, 1e25):
        n_opt, _ = optimum(c)
        ns = logspace(n_opt / 30, n_opt * 30, 300)
        line, = ax.plot(ns, [loss(n, c / (6 * n)) for n in ns], label=f"C = {c:.0e} FLOPs")
        ax.plot([n_opt], [loss(n_opt, c / (6 * n_opt))], "o", color=line.get_color(), markersize=4)
        half = n_opt / 2
        ax.plot([half], [loss(half, c / (6 * half))], "s", color=line.get_color(), markersize=3, fillstyle="none")
    ax.set(xscale="log", ylim=(1.9, 3.2), xlabel="parameters N (log scale)",
           ylabel="predicted loss (nats per token)",
           title="Derived: isoFLOP curves of the Chinchilla loss law (Besiroglu et al. refit)\n"
                 "dots: compute-optimal N; open squares: half that size, twice the tokens")
    ax.legend(fontsize=7, loc="upper right")
    return fig


# Published models: (label, parameters, training tokens, source). Tokens per parameter and 6ND are derived.
PUBLISHED = (
    ("GPT-3 175B", 175e9, 300e9, "arXiv:2005.14165"),
    ("Gopher 280B", 280e9, 300e9, "arXiv:2112.11446"),
    ("Chinchilla 70B", 70e9, 1.4e12, "arXiv:2203.15556"),
    ("LLaMA 7B", 7e9, 1.0e12, "arXiv:2302.13971"),
    ("LLaMA 65B", 65e9, 1.4e12, "arXiv:2302.13971"),
    ("Llama 2 7B", 7e9, 2e12, "arXiv:2307.09288"),
    ("Llama 2 70B", 70e9, 2e12, "arXiv:2307.09288"),
    ("Llama 3 8B", 8e9, 15e12, "Llama 3.1 model card (15T+ tokens)"),
    ("Llama 3 70B", 70e9, 15e12, "Llama 3.1 model card (15T+ tokens)"),
    ("Llama 3 405B", 405e9, 15.6e12, "arXiv:2407.21783"),
)


@figure("tokens-per-parameter", FOLDER)
def tokens_per_parameter() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    cs = logspace(1e21, 1e26, 100)
    ax.plot(cs, [optimum(c)[1] / optimum(c)[0] for c in cs], color="grey", linestyle="--", linewidth=1,
            label="compute-optimal D/N, Besiroglu et al. refit")
    ax.axhline(20, color="black", linestyle=":", linewidth=1, label="20 tokens per parameter")
    offsets = {"LLaMA 65B": (-52, 5), "Chinchilla 70B": (5, -10)}
    for label, n, d, _ in PUBLISHED:
        c = 6 * n * d
        ax.plot([c], [d / n], "o", markersize=4, color="tab:blue")
        ax.annotate(label, (c, d / n), xytext=offsets.get(label, (4, 3)), textcoords="offset points", fontsize=6.5)
    ax.set(xscale="log", yscale="log", xlim=(1e21, 1e26), ylim=(0.5, 5000), xlabel="training compute 6ND (FLOPs)",
           ylabel="training tokens per parameter D/N",
           title="Derived from published N and D: how far past compute-optimal\nmodels have been trained")
    ax.legend(fontsize=7, loc="upper left")
    return fig


LIFETIME_C0 = 1e24  # the target loss is the compute-optimal loss at this training budget
INFERENCE_TOKENS = (0.0, 1e12, 1e13, 1e14)


@figure("lifetime-compute", FOLDER)
def lifetime_compute() -> plt.Figure:
    n_opt, d_opt = optimum(LIFETIME_C0)
    target = loss(n_opt, d_opt)
    ns = [n for n in logspace(n_opt / 20, n_opt * 3, 400) if tokens_for_loss(n, target) < math.inf]
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for t in INFERENCE_TOKENS:
        totals = [6 * n * tokens_for_loss(n, target) + 2 * n * t for n in ns]
        label = "training only" if t == 0 else f"training + {t:.0e} generated tokens"
        line, = ax.plot(ns, totals, label=label)
        best = min(range(len(ns)), key=totals.__getitem__)
        ax.plot([ns[best]], [totals[best]], "o", color=line.get_color(), markersize=4)
    ax.axvline(n_opt, color="grey", linestyle=":", linewidth=1)
    ax.text(n_opt * 1.05, 2.2e26, f"Chinchilla-optimal\nN* = {n_opt / 1e9:.0f}B", fontsize=7)
    ticks = (15e9, 20e9, 30e9, 50e9, 100e9, 200e9, 300e9)
    ax.set(xscale="log", yscale="log", ylim=(5e23, 5e26), xlim=(12e9, 3e11), xlabel="parameters N (log scale)",
           ylabel="lifetime FLOPs, 6ND + 2NT",
           title=f"Derived: compute to reach the loss of a compute-optimal {LIFETIME_C0:.0e}-FLOP run,\n"
                 "by model size and serving volume T (dots: cheapest size)")
    ax.set_xticks(ticks, [f"{t / 1e9:.0f}B" for t in ticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.legend(fontsize=7, loc="upper left")
    return fig


# ---------------------------------------------------------------- economics (placeholder prices)

# The economics chapter's worked example. Prices are placeholders chosen for the arithmetic, not quotes;
# the power inputs are sourced: DGX H100 system maximum 10.2 kW for 8 GPUs (NVIDIA DGX H100 user guide,
# https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html) and an industry-average
# PUE of 1.58 for 2023 (Uptime Institute, https://journal.uptimeinstitute.com/large-data-centers-are-mostly-more-efficient-analysis-confirms/).
ON_DEMAND, RESERVED = 4.00, 2.50               # placeholder money per GPU-hour
CAPEX, YEARS, FACILITY = 35_000.0, 5, 0.40      # placeholder capital per GPU, amortisation years, other fixed per hour
KW_PER_GPU, PUE, KWH = 10.2 / 8, 1.58, 0.10      # kW at the wall per GPU before PUE; PUE; placeholder price per kWh
OWNED = CAPEX / (YEARS * 8760) + FACILITY + KW_PER_GPU * PUE * KWH


@figure("cost-vs-utilization", FOLDER)
def cost_vs_utilization() -> plt.Figure:
    us = [u / 100 for u in range(10, 101)]
    fig, ax = plt.subplots(figsize=(6.5, 3.7))
    ax.plot([100 * u for u in us], [ON_DEMAND for _ in us], label=f"on demand, {ON_DEMAND:.2f} per used hour")
    ax.plot([100 * u for u in us], [RESERVED / u for u in us], label=f"reserved, {RESERVED:.2f} per hour held")
    ax.plot([100 * u for u in us], [OWNED / u for u in us], label=f"owned, {OWNED:.2f} per hour held")
    for rate, name in ((RESERVED, "reserved"), (OWNED, "owned")):
        u = rate / ON_DEMAND
        ax.plot([100 * u], [ON_DEMAND], "ko", markersize=3)
        ax.annotate(f"{name} = on demand\nat {100 * u:.0f}% busy", (100 * u, ON_DEMAND), xytext=(-5, 30),
                    textcoords="offset points", fontsize=7, arrowprops={"arrowstyle": "->"})
    ax.set(ylim=(0, 12), xlim=(10, 100), xlabel="utilization: share of held GPU-hours doing useful work (%)",
           ylabel="money per useful GPU-hour",
           title="Derived with placeholder prices: what a useful GPU-hour costs\nas utilization falls")
    ax.legend(fontsize=7, loc="upper right")
    return fig


# ---------------------------------------------------------------- vendor numbers

# H100 SXM: headline and dense peaks from the H100 product page (https://www.nvidia.com/en-us/data-center/h100/,
# "with sparsity" figures halved, see compute/accelerator/README.md); 430 TFLOPS per GPU achieved by the
# Llama 3 405B run on 8,192 GPUs (arXiv:2407.21783); whole-run average derived from the Llama 3.1 model card
# (30.84M H100 GPU-hours, https://github.com/meta-llama/llama-models/blob/main/models/llama3_1/MODEL_CARD.md)
# and 6 x 405e9 x 15.6e12 FLOPs.
LADDER = (
    ("FP8 headline,\nwith sparsity", 3958.0, "sourced"),
    ("FP8 dense", 1979.0, "derived"),
    ("BF16 dense", 989.5, "derived"),
    ("Llama 3 405B\nper-GPU rate", 430.0, "sourced"),
    ("Llama 3.1 405B\nwhole-run average", 6 * 405e9 * 15.6e12 / (30.84e6 * 3600) / 1e12, "derived"),
)


@figure("vendor-number-ladder", FOLDER)
def vendor_ladder() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    colors = {"sourced": "tab:blue", "derived": "tab:orange"}
    for i, (label, value, kind) in enumerate(LADDER):
        ax.bar(i, value, color=colors[kind], width=0.6)
        ax.text(i, value + 60, f"{value:,.1f}" if value % 1 else f"{value:,.0f}", ha="center", fontsize=8)
    ax.set_xticks(range(len(LADDER)), [label for label, _, _ in LADDER], fontsize=7.5)
    ax.bar([0], [0], color=colors["sourced"], label="sourced")
    ax.bar([0], [0], color=colors["derived"], label="derived")
    ax.set(ylabel="TFLOP/s per H100 SXM", ylim=(0, 4400),
           title="From the datasheet headline to the FLOPs a training run delivered:\n"
                 "one H100 SXM, NVIDIA's figures and Meta's published Llama 3 numbers")
    ax.legend(fontsize=7)
    return fig


# ---------------------------------------------------------------- goodput

FAILURE_RATE = 2.0e-5  # interruptions per GPU-hour, derived in success-factors.md from the Llama 3 report
OTHER = {"evaluation": 0.02, "data stalls": 0.01}  # assumptions of the goodput chapter's example


def losses(gpus: int, save_s: float, restart_s: float) -> dict:
    m = 3600 / (FAILURE_RATE * gpus)
    tau = math.sqrt(2 * save_s * m)
    return {"checkpoint saves": save_s / tau, "redone work": tau / (2 * m), "restarts": restart_s / m}


@figure("goodput-breakdown", FOLDER)
def goodput_breakdown() -> plt.Figure:
    sizes = (512, 2048, 8192, 16384)
    names = ("productive steps", "checkpoint saves", "redone work", "restarts", "evaluation", "data stalls")
    shares = {name: [] for name in names}
    for n in sizes:
        fail = losses(n, 60, 600)
        other = sum(OTHER.values())
        for k, v in fail.items():
            shares[k].append(100 * v * (1 - other))
        for k, v in OTHER.items():
            shares[k].append(100 * v)
        shares["productive steps"].append(100 * (1 - other) * (1 - sum(fail.values())))
    fig, ax = plt.subplots(figsize=(7.6, 3.6))
    bottom = [0.0] * len(sizes)
    for name in names:
        ax.bar(range(len(sizes)), shares[name], bottom=bottom, width=0.6, label=name)
        bottom = [b + s for b, s in zip(bottom, shares[name])]
    for i, p in enumerate(shares["productive steps"]):
        ax.text(i, p - 6, f"{p:.1f}%", ha="center", fontsize=8, color="white")
    ax.set_xticks(range(len(sizes)), [f"{n:,} GPUs" for n in sizes])
    ax.set(ylim=(60, 100), ylabel="share of wall-clock time (%)",
           title="Derived: where the wall-clock goes, 2e-5 interruptions per GPU-hour,\n"
                 "60 s blocking save at Young's interval, 10 min restart, 2% eval, 1% stalls")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


@figure("goodput-vs-scale", FOLDER)
def goodput_vs_scale() -> plt.Figure:
    gpus = [2 ** k for k in range(6, 16)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for save_s, restart_s, label in ((60, 1800, "60 s save, 30 min restart"), (60, 600, "60 s save, 10 min restart"),
                                     (60, 120, "60 s save, 2 min restart"), (5, 120, "5 s save (async), 2 min restart")):
        ax.plot(gpus, [100 * (1 - sum(losses(n, save_s, restart_s).values())) for n in gpus], marker="o",
                markersize=3, label=label)
    ax.set(xscale="log", ylim=(50, 100), xlabel="GPUs in the job", ylabel="goodput before evaluation and stalls (%)",
           title="Derived: failure-related goodput vs job size at 2e-5 interruptions\n"
                 "per GPU-hour, checkpoint interval from Young's formula")
    ax.set_xticks(gpus[::2], [f"{n:,}" for n in gpus[::2]])
    ax.legend(fontsize=7, loc="lower left")
    return fig
