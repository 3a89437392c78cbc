"""Tests of make_tiny_hf_model.py (Development part) and decode.py (Inference part).

The tiny models are built in a subprocess with HF_HUB_OFFLINE=1, reloaded from the
saved folders only, and run; the samplers' distributions and the constrained decoder
are checked in-process, with hypothesis drawing the logits and the seeds.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from script_loader import load_script

from conftest import require

REPO = Path(__file__).resolve().parents[2]
MAKE_HF = REPO / "chapters" / "development" / "tiny-models" / "make_tiny_hf_model.py"
DECODE = REPO / "chapters" / "inference" / "decoding" / "decode.py"
sys.path.insert(0, str(REPO / "chapters" / "development" / "testing"))

from testing_utils import run_cmd  # noqa: E402

ARCHS = ["llama", "mistral", "qwen2", "gpt2", "mixtral", "qwen2_moe"]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
torch = pytest.importorskip("torch")


def load(path: Path):
    return load_script(path)


def needs_transformers() -> None:
    found = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("tokenizers") is not None
    require(found, "transformers and tokenizers are not installed (pip install -e '.[scripts]')")


# ------------------------------------------------------------------ make_tiny_hf_model.py
@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    needs_transformers()
    out = tmp_path_factory.mktemp("tiny-hf")
    result = run_cmd([sys.executable, str(MAKE_HF), "--out", str(out), "--no-check"], env=OFFLINE, timeout=600)
    return out, result.stdout


def test_hf_help_and_bad_arguments(tmp_path) -> None:
    assert run_cmd([sys.executable, str(MAKE_HF), "--help"]).stdout.startswith("usage: make_tiny_hf_model.py")
    bad = run_cmd([sys.executable, str(MAKE_HF), "--out", str(tmp_path / "x"), "--vocab", "100"], check=False)
    assert bad.rc == 2 and "--vocab must be at least 258" in bad.stderr
    bad = run_cmd([sys.executable, str(MAKE_HF), "--out", str(tmp_path), "--arch", "bert"], check=False)
    assert bad.rc == 2 and "invalid choice: 'bert'" in bad.stderr
    assert not (tmp_path / "x").exists()


def test_every_architecture_is_saved_in_the_standard_layout(tiny_hf) -> None:
    out, stdout = tiny_hf
    for arch in ARCHS:
        files = {p.name for p in (out / arch).iterdir()}
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= files, arch
        assert not any(name.endswith((".bin", ".pt")) for name in files)
        line = next(ln for ln in stdout.splitlines() if ln.startswith(f"{arch}: "))
        size = int(re.search(r"model.safetensors ([\d,]+) bytes", line).group(1).replace(",", ""))
        assert size == (out / arch / "model.safetensors").stat().st_size


def test_models_reload_offline_and_run(tiny_hf, tmp_path) -> None:
    """A separate process with the hub switched off loads each folder and checks the logits' shape."""
    out, stdout = tiny_hf
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, sys, torch\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        "for folder in sys.argv[1:]:\n"
        "    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)\n"
        "    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()\n"
        "    batch = tok(['Tiny models make tests fast.', 'ids'], return_tensors='pt', padding=True)\n"
        "    with torch.no_grad():\n"
        "        logits = model(**batch).logits\n"
        "    text = tok.decode(tok('A router picks experts.')['input_ids'])\n"
        "    print(json.dumps({'arch': model.config.model_type, 'shape': list(logits.shape), 'ids': batch['input_ids'].shape[1],\n"
        "                      'vocab': len(tok), 'config_vocab': model.config.vocab_size, 'text': text,\n"
        "                      'params': sum(p.numel() for p in model.parameters()), 'finite': bool(torch.isfinite(logits).all())}))\n"
    )
    result = run_cmd([sys.executable, str(probe), *(str(out / a) for a in ARCHS)], env=OFFLINE, timeout=600)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["arch"] for r in rows] == ARCHS
    for row in rows:
        assert row["shape"] == [2, row["ids"], row["vocab"]] and row["vocab"] == row["config_vocab"]
        assert row["finite"] and row["text"] == "A router picks experts."
        printed = re.search(rf"^{row['arch']}: \w+, ([\d,]+) parameters", stdout, re.M).group(1)
        assert int(printed.replace(",", "")) == row["params"]


