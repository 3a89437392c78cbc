#!/usr/bin/env python3
"""Build a tiny, randomly initialized GPT-style decoder and save it to a folder.

Nothing is downloaded: the model is plain PyTorch defined in this file, so a test
suite or a CI job can create it in a second on a CPU. The folder gets two files:

    config.json   the TinyGPTConfig fields (layers, hidden size, heads, vocab...)
    model.pt      the state dict, saved with torch.save

Examples:

    python make_tiny_model.py --out /tmp/tiny-gpt
    python make_tiny_model.py --out /tmp/tiny-gpt --layers 2 --hidden 64 --heads 4 --vocab 1000
    python make_tiny_model.py --out /tmp/tiny-gpt-2 --config /tmp/tiny-gpt/config.json --seed 1

Load it back from Python:

    from make_tiny_model import load_tiny_model
    model, config = load_tiny_model("/tmp/tiny-gpt")
    logits = model(torch.randint(0, config.vocab_size, (1, 8)))
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TinyGPTConfig", "TinyGPT", "build_tiny_model", "save_tiny_model", "load_tiny_model", "human_count", "human_bytes"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.pt"


@dataclasses.dataclass
class TinyGPTConfig:
    vocab_size: int = 256
    n_layers: int = 2
    hidden_size: int = 32
    n_heads: int = 4
    max_seq_len: int = 64
    ffn_mult: int = 4
    tie_embeddings: bool = True
    init_std: float = 0.02
    seed: int = 0
    dtype: str = "float32"
    model_type: str = "tiny-gpt"

    def validate(self) -> None:
        for name in ("vocab_size", "n_layers", "hidden_size", "n_heads", "max_seq_len", "ffn_mult"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.hidden_size % self.n_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by n_heads ({self.n_heads})"
            )
        if self.dtype not in ("float32", "float16", "bfloat16"):
            raise ValueError(f"dtype must be float32, float16 or bfloat16, got {self.dtype!r}")


class Attention(nn.Module):
    def __init__(self, cfg: TinyGPTConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        # (b, t, h) -> (b, heads, t, head_dim)
        q, k, v = (z.view(b, t, self.n_heads, h // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, h))


class MLP(nn.Module):
    def __init__(self, cfg: TinyGPTConfig):
        super().__init__()
        self.up = nn.Linear(cfg.hidden_size, cfg.ffn_mult * cfg.hidden_size)
        self.down = nn.Linear(cfg.ffn_mult * cfg.hidden_size, cfg.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: TinyGPTConfig):
        super().__init__()
        self.ln_attn = nn.LayerNorm(cfg.hidden_size)
        self.attn = Attention(cfg)
        self.ln_mlp = nn.LayerNorm(cfg.hidden_size)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_attn(x))
        return x + self.mlp(self.ln_mlp(x))


class TinyGPT(nn.Module):
    """A pre-norm decoder-only transformer with learned positions."""

    def __init__(self, cfg: TinyGPTConfig):
        super().__init__()
        cfg.validate()
        self.config = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.pos_emb = nn.Embedding(cfg.max_seq_len, cfg.hidden_size)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        self.apply(self._init)

    def _init(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, t = ids.shape
        if t > self.config.max_seq_len:
            raise ValueError(f"sequence length {t} exceeds max_seq_len {self.config.max_seq_len}")
        pos = torch.arange(t, device=ids.device)
        x = self.tok_emb(ids) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))

    def num_parameters(self) -> int:
        """Unique parameters (a tied embedding counts once)."""
        return sum(p.numel() for p in self.parameters())


def build_tiny_model(cfg: TinyGPTConfig) -> TinyGPT:
    """A model with weights that depend only on cfg.seed."""
    cfg.validate()
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(cfg.seed)
    try:
        model = TinyGPT(cfg)
    finally:
        torch.random.set_rng_state(gen_state)
    return model.to(getattr(torch, cfg.dtype))


def save_tiny_model(model: TinyGPT, out_dir: str | os.PathLike) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config_path = out / CONFIG_NAME
    weights_path = out / WEIGHTS_NAME
    config_path.write_text(json.dumps(dataclasses.asdict(model.config), indent=2) + "\n")
    torch.save(model.state_dict(), weights_path)
    return {"config": config_path, "weights": weights_path}


def load_tiny_model(out_dir: str | os.PathLike, map_location: str = "cpu") -> tuple[TinyGPT, TinyGPTConfig]:
    """Rebuild the model from config.json and load model.pt into it."""
    out = Path(out_dir)
    cfg = TinyGPTConfig(**json.loads((out / CONFIG_NAME).read_text()))
    model = build_tiny_model(cfg)  # leaves the global RNG state untouched
    state = torch.load(out / WEIGHTS_NAME, map_location=map_location, weights_only=True)
    model.load_state_dict(state)
    return model.eval(), cfg


def human_count(n: int) -> str:
    """12345 -> '12.3K', 1234567 -> '1.23M' (powers of 1000)."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.3g}{unit}"
    return str(n)


