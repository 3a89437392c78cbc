"""Figures of the debugging chapters (chapters/development/debug/), registered with make_figures.

- grad-scaler-scale: torch.amp.GradScaler's loss scale over a run, computed by the real GradScaler
  (torch 2.13 defaults) on the CPU, with fp16 overflow emulated by casting each scaled gradient to fp16.
- allocator-rounding: block and segment sizes of PyTorch's CUDA caching allocator, derived from the
  constants and rounding functions of c10/cuda/CUDACachingAllocator.cpp (see the constants below).
- straggler-expected-max: the expected slowest of N ranks whose step times are normal, derived by
  numerical integration.
- repeats-to-detect: benchmark runs needed to see a regression through noise, derived from the
  two-sample normal approximation.
All four are deterministic: no random numbers, no dates.
"""
from __future__ import annotations

import math

from make_figures import figure, logspace, plt

FOLDER = "development/debug"

# ------------------------------------------------------------------------------------- GradScaler
FP16_MAX = 65504.0           # torch.finfo(torch.float16).max
TYPICAL_GRAD = 0.05          # largest |gradient| of an ordinary step, unscaled (an assumption of the figure)
SPIKE_GRAD, SPIKE_AT, SPIKE_LEN = 50.0, 12_000, 30   # a burst of large gradients, as in a loss spike
SCALER_STEPS = 36_000


def grad_scaler_run() -> tuple[list[int], list[float], list[int]]:
    """Steps, scale after each step, and the steps GradScaler skipped, from the real implementation."""
    import torch

    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.0)
    scaler = torch.amp.GradScaler("cpu")  # defaults: init_scale 2**16, growth 2, backoff 0.5, interval 2000
    scales, skipped = [], []
    for step in range(SCALER_STEPS):
        g = SPIKE_GRAD if SPIKE_AT <= step < SPIKE_AT + SPIKE_LEN else TYPICAL_GRAD
        scaler.scale(torch.ones(()))  # as scaler.scale(loss) would; it also creates the scale on first use
        scale = scaler.get_scale()
        param.grad = torch.tensor([g * scale]).half().float()  # an fp16 backward pass overflows to inf
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < before:
            skipped.append(step)
        scales.append(scaler.get_scale())
    return list(range(SCALER_STEPS)), scales, skipped


@figure("grad-scaler-scale", FOLDER)
def grad_scaler_scale() -> plt.Figure:
    steps, scales, skipped = grad_scaler_run()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    ax1.plot(steps, [math.log2(s) for s in scales], linewidth=1)
    ax1.axhline(math.log2(FP16_MAX / TYPICAL_GRAD), color="grey", linestyle=":", linewidth=1)
    ax1.text(300, math.log2(FP16_MAX / TYPICAL_GRAD) + 0.3, "overflow above 65504 / 0.05", fontsize=7)
    ax1.axvspan(SPIKE_AT, SPIKE_AT + SPIKE_LEN, color="tab:red", alpha=0.3)
    ax1.text(SPIKE_AT + 500, 12, f"{SPIKE_LEN} steps with\ngradients of {SPIKE_GRAD:g}", fontsize=7)
    ax1.set(xlabel="step", ylabel="log2(loss scale)", title="GradScaler defaults: scale per step")
    ax2.step(skipped + [SCALER_STEPS], list(range(1, len(skipped) + 1)) + [len(skipped)], where="post")
    ax2.set(xlabel="step", ylabel="skipped optimizer steps (cumulative)", title="Skipped steps",
            xlim=(0, SCALER_STEPS))
    return fig


# ------------------------------------------------------------------------------- caching allocator
# c10/core/AllocatorConfig.h and c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.13)
K_MIN_BLOCK = 512              # every block is a multiple of 512 bytes
K_SMALL_SIZE = 1 << 20         # requests up to 1 MiB go to the small pool
K_SMALL_BUFFER = 2 << 20       # small-pool segments are 2 MiB
K_LARGE_BUFFER = 20 << 20      # requests between 1 MiB and 10 MiB get a 20 MiB segment
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20        # larger requests: a segment rounded up to 2 MiB