def test_architectures_keep_their_features(tiny_hf) -> None:
    out, _ = tiny_hf
    config = {a: json.loads((out / a / "config.json").read_text()) for a in ARCHS}
    assert config["llama"]["num_key_value_heads"] < config["llama"]["num_attention_heads"]  # grouped-query attention
    assert config["mistral"]["sliding_window"] == 32
    assert config["qwen2"]["tie_word_embeddings"] is True
    assert config["mixtral"]["num_local_experts"] == 4 and config["mixtral"]["num_experts_per_tok"] == 2
    assert config["qwen2_moe"]["num_experts"] == 4 and config["qwen2_moe"]["shared_expert_intermediate_size"] == 48
    assert len({c["vocab_size"] for c in config.values()}) == 1


def test_same_seed_same_weights(tiny_hf, tmp_path) -> None:
    out, _ = tiny_hf
    again = run_cmd([sys.executable, str(MAKE_HF), "--out", str(tmp_path), "--arch", "mixtral", "--arch", "gpt2",
                     "--no-check"], env=OFFLINE, timeout=600)
    assert "mixtral: MixtralForCausalLM" in again.stdout
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    for arch in ("mixtral", "gpt2"):
        assert digest(tmp_path / arch / "model.safetensors") == digest(out / arch / "model.safetensors")
        assert digest(tmp_path / arch / "tokenizer.json") == digest(out / arch / "tokenizer.json")
    other = run_cmd([sys.executable, str(MAKE_HF), "--out", str(tmp_path / "s1"), "--arch", "gpt2", "--seed", "1",
                     "--no-check"], env=OFFLINE, timeout=600)
    assert other.rc == 0
    assert digest(tmp_path / "s1" / "gpt2" / "model.safetensors") != digest(out / "gpt2" / "model.safetensors")


# ------------------------------------------------------------------ decode.py
dec = load(DECODE)
LOGITS = st.lists(st.floats(-20, 20, allow_nan=False, width=32), min_size=2, max_size=40).map(
    lambda xs: torch.tensor(xs, dtype=torch.float32))


def test_decode_help_and_bad_arguments() -> None:
    assert run_cmd([sys.executable, str(DECODE), "--help"]).stdout.startswith("usage: decode.py")
    bad = run_cmd([sys.executable, str(DECODE), "--top-p", "0"], check=False)
    assert bad.rc == 2 and "--top-p must be in (0, 1]" in bad.stderr
    bad = run_cmd([sys.executable, str(DECODE), "--temperature", "-1"], check=False)
    assert bad.rc == 2 and "--temperature must be 0 or more" in bad.stderr


@settings(max_examples=200, deadline=None)
@given(LOGITS, st.integers(1, 45), st.integers(0, 2**31))
def test_top_k_never_samples_outside_the_k_most_likely(logits, k, seed) -> None:
    probs = dec.Sampler(top_k=k).distribution(logits, [])
    kept = set(torch.nonzero(probs > 0).flatten().tolist())
    assert len(kept) <= min(k, logits.numel())
    threshold = torch.sort(logits, descending=True).values[min(k, logits.numel()) - 1]
    assert all(logits[i] >= threshold for i in kept)
    token = dec.Sampler(top_k=k).pick(logits, [], torch.Generator().manual_seed(seed))
    assert token in kept


@settings(max_examples=200, deadline=None)
@given(LOGITS, st.floats(0.01, 1.0))
def test_top_p_keeps_the_smallest_set_above_p(logits, p) -> None:
    probs = torch.softmax(logits, dim=-1)
    kept = dec.top_p_filter(logits, p) > float("-inf")
    mass = float(probs[kept].sum())
    assert mass >= p - 1e-5
    # smallest: dropping the least likely kept token leaves less than p
    least = probs[kept].min()
    assert mass - float(least) < p + 1e-5 or p >= 1.0
    # a prefix of the sorted order: nothing dropped is more likely than something kept
    dropped = probs[~kept]
    assert dropped.numel() == 0 or dropped.max() <= least + 1e-7


