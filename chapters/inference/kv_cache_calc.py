#!/usr/bin/env python3
"""KV cache size for MHA, MQA, GQA and MLA models: per token, per sequence, per batch and per GPU.

The cache of one token in one layer is

* multi-head, multi-query and grouped-query attention (MHA, MQA, GQA):
  2 x kv_heads x head_dim x bytes (a key and a value vector per key/value head; MHA has
  kv_heads = heads, MQA has kv_heads = 1, GQA anything in between);
* multi-head latent attention (MLA, DeepSeek-V2 and later):
  (kv_lora_rank + qk_rope_head_dim) x bytes (one compressed latent vector shared by all heads,
  plus one small key that carries the rotary position embedding).

Multiply by the number of layers for a token, by the context length for a sequence and by the
number of sequences for a batch. With tensor parallelism each GPU keeps kv_heads / tp of the
key/value heads (never less than one head: past tp = kv_heads the heads are replicated); an MLA
latent belongs to every head at once, so each tensor-parallel rank keeps all of it.

The model comes from a preset (a few public configurations, each with its source), from a
Hugging Face config.json on disk (--config), or from the flags. Nothing is read from the
network and the standard library is enough. The arithmetic is the one of the chapter
chapters/inference/kv-cache.md; chapters/inference/capacity_plan.py uses the GQA formula to plan
a whole deployment.

    python kv_cache_calc.py --preset llama-3-70b --context 8192 --batch 16
    python kv_cache_calc.py --preset deepseek-v3 --context 131072 --free-gib 40 --tp 8
    python kv_cache_calc.py --attention mla --layers 61 --kv-lora-rank 512 --qk-rope-head-dim 64
    python kv_cache_calc.py --config path/to/config.json --dtype fp8
    python kv_cache_calc.py --compare --context 32768
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

KIB = 1024
GIB = 1024**3
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
ATTENTION = ("mha", "mqa", "gqa", "mla")


@dataclass(frozen=True)
class Model:
    name: str
    attention: str              # one of ATTENTION
    layers: int
    heads: int = 0              # query heads (needed for MHA/MQA/GQA, optional for MLA)
    kv_heads: int = 0           # key/value heads (MHA/MQA/GQA)
    head_dim: int = 0           # MHA/MQA/GQA
    kv_lora_rank: int = 0       # MLA: width of the cached latent
    qk_rope_head_dim: int = 0   # MLA: width of the cached rotary key
    qk_nope_head_dim: int = 0   # MLA: per-head key width without rotary part (only for the comparison)
    v_head_dim: int = 0         # MLA: per-head value width (only for the comparison)
    source: str = ""


# Public configurations. Each value was read from the file named in the comment next to it.
PRESETS: dict[str, Model] = {
    # https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
    # num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size 4096 -> head_dim 128
    "llama-2-7b": Model("Llama 2 7B", "mha", layers=32, heads=32, kv_heads=32, head_dim=128,
                        source="https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    # https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json
    # n_layer 32, n_head 71, hidden_size 4544 -> head_dim 64, multi_query true -> one key/value head
    "falcon-7b": Model("Falcon 7B", "mqa", layers=32, heads=71, kv_heads=1, head_dim=64,
                       source="https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json"),
    # https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json
    # num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, hidden_size 4096 -> head_dim 128
    "llama-3-8b": Model("Llama 3 8B", "gqa", layers=32, heads=32, kv_heads=8, head_dim=128,
                        source="https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"),
    # https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json
    # num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192 -> head_dim 128
    "llama-3-70b": Model("Llama 3 70B", "gqa", layers=80, heads=64, kv_heads=8, head_dim=128,
                         source="https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json"),
    # https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json
    # num_hidden_layers 126, num_attention_heads 128, num_key_value_heads 8, hidden_size 16384 -> head_dim 128
    "llama-3.1-405b": Model("Llama 3.1 405B", "gqa", layers=126, heads=128, kv_heads=8, head_dim=128,
                            source="https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json"),
    # https://github.com/deepseek-ai/DeepSeek-V3/blob/main/inference/configs/config_236B.json (DeepSeek-V2)
    # n_layers 60, n_heads 128, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128
    "deepseek-v2": Model("DeepSeek-V2", "mla", layers=60, heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                         qk_nope_head_dim=128, v_head_dim=128,
                         source="https://github.com/deepseek-ai/DeepSeek-V3/blob/main/inference/configs/"
                                "config_236B.json"),
    # https://github.com/deepseek-ai/DeepSeek-V3/blob/main/inference/configs/config_671B.json (DeepSeek-V3)
    # n_layers 61, n_heads 128, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128
    "deepseek-v3": Model("DeepSeek-V3", "mla", layers=61, heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                         qk_nope_head_dim=128, v_head_dim=128,
                         source="https://github.com/deepseek-ai/DeepSeek-V3/blob/main/inference/configs/"
                                "config_671B.json"),
}


def elements_per_token_per_layer(m: Model) -> int:
    """Cache elements one token adds to one layer."""
    if m.attention == "mla":
        return m.kv_lora_rank + m.qk_rope_head_dim
    return 2 * m.kv_heads * m.head_dim


def bytes_per_token(m: Model, dtype_bytes: int) -> int:
    """Cache bytes one token adds across all layers."""
    return m.layers * elements_per_token_per_layer(m) * dtype_bytes


def bytes_per_token_per_gpu(m: Model, dtype_bytes: int, tp: int) -> int:
    """The share of one token's cache that each of `tp` tensor-parallel ranks keeps."""
    total = bytes_per_token(m, dtype_bytes)
    if m.attention == "mla":
        return total  # the latent is shared by all heads: every rank keeps all of it
    return total // min(tp, m.kv_heads)


