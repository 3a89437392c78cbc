"""Figures of the accelerators chapter (compute/accelerator/README.md), drawn from its sourced tables.

The numbers below are the ones printed in the chapter's comparison table, per accelerator, with the
source each comes from. Where a vendor quotes a whole board or rack, or only a figure "with sparsity",
the per-accelerator dense value is derived here from the quoted figure with `per_gpu_dense`, so that the
arithmetic shown in the chapter's notes and the number drawn are one and the same computation. The MAMF
rows are public measurements made with the book's own mamf-finder.py method (best of a shape sweep, BF16
or FP8 inputs), collected in the upstream project's comparison table at a fixed commit.

tests/scripts/test_accelerator_tables.py checks that the chapter's tables and these lists agree.
"""
from __future__ import annotations

from make_figures import figure, plt

GIB_IN_GB = 1024**3 / 1e9  # 1 GiB = 1.073741824 GB

NVIDIA_HGX = "https://www.nvidia.com/en-us/data-center/hgx/"
NVIDIA_GB200 = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
NVIDIA_GB300 = "https://www.nvidia.com/en-us/data-center/gb300-nvl72/"
BLACKWELL_ULTRA = "https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/"
VERDA_GB300 = "https://verda.com/blog/gb300-nvl72-architecture"
MLPERF_B200 = ("https://github.com/mlcommons/inference_results_v6.0/blob/main/closed/Nebius/systems/"
               "nebius_b200_n1.json")
NVFP4_BLOG = "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
AMD_MI355X = "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"
TPU_V5E = "https://cloud.google.com/tpu/docs/v5e"
TPU_V5P = "https://cloud.google.com/tpu/docs/v5p"
TPU_V6E = "https://cloud.google.com/tpu/docs/v6e"
TPU_7X = "https://cloud.google.com/tpu/docs/tpu7x"
TRN2 = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/trainium2.html"
TRN3 = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/trainium3.html"
MAMF_TABLE = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/"
              "compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table")


def per_gpu_dense(quoted_tflops: float, gpus: int = 1, sparse: bool = False) -> float:
    """A vendor figure for `gpus` accelerators, halved when it is quoted 'with sparsity'."""
    return quoted_tflops / gpus / (2 if sparse else 1)


# Derivations of the chapter's notes: (what is quoted, quoted TFLOPS, accelerators it covers, sparse?).
DERIVED = {
    "H100/H200 BF16": ("H100 and H200 pages, BF16 with sparsity", 1979, 1, True),
    "H100/H200 FP8": ("H100 and H200 pages, FP8 with sparsity", 3958, 1, True),
    "B200 BF16": ("HGX B200, 8 GPUs, FP16/BF16 with sparsity", 36_000, 8, True),
    "B200 FP8": ("HGX B200, 8 GPUs, FP8 with sparsity", 72_000, 8, True),
    "B200 FP4": ("HGX B200, 8 GPUs, FP4 with sparsity", 144_000, 8, True),
    "B300 BF16": ("HGX B300, 8 GPUs, FP16/BF16 with sparsity", 36_000, 8, True),
    "B300 FP8": ("HGX B300, 8 GPUs, FP8 with sparsity", 72_000, 8, True),
    "GB200 BF16": ("GB200 NVL72, 72 GPUs, FP16/BF16 with sparsity", 360_000, 72, True),
    "GB200 FP8": ("GB200 NVL72, 72 GPUs, FP8 with sparsity", 720_000, 72, True),
    "GB200 FP4": ("GB200 NVL72, 72 GPUs, FP4 with sparsity", 1_440_000, 72, True),
    "GB300 BF16": ("GB300 NVL72, 72 GPUs, FP16/BF16 with sparsity", 360_000, 72, True),
    "GB300 FP8": ("GB300 NVL72, 72 GPUs, FP8 with sparsity", 720_000, 72, True),
    "GB300 FP4": ("GB300 NVL72, 72 GPUs, dense FP4", 1_080_000, 72, False),
}


def derived(key: str) -> float:
    _, quoted, gpus, sparse = DERIVED[key]
    return per_gpu_dense(quoted, gpus, sparse)


