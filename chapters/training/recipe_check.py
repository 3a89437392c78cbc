#!/usr/bin/env python3
"""Check a published model's recipe before re-training it: parameters, FLOPs and memory.

Reads a transformers-style config.json of a Llama-family decoder (model_type llama, mistral,
qwen2 or qwen3) and prints:

* the parameter count by component (embedding, attention, MLP, norms, output head), computed
  from the config fields alone, so it can be compared with the size the paper or model card states;
* the training compute for a token budget: 6*N*D, and 6*N*D plus the attention term of the
  PaLM paper (appendix B), 12 * layers * heads * head_dim * seq_len FLOPs per token;
* the memory for weights, gradients and optimizer states (AdamW) at a chosen precision,
  optionally divided over N shards (FSDP full sharding / ZeRO stage 3);
* with --peak-tflops and --mfu, the GPU-hours the budget needs.

Nothing is downloaded. --verify builds the model from the same config with transformers on the
"meta" device (no memory is allocated) and compares the sum of p.numel() with the arithmetic.

Examples:
    python recipe_check.py --config config.json --tokens 3T --seq-len 2048
    python recipe_check.py --transformers-default llama --tokens 2T --seq-len 4096 --verify
    python recipe_check.py --config config.json --tokens 3T --peak-tflops 312 --mfu 0.5 --gpus 16
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

SUPPORTED = ("llama", "mistral", "qwen2", "qwen3")

# Bytes per parameter for (weights, gradients, optimizer states) with AdamW.
# Optimizer states: the two moments, plus an fp32 master copy of the weights when the weights are bf16.
PRECISIONS = {
    "fp32": (4, 4, 8),  # fp32 weights and grads, fp32 m and v
    "bf16-mixed": (2, 2, 12),  # bf16 weights and grads, fp32 master + m + v (the ZeRO paper's 16 bytes)
    "bf16-mixed-fp32-grads": (2, 4, 12),  # as above, gradients accumulated and reduced in fp32
    "bf16-pure": (2, 2, 4),  # bf16 weights, grads, m and v; no master copy
}

SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}


def parse_count(text: str) -> int:
    """'3T' -> 3e12, '300B' -> 3e11, '2e12' -> 2e12, '1000' -> 1000."""
    t = text.strip().upper()
    try:
        if t and t[-1] in SUFFIXES:
            value = float(t[:-1]) * SUFFIXES[t[-1]]
        else:
            value = float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (use e.g. 3T, 300B, 2e12)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return int(value)


@dataclass
class Shape:
    model_type: str
    vocab: int
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    attention_bias: bool
    mlp_bias: bool
    max_positions: int | None

    @classmethod
    def from_dict(cls, cfg: dict) -> Shape:
        model_type = cfg.get("model_type")
        if model_type not in SUPPORTED:
            raise ValueError(f"model_type {model_type!r} is not supported; this script knows {', '.join(SUPPORTED)}")
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if k not in cfg]
        if missing:
            raise ValueError(f"config lacks {', '.join(missing)}")
        heads = int(cfg["num_attention_heads"])
        kv = cfg.get("num_key_value_heads") or heads
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
        return cls(model_type=model_type, vocab=int(cfg["vocab_size"]), hidden=int(cfg["hidden_size"]),
                   ffn=int(cfg["intermediate_size"]), layers=int(cfg["num_hidden_layers"]), heads=heads,
                   kv_heads=int(kv), head_dim=int(head_dim), tied=bool(cfg.get("tie_word_embeddings", False)),
                   attention_bias=bool(cfg.get("attention_bias", False)), mlp_bias=bool(cfg.get("mlp_bias", False)),
                   max_positions=cfg.get("max_position_embeddings"))


def count_parameters(s: Shape) -> dict[str, int]:
    """Parameters by component, as the transformers implementation of each model type lays them out."""
    d, q_out, kv_out = s.hidden, s.heads * s.head_dim, s.kv_heads * s.head_dim
    attn = d * q_out + 2 * d * kv_out + q_out * d  # q, k, v, o projections
    if s.model_type == "qwen2":  # q, k and v always carry a bias, o never
        attn += q_out + 2 * kv_out
    elif s.attention_bias:  # llama, mistral, qwen3: all four projections
        attn += q_out + 2 * kv_out + d
    norms = 2 * d  # input and post-attention RMSNorm weights
    if s.model_type == "qwen3":  # RMSNorm over the head dimension of q and of k
        norms += 2 * s.head_dim
    mlp = 3 * d * s.ffn + ((2 * s.ffn + d) if s.mlp_bias else 0)  # gate, up, down
    return {
        "embedding": s.vocab * d,
        "attention": s.layers * attn,
        "mlp": s.layers * mlp,
        "norms": s.layers * norms + d,  # plus the final norm
        "lm_head": 0 if s.tied else s.vocab * d,
    }


def flops(s: Shape, params: dict[str, int], tokens: int, seq_len: int) -> dict[str, float]:
    total = sum(params.values())
    # The input embedding is a table lookup, not a matmul; the output head is a matmul (tied or not).
    matmul = total - params["embedding"] + (s.vocab * s.hidden if s.tied else 0)
    attention_per_token = 12 * s.layers * s.heads * s.head_dim * seq_len  # PaLM, appendix B
    return {
        "6ND_total": 6.0 * total * tokens,
        "6ND_matmul": 6.0 * matmul * tokens,
        "attention": float(attention_per_token) * tokens,
        "model": (6.0 * matmul + attention_per_token) * tokens,
        "per_token": 6.0 * matmul + attention_per_token,
        "matmul_params": float(matmul),
    }


def human(n: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3f}{unit}"
    return f"{n:.0f}"


def load_config(args: argparse.Namespace) -> dict:
    if args.config:
        try:
            return json.loads(Path(args.config).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {args.config}: {exc}") from None
    from transformers import AutoConfig  # only needed here and for --verify
    return AutoConfig.for_model(args.transformers_default).to_dict()


def verify(cfg: dict) -> int:
    """Sum of p.numel() of the transformers model built from cfg on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    fields = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures", "transformers_version")}
    config = AutoConfig.for_model(cfg["model_type"], **fields)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())  # tied weights are counted once


