"""Tests of chapters/development/debug/native_stacks.py, the gdb recipes for hung and crashed ranks.

Runs both demos as the chapter shows them: gdb attaches to blocked CPU processes (no GPU, no torch)
and runs a crashing program. Needs gdb and the permission to trace child processes.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

from conftest import require, require_tool

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "chapters" / "development" / "debug" / "native_stacks.py"


def load():
    return load_script(SCRIPT)


def run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_help() -> None:
    proc = run("--help")
    assert proc.returncode == 0 and "usage:" in proc.stdout
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3")


@pytest.mark.parametrize("args, message", [
    (["attach", "999999999"], "no such process"),
    (["demo-hang", "--ranks", "1"], "at least 2"),
    (["demo-crash", "--timeout", "0"], "must be positive"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments(args, message) -> None:
    proc = run(*args)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_summary_parsing() -> None:
    """The summary reads Thread 1 only, skips C-library frames and takes py-bt's innermost line."""
    text = "\n".join([
        "Thread 2 (Thread 0x1 (LWP 2) \"pt_watchdog\"):",
        "#0  0x00007f in poll () from /lib/x86_64-linux-gnu/libc.so.6",
        "Thread 1 (Thread 0x2 (LWP 1) \"python\"):",
        "#0  __futex_abstimed_wait_common (futex_word=0x1) at ./nptl/futex-internal.c:103",
        "#1  0x00007f in do_futex_wait (sem=0x1) at ./nptl/sem_waitcommon.c:111",
        "#2  0x00007f in PyThread_acquire_lock_timed (lock=0x1) at Python/thread_pthread.h:497",
        "Traceback (most recent call first):",
        "  File \"train.py\", line 12, in step",
    ])
    s = load().summarize(text)
    assert s == {"innermost": "__futex_abstimed_wait_common", "first_outside_libc": "PyThread_acquire_lock_timed",
                 "python": "File \"train.py\", line 12, in step"}


def need_gdb() -> None:
    require_tool("gdb")


def test_demo_hang(tmp_path) -> None:
    need_gdb()
    proc = run("demo-hang", "--ranks", "3", "--out", str(tmp_path))
    out = proc.stdout + proc.stderr
    require("could not attach" not in out, "gdb may not trace processes here (ptrace permission)")
    assert proc.returncode == 0, out
    lines = proc.stdout.splitlines()
    ranks = {line.split()[1]: (line, nxt) for line, nxt in zip(lines, lines[1:]) if line.startswith("rank ")}
    assert set(ranks) == {"0", "1", "2"}
    for rank in ("0", "1"):  # waiting for a peer that never sends
        assert "recv" in ranks[rank][0]
    assert "acquire_lock" in ranks["2"][0]  # the deadlocked rank, below Python in a futex wait
    if load().python_gdb_extension(sys.executable) is not None:
        assert "in wait_for_peer" in ranks["0"][1]
        assert "in take_lock_twice" in ranks["2"][1]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 3 and all("-rank" in f for f in files)
    assert "Thread 1 " in (tmp_path / files[0]).read_text(encoding="utf-8")


def test_demo_crash() -> None:
    need_gdb()
    proc = run("demo-crash")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Program received signal SIGSEGV" in proc.stdout
    assert "string_at" in proc.stdout  # the C function that read address 0
    if load().python_gdb_extension(sys.executable) is not None:
        assert "in custom_op" in proc.stdout
