"""Tests for the training and storage scripts the book teaches with.

Every script: --help exits 0, a bad argument exits non-zero with a clear message,
and a real run with tiny sizes produces the output its chapter shows.
The distributed demos run under `torchrun --nproc_per_node 2` with gloo on a free port.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

from conftest import require, require_tool

REPO = Path(__file__).resolve().parents[2]
PERF = REPO / "chapters" / "training" / "performance" / "benchmarks"
CKPT = REPO / "chapters" / "training" / "checkpoints"
TOOLS = REPO / "chapters" / "training" / "tools"
STORAGE = REPO / "chapters" / "storage" / "benchmarks"

NUM_WORKERS = PERF / "dataloader_num_workers_bench.py"
PIN_MEMORY = PERF / "dataloader_pin_memory_bench.py"
ACTIVATIONS = PERF / "activation_memory_per_layer.py"
SWIGLU = PERF / "swiglu_maths.py"
SHRINK = CKPT / "torch-checkpoint-shrink.py"
TO_BF16 = CKPT / "torch-checkpoint-convert-to-bf16.py"
MAIN_FIRST = TOOLS / "main_process_first.py"
MPRINT = TOOLS / "multiprocess_print.py"
FIO_SCAN = STORAGE / "fio-scan"
FIO_EXTRACT = STORAGE / "fio-json-extract.py"

ALL_SCRIPTS = [NUM_WORKERS, PIN_MEMORY, ACTIVATIONS, SWIGLU, SHRINK, TO_BF16, MAIN_FIRST, MPRINT,
               FIO_SCAN, FIO_EXTRACT]
TORCH_SCRIPTS = {NUM_WORKERS, PIN_MEMORY, ACTIVATIONS, SWIGLU, SHRINK, TO_BF16, MAIN_FIRST}


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "TORCHELASTIC_RUN_ID", "GROUP_RANK"):
        env.pop(name, None)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["MPLBACKEND"] = "Agg"
    return env


def run(script: Path, *args: str, timeout: int = 180, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(), cwd=cwd)


def run_in_process(script: Path, *args: str, capsys) -> str:
    """Call the script's main(argv) in this process: one torch import per test worker, not one per run."""
    module = load_script(script)
    capsys.readouterr()
    rc = module.main(list(args))
    captured = capsys.readouterr()
    assert rc == 0, f"exit {rc}\nstdout:\n{captured.out}\nstderr:\n{captured.err}"
    return captured.out


def need_torch() -> None:
    require(importlib.util.find_spec("torch") is not None, "PyTorch is not installed (pip install -e '.[scripts]')")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    """Run script with 2 local ranks; retry once if the picked port was taken meanwhile."""
    for _ in range(2):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_env())
        if proc.returncode == 0 or "address already in use" not in (proc.stdout + proc.stderr).lower():
            return proc
    return proc


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


# --- every script: --help and a bad argument ---------------------------------------------------


@pytest.mark.parametrize("script", ALL_SCRIPTS, ids=lambda p: p.name)
def test_help_exits_zero(script: Path) -> None:
    out = ok(run(script, "--help", timeout=60))
    assert "usage:" in out
    assert script.read_text(encoding="utf-8").lstrip().startswith("#!"), "scripts start with a shebang"


def test_fio_scan_is_executable() -> None:
    assert os.access(FIO_SCAN, os.X_OK)
    assert FIO_SCAN.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3")