def plot(path: str, name: str, params: dict[str, int]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = list(params)
    values = [params[k] / 1e6 for k in labels]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh(labels[::-1], values[::-1], color="#4c72b0")
    for y, v in enumerate(values[::-1]):
        ax.text(v, y, f" {v:,.1f}M", va="center", fontsize=8)
    ax.set_xlabel("parameters (millions)")
    ax.set_title(f"{name}: {sum(params.values()) / 1e9:.3f}B parameters by component", fontsize=10)
    ax.set_xlim(0, max(values) * 1.25)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="a transformers-style config.json")
    src.add_argument("--transformers-default", choices=SUPPORTED,
                     help="the default config of this transformers config class (offline)")
    p.add_argument("--tokens", type=parse_count, default=parse_count("1T"), help="token budget D (default 1T)")
    p.add_argument("--seq-len", type=int, help="training sequence length (default: max_position_embeddings)")
    p.add_argument("--precision", choices=sorted(PRECISIONS), default="bf16-mixed",
                   help="weights/gradients/AdamW-state precision (default bf16-mixed)")
    p.add_argument("--shards", type=int, default=1, help="divide the states over this many GPUs (FSDP/ZeRO-3)")
    p.add_argument("--peak-tflops", type=float, help="dense peak TFLOP/s per GPU in the compute dtype")
    p.add_argument("--mfu", type=float, help="model FLOPs utilization to assume, 0 < MFU <= 1")
    p.add_argument("--gpus", type=int, help="number of GPUs, to turn GPU-hours into days")
    p.add_argument("--verify", action="store_true", help="build the model on the meta device and compare counts")
    p.add_argument("--plot", metavar="FILE", help="save a bar chart of the parameters by component")
    p.add_argument("--name", default=None, help="model name for the plot title")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.shards < 1:
        parser.error("--shards must be >= 1")
    if args.mfu is not None and not 0 < args.mfu <= 1:
        parser.error("--mfu must be in (0, 1]")
    if (args.mfu is None) != (args.peak_tflops is None):
        parser.error("--peak-tflops and --mfu go together")
    if args.seq_len is not None and args.seq_len < 1:
        parser.error("--seq-len must be positive")
    try:
        cfg = load_config(args)
        shape = Shape.from_dict(cfg)
    except ValueError as exc:
        parser.error(str(exc))
    seq_len = args.seq_len or shape.max_positions
    if not seq_len:
        parser.error("the config has no max_position_embeddings; give --seq-len")

    params = count_parameters(shape)
    total = sum(params.values())
    f = flops(shape, params, args.tokens, seq_len)
    wb, gb, ob = PRECISIONS[args.precision]
    memory = {"weights": total * wb / args.shards, "gradients": total * gb / args.shards,
              "optimizer": total * ob / args.shards}
    result: dict = {"model_type": shape.model_type, "parameters": params, "total": total,
                    "tokens": args.tokens, "seq_len": seq_len, "flops": f, "precision": args.precision,
                    "shards": args.shards, "memory_bytes": memory}
    if args.peak_tflops:
        gpu_hours = f["model"] / (args.peak_tflops * 1e12 * args.mfu) / 3600
        result["gpu_hours"] = gpu_hours
        if args.gpus:
            result["days"] = gpu_hours / args.gpus / 24
    if args.verify:
        result["transformers_numel"] = verify(cfg)
    if args.plot:
        plot(args.plot, args.name or shape.model_type, params)

    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if not args.verify or result["transformers_numel"] == total else 1

    print(f"model_type {shape.model_type}: {shape.layers} layers, hidden {shape.hidden}, ffn {shape.ffn}, "
          f"heads {shape.heads} (kv {shape.kv_heads}, head_dim {shape.head_dim}), vocab {shape.vocab}, "
          f"tied embeddings {shape.tied}")
    print("parameters by component:")
    for name, n in params.items():
        print(f"  {name:<10} {n:>16,}  {100 * n / total:5.1f}%")
    print(f"  {'total':<10} {total:>16,}  ({human(total)})")
    print(f"training compute for D = {human(args.tokens)} tokens at sequence length {seq_len}:")
    print(f"  6*N*D, N = all parameters            {f['6ND_total']:.3e} FLOP")
    print(f"  6*N*D, N without the input embedding {f['6ND_matmul']:.3e} FLOP")
    print(f"  attention term 12*L*H*Q*T*D          {f['attention']:.3e} FLOP "
          f"(+{100 * f['attention'] / f['6ND_matmul']:.1f}%)")
    print(f"  model FLOPs (for MFU)                {f['model']:.3e} FLOP ({f['per_token']:.3e} per token)")
    print(f"memory at {args.precision} ({wb}+{gb}+{ob} bytes per parameter)"
          + (f", sharded over {args.shards}" if args.shards > 1 else "") + ":")
    for name, b in memory.items():
        print(f"  {name:<10} {b / 1e9:10.2f} GB  {b / 2**30:10.2f} GiB")
    print(f"  {'total':<10} {sum(memory.values()) / 1e9:10.2f} GB  {sum(memory.values()) / 2**30:10.2f} GiB"
          "  (activations, buffers and fragmentation come on top)")
    if "gpu_hours" in result:
        line = f"at {args.peak_tflops:g} TFLOP/s peak and MFU {args.mfu:g}: {result['gpu_hours']:,.0f} GPU-hours"
        if "days" in result:
            line += f", {result['days']:,.1f} days on {args.gpus} GPUs"
        print(line)
    if args.verify:
        n = result["transformers_numel"]
        verdict = "match" if n == total else f"MISMATCH ({n - total:+,})"
        print(f"transformers model built on the meta device: {n:,} parameters, {verdict}")
        return 0 if n == total else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
