"""Network figures drawn from published collective benchmarks (sourced data, kept here with its links).

Every number below is copied from the public page named next to it; nothing is measured or derived
here except the ratios in the second figure, which divide a published value by the theoretical
ceiling stated in chapters/network/collectives.md.
"""
from __future__ import annotations

from make_figures import figure, plt

GB = 1e9
SIZES_1K_TO_8G = [2 ** k for k in range(10, 34)]  # the rows the Azure pages label 1K ... 8G

# All-reduce bus bandwidth (GB/s) by message size, nccl-tests/rccl-tests all_reduce_perf.
# Azure AI benchmarking guide, in-place column, one VM (8 GPUs; 4 for GB200), NCCL default algorithm
# as the pages state it: https://github.com/Azure/AI-benchmarking-guide/tree/main/Azure_Results
AZURE = {
    "8x A100 SXM4 (ND A100 v4, NCCL 2.18.5)": [
        0.04, 0.08, 0.17, 0.33, 0.67, 1.37, 2.70, 5.15, 10.11, 19.24, 36.22, 53.54, 71.43, 89.99, 109.22, 132.77,
        166.63, 174.18, 213.87, 221.58, 228.10, 230.22, 230.48, 231.58],
    "8x H100 SXM (ND H100 v5, NVLS, NCCL 2.18.5)": [
        0.07, 0.14, 0.27, 0.53, 0.95, 1.71, 2.72, 5.40, 10.86, 21.35, 43.70, 81.93, 128.73, 172.13, 234.45, 295.53,
        361.78, 400.61, 423.38, 438.46, 466.35, 472.36, 475.54, 478.87],
    "8x H200 (ND H200 v5, NVLS, NCCL 2.20.5)": [
        0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78, 138.44, 181.94, 240.41, 300.91,
        368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98],
    "4x GB200 in one host (ND GB200 v6, ring, NCCL 2.25.1)": [
        0.10, 0.19, 0.38, 0.76, 1.46, 2.88, 5.71, 11.29, 22.41, 44.07, 80.48, 110.43, 146.27, 253.46, 331.09,
        422.62, 550.73, 574.19, 593.53, 618.74, 646.87, 666.63, 673.06, 679.61],
}
# AMD ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X" (March 2025),
# 8x MI300X, RCCL 2.22.3, out-of-place column, 1 KiB to 16 GiB:
# https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html
MI300X_SIZES = [2 ** k for k in range(10, 35)]
MI300X = [0.14, 0.27, 0.54, 1.08, 2.12, 4.31, 8.33, 16.22, 27.20, 37.59, 66.93, 105.43, 141.91, 175.43, 197.26,
          240.57, 273.66, 294.55, 305.62, 310.46, 314.72, 316.04, 317.40, 317.96, 318.98]
# aws-samples/awsome-distributed-training, micro-benchmarks/nccl-tests/README.md, two instances each,
# out-of-place column: https://github.com/aws-samples/awsome-distributed-training/tree/main/micro-benchmarks/nccl-tests
AWS_P4DE_SIZES = [2 ** k for k in range(10, 32)]
AWS_P4DE = [0.01, 0.02, 0.05, 0.09, 0.16, 0.27, 0.54, 1.07, 2.06, 3.78, 6.35, 9.09, 14.73, 20.62, 26.39, 40.85,
            47.58, 64.31, 69.89, 74.28, 76.79, 78.33]
AWS_P5_SIZES = [2 ** k for k in range(10, 35)]
AWS_P5 = [0.03, 0.05, 0.10, 0.19, 0.33, 0.55, 0.91, 2.26, 3.84, 7.95, 15.95, 26.70, 46.64, 76.80, 105.52, 143.09,
          209.19, 289.16, 342.81, 393.34, 436.95, 443.72, 465.87, 479.28, 487.09]


def size_ticks(ax, lo: int = 10, hi: int = 34, step: int = 4) -> None:
    names = {10: "1 KiB", 14: "16 KiB", 18: "256 KiB", 22: "4 MiB", 26: "64 MiB", 30: "1 GiB", 34: "16 GiB"}
    ticks = [k for k in range(lo, hi + 1, step)]
    ax.set_xticks([2 ** k for k in ticks], [names.get(k, f"2^{k}") for k in ticks])