# B300 dense FP4: 13 PFLOPS as charted in NVFP4_BLOG (dense/sparse per GPU: B200 9/18, B300 13/18,
# GB200 10/20, GB300 15/20), which the derived B200, GB200 and GB300 values above agree with.
# name, dense FP4, dense FP8, dense BF16 (TFLOPS; None: no such rate), memory, its unit ("GB" or "GiB"),
# memory bandwidth (TB/s), power (W; None: not published), main source.
ACCELERATORS = (
    ("A100 SXM", None, None, 312, 80, "GB", 2.039, 400, "https://www.nvidia.com/en-us/data-center/a100/"),
    ("H100 SXM", None, derived("H100/H200 FP8"), derived("H100/H200 BF16"), 80, "GB", 3.35, 700,
     "https://www.nvidia.com/en-us/data-center/h100/"),
    ("H200 SXM", None, derived("H100/H200 FP8"), derived("H100/H200 BF16"), 141, "GB", 4.8, 700,
     "https://www.nvidia.com/en-us/data-center/h200/"),
    ("B200 (HGX)", derived("B200 FP4"), derived("B200 FP8"), derived("B200 BF16"), 180, "GB", 8.0, 1000, NVIDIA_HGX),
    ("B300 (HGX)", 13_000, derived("B300 FP8"), derived("B300 BF16"), 288, "GB", 8.0, 1100, NVIDIA_HGX),
    ("GB200 (per GPU)", derived("GB200 FP4"), derived("GB200 FP8"), derived("GB200 BF16"), 186, "GB", 8.0, 1200,
     NVIDIA_GB200),
    ("GB300 (per GPU)", derived("GB300 FP4"), derived("GB300 FP8"), derived("GB300 BF16"), 288, "GB", 8.0, 1400,
     NVIDIA_GB300),
    ("MI300X", None, 2614.9, 1307.4, 192, "GB", 5.3, 750,
     "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    ("MI325X", None, 2614.9, 1307.4, 256, "GB", 6.0, 1000,
     "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"),
    ("MI355X", 10_000, 5000, 2500, 288, "GB", 8.0, 1400, AMD_MI355X),
    ("Gaudi 3", None, 1835, 1835, 128, "GB", 3.7, 900,
     "https://www.intel.com/content/www/us/en/products/details/processors/ai-accelerators/gaudi3.html"),
    ("TPU v5e", None, None, 197, 16, "GB", 0.819, None, TPU_V5E),
    ("TPU v5p", None, 459, 459, 95, "GiB", 2.765, None, TPU_V5P),
    ("TPU v6e", None, 918, 918, 32, "GB", 1.638, None, TPU_V6E),
    ("TPU7x", None, 4614, 2307, 192, "GiB", 7.37, None, TPU_7X),
    ("Trainium2", None, 1299, 667, 96, "GiB", 2.9, None, TRN2),
    ("Trainium3", 2517, 2517, 671, 144, "GiB", 4.9, None, TRN3),
)

# name, dtype, measured MAMF (TFLOPS), best shape MxNxK, torch version: from MAMF_TABLE.
MAMF = (
    ("A100 SXM", "bf16", 271.2, "1024x10240x5120", "2.6.0+cu126"),
    ("H100 SXM", "bf16", 794.5, "2048x2048x13312", "2.7.0+cu126"),
    ("B200 (HGX)", "bf16", 1745.0, "1792x16128x3072", "2.7.1+cu128"),
    ("B300 (HGX)", "bf16", 1769.0, "12288x18432x1024", "2.9.1+cu130"),
    ("GB200 (per GPU)", "bf16", 1822.0, "4096x9728x2048", "2.10.0.dev20250916+cu130"),
    ("MI300X", "bf16", 668.4, "10240x15360x8192", "2.5.1+6.3.42131"),
    ("MI325X", "bf16", 784.9, "13312x10240x8192", "2.6.0+6.2.4"),
    ("MI355X", "bf16", 1565.0, "12288x8192x8192", "2.8.0+rocm7.0.2.git245bf6ed"),
    ("Gaudi 3", "bf16", 1243.0, "16384x4096x768", "2.6.0+hpu_1.21.4-3.gitabf798b"),
    ("H100 SXM", "fp8", 1402.6, "1024x9216x14336", "2.7.0+cu126"),
    ("H200 SXM", "fp8", 1453.4, "1280x4096x12032", "2.7.1+cu128"),
    ("B200 (HGX)", "fp8", 3432.5, "15360x4096x3072", "2.7.1+cu128"),
    ("B300 (HGX)", "fp8", 3353.3, "3072x6144x7168", "2.9.1+cu130"),
    ("GB200 (per GPU)", "fp8", 3615.6, "19456x5120x1536", "2.10.0.dev20250916+cu130"),
    ("Gaudi 3", "fp8", 1289.5, "16640x1536x3072", "2.6.0+hpu_1.21.4-3.gitabf798b"),
)


def spec(name: str) -> tuple:
    return next(row for row in ACCELERATORS if row[0] == name)


def peak(name: str, dtype: str) -> float:
    """The dense peak of the chapter's table that a MAMF row is compared with."""
    row = spec(name)
    return row[3] if dtype == "bf16" else row[2]


def efficiency(name: str, dtype: str, mamf: float) -> float:
    return mamf / peak(name, dtype)


