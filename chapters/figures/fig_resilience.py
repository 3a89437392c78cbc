"""Figures of the resilience-at-scale chapter (training/fault-tolerance/at-scale.md).

Every curve is derived with the chapter's own scripts, imported from their files, so that the numbers
printed by the scripts and the numbers drawn are one computation:

* goodput_model.py gives interruptions per day, job MTBF and goodput. The per-GPU rate is derived from
  the Llama 3 report (https://arxiv.org/abs/2407.21783, section 3.3.4): 419 unexpected interruptions
  in 54 days on 16,384 GPUs. The checkpoint and restart costs of the three recovery strategies are
  illustrative inputs, written below, not measurements.
* straggler_detector.py generates its seeded synthetic run and scores it; the heat map is its view.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from make_figures import figure, logspace, plt

FT = Path(__file__).resolve().parents[1] / "training" / "fault-tolerance"

# (label, blocking seconds per checkpoint, restart minutes): illustrative inputs, see the chapter
STRATEGIES = (("storage checkpoint, blocking 60 s, restart 10 min", 60.0, 10.0),
              ("async checkpoint, blocking 10 s, restart 10 min", 10.0, 10.0),
              ("in-memory peer copy, blocking 2 s, restart 5 min", 2.0, 5.0))
GROUP_GPUS, HEAL_MIN, STEP_S = 512, 5.0, 5.0  # per-step recovery: 512-GPU replica groups


def _script(name: str):
    """A chapter script as a module, loaded once from its path."""
    key = f"fig_resilience_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, FT / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@figure("interruptions-vs-gpus", "training/fault-tolerance")
def interruptions_vs_gpus() -> plt.Figure:
    gm = _script("goodput_model")
    gpus = logspace(512, 200_000, 120)
    marks = (1024, 16384, 100_000)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    ax1.plot(gpus, [n * gm.LLAMA3_RATE for n in gpus])
    ax2.plot(gpus, [24 * 60 / (n * gm.LLAMA3_RATE) for n in gpus])
    for n in marks:
        per_day = n * gm.LLAMA3_RATE
        ax1.plot([n], [per_day], "ko", markersize=3)
        ax1.annotate(f"{n:,} GPUs: {per_day:.3g}/day", (n, per_day), xytext=(-6, 8), textcoords="offset points",
                     fontsize=7, ha="right" if n > 2000 else "left")
        ax2.plot([n], [24 * 60 / per_day], "ko", markersize=3)
        ax2.annotate(f"{24 * 60 / per_day:,.0f} min", (n, 24 * 60 / per_day), xytext=(5, 6),
                     textcoords="offset points", fontsize=7)
    for minutes, label in ((10, "a 10-minute restart"), (60, "one hour")):
        ax2.axhline(minutes, color="grey", linestyle=":", linewidth=1)
        ax2.text(600, minutes * 1.12, label, fontsize=7)
    ax1.set(xscale="log", yscale="log", xlabel="GPUs in the job", ylabel="expected interruptions per day",
            title="Interruptions per day = N × r")
    ax2.set(xscale="log", yscale="log", xlabel="GPUs in the job", ylabel="job MTBF (minutes)",
            title="Mean time between interruptions = 24 h / (N × r)")
    fig.suptitle(f"Derived: r = 419 / (54 × 16,384) = {gm.LLAMA3_RATE:.3g} interruptions per GPU-day "
                 "(Llama 3 report), independent failures", fontsize=9)
    return fig


@figure("goodput-vs-interval", "training/fault-tolerance")
def goodput_vs_interval() -> plt.Figure:
    gm = _script("goodput_model")
    gpus = 16384
    mtbf_h = 24 / (gpus * gm.LLAMA3_RATE)
    taus_min = logspace(0.5, 240, 200)
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for label, delta_s, restart_min in STRATEGIES:
        ys = [100 * gm.goodput(t / 60, delta_s / 3600, mtbf_h, restart_min / 60) for t in taus_min]
        line, = ax.plot(taus_min, ys, label=label)
        best = gm.optimal_interval(delta_s / 3600, mtbf_h, restart_min / 60)
        g = 100 * gm.goodput(best, delta_s / 3600, mtbf_h, restart_min / 60)
        ax.plot([best * 60], [g], "o", color=line.get_color(), markersize=4)
        ax.annotate(f"{g:.1f}% at {best * 60:.1f} min", (best * 60, g), xytext=(4, 5), textcoords="offset points",
                    fontsize=7, color=line.get_color())
    ax.set(xscale="log", ylim=(50, 100), xlabel="checkpoint interval τ (minutes of training)", ylabel="goodput (%)",
           title=f"Derived: goodput τ / E[T] at {gpus:,} GPUs (job MTBF {mtbf_h:.2f} h)\n"
                 "dots at the best interval; costs are illustrative inputs")
    ax.legend(fontsize=7, loc="lower center")
    return fig


@figure("goodput-vs-gpus", "training/fault-tolerance")
def goodput_vs_gpus() -> plt.Figure:
    gm = _script("goodput_model")
    gpus = [2 ** k for k in range(10, 18)] + [200_000]
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for label, delta_s, restart_min in STRATEGIES:
        ys = [100 * gm.model(n, gm.LLAMA3_RATE, delta_s, restart_min, None).optimal_goodput for n in gpus]
        ax.plot(gpus, ys, marker="o", markersize=3, label=label + ", best τ")
    per_step = [100 * gm.model(n, gm.LLAMA3_RATE, 60, 10, None, max(1, n // GROUP_GPUS), HEAL_MIN,
                               STEP_S).per_step_goodput for n in gpus]
    ax.plot(gpus, per_step, marker="s", markersize=3, linestyle="--",
            label=f"per-step recovery, {GROUP_GPUS}-GPU replica groups, {HEAL_MIN:g} min to heal")
    ax.set(xscale="log", ylim=(40, 101), xlabel="GPUs in the job", ylabel="goodput (%)",
           title="Derived: goodput against job size, r from the Llama 3 report\n"
                 "recovery costs are illustrative inputs")
    ax.set_xticks(gpus, [f"{n:,}" for n in gpus], rotation=30, fontsize=7)
    ax.minorticks_off()
    ax.legend(fontsize=7, loc="lower left")
    return fig


@figure("straggler-detector-view", "training/fault-tolerance")
def straggler_view() -> plt.Figure:
    sd = _script("straggler_detector")
    table = sd.synthetic(sd.Scenario())
    params = sd.Params()
    rep = sd.analyse(table, params)
    steps = sorted(table)
    ranks = sorted(table[steps[0]])
    z = [[0.0] * len(steps) for _ in ranks]
    medians, slowest = [], []
    for j, step in enumerate(steps):
        med, _, scores = sd.step_scores(table[step], params.mad_floor)
        medians.append(med)
        slowest.append(max(table[step].values()))
        for i, rank in enumerate(ranks):
            z[i][j] = scores[rank]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 5.2), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    # three classes of cells, each row drawn as runs of equal class: small, diffable vector output
    classes = ((lambda v: v > params.threshold, "tab:red", f"z > {params.threshold:g}: a slow step"),
               (lambda v: 2 < v <= params.threshold, "navajowhite", f"2 < z ≤ {params.threshold:g}"),
               (lambda v: v < -2, "lightsteelblue", "z < −2: faster than the step median"))
    for test, color, label in classes:
        for i, rank in enumerate(ranks):
            runs, start = [], None
            for j, step in enumerate(steps + [None]):
                hit = step is not None and test(z[i][j])
                if hit and start is None:
                    start = step
                elif not hit and start is not None:
                    runs.append((start - 0.5, steps[j - 1] - start + 1))
                    start = None
            ax1.broken_barh(runs, (rank - 0.45, 0.9), facecolors=color, label=label if i == 0 else None)
    ax1.set_ylim(ranks[-1] + 3.2, ranks[0] - 0.7)  # room for the legend below the last rank
    ax1.set_yticks(ranks[::3])
    ax1.legend(fontsize=7, loc="lower left", ncol=3, framealpha=0.95)
    for s in rep.stragglers:
        ax1.annotate(f"rank {s.rank}: straggler, flagged at step {s.flagged_at}", (s.flagged_at, s.rank),
                     xytext=(s.flagged_at + 15, s.rank - 3.2), fontsize=7, arrowprops={"arrowstyle": "->"},
                     bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "none", "alpha": 0.9})
    for t in rep.transients:
        if t.max_slowdown > 1.5:
            ax1.annotate(f"rank {t.rank}: one-off spike", (t.steps[-1], t.rank), xytext=(t.steps[-1] + 8, t.rank - 2),
                         fontsize=7, arrowprops={"arrowstyle": "->"},
                         bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "none", "alpha": 0.9})
    ax1.set(ylabel="rank", title="Derived: straggler_detector.py --synthetic (16 ranks, 200 steps, seed 0)\n"
                                 "robust z = (time − step median) / (1.4826 × max(MAD, 1% of median)) per step")
    ax2.plot(steps, slowest, linewidth=1, label="slowest rank: what a synchronous step costs")
    ax2.plot(steps, medians, linewidth=1, label="median rank")
    for c in rep.cluster_slow:
        ax2.axvspan(c.first - 0.5, c.last + 0.5, color="grey", alpha=0.25)
        ax2.text(c.last + 3, 1.55, "whole job slow:\nnobody flagged", fontsize=7, ha="left")
    ax2.set(xlabel="step", ylabel="seconds", ylim=(0.9, 1.8))
    ax2.legend(fontsize=7, loc="upper left")
    return fig