BAD_ARGS = [
    (NUM_WORKERS, ["--num-workers", "0,two"], "comma-separated integers"),
    (NUM_WORKERS, ["--items", "0"], "positive integer"),
    (PIN_MEMORY, ["--sizes-mb", "-4"], "sizes must be > 0"),
    (ACTIVATIONS, ["--hidden", "250", "--heads", "4"], "must be divisible by --heads"),
    (ACTIVATIONS, ["--dropout", "1.5"], "dropout must be in [0, 1)"),
    (SWIGLU, ["--multiples", "64,x"], "comma-separated positive integers"),
    (SHRINK, ["/nonexistent/ckpt.pt", "-o", "out.pt"], "does not exist"),
    (SHRINK, [str(REPO / "pyproject.toml")], "one of the arguments -o/--output --inplace --dry-run is required"),
    (TO_BF16, [str(REPO / "pyproject.toml"), "--dry-run", "--keep", "("], "not a valid regular expression"),
    (MAIN_FIRST, ["--work-seconds", "-1"], "--work-seconds must be between"),
    (MPRINT, ["--modes", "fancy"], "--modes takes plain, locked"),
    (FIO_SCAN, ["/nonexistent/dir"], "does not exist or is not a directory"),
    (FIO_SCAN, [str(REPO), "--bs", "4q"], "is not one"),
    (FIO_SCAN, [str(REPO), "--modes", "randread,sideways"], "--modes takes a comma-separated subset"),
    (FIO_EXTRACT, [str(REPO / "chapters" / "chapters-md.txt")], "holds no JSON object"),  # a list of paths: no brace at all
    (FIO_EXTRACT, [str(REPO / "package.json")], "has no 'jobs' list"),
]


@pytest.mark.parametrize("script,args,message", BAD_ARGS,
                         ids=[f"{s.name}:{' '.join(a)[:30]}" for s, a, _ in BAD_ARGS])
def test_bad_argument_fails_clearly(script: Path, args: list[str], message: str) -> None:
    proc = run(script, *args, timeout=60)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# --- training/performance ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cpu", "sleep"])
def test_dataloader_num_workers_bench_runs(kind: str) -> None:
    need_torch()
    out = ok(run(NUM_WORKERS, "--num-workers", "0,2", "--items", "32", "--batch-size", "8", "--item-cost-ms", "1",
                 "--cost-kind", kind))
    assert "| num_workers | samples/s |" in out and f"item cost=1.0 ms ({kind})" in out
    rows = re.findall(r"^\| (\d+) \| ([\d,]+) \|.* \| ([\d,]+) \|$", out, re.MULTILINE)
    assert [int(w) for w, _, _ in rows] == [0, 2]
    assert all(float(rate.replace(",", "")) > 0 for _, rate, _ in rows)
    assert rows[0][2] == "1,000"  # ideal: 1000 / 1 ms for one process


def test_dataloader_pin_memory_bench_runs(capsys) -> None:
    need_torch()
    out = run_in_process(PIN_MEMORY, "--sizes-mb", "1,2", "--iters", "2", "--warmup", "1",
                         "--loader-batches", "2", "--loader-batch-mb", "1", capsys=capsys)
    assert "GB/s" in out and "MB = 1e6 bytes" in out
    import torch

    if not torch.cuda.is_available():
        assert "host-to-device copy is skipped" in out
        assert "skipped (no accelerator)" in out
    assert re.search(r"^\| 2 \| [\d.]+ \| [\d.]+ \|", out, re.MULTILINE)


def saved_ratio(out: str) -> float:
    match = re.search(r"\| saved_tensors_hooks \(\d+ distinct storages\) \| ([\d.]+) \| ([\d.]+) \|", out)
    assert match, out
    return float(match.group(2))


def test_activation_memory_matches_formula() -> None:
    need_torch()
    out = ok(run(ACTIVATIONS, "--batch", "2", "--seq", "32", "--hidden", "64", "--heads", "4",
                 "--device", "cpu", "--breakdown"))  # once through the real command line
    assert "s*b*h*(34 + 5*a*s/h)" in out
    assert "MiB" in out
    # the hooks see what the itemised formula predicts, plus LayerNorm's tiny mean/rstd
    assert 1.0 <= saved_ratio(out) < 1.02
    assert "torch.cuda.max_memory_allocated" in out