def expanded_mla_bytes_per_token(m: Model, dtype_bytes: int) -> int:
    """What an MLA model would cache if it stored every head's full key (no-RoPE + RoPE part) and value."""
    return m.layers * m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * dtype_bytes


def formula(m: Model, dtype_bytes: int) -> str:
    """The per-token formula with this model's numbers in it."""
    total = bytes_per_token(m, dtype_bytes)
    if m.attention == "mla":
        return (f"layers x (kv_lora_rank + qk_rope_head_dim) x bytes = {m.layers} x ({m.kv_lora_rank} + "
                f"{m.qk_rope_head_dim}) x {dtype_bytes} = {total:,} bytes")
    return (f"2 x layers x kv_heads x head_dim x bytes = 2 x {m.layers} x {m.kv_heads} x {m.head_dim} x "
            f"{dtype_bytes} = {total:,} bytes")


@dataclass
class Result:
    model: str
    attention: str
    dtype_bytes: int
    formula: str
    bytes_per_token: int
    kib_per_token: float
    context: int
    bytes_per_sequence: int
    gib_per_sequence: float
    batch: int
    bytes_per_batch: int
    gib_per_batch: float
    tp: int
    bytes_per_token_per_gpu: int
    gib_per_batch_per_gpu: float
    free_gib: float | None = None
    sequences_that_fit: int | None = None
    expanded_bytes_per_token: int | None = None
    source: str = ""


def compute(m: Model, dtype_bytes: int = 2, context: int = 8192, batch: int = 1, tp: int = 1,
            free_gib: float | None = None) -> Result:
    per_token = bytes_per_token(m, dtype_bytes)
    per_gpu = bytes_per_token_per_gpu(m, dtype_bytes, tp)
    per_seq = per_token * context
    fits = None if free_gib is None else math.floor(free_gib * GIB / (per_gpu * context))
    expanded = None
    if m.attention == "mla" and m.heads and m.qk_nope_head_dim and m.v_head_dim:
        expanded = expanded_mla_bytes_per_token(m, dtype_bytes)
    return Result(model=m.name, attention=m.attention, dtype_bytes=dtype_bytes, formula=formula(m, dtype_bytes),
                  bytes_per_token=per_token, kib_per_token=per_token / KIB, context=context,
                  bytes_per_sequence=per_seq, gib_per_sequence=per_seq / GIB, batch=batch,
                  bytes_per_batch=per_seq * batch, gib_per_batch=per_seq * batch / GIB, tp=tp,
                  bytes_per_token_per_gpu=per_gpu, gib_per_batch_per_gpu=per_gpu * context * batch / GIB,
                  free_gib=free_gib, sequences_that_fit=fits, expanded_bytes_per_token=expanded, source=m.source)


