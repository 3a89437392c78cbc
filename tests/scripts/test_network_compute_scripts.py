"""Tests for the network benchmarks and the MAMF finder that the book teaches with.

Every script is checked for a working --help, a clear usage error on a bad argument
and one real run with tiny sizes on CPU. The distributed scripts run as 2 ranks with
`torchrun --standalone` (which picks a free port) on the gloo backend.
"""
from __future__ import annotations

import importlib.util
import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from launch_env import script_env

from conftest import require

REPO = Path(__file__).resolve().parents[2]
NET = REPO / "chapters" / "network" / "benchmarks"
ALL_REDUCE = NET / "all_reduce_bench.py"
ALL_GATHER = NET / "all_gather_object_vs_all_gather.py"
LATENCY = NET / "all_reduce_latency_comp.py"
MAMF = REPO / "chapters" / "compute" / "accelerator" / "benchmarks" / "mamf-finder.py"
SCRIPTS = [ALL_REDUCE, ALL_GATHER, LATENCY, MAMF]

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(autouse=True)
def _needs_torch():
    """The scripts need torch (the `scripts` extra); the test process itself never imports it."""
    require(HAVE_TORCH, "torch is not installed (pip install -e '.[scripts]')")


def run_script(script: Path, *args: str, timeout: int = 120, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=script_env(MPLBACKEND="Agg", **extra_env), timeout=timeout, cwd=script.parent)