def test_activation_memory_fused_attention_drops_the_s2_terms(capsys) -> None:
    need_torch()
    out = run_in_process(ACTIVATIONS, "--batch", "1", "--seq", "64", "--hidden", "64", "--heads", "2",
                         "--device", "cpu", "--attention", "sdpa", "--dropout", "0", "--dtype", "fp32",
                         capsys=capsys)
    assert "softmax output" not in out
    assert 0.98 < saved_ratio(out) < 1.1


def test_swiglu_maths_sizes_and_benchmark(capsys) -> None:
    out = ok(run(SWIGLU, "--hidden", "4096", "--no-bench", timeout=60))
    assert "10922.67" in out
    assert re.search(r"\| round up to x128 = round up to x256 \| 11008 \|", out)
    need_torch()
    out = run_in_process(SWIGLU, "--hidden", "96", "--tokens", "16", "--iters", "1", "--warmup", "0",
                         "--device", "cpu", capsys=capsys)
    assert "TFLOPS" in out
    assert re.search(r"unrounded = round up to x64 .*round up to x256 \| 256 \| 2\.667 \|", out), out  # 8*96/3 = 256
    assert re.search(r"\| 4h MLP \(reference\) \| 384 \|", out)


# --- training/checkpoints ----------------------------------------------------------------------


def make_view_checkpoint(path: Path) -> None:
    import torch

    big = torch.randn(2000, 500)  # 4 MB of float32
    shared = big[10:20]
    torch.save({"model": {"small": big[:5], "tied_a": shared, "tied_b": shared, "w": torch.randn(50, 50)},
                "step": 3, "ids": torch.arange(7)}, path)


def test_checkpoint_shrink_shrinks_views_of_large_storages(tmp_path: Path, capsys) -> None:
    need_torch()
    import torch

    src, dst = tmp_path / "big.pt", tmp_path / "small.pt"
    make_view_checkpoint(src)
    dry = run_in_process(SHRINK, str(src), "--dry-run", capsys=capsys)
    assert "nothing written" in dry and not dst.exists()
    out = ok(run(SHRINK, str(src), "-o", str(dst)))
    assert "before:" in out and "after:" in out and "MB" in out
    assert src.stat().st_size > 4_000_000
    assert dst.stat().st_size < src.stat().st_size / 10
    before, after = torch.load(src), torch.load(dst)
    for key in ("small", "tied_a", "w"):
        assert torch.equal(before["model"][key], after["model"][key])
    assert after["model"]["small"].untyped_storage().nbytes() == 5 * 500 * 4
    assert after["model"]["tied_a"].data_ptr() == after["model"]["tied_b"].data_ptr(), "ties survive"
    assert after["step"] == 3 and torch.equal(after["ids"], torch.arange(7))
    # nothing left to shrink the second time
    again = run_in_process(SHRINK, str(dst), "--inplace", capsys=capsys)
    assert "0 tensors sit on storages larger than they need" in again


def test_checkpoint_convert_to_bf16_changes_float_dtypes_only(tmp_path: Path, capsys) -> None:
    need_torch()
    import torch

    src, dst, kept = tmp_path / "fp32.pt", tmp_path / "bf16.pt", tmp_path / "kept.pt"
    emb = torch.randn(64, 16)
    torch.save({
        "model": {"emb": emb, "head": emb, "bias": torch.randn(16, dtype=torch.float16),
                  "double": torch.randn(4, dtype=torch.float64)},
        "optimizer": {"exp_avg": torch.randn(64, 16), "step": torch.tensor(300.0)},
        "ids": torch.arange(10), "mask": torch.ones(3, dtype=torch.bool),
    }, src)
    out = ok(run(TO_BF16, str(src), "-o", str(dst)))
    assert "| float32 |" in out and "| bfloat16 |" in out and "file after:" in out
    d = torch.load(dst)
    for t in (d["model"]["emb"], d["model"]["bias"], d["model"]["double"], d["optimizer"]["exp_avg"]):
        assert t.dtype == torch.bfloat16
    assert d["optimizer"]["step"].dtype == torch.float32 and d["optimizer"]["step"].item() == 300.0
    assert d["ids"].dtype == torch.int64 and torch.equal(d["ids"], torch.arange(10))
    assert d["mask"].dtype == torch.bool
    assert d["model"]["emb"].data_ptr() == d["model"]["head"].data_ptr(), "tied weights stay tied"
    assert torch.allclose(d["model"]["emb"].float(), emb, rtol=1e-2, atol=1e-2)
    assert dst.stat().st_size < src.stat().st_size
    run_in_process(TO_BF16, str(src), "-o", str(kept), "--keep", r"^optimizer\.", capsys=capsys)
    k = torch.load(kept)
    assert k["optimizer"]["exp_avg"].dtype == torch.float32 and k["model"]["emb"].dtype == torch.bfloat16


