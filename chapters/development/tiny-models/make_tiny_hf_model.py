#!/usr/bin/env python
"""Build tiny, randomly initialized versions of real Hugging Face architectures, offline.

Each model comes from a `transformers` configuration class written below (no hub
download), shares a tiny byte-level BPE tokenizer trained here on a few lines of
text, and is saved with `save_pretrained` (safetensors) in the standard layout, so
`AutoModelForCausalLM.from_pretrained(path)` and `AutoTokenizer.from_pretrained(path)`
load it back with `local_files_only=True`.

    python make_tiny_hf_model.py --out /tmp/tiny-hf
    python make_tiny_hf_model.py --out /tmp/tiny-hf --arch llama --arch mixtral --seed 1
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

# A few lines of our own text: enough for BPE to learn merges; the byte alphabet
# covers any other input, so every string still tokenizes.
TRAINING_TEXT = [
    "Tiny models make tests fast: they load in a moment and run on any CPU.",
    "A tokenizer turns text into ids; the model turns ids into logits.",
    "Attention reads keys and values; grouped-query attention shares them between heads.",
    "Rotary position embeddings rotate queries and keys by an angle that grows with position.",
    "A mixture of experts sends each token to a few experts chosen by a router.",
    '{"name": "tiny", "layers": 2, "hidden": 64, "experts": 4}',
    "def forward(self, input_ids): return self.lm_head(self.model(input_ids))",
    "0 1 2 3 4 5 6 7 8 9 10 16 32 64 128 256 512 1024",
]
SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>"]


def train_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer trained on TRAINING_TEXT, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|pad|>",
        model_max_length=MAX_POSITIONS,
    )


# Shared sizes, distinct from one another so a transposed dimension cannot hide:
# hidden 64, MLP 96, 4 query heads of 16, 2 key/value heads, 2 layers, 128 positions.
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS, MAX_POSITIONS = 64, 96, 4, 2, 2, 128


def llama(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                       num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                       num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_POSITIONS, **ids)


def mistral(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import MistralConfig
    return MistralConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_POSITIONS,
                         sliding_window=32, **ids)


def qwen2(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import Qwen2Config
    return Qwen2Config(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                       num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                       num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_POSITIONS,
                       tie_word_embeddings=True, **ids)


def gpt2(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import GPT2Config
    return GPT2Config(vocab_size=vocab, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                      n_positions=MAX_POSITIONS, n_inner=FFN, **ids)


def mixtral(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import MixtralConfig
    return MixtralConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_POSITIONS,
                         num_local_experts=4, num_experts_per_tok=2, **ids)


def qwen2_moe(vocab: int, ids: dict[str, int]) -> Any:
    from transformers import Qwen2MoeConfig
    return Qwen2MoeConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                          num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                          num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_POSITIONS,
                          num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                          shared_expert_intermediate_size=48, **ids)


ARCHITECTURES: dict[str, Callable[[int, dict[str, int]], Any]] = {
    "llama": llama, "mistral": mistral, "qwen2": qwen2, "gpt2": gpt2,
    "mixtral": mixtral, "qwen2_moe": qwen2_moe,
}


def build(arch: str, tokenizer: Any, seed: int) -> Any:
    """The tiny model of `arch`, its vocabulary matched to `tokenizer`, weights drawn from `seed`."""
    import torch
    from transformers import AutoModelForCausalLM

    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    config = ARCHITECTURES[arch](len(tokenizer), ids)
    # A private RNG state: building a model leaves the caller's random numbers alone.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    return model.eval()


def disk_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def human(n: float, unit: str = "") -> str:
    for suffix in ("", "K", "M", "G"):
        if abs(n) < 1000 or suffix == "G":
            return f"{n:.1f}{suffix}{unit}" if suffix else f"{n:.0f}{unit}"
        n /= 1000
    return str(n)


def check_reload(folder: Path, tokenizer_vocab: int) -> tuple[int, ...]:
    """Reload from disk only, as a test would, and run one forward pass."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    batch = tok(["Tiny models make tests fast.", "A router picks experts."], return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**batch).logits
    if logits.shape[-1] != tokenizer_vocab:
        raise SystemExit(f"error: {folder}: logits have {logits.shape[-1]} entries for a vocabulary of {tokenizer_vocab}")
    return tuple(logits.shape)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Build tiny random versions of real transformers architectures, offline, "
                    "each with a tiny byte-level BPE tokenizer, saved with save_pretrained.")
    parser.add_argument("--out", required=True, type=Path, help="folder to write one sub-folder per architecture into")
    parser.add_argument("--arch", action="append", choices=sorted(ARCHITECTURES),
                        help="architecture to build (repeat for several; default: all)")
    parser.add_argument("--vocab", type=int, default=320,
                        help="tokenizer vocabulary size to train (at least 258: 256 bytes and 2 special tokens)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    parser.add_argument("--no-check", action="store_true", help="skip reloading each model and running a forward pass")
    args = parser.parse_args(argv)
    if args.vocab < 258:
        parser.error(f"--vocab must be at least 258 (256 byte tokens and 2 special tokens), got {args.vocab}")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} exists and is not a folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here needs the network; make sure nothing tries
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tokenizer = train_tokenizer(args.vocab)
    print(f"tokenizer: byte-level BPE, {len(tokenizer)} tokens (trained on {len(TRAINING_TEXT)} lines)")
    for arch in args.arch or list(ARCHITECTURES):
        model = build(arch, tokenizer, args.seed)
        folder = args.out / arch
        folder.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        params = sum(p.numel() for p in model.parameters())
        weights = (folder / "model.safetensors").stat().st_size
        line = (f"{arch}: {type(model).__name__}, {params:,} parameters ({human(params)}), "
                f"model.safetensors {weights:,} bytes, folder {disk_size(folder):,} bytes")
        if not args.no_check:
            line += f", reloaded: logits {list(check_reload(folder, len(tokenizer)))}"
        print(line, flush=True)
    print(f"saved under {args.out} (seed {args.seed}, transformers {transformers.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