def torchrun(script: Path, *args: str, nproc: int = 2, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(script), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=script_env(MPLBACKEND="Agg"), timeout=timeout, cwd=script.parent)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def assert_valid_png(path: Path) -> tuple[int, int]:
    """Walk the PNG chunks, checking the signature, every CRC, IHDR first and IEND last; return (w, h)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} lacks the PNG signature"
    pos, kinds = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r} chunk of {path}"
        kinds.append(kind)
        pos += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100
    return width, height


# --- --help and bad arguments (fast: the scripts import torch only after parsing) -----------------

@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_exits_zero(script: Path):
    proc = run_script(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")
    assert "Units:" in proc.stdout
    assert proc.stderr == ""


BAD_ARGUMENTS = [
    (ALL_REDUCE, ["--min-size", "2X"], "invalid size '2X'"),
    (ALL_REDUCE, ["--min-size", "2M", "--max-size", "1K"], "must not exceed --max-size"),
    (ALL_REDUCE, ["--iters", "0"], "must be >= 1"),
    (ALL_REDUCE, ["--plot", "busbw.svg"], "expects a .png path"),
    (ALL_REDUCE, ["--max-size", "64K"], "launch with 'torchrun --nproc_per_node N"),
    (ALL_GATHER, ["--sizes", "6"], "multiples of the fp32 element size"),
    (ALL_GATHER, ["--object", "dict"], "invalid choice: 'dict'"),
    (LATENCY, ["--max-chunks", "3"], "must be a power of two"),
    (LATENCY, ["--total-size", "1000", "--max-chunks", "16"], "must split into --max-chunks"),
    (LATENCY, [], "launch with 'torchrun --nproc_per_node N"),
    (MAMF, ["--m-range", "10", "5", "1"], "START (10) must not exceed STOP (5)"),
    (MAMF, ["--m", "64", "--m-range", "1", "2", "1"], "not allowed with argument"),
    (MAMF, ["--dtype", "fp9"], "invalid choice: 'fp9'"),
    (MAMF, ["--device", "cpu", "--dtype", "fp8", "--m", "10"], "divisible by 16"),
    (MAMF, ["--device", "cpu", "--dtype", "tf32"], "on CPU use --dtype fp32"),
    (MAMF, ["--flush-mib", "64"], "only makes sense together with --clear-cache"),
]


@pytest.mark.parametrize("script,args,message", BAD_ARGUMENTS,
                         ids=[f"{s.name}:{' '.join(a) or 'no-torchrun'}" for s, a, _ in BAD_ARGUMENTS])
def test_bad_argument_is_a_usage_error(script: Path, args: list[str], message: str):
    proc = run_script(script, *args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert message in proc.stderr
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_mamf_cuda_without_gpu_is_a_usage_error():
    proc = run_script(MAMF, "--device", "cuda", CUDA_VISIBLE_DEVICES="")  # hide any GPU
    assert proc.returncode == 2
    assert "use --device cpu" in proc.stderr and "Traceback" not in proc.stderr


# --- real runs ------------------------------------------------------------------------------------

TABLE_ROW = re.compile(r"^\s*(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


@pytest.mark.xdist_group("torchrun")
def test_all_reduce_bench_two_gloo_ranks(tmp_path: Path):
    out_json, out_png = tmp_path / "ar.json", tmp_path / "busbw.png"
    proc = torchrun(ALL_REDUCE, "--backend", "gloo", "--min-size", "1K", "--max-size", "8K", "--warmup", "1",
                    "--iters", "3", "--json", str(out_json), "--plot", str(out_png))
    out = proc.stdout
    assert out.count("all_reduce benchmark:") == 1, "only rank 0 prints"
    assert "backend=gloo" in out and "world_size=2" in out and "dtype=fp32" in out
    assert "GB/s (1 GB = 1e9 bytes)" in out and "1K = 1024 bytes" in out
    header = next(line for line in out.splitlines() if "busbw (GB/s)" in line)
    assert "size (bytes)" in header and "time (ms)" in header and "algbw (GB/s)" in header
    rows = [m.groups() for m in map(TABLE_ROW.match, out.splitlines()) if m]
    assert [(r[0], int(r[1]), int(r[2])) for r in rows] == [
        ("1K", 1024, 256), ("2K", 2048, 512), ("4K", 4096, 1024), ("8K", 8192, 2048)]
    assert re.search(r"peak busbw: [\d.]+ GB/s at \d+K \(\d+ bytes\)", out)

    data = json.loads(out_json.read_text())
    assert data["benchmark"] == "all_reduce" and data["backend"] == "gloo" and data["world_size"] == 2
    assert data["units"]["busbw_GBps"] == "GB/s, 1 GB = 1e9 bytes"
    assert [r["size_bytes"] for r in data["results"]] == [1024, 2048, 4096, 8192]
    for r in data["results"]:
        assert r["time_ms"] > 0
        assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / (r["time_ms"] / 1e3) / 1e9, rel=1e-9)
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 2 * (2 - 1) / 2, rel=1e-9)
    assert_valid_png(out_png)


@pytest.mark.xdist_group("torchrun")
def test_all_gather_object_vs_all_gather_two_gloo_ranks(tmp_path: Path):
    out_json = tmp_path / "ag.json"
    proc = torchrun(ALL_GATHER, "--backend", "gloo", "--sizes", "4", "1K", "--object", "list",
                    "--warmup", "1", "--iters", "2", "--json", str(out_json))
    out = proc.stdout
    assert out.count("all_gather vs all_gather_object:") == 1
    assert "times in ms per call" in out and "ratio = all_gather_object / all_gather" in out
    assert "all_gather (ms)" in out and "all_gather_object (ms)" in out
    rows = re.findall(r"^\s*(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$", out, re.M)
    assert [(r[0], int(r[1]), int(r[2])) for r in rows] == [("4", 4, 1), ("1K", 1024, 256)]
    assert re.search(r"all_gather_object was [\d.]+x to [\d.]+x slower", out)

    data = json.loads(out_json.read_text())
    assert data["world_size"] == 2 and data["object"] == "list"
    for r in data["results"]:
        assert r["pickled_bytes"] > 0
        assert r["ratio"] == pytest.approx(r["all_gather_object_ms"] / r["all_gather_ms"], rel=1e-9)


@pytest.mark.xdist_group("torchrun")
def test_all_reduce_latency_comp_two_gloo_ranks(tmp_path: Path):
    out_json = tmp_path / "lat.json"
    proc = torchrun(LATENCY, "--backend", "gloo", "--min-size", "4", "--max-size", "64", "--total-size", "4K",
                    "--max-chunks", "4", "--warmup", "1", "--iters", "3", "--json", str(out_json))
    out = proc.stdout
    assert out.count("all_reduce latency:") == 1
    assert "latency in us per all_reduce" in out and "latency (us)" in out
    assert "N calls (ms)" in out and "per call (us)" in out and "flatten+1 call (ms)" in out
    assert re.search(r"^\s+1\s+4096\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+1\.0x$", out, re.M)

    data = json.loads(out_json.read_text())
    assert [r["size_bytes"] for r in data["latency"]] == [4, 8, 16, 32, 64]
    assert all(r["latency_us"] > 0 for r in data["latency"])
    assert [(r["chunks"], r["chunk_bytes"]) for r in data["split"]] == [(1, 4096), (2, 2048), (4, 1024)]
    assert data["split"][0]["slowdown"] == 1.0
    for r in data["split"]:
        assert r["per_call_us"] == pytest.approx(r["many_calls_ms"] * 1e3 / r["chunks"], rel=1e-9)


def test_mamf_finder_cpu_explicit_shapes(tmp_path: Path):
    out_json = tmp_path / "mamf.json"
    proc = run_script(MAMF, "--device", "cpu", "--dtype", "fp32", "--m", "64", "32", "--n", "32",
                      "--k-range", "16", "48", "16", "--warmup", "1", "--iters", "2", "--json", str(out_json))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "sweep: 6 shapes, m in [32, 64], n in [32], k in [16, 32, 48]" in out
    assert "TFLOPS = 2*m*n*k / time / 1e12" in out
    progress = re.findall(r"^\[(\d)/6\] m=\d+ n=\d+ k=\d+: [\d.]+ ms, [\d.]+ TFLOPS \| best", out, re.M)
    assert progress == ["1", "2", "3", "4", "5", "6"]
    assert re.search(r"^Best shape: m=\d+ n=32 k=\d+ \(fp32 on ", out, re.M)
    assert re.search(r"^Maximum achievable matmul FLOPS \(MAMF\): [\d.]+ TFLOPS", out, re.M)

    data = json.loads(out_json.read_text())
    assert data["device"] == "cpu" and data["dtype"] == "fp32" and len(data["results"]) == 6
    for r in data["results"]:
        assert r["tflops"] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / (r["time_ms"] / 1e3) / 1e12, rel=1e-9)
    assert data["best"] == max(data["results"], key=lambda r: r["tflops"])


def test_mamf_finder_cpu_default_tiny_shapes_fp8_clear_cache():
    proc = run_script(MAMF, "--device", "cpu", "--dtype", "fp8", "--clear-cache", "--warmup", "0", "--iters", "1")
    assert proc.returncode == 0, proc.stderr
    assert "sweep: 27 shapes, m in [64, 128, 256], n in [64, 128, 256], k in [64, 128, 256]" in proc.stdout
    assert "clear_cache=True" in proc.stdout and "[27/27]" in proc.stdout
    assert "Maximum achievable matmul FLOPS (MAMF):" in proc.stdout