def model_from_config(path: Path, name: str | None = None) -> Model:
    """A Model from a Hugging Face config.json; raises ValueError with the missing key."""
    cfg = json.loads(path.read_text())

    def need(key: str) -> int:
        if key not in cfg or cfg[key] is None:
            raise ValueError(f"{path}: no '{key}' (this calculator reads Llama/Mistral/Qwen/DeepSeek style keys)")
        return int(cfg[key])

    label = name or path.parent.name or path.name
    if cfg.get("kv_lora_rank"):
        return Model(label, "mla", layers=need("num_hidden_layers"), heads=int(cfg.get("num_attention_heads") or 0),
                     kv_lora_rank=need("kv_lora_rank"), qk_rope_head_dim=need("qk_rope_head_dim"),
                     qk_nope_head_dim=int(cfg.get("qk_nope_head_dim") or 0), v_head_dim=int(cfg.get("v_head_dim") or 0),
                     source=str(path))
    layers, heads = need("num_hidden_layers"), need("num_attention_heads")
    kv_heads = int(cfg.get("num_key_value_heads") or heads)  # absent: plain multi-head attention
    head_dim = int(cfg.get("head_dim") or 0) or need("hidden_size") // heads
    attention = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    return Model(label, attention, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim, source=str(path))


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description="KV cache per token, per sequence, per batch and per GPU for MHA, MQA, GQA and MLA models.",
        epilog="Presets: " + ", ".join(PRESETS) + ". Example: --preset deepseek-v3 --context 131072 --free-gib 40")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--preset", choices=sorted(PRESETS), help="a public model configuration (see --list)")
    src.add_argument("--config", type=Path, help="a Hugging Face config.json on disk")
    src.add_argument("--attention", choices=ATTENTION, help="describe the model with the flags below")
    src.add_argument("--compare", action="store_true", help="one row per preset at the given context and dtype")
    src.add_argument("--list", action="store_true", help="print the presets and their sources")
    m = ap.add_argument_group("model shape (with --attention)")
    m.add_argument("--layers", type=positive_int, help="num_hidden_layers")
    m.add_argument("--heads", type=positive_int, help="num_attention_heads (query heads)")
    m.add_argument("--kv-heads", type=positive_int, help="num_key_value_heads (GQA; MHA uses --heads, MQA 1)")
    m.add_argument("--head-dim", type=positive_int, help="head_dim (MHA, MQA, GQA)")
    m.add_argument("--kv-lora-rank", type=positive_int, help="kv_lora_rank (MLA)")
    m.add_argument("--qk-rope-head-dim", type=positive_int, help="qk_rope_head_dim (MLA)")
    w = ap.add_argument_group("workload")
    w.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="bf16",
                   help="cache element type (default bf16: 2 bytes; fp8 and int8: 1 byte)")
    w.add_argument("--context", type=positive_int, default=8192, help="tokens per sequence, prompt + output "
                                                                       "(default 8192)")
    w.add_argument("--batch", type=positive_int, default=1, help="concurrent sequences (default 1)")
    w.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree (default 1)")
    w.add_argument("--free-gib", type=positive_float,
                   help="GiB of memory per GPU left for the cache: print how many sequences of --context fit")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    return ap


def model_from_flags(ap: argparse.ArgumentParser, args: argparse.Namespace) -> Model:
    if args.layers is None:
        ap.error("--attention needs --layers")
    if args.attention == "mla":
        if args.kv_lora_rank is None or args.qk_rope_head_dim is None:
            ap.error("--attention mla needs --kv-lora-rank and --qk-rope-head-dim")
        return Model("custom MLA model", "mla", layers=args.layers, heads=args.heads or 0,
                     kv_lora_rank=args.kv_lora_rank, qk_rope_head_dim=args.qk_rope_head_dim)
    if args.head_dim is None:
        ap.error(f"--attention {args.attention} needs --head-dim")
    heads = args.heads
    if args.attention == "mqa":
        if args.kv_heads not in (None, 1):
            ap.error("--attention mqa has exactly one key/value head; drop --kv-heads or use gqa")
        kv_heads = 1
    elif args.attention == "mha":
        if heads is None:
            ap.error("--attention mha needs --heads")
        if args.kv_heads not in (None, heads):
            ap.error(f"--attention mha has as many key/value heads as query heads ({heads}); use gqa")
        kv_heads = heads
    else:
        if args.kv_heads is None:
            ap.error("--attention gqa needs --kv-heads")
        kv_heads = args.kv_heads
        if heads is not None and heads % kv_heads:
            ap.error(f"--heads ({heads}) must be a multiple of --kv-heads ({kv_heads})")
    return Model(f"custom {args.attention.upper()} model", args.attention, layers=args.layers, heads=heads or 0,
                 kv_heads=kv_heads, head_dim=args.head_dim)


