"""Figures of inference/kv-cache.md (attention variants, MLA) and inference/disaggregated-serving.md.

Every figure is derived: the inputs are written below next to their sources, the arithmetic is the
one the chapters show, and nothing is random, so the SVGs are byte-for-byte reproducible.
"""
from __future__ import annotations

from make_figures import figure, logspace, plt

KIB = 1024
GIB = 1024**3

# Bytes of BF16 cache per token, from the configurations listed in inference/kv_cache_calc.py:
# MHA/MQA/GQA: 2 x layers x kv_heads x head_dim x 2; MLA: layers x (kv_lora_rank + qk_rope_head_dim) x 2.
PER_TOKEN = (  # (label, attention, bytes per token)
    ("Llama 2 7B", "MHA", 2 * 32 * 32 * 128 * 2),        # huggingface.co/meta-llama/Llama-2-7b-hf config.json
    ("Falcon 7B", "MQA", 2 * 32 * 1 * 64 * 2),           # huggingface.co/tiiuae/falcon-7b config.json
    ("Llama 3 8B", "GQA", 2 * 32 * 8 * 128 * 2),         # huggingface.co/meta-llama/Meta-Llama-3-8B config.json
    ("Llama 3 70B", "GQA", 2 * 80 * 8 * 128 * 2),        # huggingface.co/meta-llama/Meta-Llama-3-70B config.json
    ("Llama 3.1 405B", "GQA", 2 * 126 * 8 * 128 * 2),    # huggingface.co/meta-llama/Llama-3.1-405B config.json
    ("DeepSeek-V2", "MLA", 60 * (512 + 64) * 2),         # github.com/deepseek-ai/DeepSeek-V3 configs/config_236B.json
    ("DeepSeek-V3", "MLA", 61 * (512 + 64) * 2),         # github.com/deepseek-ai/DeepSeek-V3 configs/config_671B.json
)
COLORS = {"MHA": "tab:red", "MQA": "tab:green", "GQA": "tab:blue", "MLA": "tab:purple"}
LLAMA3_70B = 2 * 80 * 8 * 128 * 2          # 327,680 bytes
DEEPSEEK_V3 = 61 * (512 + 64) * 2          # 70,272 bytes
DEEPSEEK_V3_FULL = 61 * 128 * (128 + 64 + 128) * 2  # every head's key (no-RoPE 128 + RoPE 64) and value (128)

# Link rates per direction. NVLink 4: 900 GB/s bidirectional per H100 (NVIDIA NVLink page), halved; the
# port rates are per direction, divided by 8 (see network/intra-node.md and network/inter-node.md).
LINKS = (("NVLink 4, 450 GB/s", 450e9), ("400 Gb/s (NDR, 400GbE), 50 GB/s", 50e9),
         ("200 Gb/s, 25 GB/s", 25e9), ("100 Gb/s, 12.5 GB/s", 12.5e9), ("25 Gb/s, 3.125 GB/s", 3.125e9))

# DeepSeek-V3/R1 inference system overview (github.com/deepseek-ai/open-infra-index, 202502OpenSourceWeek,
# day 6): per H800 node, ~73.7k input tokens/s during prefill (cache hits included) or ~14.8k output tokens/s
# during decode; 608B input and 168B output tokens in the 24 hours reported.
DS_PREFILL_TOK_S, DS_DECODE_TOK_S = 73.7e3, 14.8e3
DS_INPUT, DS_OUTPUT = 608e9, 168e9


@figure("kv-per-token-by-attention", "inference")
def kv_per_token() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.8, 3.4))
    values = [p[2] / KIB for p in PER_TOKEN]
    bars = ax.barh(range(len(PER_TOKEN)), values, color=[COLORS[p[1]] for p in PER_TOKEN])
    ax.bar_label(bars, labels=[f"{v:,.1f} KiB" if v % 1 else f"{v:,.0f} KiB" for v in values], fontsize=7, padding=2)
    ax.set_yticks(range(len(PER_TOKEN)), [f"{n} ({a})" for n, a, _ in PER_TOKEN])
    ax.invert_yaxis()
    ax.set(xscale="log", xlim=(4, 3000), xlabel="KV cache per token, KiB (BF16, all layers)",
           title="Derived: KV cache per token of public models by attention type")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax.legend(handles, list(COLORS), fontsize=7, loc="lower right")
    return fig


@figure("kv-context-by-attention", "inference")
def kv_context() -> plt.Figure:
    ctx = [2 ** k for k in range(10, 18)]
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    series = (("Llama 3 70B shape with MHA (64 KV heads)", 2 * 80 * 64 * 128 * 2, "tab:red", "-"),
              ("DeepSeek-V3 if every head's K and V were cached", DEEPSEEK_V3_FULL, "tab:purple", ":"),
              ("Llama 3 70B as shipped, GQA (8 KV heads)", LLAMA3_70B, "tab:blue", "-"),
              ("DeepSeek-V3 as shipped, MLA latent (512 + 64)", DEEPSEEK_V3, "tab:purple", "-"),
              ("Llama 3 70B shape with MQA (1 KV head)", 2 * 80 * 1 * 128 * 2, "tab:green", "-"))
    for label, per_token, color, style in series:
        ax.plot(ctx, [c * per_token / GIB for c in ctx], color=color, linestyle=style, marker="o", markersize=3,
                label=f"{label}: {per_token / KIB:,.4g} KiB/token")
    ax.axhline(80e9 / GIB, color="black", linestyle="--", linewidth=1)
    ax.text(1100, 80e9 / GIB * 0.55, "80 GB = 74.5 GiB", fontsize=7)
    ax.set(xscale="log", yscale="log", ylim=(0.02, 40000), xlabel="tokens in the sequence",
           ylabel="KV cache per sequence (GiB)", title="Derived: one sequence's BF16 cache by attention type")
    ax.set_xticks(ctx, [f"{c // 1024}K" for c in ctx])
    ax.legend(fontsize=6.5, loc="upper left")
    return fig