@pytest.mark.parametrize("script", [SHRINK, TO_BF16], ids=lambda p: p.name)
def test_checkpoint_tools_refuse_pickled_objects_without_unsafe_load(tmp_path: Path, script: Path, capsys) -> None:
    need_torch()
    import argparse

    import torch

    path = tmp_path / "with-namespace.pt"
    torch.save({"w": torch.ones(3), "args": argparse.Namespace(lr=0.1)}, path)
    with pytest.raises(SystemExit) as refused:
        load_script(script).main([str(path), "--dry-run"])
    message = str(refused.value.code)
    assert message.startswith("error:") and "argparse.Namespace" in message and "--unsafe-load" in message
    run_in_process(script, str(path), "--dry-run", "--unsafe-load", capsys=capsys)


# --- training/tools ----------------------------------------------------------------------------


EVENT = re.compile(r"\[rank (\d+)\] t=([\d.]+) (enter block|leave block: cache (hit|miss))")


@pytest.mark.xdist_group("torchrun")
def test_main_process_first_under_torchrun(tmp_path: Path) -> None:
    need_torch()
    out = ok(torchrun(MAIN_FIRST, "--work-seconds", "0.5", "--cache-dir", str(tmp_path)))
    events = {}
    for rank, t, what, result in EVENT.findall(out):
        events[(int(rank), "enter" if what == "enter block" else "leave")] = (float(t), result)
    assert set(events) == {(0, "enter"), (0, "leave"), (1, "enter"), (1, "leave")}, out
    assert events[(0, "leave")][1] == "miss" and events[(1, "leave")][1] == "hit"
    assert events[(1, "enter")][0] >= events[(0, "leave")][0], "rank 1 waited for rank 0"
    assert not (tmp_path / "records.txt").exists(), "the demo cleans up its cache"


def test_main_process_first_single_process(tmp_path: Path, capsys, monkeypatch) -> None:
    need_torch()
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    out = run_in_process(MAIN_FIRST, "--work-seconds", "0", "--cache-dir", str(tmp_path), capsys=capsys)
    assert "not launched by torchrun" in out and "cache miss" in out


def assert_blocks_whole(out: str, label: str, ranks: int, lines: int) -> None:
    seq = [int(r) for r in re.findall(rf"\[rank (\d+)\] {label} line \d+/{lines}", out)]
    assert sorted(seq) == sorted(list(range(ranks)) * lines), out
    runs = [r for i, r in enumerate(seq) if i == 0 or seq[i - 1] != r]
    assert sorted(runs) == list(range(ranks)), f"blocks interleaved: {seq}"


@pytest.mark.xdist_group("torchrun")
def test_multiprocess_print_under_torchrun(tmp_path: Path) -> None:
    need_torch()
    out = ok(torchrun(MPRINT, "--modes", "plain,locked", "--lines", "3", "--delay", "0.02",
                      "--lock-file", str(tmp_path / "print.lock")))
    assert "with output_lock()" in out
    assert_blocks_whole(out, "locked", 2, 3)
    assert len(re.findall(r"plain line \d/3", out)) == 6
    assert out.count("printed by rank 0 only") == 1