@settings(max_examples=200, deadline=None)
@given(LOGITS, st.floats(0.0, 1.0))
def test_min_p_keeps_tokens_above_a_fraction_of_the_top(logits, min_p) -> None:
    probs = torch.softmax(logits, dim=-1)
    kept = dec.min_p_filter(logits, min_p) > float("-inf")
    assert bool(kept[torch.argmax(logits)])
    assert torch.equal(kept, probs >= min_p * probs.max())


@settings(max_examples=100, deadline=None)
@given(LOGITS, st.lists(st.integers(0, 1), max_size=6))
def test_greedy_is_argmax_and_penalties_act_on_seen_tokens(logits, seen) -> None:
    assert dec.Sampler(temperature=0).pick(logits, [], torch.Generator()) == int(torch.argmax(logits))
    penalised = dec.apply_repetition_penalty(logits, seen, 1.5)
    for i in range(logits.numel()):
        if i in seen:
            assert penalised[i] <= logits[i]
        else:
            assert penalised[i] == logits[i]
    shifted = dec.apply_frequency_presence(logits, seen, 0.5, 1.0)
    for i in range(logits.numel()):
        assert float(shifted[i]) == pytest.approx(float(logits[i]) - 0.5 * seen.count(i) - (1.0 if i in seen else 0.0))


def test_same_seed_same_text_from_the_command_line() -> None:
    args = [sys.executable, str(DECODE), "--top-p", "0.9", "--samples", "5", "--seed", "3"]
    first, second = run_cmd(args), run_cmd(args)
    assert first.stdout == second.stdout and len(first.stdout.splitlines()) == 5
    other = run_cmd([*args[:-1], "4"])
    assert other.stdout != first.stdout


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(dec.COMPARED), st.floats(0.3, 3.0))
def test_constrained_output_always_parses(seed, sampler, temperature) -> None:
    if sampler.temperature:
        sampler = dec.Sampler(**{**sampler.__dict__, "temperature": temperature})
    text = dec.generate(TABLE, sampler, seed, 40, INDEX)
    assert dec.valid(text), text
    record = json.loads(text)
    assert set(record) == {"name", "age"} and 1 <= record["age"] <= 999


TABLE = dec.bigram_logits()
INDEX = dec.TokenIndex()


def test_unconstrained_sampling_breaks_the_shape_and_constrained_beam_search_does_not() -> None:
    broken = [dec.generate(TABLE, dec.Sampler(temperature=1.5), s) for s in range(40)]
    assert not all(map(dec.valid, broken))  # the mask is what makes the difference
    for width in (1, 3):
        assert dec.valid(dec.beam_search(TABLE, width, 40, dec.TokenIndex()))
    # a beam of one is greedy decoding
    assert dec.beam_search_ids(TABLE, 1) == dec.generate_ids(TABLE, dec.Sampler(temperature=0), 0)


def test_mask_walks_tokens_that_cross_the_grammar_boundaries() -> None:
    """'", "age": ' spans a class, a literal and its end: allowed exactly where the name can end."""
    piece = dec.PIECES.index('", "age": ')
    state = (0, 0)
    for char in '{"name": "ada':
        state = dec.step(state, char)
    assert piece in dec.TokenIndex().allowed(state)
    assert piece not in dec.TokenIndex().allowed((0, 0))
    assert dec.PIECES.index('"}') not in set().union(*(dec.TokenIndex().allowed(s) for s in [(0, 0), state]))


def test_compare_prints_a_table_where_constrained_is_always_valid() -> None:
    result = run_cmd([sys.executable, str(DECODE), "--compare", "20"], env={"OMP_NUM_THREADS": "1"})
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0][0].strip() == "decoding" and len(rows) == 1 + len(dec.COMPARED)
    assert all(int(row[2]) == 20 for row in rows[1:])