def check_tp(ap: argparse.ArgumentParser, model: Model, tp: int) -> None:
    if model.attention != "mla" and model.kv_heads % tp and tp % model.kv_heads:
        ap.error(f"--tp {tp} neither divides nor is a multiple of the {model.kv_heads} key/value heads")


def describe(r: Result) -> list[str]:
    lines = [f"model: {r.model} ({r.attention.upper()}), cache of {r.dtype_bytes} byte(s) per element"]
    if r.source:
        lines.append(f"source: {r.source}")
    lines.append(f"per token: {r.formula} = {r.kib_per_token:,.2f} KiB")
    if r.expanded_bytes_per_token:
        ratio = r.expanded_bytes_per_token / r.bytes_per_token
        lines.append(f"  (every head's key and value, uncompressed: {r.expanded_bytes_per_token:,} bytes per token, "
                     f"{ratio:.1f}x the latent)")
    lines.append(f"per sequence of {r.context:,} tokens: {r.bytes_per_sequence:,} bytes = {r.gib_per_sequence:,.3f} GiB")
    noun = "sequence" if r.batch == 1 else "sequences"
    lines.append(f"batch of {r.batch:,} {noun}: {r.bytes_per_batch:,} bytes = {r.gib_per_batch:,.3f} GiB")
    if r.tp > 1:
        how = "the latent is replicated on every rank" if r.attention == "mla" else "key/value heads split over ranks"
        lines.append(f"per GPU at tensor parallel {r.tp}: {r.bytes_per_token_per_gpu:,} bytes per token ({how}), "
                     f"{r.gib_per_batch_per_gpu:,.3f} GiB for the batch")
    if r.free_gib is not None:
        lines.append(f"in {r.free_gib:g} GiB of free memory per GPU: {r.sequences_that_fit:,} sequences of "
                     f"{r.context:,} tokens fit")
    return lines


def compare_rows(dtype_bytes: int, context: int, batch: int) -> list[Result]:
    return [compute(m, dtype_bytes, context, batch) for m in PRESETS.values()]


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    dtype_bytes = DTYPE_BYTES[args.dtype]
    if args.list:
        for key, m in PRESETS.items():
            print(f"{key:<15} {m.attention.upper():<4} {m.name:<15} {m.source}")
        return 0
    if args.compare:
        rows = compare_rows(dtype_bytes, args.context, args.batch)
        if args.json:
            print(json.dumps([asdict(r) for r in rows], indent=1))
            return 0
        print(f"{args.dtype} cache, {args.context:,} tokens per sequence, {args.batch:,} sequence(s)")
        print(f"{'model':<15} {'attn':<4} {'bytes/token':>12} {'KiB/token':>10} {'GiB/seq':>9} {'GiB/batch':>10}")
        for r in rows:
            print(f"{r.model:<15} {r.attention.upper():<4} {r.bytes_per_token:>12,} {r.kib_per_token:>10.2f} "
                  f"{r.gib_per_sequence:>9.3f} {r.gib_per_batch:>10.3f}")
        return 0
    if args.preset:
        model = PRESETS[args.preset]
    elif args.config:
        try:
            model = model_from_config(args.config)
        except (OSError, ValueError) as exc:
            ap.error(f"--config: {exc}")
    elif args.attention:
        model = model_from_flags(ap, args)
    else:
        ap.error("give one of --preset, --config, --attention, --compare or --list")
    check_tp(ap, model, args.tp)
    result = compute(model, dtype_bytes, args.context, args.batch, args.tp, args.free_gib)
    if args.json:
        print(json.dumps(asdict(result), indent=1))
    else:
        print("\n".join(describe(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
