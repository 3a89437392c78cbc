"""Tests of chapters/inference/kv_cache_calc.py, the KV cache calculator of the KV cache chapter.

The script runs as a reader runs it (a subprocess) for --help, a bad argument and a real
run; the other cases call its main() in process, which parses the same command line. The
numbers are checked against values computed by hand in the comments, the same values the
chapter prints in its tables.
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "inference" / "kv_cache_calc.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def call(*args: str) -> tuple[int, str, str]:
    """main(args) in process: (exit status, stdout, stderr), as the command line would give them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = load_script(SCRIPT).main(list(args))
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def run_json(*args: str):
    status, out, err = call(*args, "--json")
    assert status == 0, err
    return json.loads(out)


def test_help_exits_zero():
    proc = run("--help")
    assert proc.returncode == 0
    for flag in ("--preset", "--config", "--attention", "--kv-lora-rank", "--free-gib", "--tp"):
        assert flag in proc.stdout


@pytest.mark.parametrize("args, message", [
    ((), "give one of"),
    (("--preset", "no-such-model"), "invalid choice"),
    (("--preset", "llama-3-8b", "--context", "0"), "positive integer"),
    (("--preset", "llama-3-8b", "--free-gib", "-1"), "positive number"),
    (("--preset", "llama-3-70b", "--tp", "3"), "neither divides"),
    (("--attention", "gqa", "--layers", "2", "--heads", "4", "--kv-heads", "3", "--head-dim", "8"), "multiple of"),
    (("--attention", "mla", "--layers", "2", "--kv-lora-rank", "4"), "--qk-rope-head-dim"),
    (("--attention", "mqa", "--layers", "2", "--kv-heads", "2", "--head-dim", "8"), "exactly one"),
    (("--preset", "llama-3-8b", "--attention", "mha"), "not allowed with"),
])
def test_bad_arguments_exit_2(args, message):
    status, _, err = call(*args)
    assert status == 2
    assert message in err


def test_bad_argument_from_the_command_line():
    proc = run("--preset", "llama-3-70b", "--tp", "3")
    assert proc.returncode == 2
    assert "neither divides" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_config_file_is_a_usage_error(tmp_path):
    status, _, err = call("--config", str(tmp_path / "absent.json"))
    assert status == 2 and "--config" in err


def test_llama_3_70b_gqa_by_hand():
    # 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 bytes = 320 KiB per token;
    # x 8,192 tokens = 2,684,354,560 bytes = 2.5 GiB; x 16 sequences = 40 GiB.
    # TP 8: one KV head per GPU, 327,680 / 8 = 40,960 bytes per token; 40 GiB / (40,960 x 8,192) = 128 sequences.
    out = run_json("--preset", "llama-3-70b", "--context", "8192", "--batch", "16", "--tp", "8", "--free-gib", "40")
    assert out["bytes_per_token"] == 327_680
    assert out["kib_per_token"] == 320
    assert out["bytes_per_sequence"] == 2_684_354_560
    assert out["gib_per_sequence"] == 2.5
    assert out["gib_per_batch"] == 40
    assert out["bytes_per_token_per_gpu"] == 40_960
    assert out["gib_per_batch_per_gpu"] == 5
    assert out["sequences_that_fit"] == 128


def test_tp_beyond_kv_heads_replicates():
    # 16 ranks but 8 KV heads: each head lives on two ranks, so the per-GPU share stays 40,960 bytes.
    assert run_json("--preset", "llama-3-70b", "--tp", "16")["bytes_per_token_per_gpu"] == 40_960


def test_deepseek_v3_mla_by_hand():
    # 61 layers x (512 + 64) x 2 bytes = 70,272 bytes per token; x 131,072 tokens = 9,210,691,584 bytes
    # = 70,272 / 8,192 GiB = 8.578125 GiB. The latent is replicated under TP: 70,272 bytes per GPU at TP 8.
    # 40 GiB / 8.578125 GiB = 4.66 -> 4 sequences. Uncompressed: 61 x 128 x (128 + 64 + 128) x 2 = 4,997,120 bytes.
    out = run_json("--preset", "deepseek-v3", "--context", "131072", "--tp", "8", "--free-gib", "40")
    assert out["attention"] == "mla"
    assert out["bytes_per_token"] == 70_272
    assert out["bytes_per_sequence"] == 9_210_691_584
    assert out["gib_per_sequence"] == pytest.approx(8.578125)
    assert out["bytes_per_token_per_gpu"] == 70_272
    assert out["sequences_that_fit"] == 4
    assert out["expanded_bytes_per_token"] == 4_997_120


