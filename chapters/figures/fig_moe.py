"""Mixture-of-experts figures, derived with the calculator chapters/training/moe_all_to_all.py.

Inputs: the DeepSeek-V3 shape of the calculator's preset (hidden 7168, 256 routed experts, top-8,
expert FFN 2048, FP8 dispatch, BF16 combine), 4,096 tokens per GPU, uniform routing. Bandwidths are
line rates per GPU per direction (NVLink 4: 450 GB/s, NVLink 5: 900 GB/s, one 400 Gb/s NIC: 50 GB/s)
and 400 TFLOPS of achievable expert GEMM throughput is an assumption, as in the chapter.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from make_figures import figure, plt

_CALC = Path(__file__).resolve().parents[1] / "training" / "moe_all_to_all.py"


def _calculator():
    name = "moe_all_to_all_for_figures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _CALC)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _estimate(ep: int, gpus_per_node: int, intra: float, inter: float) -> dict:
    m = _calculator()
    return m.estimate(m.Setup(**m.PRESETS["deepseek-v3"], tokens_per_gpu=4096, ep=ep, gpus_per_node=gpus_per_node,
                              intra_gbps=intra, inter_gbps=inter, tflops=400.0))


EP_SIZES = (8, 16, 32, 64, 128, 256)


@figure("moe-a2a-time-vs-ep", "training")
def a2a_time_vs_ep() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    pair = [_estimate(ep, 8, 450, 50) for ep in EP_SIZES]
    ax.plot(EP_SIZES, [1e3 * r["per_layer"]["comm_s"] for r in pair], marker="o",
            label="8 GPUs per node, one copy per (token, expert)")
    ax.plot(EP_SIZES, [1e3 * r["per_layer"]["comm_one_copy_per_node_s"] for r in pair], marker="o",
            label="8 GPUs per node, one copy per (token, node)")
    nvl = [e for e in EP_SIZES if e <= 64]
    ax.plot(nvl, [1e3 * _estimate(ep, 72, 900, 50)["per_layer"]["comm_s"] for ep in nvl], marker="s",
            label="72-GPU NVLink 5 domain, all on NVLink")
    ax.plot(EP_SIZES, [1e3 * r["per_layer"]["expert_gemm_s"] for r in pair], color="black", linestyle="--",
            label="expert GEMMs at 400 TFLOPS (any EP)")
    ax.set(xscale="log", yscale="log", xlabel="expert-parallel group size (GPUs)",
           ylabel="ms per MoE layer, forward",
           title="Derived: dispatch + combine time per MoE layer, DeepSeek-V3 shape,\n"
                 "4,096 tokens per GPU, 450 GB/s NVLink 4 and 50 GB/s per GPU network")
    ax.set_xticks(EP_SIZES, [str(e) for e in EP_SIZES])
    ax.legend(fontsize=7)
    return fig


@figure("moe-a2a-traffic-share", "training")
def a2a_traffic_share() -> plt.Figure:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    rs = [_estimate(ep, 8, 450, 50)["layout"] for ep in EP_SIZES]
    xs = range(len(EP_SIZES))
    own = [100 * r["fraction_self"] for r in rs]
    intra = [100 * r["fraction_intra_node"] for r in rs]
    inter = [100 * r["fraction_inter_node"] for r in rs]
    ax1.bar(xs, own, label="stays on the GPU")
    ax1.bar(xs, intra, bottom=own, label="other GPUs of the node (NVLink)")
    ax1.bar(xs, inter, bottom=[a + b for a, b in zip(own, intra)], label="other nodes (network)")
    ax1.set_xticks(list(xs), [str(e) for e in EP_SIZES])
    ax1.set(xlabel="EP group size, 8 GPUs per node", ylabel="% of (token, expert) pairs",
            title="Where a token's 8 copies go", ylim=(0, 140))
    ax1.set_yticks([0, 20, 40, 60, 80, 100])
    ax1.legend(fontsize=6.5, loc="upper center", ncol=2)
    ax2.plot(EP_SIZES, [8 * r["fraction_inter_node"] for r in rs], marker="o",
             label="copies sent over the network, one per expert")
    ax2.plot(EP_SIZES, [r["expected_remote_nodes_per_token"] for r in rs], marker="o",
             label="copies sent over the network, one per node")
    ax2.set(xscale="log", xlabel="EP group size, 8 GPUs per node", ylabel="copies per token (expected)",
            title="Network copies per token, top-8 of 256", ylim=(0, 8.5))
    ax2.set_xticks(EP_SIZES, [str(e) for e in EP_SIZES])
    ax2.legend(fontsize=7, loc="lower right")
    fig.suptitle("Derived: uniform routing, experts spread evenly over the EP ranks", fontsize=9)
    return fig
