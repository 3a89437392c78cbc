"""Figures of the training-performance and low-precision chapters, all derived (no measurement, no randomness
beyond the seeded generator of block_scaled_quant.py), drawn by make_figures.py.

- training/performance: the attention share of training FLOPs by sequence length, the memory and time of
  activation checkpointing, and how much of an FSDP step communication can hide behind;
- training: the representable values of the low-precision element formats, and the quantization error of
  each block-scaled format as computed by chapters/training/block_scaled_quant.py.
"""
from __future__ import annotations

import importlib.util
import sys

from make_figures import CHAPTERS, GB, figure, logspace, plt

PEAK_BF16_H100 = 989.5e12  # dense BF16 FLOP/s of an H100 SXM (chapters/compute/accelerator/README.md)


def attention_share(params: float, layers: int, width: int, seq: int) -> float:
    """The PaLM-appendix-B count: attention's 12 L h s of the 6N + 12 L h s FLOPs per token."""
    attn = 12 * layers * width * seq
    return attn / (6 * params + attn)


# (label, parameters without embeddings as in the chapter's examples, layers, width)
SHAPES = (("7B (L=32, h=4096)", 7e9, 32, 4096), ("70B (L=80, h=8192)", 70e9, 80, 8192),
          ("405B (L=126, h=16384)", 405e9, 126, 16384))


@figure("attention-flops-share", "training/performance")
def attention_flops_share():
    seqs = [2 ** k for k in range(10, 18)]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for label, n, layers, width in SHAPES:
        ax.plot(seqs, [100 * attention_share(n, layers, width, s) for s in seqs], marker="o", markersize=3,
                label=label)
    ax.axvline(8192, color="grey", linestyle=":", linewidth=1)
    ax.set(xscale="log", ylim=(0, 100), xlabel="sequence length s (tokens)",
           ylabel="attention share of FLOPs per token (%)",
           title="Derived: 12·L·h·s / (6N + 12·L·h·s), PaLM appendix B")
    ax.set_xticks(seqs, [f"{s // 1024}K" for s in seqs])
    ax.legend(fontsize=7, loc="upper left")
    return fig


# activation checkpointing: an 8B-shaped model (the chapter's example), FlashAttention, BF16 activations
AC_PARAMS, AC_LAYERS, AC_WIDTH, AC_SEQ, AC_GPUS = 8e9, 32, 4096, 8192, 8


def ac_point(frac: float, micro_batch: int) -> tuple[float, float]:
    """(GB per GPU, extra compute in %) when a fraction `frac` of the blocks is fully recomputed.

    Memory: FSDP-sharded model states (16 bytes per parameter over AC_GPUS GPUs), the activations of
    the blocks that are not checkpointed (34 s·b·h bytes each, Korthikanti et al. with FlashAttention),
    the saved input of the checkpointed ones (2 s·b·h) and one block's activations while it is recomputed.
    Time: recomputing a block repeats its forward, 2N + 4·L·h·s of the 6N + 12·L·h·s FLOPs per token.
    """
    sbh = AC_SEQ * micro_batch * AC_WIDTH
    states = 16 * AC_PARAMS / AC_GPUS
    acts = AC_LAYERS * sbh * (34 * (1 - frac) + 2 * frac) + (34 * sbh if frac > 0 else 0)
    attn = AC_LAYERS * AC_WIDTH * AC_SEQ
    extra = frac * (2 * AC_PARAMS + 4 * attn) / (6 * AC_PARAMS + 12 * attn)
    return (states + acts) / GB, 100 * extra


@figure("activation-checkpointing-tradeoff", "training/performance")
def ac_tradeoff():
    fracs = [i / 8 for i in range(9)]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for b in (1, 2, 4):
        pts = [ac_point(f, b) for f in fracs]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                label=f"micro-batch {b} × 8,192 tokens")
    ax.annotate("no checkpointing", ac_point(0, 4), xytext=(-20, 14), textcoords="offset points", fontsize=7,
                ha="right", arrowprops={"arrowstyle": "->"})
    ax.annotate("every block", ac_point(1, 1), xytext=(0, 8), textcoords="offset points", fontsize=7, ha="center")
    ax.axvline(80, color="black", linestyle="--", linewidth=1)
    ax.text(81, 36, "80 GB", fontsize=8)
    ax.set(xlim=(0, 165), ylim=(-2, 40), xlabel="memory per GPU, GB (10⁹ bytes): FSDP-8 model states + "
           "block activations", ylabel="extra compute per step (%)",
           title="Derived: checkpointing 0, 1/8, …, 8/8 of the blocks of an 8B-shaped model\n"
                 "(32 layers, h = 4096, FlashAttention, BF16), FSDP over 8 GPUs")
    ax.legend(fontsize=7, loc="upper right")
    return fig


# FSDP communication against compute, 8B-shaped model on H100 SXM
OV_PARAMS, OV_FLOPS_PER_TOKEN, OV_KERNEL_EFF = 8e9, 6.09e10, 0.5  # 6N + attention at 8,192 tokens (chapter)
NVLINK, IB = 450e9, 50e9  # bytes/s per GPU and direction: NVLink 4, one 400 Gb/s adapter per GPU