@figure("published-allreduce-busbw", "network")
def published_busbw() -> plt.Figure:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.9), sharey=True)
    for label, values in AZURE.items():
        ax1.plot(SIZES_1K_TO_8G, values, marker="o", markersize=2.5, label=label)
    ax1.plot(MI300X_SIZES, MI300X, marker="o", markersize=2.5, label="8x MI300X (AMD blog, RCCL 2.22.3)")
    ax1.set(title="Inside one node", ylabel="all-reduce bus bandwidth (GB/s)")
    ax2.plot(AWS_P4DE_SIZES, AWS_P4DE, marker="o", markersize=2.5, label="2x p4de.24xlarge, 16 A100, 400 Gbps EFA")
    ax2.plot(AWS_P5_SIZES, AWS_P5, marker="o", markersize=2.5, label="2x p5.48xlarge, 16 H100, 3,200 Gbps EFA")
    for y, text in ((50, "p4de network ceiling, 50 GB/s per node"), (400, "p5 network ceiling, 400 GB/s per node")):
        ax2.axhline(y, color="grey", linestyle=":", linewidth=1)
        ax2.text(1.3e3, y * 1.12, text, fontsize=7)
    ax2.set(title="Two nodes over AWS EFA (aws-samples README)")
    for ax in (ax1, ax2):
        ax.set(xscale="log", yscale="log", xlabel="message size", ylim=(0.01, 1200))
        size_ticks(ax)
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("Published: nccl-tests / rccl-tests all_reduce_perf bus bandwidth by message size", fontsize=9)
    return fig


# (label, published peak busbw GB/s, theoretical ceiling GB/s, where) for the efficiency bars; the
# ceilings are the per-direction rates of collectives.md (per GPU inside a node, per node across nodes).
PEAKS = (
    ("8x A100, NVLink 3", 231.58, 300, "Azure ND A100 v4, 8 GiB"),
    ("8x H100, NVLink 4, NVLS", 478.87, 450, "Azure ND H100 v5, 8 GiB"),
    ("8x H200, NVLink 4, NVLS", 479.98, 450, "Azure ND H200 v5, 8 GiB"),
    ("4x GB200, NVLink 5, ring", 679.61, 900, "Azure ND GB200 v6, 8 GiB"),
    ("8x MI300X, Infinity Fabric", 318.98, 448, "AMD ROCm blog, 16 GiB"),
    ("8x RTX 5090, PCIe 5.0", 28.0, 63.0, "NVIDIA/nccl#1639, 1-8 GiB"),
    ("24x A100 on 3 nodes, 4x HDR each", 96.0, 100, "NVIDIA/nccl-tests#119, 128 MiB"),
    ("2x p4de, 400 Gbps EFA", 78.33, 50, "aws-samples README, 2 GiB"),
    ("2x p5, 3,200 Gbps EFA", 487.09, 400, "aws-samples README, 16 GiB"),
)


@figure("published-busbw-vs-ceiling", "network")
def busbw_vs_ceiling() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    ys = list(range(len(PEAKS)))
    ratios = [100 * peak / ceiling for _, peak, ceiling, _ in PEAKS]
    colors = ["tab:orange" if r > 100 else "tab:blue" for r in ratios]
    ax.barh(ys, ratios, color=colors)
    for y, r, (_, peak, ceiling, where) in zip(ys, ratios, PEAKS):
        ax.text(max(r, 100) + 2, y, f"{peak:g} / {ceiling:g} GB/s = {r:.0f}%  ({where})", va="center", fontsize=6.5)
    ax.axvline(100, color="black", linewidth=1)
    ax.set_yticks(ys, [p[0] for p in PEAKS], fontsize=7.5)
    ax.invert_yaxis()
    ax.set(xlim=(0, 270), xlabel="published peak bus bandwidth as % of the per-direction ceiling",
           title="Published all-reduce peaks against the per-direction ceiling\n"
                 "orange: above 100% (NVLS, or a tree on two nodes, moves fewer bytes than a ring)")
    return fig


assert all(len(v) == len(SIZES_1K_TO_8G) for v in AZURE.values())
assert len(MI300X) == len(MI300X_SIZES) and len(AWS_P4DE) == len(AWS_P4DE_SIZES) and len(AWS_P5) == len(AWS_P5_SIZES)
