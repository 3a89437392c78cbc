"""Tests of the debugging and tiny-model scripts of the Development part of the book.

Each script: --help exits 0, bad arguments exit non-zero with a clear message,
and one real run with tiny sizes on CPU (gloo for the distributed test).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[2]
DEBUG = REPO / "chapters" / "development" / "debug"
TINY = REPO / "chapters" / "development" / "tiny-models"
TESTING = REPO / "chapters" / "development" / "testing"
sys.path.insert(0, str(TESTING))

from testing_utils import get_free_port, patch_env, run_cmd, torchrun_cmd  # noqa: E402

DIST_TEST = DEBUG / "torch-distributed-gpu-test.py"
OVERFLOW = DEBUG / "underflow_overflow.py"
MAKE_MODEL = TINY / "make_tiny_model.py"
MAKE_DATASET = TINY / "make_tiny_dataset.py"
SCRIPTS = [DIST_TEST, OVERFLOW, MAKE_MODEL, MAKE_DATASET]
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def load(path: Path):
    return load_script(path)


def py(script: Path, *args: str, check: bool = True, env: dict | None = None, timeout: float = 120):
    return run_cmd([sys.executable, str(script), *args], check=check, env=env, timeout=timeout)


def dist_env() -> dict[str, str]:
    env = {"OMP_NUM_THREADS": "1"}
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"  # keep gloo on loopback whatever the host name resolves to
    return env


def torchrun(script: Path, *args: str, nproc: int = 2, check: bool = False):
    """Launch with the `torchrun` command next to this interpreter (or its module form)."""
    port = get_free_port()
    exe = Path(sys.executable).with_name("torchrun")
    if exe.exists():
        cmd = [str(exe), "--nnodes", "1", "--nproc_per_node", str(nproc),
               "--master_addr", "127.0.0.1", "--master_port", str(port), str(script), *args]
    else:
        cmd = torchrun_cmd(script, *args, nproc=nproc, port=port)
    with patch_env(**{k: None for k in LAUNCH_VARS}):
        return run_cmd(cmd, check=check, env=dist_env(), timeout=180)


# ------------------------------------------------------------------ every script
# --help and argument errors run in-process through each script's main(): the same
# argparse code as on the command line, without paying a torch import per case.
# The real runs further down go through the command line.
def run_main(script: Path, args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        load(script).main(args)
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_exits_zero(script: Path, capsys) -> None:
    code, out, _ = run_main(script, ["--help"], capsys)
    assert code == 0
    assert out.startswith("usage: ") and "--help" in out and out.count("\n") > 3


def test_help_from_the_command_line() -> None:
    result = py(MAKE_DATASET, "--help")
    assert result.rc == 0 and result.stdout.startswith("usage: make_tiny_dataset.py")


BAD_ARGS = [
    (DIST_TEST, ["--backend", "mpi"], "invalid choice: 'mpi'"),
    (DIST_TEST, ["--timeout", "0"], "positive number of seconds"),
    (OVERFLOW, ["--inject", "9"], "--inject must be between -1 and 3"),
    (OVERFLOW, ["--frames", "0"], "expected a positive integer"),
    (MAKE_MODEL, ["--layers", "2"], "the following arguments are required: --out"),
    (MAKE_MODEL, ["--out", "unused", "--hidden", "30", "--heads", "4"], "must be divisible by n_heads"),
    (MAKE_DATASET, ["--out", "-", "--rows", "-1"], "expected an integer >= 0"),
    (MAKE_DATASET, ["--out", "-", "--format", "tokens", "--min-len", "9", "--max-len", "3"], "must not exceed"),
]


@pytest.mark.parametrize(
    "script,args,message", BAD_ARGS, ids=[f"{s.stem}-{' '.join(a)}" for s, a, _ in BAD_ARGS]
)
def test_bad_arguments_fail_clearly(script: Path, args: list[str], message: str, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(script, args, capsys)
    assert code == 2
    assert message in err and err.startswith("usage: ")
    assert out == ""
    assert not (tmp_path / "unused").exists()


def test_bad_arguments_from_the_command_line() -> None:
    result = py(MAKE_DATASET, "--out", "-", "--rows", "many", check=False)
    assert result.rc == 2
    assert "make_tiny_dataset.py: error: argument --rows: expected an integer, got 'many'" in result.stderr


# ------------------------------------------------------ torch-distributed-gpu-test
def test_dist_test_refuses_to_run_without_a_launcher() -> None:
    with patch_env(**{k: None for k in LAUNCH_VARS}):
        result = py(DIST_TEST, check=False)
    assert result.rc == 2
    assert "RANK" in result.stderr and "torchrun --nproc_per_node" in result.stderr


@pytest.mark.xdist_group("torchrun")
def test_dist_test_two_ranks_gloo() -> None:
    result = torchrun(DIST_TEST, "--backend", "gloo", "--timeout", "60")
    assert result.rc == 0, result.stderr
    lines = result.stdout.splitlines()
    for rank in (0, 1):
        assert any(f"rank {rank}/2 local {rank}/2] device=cpu backend=gloo init ok" in ln for ln in lines), lines
    ok = [ln for ln in lines if ln.startswith("OK: ")]
    assert len(ok) == 1 and "all 2 ranks passed init, barrier and all-reduce" in ok[0]
    assert "FAILED" not in result.stdout + result.stderr


@pytest.mark.xdist_group("torchrun")
def test_dist_test_reports_a_wrong_sum_with_the_rank() -> None:
    result = torchrun(DIST_TEST, "--backend", "gloo", "--corrupt-rank", "1", "--timeout", "60")
    assert result.rc != 0
    failures = [ln for ln in result.stderr.splitlines() if "FAILED at step 'all-reduce'" in ln]
    assert len(failures) == 2, result.stderr  # both ranks see the bad sum
    assert all("sum is 1, expected world_size=2 (rank 1 sent 0)" in ln for ln in failures)
    assert "what to check next" in result.stderr


@pytest.mark.xdist_group("torchrun")
def test_dist_test_init_timeout_names_step_and_hints() -> None:
    # One process that expects a second one that never comes: rendezvous must time out.
    env = {**dist_env(), "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(get_free_port())}
    result = py(DIST_TEST, "--backend", "gloo", "--timeout", "2", check=False, env=env, timeout=120)
    assert result.rc == 1
    assert "[" in result.stderr and "rank 0/2 local 0/2] FAILED at step 'init' (1/4)" in result.stderr
    assert "MASTER_ADDR" in result.stderr and "firewall" in result.stderr
    assert "GLOO_SOCKET_IFNAME" in result.stderr


def test_dist_test_nccl_hints(capsys) -> None:
    mod = load(DIST_TEST)
    mod.report_failure("[h rank 3/8 local 3/4]", "barrier", "nccl", RuntimeError("NCCL error: unhandled system error"))
    err = capsys.readouterr().err
    assert "[h rank 3/8 local 3/4] FAILED at step 'barrier' (2/4): RuntimeError: NCCL error" in err
    for hint in ("NCCL_DEBUG=INFO", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE=1", "ports"):
        assert hint in err


def test_dist_test_backend_choice() -> None:
    mod = load(DIST_TEST)
    assert mod.pick_backend("auto", cuda_available=True) == "nccl"
    assert mod.pick_backend("auto", cuda_available=False) == "gloo"
    assert mod.pick_backend("gloo", cuda_available=True) == "gloo"


# ------------------------------------------------------------- underflow_overflow
def test_overflow_detector_catches_injected_inf() -> None:
    torch = pytest.importorskip("torch")
    mod = load(OVERFLOW)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)))
    with torch.no_grad():
        for layer in (model[0], model[2][0]):
            layer.weight.fill_(1e30)  # inject: 4 * 1e30 is fine in float32, (4e30)^2 * 4 is not
            layer.bias.zero_()
    x = torch.ones(3, 4)
    with pytest.raises(mod.OverflowDetected) as info:
        with mod.DetectOverflow(model, frames=3):
            model(x)
    exc = info.value
    assert (exc.module_path, exc.where, exc.batch) == ("2.0", "output", 0)
    text = str(exc)
    assert "inf detected in output of module '2.0' (Linear) at batch 0" in text
    assert "produced it from finite inputs and weights" in text
    assert [f.path for f in exc.frames] == ["0", "1", "2.0"]  # the recent frames, oldest first
    assert "abs min" in text and "4.000e+30" in text and "<-- 12 inf" in text
    # the hooks are gone after the block: the model runs without raising
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    model(x)


def test_overflow_detector_report_mode_and_nan_inputs() -> None:
    torch = pytest.importorskip("torch")
    mod = load(OVERFLOW)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    logs: list[str] = []
    detector = mod.DetectOverflow(model, action="report", log=logs.append)
    x = torch.ones(1, 4)
    x[0, 2] = float("nan")
    with detector:
        model(torch.ones(1, 4))
        model(x)
        model(x)
    assert detector.batch == 2
    first = detector.detections[0]
    assert first == {"path": "0", "where": "input[0]", "kind": "nan", "batch": 1}  # innermost module first
    assert len(logs) == 1 and "already there when the module was called" in logs[0]
    assert "largest |output|" in detector.summary()


def test_tensor_stats() -> None:
    torch = pytest.importorskip("torch")
    mod = load(OVERFLOW)
    s = mod.tensor_stats("t", torch.tensor([-3.0, 0.5, float("inf"), float("nan")]))
    assert (s.abs_min, s.abs_max, s.n_inf, s.n_nan, s.bad) == (0.5, float("inf"), 1, 1, True)
    s = mod.tensor_stats("h", torch.tensor([1e-3, -2.0], dtype=torch.float16))
    assert not s.bad and s.abs_max == 2.0 and "float16[2]" in s.line()


def test_overflow_demo_script() -> None:
    result = py(OVERFLOW, "--layers", "3", "--inject", "1", "--frames", "3")
    assert result.rc == 0
    assert "inf detected in output of module 'blocks.1.fc_out' (Linear)" in result.stdout
    assert "stopped: first bad value in output of 'blocks.1.fc_out' at batch " in result.stdout


def test_overflow_demo_without_injection(capsys) -> None:
    pytest.importorskip("torch")
    assert load(OVERFLOW).main(["--layers", "2", "--inject", "-1", "--batches", "2"]) == 0
    out = capsys.readouterr().out
    # per batch: root, embed, 2 x (block, norm, fc_in, act, fc_out), norm, head = 14 calls
    # (the ModuleList holding the blocks is never called itself)
    assert "no inf/nan in 28 module calls over 2 batches" in out
    assert "largest |output| per module" in out


# ------------------------------------------------------------------ tiny model
def test_make_tiny_model_saves_a_reloadable_model(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    out = tmp_path / "tiny"
    result = py(MAKE_MODEL, "--out", str(out), "--layers", "2", "--hidden", "32", "--heads", "4", "--vocab", "256")
    assert (out / "config.json").exists() and (out / "model.pt").exists()
    # derived: embeddings 256*32 + 64*32; per block 2 LayerNorms (128) + qkv (32*96+96)
    # + proj (32*32+32) + up (32*128+128) + down (128*32+32) = 12704; final LayerNorm 64
    expected = 256 * 32 + 64 * 32 + 2 * 12704 + 64
    assert f"parameters: {expected:,} " in result.stdout
    assert "KiB" in result.stdout

    mod = load(MAKE_MODEL)
    model, cfg = mod.load_tiny_model(out)
    assert (cfg.n_layers, cfg.hidden_size, cfg.n_heads, cfg.vocab_size) == (2, 32, 4, 256)
    assert model.num_parameters() == expected
    fresh = mod.build_tiny_model(cfg)  # same seed, same weights
    for key, value in fresh.state_dict().items():
        assert torch.equal(value, model.state_dict()[key]), key
    logits = model(torch.randint(0, 256, (2, 5)))
    assert logits.shape == (2, 5, 256) and torch.isfinite(logits).all()


def test_make_tiny_model_from_config_file(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    mod = load(MAKE_MODEL)
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"n_layers": 1, "hidden_size": 16, "n_heads": 2, "vocab_size": 50}))
    assert mod.main(["--out", str(tmp_path / "m"), "--config", str(base), "--seed", "3", "--dtype", "bfloat16"]) == 0
    saved = json.loads((tmp_path / "m" / "config.json").read_text())
    assert (saved["n_layers"], saved["hidden_size"], saved["seed"], saved["dtype"]) == (1, 16, 3, "bfloat16")
    base.write_text(json.dumps({"n_layer": 1}))
    with pytest.raises(SystemExit) as info:
        mod.main(["--out", str(tmp_path / "x"), "--config", str(base)])
    assert info.value.code == 2


def test_human_units() -> None:
    pytest.importorskip("torch")
    mod = load(MAKE_MODEL)
    assert [mod.human_count(n) for n in (999, 35712, 1_234_567, 7_000_000_000)] == ["999", "35.7K", "1.23M", "7B"]
    assert [mod.human_bytes(n) for n in (512, 1536, 3 * 1024**2)] == ["512 B", "1.50 KiB", "3.00 MiB"]


# ---------------------------------------------------------------- tiny dataset
def test_make_tiny_dataset_has_the_requested_rows(tmp_path: Path) -> None:
    out = tmp_path / "data" / "train.jsonl"
    result = py(MAKE_DATASET, "--rows", "17", "--seed", "5", "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 17
    assert [r["id"] for r in records] == list(range(17))
    assert all(r["text"].endswith(".") and 0 <= r["label"] < 4 for r in records)
    assert "wrote 17 text records" in result.stderr


def test_make_tiny_dataset_is_reproducible_and_tokens_in_range(tmp_path: Path) -> None:
    mod = load(MAKE_DATASET)
    paths = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        paths[name] = tmp_path / f"{name}.jsonl"
        assert mod.main(["--rows", "20", "--seed", str(seed), "--out", str(paths[name])]) == 0
    assert paths["a"].read_bytes() == paths["b"].read_bytes()
    assert paths["a"].read_bytes() != paths["c"].read_bytes()

    tokens = tmp_path / "tok.jsonl"
    mod.main(["--rows", "9", "--format", "tokens", "--vocab", "10", "--min-len", "2", "--max-len", "4", "--out", str(tokens)])
    rows = [json.loads(line) for line in tokens.read_text().splitlines()]
    assert len(rows) == 9
    assert all(2 <= len(r["input_ids"]) <= 4 and all(0 <= t < 10 for t in r["input_ids"]) for r in rows)


def test_make_tiny_dataset_to_stdout(capsys) -> None:
    mod = load(MAKE_DATASET)
    assert mod.main(["--rows", "3", "--out", "-"]) == 0
    captured = capsys.readouterr()
    assert len([json.loads(line) for line in captured.out.splitlines()]) == 3
    assert "wrote 3 text records" in captured.err