def human_bytes(n: int) -> str:
    """Bytes with binary units: 1536 -> '1.50 KiB'."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n, 1024)), 4)
    return f"{n / 1024 ** exp:.2f} {('KiB', 'MiB', 'GiB', 'TiB')[exp - 1]}"


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


FLAG_TO_FIELD = {
    "layers": "n_layers",
    "hidden": "hidden_size",
    "heads": "n_heads",
    "vocab": "vocab_size",
    "seq_len": "max_seq_len",
    "ffn_mult": "ffn_mult",
    "dtype": "dtype",
    "seed": "seed",
}


def main(argv: list[str] | None = None) -> int:
    d = TinyGPTConfig()
    parser = argparse.ArgumentParser(
        description=(
            "Build a tiny randomly initialized GPT-style decoder (plain PyTorch, no downloads) and save "
            "config.json + model.pt to --out. Start from the defaults or from --config, then apply the flags."
        )
    )
    parser.add_argument("--out", required=True, help="output folder (created if missing)")
    parser.add_argument("--config", help="a JSON file with TinyGPTConfig fields, e.g. the config.json of an earlier run")
    parser.add_argument("--layers", type=_positive, help=f"decoder blocks (default: {d.n_layers})")
    parser.add_argument("--hidden", type=_positive, help=f"hidden size (default: {d.hidden_size})")
    parser.add_argument("--heads", type=_positive, help=f"attention heads (default: {d.n_heads})")
    parser.add_argument("--vocab", type=_positive, help=f"vocabulary size (default: {d.vocab_size})")
    parser.add_argument("--seq-len", type=_positive, help=f"maximum sequence length (default: {d.max_seq_len})")
    parser.add_argument("--ffn-mult", type=_positive, help=f"MLP width / hidden size (default: {d.ffn_mult})")
    parser.add_argument("--no-tie", action="store_true", help="give the output layer its own weights")
    parser.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), help=f"weights dtype (default: {d.dtype})")
    parser.add_argument("--seed", type=int, help=f"random seed for the weights (default: {d.seed})")
    args = parser.parse_args(argv)

    fields = dataclasses.asdict(d)
    if args.config:
        try:
            loaded = json.loads(Path(args.config).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            parser.error(f"cannot read --config {args.config}: {exc}")
        unknown = sorted(set(loaded) - set(fields))
        if unknown:
            parser.error(f"--config {args.config} has unknown field(s): {', '.join(unknown)}")
        fields.update(loaded)
    for flag, field in FLAG_TO_FIELD.items():
        if getattr(args, flag) is not None:
            fields[field] = getattr(args, flag)
    if args.no_tie:
        fields["tie_embeddings"] = False
    cfg = TinyGPTConfig(**fields)
    try:
        cfg.validate()
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))

    model = build_tiny_model(cfg)
    with torch.no_grad():  # a quick forward pass proves the model runs
        logits = model(torch.zeros(1, min(8, cfg.max_seq_len), dtype=torch.long))
    paths = save_tiny_model(model, args.out)

    n_params = model.num_parameters()
    size = paths["weights"].stat().st_size
    print(
        f"config: layers={cfg.n_layers} hidden={cfg.hidden_size} heads={cfg.n_heads} "
        f"vocab={cfg.vocab_size} seq_len={cfg.max_seq_len} dtype={cfg.dtype} seed={cfg.seed}"
    )
    print(f"parameters: {n_params:,} ({human_count(n_params)})")
    print(f"forward check: logits {list(logits.shape)} {str(logits.dtype).replace('torch.', '')}")
    print(f"saved: {paths['weights']} ({human_bytes(size)}), {paths['config']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