def test_mha_mqa_and_fp8():
    # Llama 2 7B: 2 x 32 x 32 x 128 x 2 = 524,288 bytes; Falcon 7B (one KV head of 64): 2 x 32 x 1 x 64 x 2 = 8,192.
    assert run_json("--preset", "llama-2-7b")["bytes_per_token"] == 524_288
    assert run_json("--preset", "falcon-7b")["bytes_per_token"] == 8_192
    # An FP8 cache halves Llama 3 8B: 2 x 32 x 8 x 128 x 1 = 65,536 bytes.
    assert run_json("--preset", "llama-3-8b", "--dtype", "fp8")["bytes_per_token"] == 65_536


def test_custom_shapes_by_hand():
    # MLA: 2 layers x (4 + 2) x 1 byte = 12 bytes per token; x 10 tokens x 3 sequences = 360 bytes.
    out = run_json("--attention", "mla", "--layers", "2", "--kv-lora-rank", "4", "--qk-rope-head-dim", "2",
                   "--dtype", "fp8", "--context", "10", "--batch", "3")
    assert (out["bytes_per_token"], out["bytes_per_batch"]) == (12, 360)
    # GQA: 2 x 3 layers x 2 KV heads x 8 x 4 bytes (fp32) = 384 bytes; MHA with 4 heads: 768 bytes.
    assert run_json("--attention", "gqa", "--layers", "3", "--heads", "4", "--kv-heads", "2", "--head-dim", "8",
                    "--dtype", "fp32")["bytes_per_token"] == 384
    assert run_json("--attention", "mha", "--layers", "3", "--heads", "4", "--head-dim", "8",
                    "--dtype", "fp32")["bytes_per_token"] == 768


def test_config_json_gqa_and_mla(tmp_path):
    gqa = tmp_path / "gqa" / "config.json"
    gqa.parent.mkdir()
    gqa.write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                               "hidden_size": 4096}))
    out = run_json("--config", str(gqa))
    assert (out["attention"], out["bytes_per_token"]) == ("gqa", 131_072)
    mla = tmp_path / "mla" / "config.json"
    mla.parent.mkdir()
    mla.write_text(json.dumps({"num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512,
                               "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
                               "num_key_value_heads": 128, "hidden_size": 7168}))
    out = run_json("--config", str(mla))
    assert (out["attention"], out["bytes_per_token"]) == ("mla", 70_272)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"num_attention_heads": 8}))
    status, _, err = call("--config", str(broken))
    assert status == 2 and "num_hidden_layers" in err


def test_text_output_prints_the_formula():
    proc = run("--preset", "deepseek-v3", "--context", "4096")
    assert proc.returncode == 0, proc.stderr
    assert "61 x (512 + 64) x 2 = 70,272 bytes" in proc.stdout
    assert "71.1x the latent" in proc.stdout  # 4,997,120 / 70,272
    status, out, _ = call("--preset", "llama-3-8b", "--free-gib", "10")
    assert status == 0
    assert "2 x 32 x 8 x 128 x 2 = 131,072 bytes = 128.00 KiB" in out
    assert "10 sequences of 8,192 tokens fit" in out  # 1 GiB per 8K-token sequence


def test_compare_lists_every_preset_in_order():
    rows = run_json("--compare", "--context", "32768")
    assert [r["model"] for r in rows] == ["Llama 2 7B", "Falcon 7B", "Llama 3 8B", "Llama 3 70B", "Llama 3.1 405B",
                                          "DeepSeek-V2", "DeepSeek-V3"]
    by_name = {r["model"]: r for r in rows}
    assert by_name["Llama 3.1 405B"]["bytes_per_token"] == 516_096   # 2 x 126 x 8 x 128 x 2
    assert by_name["DeepSeek-V2"]["bytes_per_token"] == 69_120        # 60 x 576 x 2
    assert by_name["Llama 3 70B"]["gib_per_sequence"] == 10           # 320 KiB x 32,768


def test_in_process_functions_agree_with_the_gqa_equivalence_of_the_paper():
    # DeepSeek-V2 paper: MLA with d_c = 4 d_h and d_h^R = d_h / 2 caches as much as GQA with 2.25 groups.
    calc = load_script(SCRIPT)
    mla = calc.Model("mla", "mla", layers=1, kv_lora_rank=4 * 128, qk_rope_head_dim=64)
    assert calc.elements_per_token_per_layer(mla) == 2 * 2.25 * 128
    assert calc.bytes_per_token_per_gpu(calc.PRESETS["llama-3-8b"], 2, 4) == 131_072 // 4