def round_size(size: int, divisions: int = 0) -> int:
    """The allocator's block size for a request, with roundup_power2_divisions set to `divisions`."""
    if size < K_MIN_BLOCK:
        return K_MIN_BLOCK
    if divisions > 1 and size > K_MIN_BLOCK * divisions:
        if size & (size - 1) == 0:
            return size
        floor = 1 << (size.bit_length() - 1)
        step = floor >> (divisions.bit_length() - 1)
        if step == 0:
            return floor << 1
        low = size & ~(step - 1)
        return size if low == size else low + step
    return K_MIN_BLOCK * ((size + K_MIN_BLOCK - 1) // K_MIN_BLOCK)


def segment_size(size: int) -> int:
    """What the allocator asks CUDA for when no cached block fits a (rounded) request."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


@figure("allocator-rounding", FOLDER)
def allocator_rounding() -> plt.Figure:
    mib = 1 << 20
    requests = list(range(8 * mib, 16 * mib + 1, mib // 64))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for label, div in (("default: 512-byte multiples", 0), ("roundup_power2_divisions:8", 8),
                       ("roundup_power2_divisions:4", 4)):
        ax1.plot([r / mib for r in requests], [round_size(r, div) / mib for r in requests], label=label,
                 linewidth=1.2, drawstyle="steps-post")
    ax1.set(xlabel="requested MiB", ylabel="block size (MiB)", title="Block handed to the tensor, 8 to 16 MiB")
    ax1.legend(fontsize=7)
    sizes = sorted({int(x) for x in logspace(1024, 1 << 30, 1500)})
    ax2.plot(sizes, [segment_size(round_size(x)) / x for x in sizes], color="tab:purple", linewidth=1)
    for x, text in ((K_SMALL_SIZE, "1 MiB"), (K_MIN_LARGE_ALLOC, "10 MiB")):
        ax2.axvline(x, color="grey", linestyle=":", linewidth=1)
        ax2.text(x * 1.1, 300, text, fontsize=7)
    ax2.set(xscale="log", yscale="log", xlabel="requested bytes", ylabel="new segment / request",
            title="Segment reserved when no cached block fits")
    return fig


# ---------------------------------------------------------------------------------------- stragglers
def phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def big_phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def expected_max_std_normal(n: int, lo: float = -8.0, hi: float = 8.0, steps: int = 4000) -> float:
    """E[max of n independent standard normals] = integral of x n phi(x) Phi(x)^(n-1), by Simpson's rule."""
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps + 1):
        x = lo + i * h
        w = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += w * x * n * phi(x) * big_phi(x) ** (n - 1)
    return total * h / 3


@figure("straggler-expected-max", FOLDER)
def straggler_expected_max() -> plt.Figure:
    ranks = [2 ** k for k in range(0, 15)]
    emax = [expected_max_std_normal(n) for n in ranks]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for cv in (0.01, 0.02, 0.05):
        ax.plot(ranks, [100 * cv * e for e in emax], marker="o", markersize=3,
                label=f"per-rank step time jitter {cv:.0%} (std / mean)")
    ax.set(xscale="log", xlabel="ranks waiting for each other every step",
           ylabel="expected slowdown of the step (%)",
           title="Derived: the step lasts as long as the slowest rank\n(independent normal step times)")
    ax.set_xticks(ranks[::2], [str(n) for n in ranks[::2]])
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------------------------------ benchmark runs
Z_ALPHA, Z_BETA = 1.959964, 0.841621  # two-sided 5% false alarms, 80% power


def runs_needed(cv: float, effect: float) -> float:
    """Runs per version to tell a relative change `effect` from noise of relative std `cv`."""
    return 2 * (Z_ALPHA + Z_BETA) ** 2 * (cv / effect) ** 2


@figure("repeats-to-detect", FOLDER)
def repeats_to_detect() -> plt.Figure:
    effects = logspace(0.005, 0.3, 120)
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for cv in (0.005, 0.01, 0.02, 0.05):
        ax.plot([100 * e for e in effects], [max(1.0, runs_needed(cv, e)) for e in effects],
                label=f"run-to-run noise {100 * cv:g}%")
    ax.set(xscale="log", yscale="log", xlabel="regression to detect (% slower)",
           ylabel="runs of each version", ylim=(1, 1e4),
           title="Derived: n = 2 (1.96 + 0.84)^2 (noise / effect)^2\n(5% false alarms, 80% power)")
    ticks = [0.5, 1, 2, 5, 10, 20, 30]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.legend(fontsize=8)
    return fig