def fsdp_comm_seconds(kind: str) -> float:
    """Per optimizer step and GPU: ZeRO-3 moves 3 x 2N bytes (two BF16 all-gathers, one BF16 reduce-scatter)."""
    vol = 3 * 2 * OV_PARAMS
    if kind == "fsdp-8-nvlink":
        return vol * 7 / 8 / NVLINK
    if kind == "fsdp-64-ib":
        return vol * 63 / 64 / IB
    if kind == "hsdp-8x8":  # shard inside a node over NVLink, all-reduce each node's gradient shard across 8 nodes
        return vol * 7 / 8 / NVLINK + 2 * (2 * OV_PARAMS / 8) * 7 / 8 / IB
    raise ValueError(kind)


@figure("fsdp-overlap-efficiency", "training/performance")
def fsdp_overlap():
    tokens = logspace(512, 131072, 120)
    cases = (("FSDP on 8 GPUs, NVLink 450 GB/s", "fsdp-8-nvlink"), ("FSDP on 64 GPUs, 50 GB/s per GPU", "fsdp-64-ib"),
             ("HSDP 8 × 8: shard in node, replicate across", "hsdp-8x8"))
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    for label, kind in cases:
        comm = fsdp_comm_seconds(kind)
        compute = [t * OV_FLOPS_PER_TOKEN / (OV_KERNEL_EFF * PEAK_BF16_H100) for t in tokens]
        line, = ax.plot(tokens, [100 * c / max(c, comm) for c in compute], label=f"{label}, full overlap")
        ax.plot(tokens, [100 * c / (c + comm) for c in compute], linestyle="--", color=line.get_color(),
                linewidth=1, label="… no overlap")
    ax.axvline(8192, color="grey", linestyle=":", linewidth=1)
    ax.set(xscale="log", ylim=(0, 105), xlabel="tokens per GPU per optimizer step",
           ylabel="compute share of the step (%)",
           title="Derived: 8B-shaped model, ZeRO-3 traffic 3 × 2N bytes per step,\n"
                 "compute at 50% of the H100 BF16 peak")
    ax.set_xticks([1024, 4096, 16384, 65536], ["1K", "4K", "16K", "64K"])
    ax.legend(fontsize=6.5, loc="lower right")
    return fig


# ----------------------------------------------------------------------------- low precision

def _block_scaled_quant():
    name = "block_scaled_quant_for_figures"
    if name not in sys.modules:
        path = CHAPTERS / "training" / "block_scaled_quant.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@figure("format-grids", "training")
def format_grids():
    import math

    bsq = _block_scaled_quant()
    keys = ("e2m1", "e2m3", "e3m2", "e4m3", "e5m2")
    fig, ax = plt.subplots(figsize=(7.5, 2.9))
    for i, key in enumerate(keys):
        elem = bsq.ELEMENTS[key]
        grid = [v for v in bsq.grid_of(elem) if v > 0]
        ax.plot([math.log2(v) for v in grid], [i] * len(grid), "|", markersize=9)
        ax.text(math.log2(grid[-1]) + 0.6, i, f"{len(grid)} values, max {elem.max:g}", va="center", fontsize=7)
    ax.set_yticks(range(len(keys)), [bsq.ELEMENTS[k].name for k in keys])
    ax.invert_yaxis()
    ax.set(xlim=(-17, 24), xlabel="log₂ of the value", title="Derived: the positive values of each element "
           "format (block_scaled_quant.py)")
    return fig


QUANT_FORMATS = ("bf16", "fp8-tensor", "fp8-block128", "mxfp8", "mxfp6", "mxfp4", "nvfp4")
QUANT_DISTS = (("normal", "normal", "rel_rms"), ("0.1% outliers × 64", "outliers", "rel_rms"),
               ("rows over 25 binades (per-row error)", "row-scales", "row_rel_rms"))


def quant_errors() -> dict[str, dict[str, float]]:
    """The script's default run (256 x 1024 values, seed 0) for each distribution, rounded to 3 digits."""
    bsq = _block_scaled_quant()
    out: dict[str, dict[str, float]] = {}
    for label, dist, metric in QUANT_DISTS:
        x = bsq.make_tensor(dist, 256, 1024, 1.0, 0)
        rows = bsq.run_table(x, list(QUANT_FORMATS), "floor")
        out[label] = {r["format"]: float(f"{r[metric]:.3g}") for r in rows}
    return out


@figure("block-quant-error", "training")
def block_quant_error():
    data = quant_errors()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.26
    for j, (label, values) in enumerate(data.items()):
        xs = [i + (j - 1) * width for i in range(len(QUANT_FORMATS))]
        ax.bar(xs, [values[f] for f in QUANT_FORMATS], width, label=label)
    ax.set_xticks(range(len(QUANT_FORMATS)), list(QUANT_FORMATS))
    ax.set(yscale="log", ylim=(1e-3, 5), ylabel="relative RMS error",
           title="Derived: fake quantization of 256 × 1,024 values by block_scaled_quant.py (seed 0)")
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    return fig
