"""Tests of chapters/training/recipe_check.py, the recipe checker of the re-training chapter.

The parameter arithmetic is compared with real transformers models built from tiny configs on CPU
(sum of p.numel()), for every model type the script knows and for the bias and tying options.
The chapter's TinyLlama and Llama 2 7B figures are checked exactly. Nothing is downloaded.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

from conftest import require

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "training" / "recipe_check.py"

# The shape of TinyLlama 1.1B as its model card and config.json state it (see the chapter).
TINYLLAMA = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632,
             "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4,
             "max_position_embeddings": 2048, "tie_word_embeddings": False}

TINY = {"vocab_size": 97, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
CASES = {
    "llama": {"model_type": "llama", **TINY},
    "llama-tied": {"model_type": "llama", **TINY, "tie_word_embeddings": True},
    "llama-biases": {"model_type": "llama", **TINY, "attention_bias": True, "mlp_bias": True},
    "llama-head-dim": {"model_type": "llama", **TINY, "head_dim": 16},
    "mistral": {"model_type": "mistral", **TINY},
    "qwen2": {"model_type": "qwen2", **TINY, "tie_word_embeddings": False},
    "qwen3": {"model_type": "qwen3", **TINY, "head_dim": 8, "attention_bias": True, "tie_word_embeddings": False},
}


def load():
    return load_script(SCRIPT)


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = load().main(args)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, cfg: dict, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return str(path)


def test_help(capsys) -> None:
    code, out, _ = run_main(["--help"], capsys)
    assert code == 0 and "usage:" in out
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3")


@pytest.mark.parametrize("args, message", [
    (["--config", "missing.json"], "cannot read"),
    (["--config", "{cfg}", "--tokens", "lots"], "not a count"),
    (["--config", "{cfg}", "--mfu", "1.5", "--peak-tflops", "312"], "--mfu must be in"),
    (["--config", "{cfg}", "--mfu", "0.4"], "go together"),
    (["--config", "{cfg}", "--shards", "0"], "--shards must be"),
    (["--config", "{gpt2}"], "is not supported"),
], ids=["missing-file", "bad-tokens", "bad-mfu", "mfu-alone", "bad-shards", "unknown-type"])
def test_bad_arguments(args, message, tmp_path, capsys) -> None:
    cfg = write(tmp_path, TINYLLAMA)
    gpt2 = write(tmp_path, {"model_type": "gpt2", "n_embd": 8}, "gpt2.json")
    args = [a.format(cfg=cfg, gpt2=gpt2) for a in args]
    code, _, err = run_main(args, capsys)
    assert code != 0
    assert message in err


def test_parse_count() -> None:
    m = load()
    assert m.parse_count("3T") == 3 * 10**12
    assert m.parse_count("300B") == 3 * 10**11
    assert m.parse_count("2e12") == 2 * 10**12


def test_tinyllama_figures_of_the_chapter(tmp_path, capsys) -> None:
    """The arithmetic the chapter derives by hand, without building anything."""
    code, out, _ = run_main(["--config", write(tmp_path, TINYLLAMA), "--tokens", "3T", "--seq-len", "2048",
                             "--peak-tflops", "312", "--mfu", "0.5", "--gpus", "16", "--json"], capsys)
    assert code == 0
    r = json.loads(out)
    p = r["parameters"]
    assert p["embedding"] == p["lm_head"] == 32000 * 2048
    assert p["attention"] == 22 * (2 * 2048 * 2048 + 2 * 2048 * 256)
    assert p["mlp"] == 22 * 3 * 2048 * 5632
    assert p["norms"] == 22 * 2 * 2048 + 2048
    assert r["total"] == 1_100_048_384
    assert r["flops"]["6ND_total"] == pytest.approx(6 * 1_100_048_384 * 3e12)
    assert r["flops"]["attention"] == pytest.approx(12 * 22 * 32 * 64 * 2048 * 3e12)
    assert r["memory_bytes"]["optimizer"] == 12 * 1_100_048_384
    assert r["gpu_hours"] == pytest.approx(r["flops"]["model"] / (312e12 * 0.5) / 3600)


def test_text_output_and_sharding(tmp_path, capsys) -> None:
    code, out, _ = run_main(["--config", write(tmp_path, TINYLLAMA), "--tokens", "1T",
                             "--precision", "bf16-pure", "--shards", "4"], capsys)
    assert code == 0
    assert "1,100,048,384" in out and "sharded over 4" in out
    # bf16-pure: 2+2+4 bytes per parameter over 4 shards
    assert f"{1_100_048_384 * 4 / 4 / 1e9:10.2f} GB" in out


def needs_transformers() -> None:
    found = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
    require(found, "torch and transformers are not installed (pip install -e '.[scripts]')")


@pytest.mark.parametrize("case", sorted(CASES))
def test_count_matches_the_real_model(case, tmp_path, capsys) -> None:
    """Build the tiny model for real on CPU and compare the sum of p.numel() with the arithmetic."""
    needs_transformers()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = CASES[case]
    fields = {k: v for k, v in cfg.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(cfg["model_type"], **fields))
    real = sum(p.numel() for p in model.parameters())

    code, out, _ = run_main(["--config", write(tmp_path, cfg), "--tokens", "1M", "--json", "--verify"], capsys)
    assert code == 0, out
    r = json.loads(out)
    assert r["total"] == real
    assert r["transformers_numel"] == real


def test_command_line_with_plot(tmp_path) -> None:
    """One real run through the command line, as the chapter shows it, with the figure."""
    needs_transformers()
    svg = tmp_path / "params.svg"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--transformers-default", "llama", "--tokens", "2T",
                           "--seq-len", "4096", "--verify", "--plot", str(svg), "--name", "Llama 2 7B shape"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr
    assert "6,738,415,616" in proc.stdout
    assert "match" in proc.stdout
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml")