@figure("mla-decode-intensity", "inference")
def mla_intensity() -> plt.Figure:
    # Decode attention, BF16 cache, one query token per sequence. Per cached token and KV stream:
    # GQA with g query heads per KV head and d_k = d_v = d: FLOPs 2 g (d + d), bytes 2 (d + d) -> g FLOP/byte.
    # MLA absorbed (FlashMLA's "MQA mode", d_k = 576, d_v = 512 read from the same latent):
    # FLOPs 2 h (576 + 512), bytes 2 x 576 -> h x 1088 / 576 FLOP/byte.
    heads = [2 ** k for k in range(0, 8)]
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    ax.plot(heads, heads, marker="o", markersize=3, color="tab:blue", label="MHA/GQA: g query heads per KV head")
    ax.plot(heads, [h * 1088 / 576 for h in heads], marker="o", markersize=3, color="tab:purple",
            label="MLA, absorbed: h query heads on one latent")
    points = (("Llama 2 7B (MHA)", 1, 1, "tab:red"), ("Llama 3 70B (GQA, g = 8)", 8, 8, "tab:blue"),
              ("DeepSeek-V3, TP 8: 16 heads per GPU", 16, 16 * 1088 / 576, "tab:purple"),
              ("DeepSeek-V3, 128 heads on one GPU", 128, 128 * 1088 / 576, "tab:purple"))
    for label, x, y, color in points:
        ax.scatter([x], [y], s=40, color=color, zorder=3)
        right = x < 64  # labels of the last points go to their left, inside the axes
        ax.annotate(f"{label}: {y:.0f}", (x, y), textcoords="offset points", xytext=(6, 6) if right else (-8, -14),
                    ha="left" if right else "right", fontsize=7)
    ridge = 989.5 / 3.35  # H100 SXM dense BF16 TFLOPS / HBM TB/s, as in prefill-decode.md
    ax.axhline(ridge, color="black", linestyle=":", linewidth=1)
    ax.text(1.1, ridge * 1.12, f"H100 SXM ridge point, {ridge:.0f} FLOP/byte", fontsize=7)
    ax.set(xscale="log", yscale="log", ylim=(0.5, 1000), xlabel="query heads that share one cached KV stream",
           ylabel="FLOP per byte of cache read", title="Derived: arithmetic intensity of decode attention")
    ax.set_xticks(heads, [str(h) for h in heads])
    ax.legend(fontsize=7, loc="lower right")
    return fig


@figure("kv-transfer-time", "inference")
def kv_transfer() -> plt.Figure:
    prompts = [int(x) for x in logspace(1024, 131072, 60)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, (name, per_token) in zip(axes, (("Llama 3 70B, GQA, 320 KiB/token", LLAMA3_70B),
                                             ("DeepSeek-V3, MLA, 68.6 KiB/token", DEEPSEEK_V3))):
        for label, rate in LINKS:
            ax.plot(prompts, [1e3 * p * per_token / rate for p in prompts], label=label)
        ax.axhline(50, color="black", linestyle="--", linewidth=1)
        ax.text(1100, 58, "50 ms", fontsize=7)
        ax.set(xscale="log", yscale="log", xlabel="prompt tokens", title=name)
        ax.set_xticks([1024, 4096, 16384, 65536, 131072], ["1K", "4K", "16K", "64K", "128K"])
    axes[0].set_ylabel("time to move one prompt's KV cache (ms)")
    axes[1].legend(fontsize=6.5, loc="lower right")
    fig.suptitle("Derived: BF16 KV bytes of the prompt / link rate per direction, one copy over one link",
                 fontsize=9)
    return fig


def prefill_share(isl_over_osl: float, prefill_rate: float = DS_PREFILL_TOK_S,
                  decode_rate: float = DS_DECODE_TOK_S) -> float:
    """Share of nodes that prefill when each node prefills `prefill_rate` input tokens/s or decodes
    `decode_rate` output tokens/s and requests have `isl_over_osl` input tokens per output token."""
    p = isl_over_osl / prefill_rate
    return p / (p + 1 / decode_rate)


@figure("pd-prefill-share", "inference")
def pd_share() -> plt.Figure:
    ratios = logspace(0.5, 200, 120)
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    ratio = DS_PREFILL_TOK_S / DS_DECODE_TOK_S
    for factor, style in ((0.5, ":"), (1, "-"), (2, "--")):
        pr = DS_DECODE_TOK_S * ratio * factor
        ax.plot(ratios, [100 * prefill_share(r, pr) for r in ratios], linestyle=style, color="tab:blue",
                label=f"prefill/decode tokens per node-second = {ratio * factor:.1f}")
    marks = (("DeepSeek's reported day, 608B in / 168B out", DS_INPUT / DS_OUTPUT),
             ("10 input tokens per output token", 10.0))
    for label, r in marks:
        s = 100 * prefill_share(r)
        ax.scatter([r], [s], color="tab:orange", zorder=3)
        ax.annotate(f"{label}: {s:.0f}%", (r, s), textcoords="offset points", xytext=(6, -12), fontsize=7)
    ax.set(xscale="log", ylim=(0, 100), xlabel="input tokens per output token (ISL / OSL)",
           ylabel="share of nodes prefilling (%)",
           title="Derived: prefill share = (I/P) / (I/P + O/D),\nP and D from DeepSeek's published per-node averages")
    ax.legend(fontsize=7, loc="upper left")
    return fig