def test_multiprocess_print_standalone(tmp_path: Path) -> None:
    out = ok(run(MPRINT, "--procs", "3", "--modes", "locked", "--lines", "3", "--delay", "0.01",
                 "--lock-file", str(tmp_path / "print.lock"), timeout=60))
    assert_blocks_whole(out, "locked", 3, 3)
    assert out.count("printed by rank 0 only") == 1


def test_print_rank_prints_on_the_listed_ranks_only(tmp_path: Path, capsys, monkeypatch) -> None:
    module = load_script(MPRINT)
    lock = str(tmp_path / "print.lock")
    monkeypatch.setenv("RANK", "1")
    module.print_rank("from rank 1?", lock_path=lock)
    module.print_rank("rank 1 is listed", ranks=(0, 1), lock_path=lock)
    monkeypatch.setenv("RANK", "0")
    module.print_rank("from rank 0", lock_path=lock)
    module.mprint("everyone", "prints", sep="-", lock_path=lock)
    assert capsys.readouterr().out == "rank 1 is listed\nfrom rank 0\neveryone-prints\n"


# --- storage/benchmarks ------------------------------------------------------------------------


def test_fio_scan_real_run_and_extract(tmp_path: Path) -> None:
    require_tool("fio")
    require(importlib.util.find_spec("matplotlib") is not None, "matplotlib is not installed")
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    out = ok(run(FIO_SCAN, str(target), "--size", "4m", "--runtime", "1", "--bs", "4k,64k",
                 "--modes", "randread,write", "--iodepth", "4", "--output-dir", str(results), timeout=240))
    report = (results / "fio-scan.md").read_text(encoding="utf-8")
    assert "| mode | bs | IOPS | MB/s | mean lat (µs) | p99 clat (µs) |" in report
    rows = re.findall(r"^\| (randread|write) \| (4k|64k) \| ([\d,]+) \| ([\d,.]+) \|", report, re.MULTILINE)
    assert sorted((m, b) for m, b, _, _ in rows) == [("randread", "4k"), ("randread", "64k"),
                                                   ("write", "4k"), ("write", "64k")]
    assert all(float(iops.replace(",", "")) > 0 for _, _, iops, _ in rows)
    assert "1 MB = 1e6 bytes" in report and "command: `fio-scan " in report
    png = results / "fio-scan.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "| randread | 4k |" in out
    assert not (target / "fio-scan.dat").exists(), "the test file is removed"

    extract = ok(run(FIO_EXTRACT, str(results / "json" / "write-64k.json"), "--format", "markdown"))
    assert "| fio-scan-write-64k | write | write | 64k | 4 | 1 |" in extract
    line = ok(run(FIO_EXTRACT, str(results / "json" / "randread-4k.json")))
    assert re.search(r"randread read bs=4k iodepth=4 numjobs=1: [\d,]+ IOPS, [\d,.]+ MB/s", line)


def test_fio_json_extract_reads_stdin_with_a_preamble(tmp_path: Path) -> None:
    sample = (
        'note: a warning fio printed first\n{"fio version": "fio-3.33", "jobs": [{"jobname": "j", "error": 0,'
        ' "job options": {"rw": "randwrite", "bs": "4k", "iodepth": "8"},'
        ' "read": {"io_bytes": 0, "iops": 0, "bw_bytes": 0, "lat_ns": {"mean": 0}},'
        ' "write": {"io_bytes": 4096000, "iops": 1000.0, "bw_bytes": 4096000,'
        ' "lat_ns": {"mean": 250000.0}, "clat_ns": {"percentile": {"50.000000": 200000, "99.000000": 900000}}}}]}'
    )
    proc = subprocess.run([sys.executable, str(FIO_EXTRACT), "-", "--format", "csv"], input=sample,
                          capture_output=True, text=True, timeout=60)
    out = ok(proc)
    assert out.splitlines()[1] == "-,j,randwrite,write,4k,8,1,1000.0,4.096,250.00,200.00,900.00"