def memory_gb(row: tuple) -> float:
    return row[4] * (GIB_IN_GB if row[5] == "GiB" else 1.0)


@figure("accelerator-dense-tflops", "compute/accelerator")
def dense_tflops() -> plt.Figure:
    rows = list(reversed(ACCELERATORS))
    fig, ax = plt.subplots(figsize=(7.2, 6.4))
    height = 0.27
    for j, (label, col, color) in enumerate((("dense BF16", 3, "tab:blue"), ("dense FP8", 2, "tab:orange"),
                                               ("dense FP4 (NVFP4 or MXFP4)", 1, "tab:green"))):
        ys = [i + (j - 1) * height for i in range(len(rows))]
        vals = [row[col] if row[col] else 0 for row in rows]
        bars = ax.barh(ys, [v if v else float("nan") for v in vals], height, label=label, color=color)
        ax.bar_label(bars, labels=[f"{v:,.0f}" if v else "" for v in vals], fontsize=5, padding=1)
    ax.set_yticks(range(len(rows)), [row[0] for row in rows], fontsize=8)
    ax.set(xscale="log", xlim=(100, 40_000), xlabel="TFLOPS per accelerator (log scale)",
           title="Sourced and derived: vendor dense peaks by precision\n(no bar: the vendor lists no such rate)")
    ax.legend(fontsize=7, loc="lower right")
    return fig


# where a label would hide another one: (dx, dy) in points and the alignment
LABEL_OFFSETS = {"B200 (HGX)": (-4, 4, "right"), "GB200 (per GPU)": (3, -9, "left"),
                 "B300 (HGX)": (-4, 5, "right"), "Trainium3": (4, -8, "left"), "H200 SXM": (-4, 3, "right"),
                 "TPU v5p": (4, -8, "left"), "Trainium2": (-4, 3, "right")}


@figure("accelerator-memory-bandwidth", "compute/accelerator")
def memory_bandwidth() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    caps = [memory_gb(row) for row in ACCELERATORS]
    for ms, style in ((10, ":"), (20, "--"), (40, "-.")):
        xs = [10, 330]
        ax.plot(xs, [x / ms for x in xs], color="grey", linestyle=style, linewidth=0.8,
                label=f"reads all of its memory in {ms} ms")
    groups: dict[tuple[float, float], list[str]] = {}
    for row, cap in zip(ACCELERATORS, caps):
        groups.setdefault((round(cap), row[6]), []).append(row[0])
    for (cap, bw), names in groups.items():
        vendor = "tab:green" if names[0].startswith(("A1", "H", "B", "GB")) else (
            "tab:red" if names[0].startswith("MI") else "tab:purple" if names[0].startswith("TPU") else "tab:brown")
        ax.plot([cap], [bw], "o", color=vendor, markersize=4)
        dx, dy, ha = LABEL_OFFSETS.get(names[0], (4, 2, "left"))
        ax.annotate(", ".join(names), (cap, bw), xytext=(dx, dy), textcoords="offset points", fontsize=6, ha=ha)
    ax.set(xlim=(0, 330), ylim=(0, 9), xlabel="memory per accelerator (GB, 10⁹ bytes; GiB figures converted)",
           ylabel="memory bandwidth (TB/s)",
           title="Sourced: memory capacity against bandwidth\nlines: capacity ÷ bandwidth, the time to stream the whole memory once")
    ax.legend(fontsize=7, loc="lower right")
    return fig


@figure("accelerator-mamf-efficiency", "compute/accelerator")
def mamf_efficiency() -> plt.Figure:
    rows = sorted(MAMF, key=lambda r: (r[1], efficiency(r[0], r[1], r[2])))
    fig, ax = plt.subplots(figsize=(7.0, 4.8))
    colors = {"bf16": "tab:blue", "fp8": "tab:orange"}
    ys = range(len(rows))
    effs = [100 * efficiency(r[0], r[1], r[2]) for r in rows]
    bars = ax.barh(ys, effs, color=[colors[r[1]] for r in rows])
    ax.bar_label(bars, labels=[f"{e:.1f}% ({r[2]:,.0f} of {peak(r[0], r[1]):,.0f})" for e, r in zip(effs, rows)],
                 fontsize=6, padding=2)
    ax.set_yticks(list(ys), [f"{r[0]}, {r[1].upper()}" for r in rows], fontsize=7)
    ax.set(xlim=(0, 115), xlabel="measured MAMF ÷ vendor dense peak (%)",
           title="Measured by others (public mamf-finder results), divided by\nthe dense peaks of this chapter's table")
    for dtype, color in colors.items():
        ax.barh([0], [0], color=color, label=dtype.upper())
    ax.legend(fontsize=7, loc="lower right")
    return fig
