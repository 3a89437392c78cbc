#!/usr/bin/env python3
"""Native (C/C++) stacks of hung or crashed ranks with gdb, with a CPU demo of each case.

Subcommands:

  attach PID [PID ...]   attach gdb to each running process in turn, print every thread's native
                         backtrace (and the Python stack, when CPython's gdb extension is found),
                         then detach, which leaves the process running. Summarizes each process on
                         one line: its RANK (read from /proc/PID/environ), the innermost frame of its
                         main thread, the first frame outside the C library, and its Python line.
  demo-hang              start N small Python "ranks" on this machine: all but the last block in a
                         socket recv() (like ranks waiting in a collective for a peer), the last one
                         deadlocks on a lock it already holds; then run `attach` on all of them and
                         kill them. Needs no GPU and no torch.
  demo-crash             run a Python program that dereferences a NULL pointer under
                         `gdb -batch -ex run -ex bt`, and print where the SIGSEGV happened.

gdb must be installed (apt-get install gdb) and allowed to trace the processes (same user and a
permissive /proc/sys/kernel/yama/ptrace_scope, or root; in a container, the SYS_PTRACE capability).

Examples:
    python native_stacks.py demo-hang --ranks 2 --out stacks/
    python native_stacks.py demo-crash
    python native_stacks.py attach $(pgrep -f train.py) --out stacks/
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(")
LIBC_HINTS = ("./nptl/", "../sysdeps/", "libc.so", "libpthread", "./misc/", "./socket/")

WAITER = textwrap.dedent("""
    import socket, sys
    def wait_for_peer():
        a, b = socket.socketpair()      # nobody ever writes to b: recv() blocks forever
        print("ready", flush=True)
        return a.recv(1)
    wait_for_peer()
""")
DEADLOCK = textwrap.dedent("""
    import threading
    def take_lock_twice():
        lock = threading.Lock()
        lock.acquire()
        print("ready", flush=True)
        lock.acquire()                  # the same non-reentrant lock: blocks forever
    take_lock_twice()
""")
CRASH = textwrap.dedent("""
    import ctypes
    def custom_op():
        return ctypes.string_at(0)      # reads address 0: SIGSEGV inside C code
    custom_op()
""")


def gdb_path() -> str:
    path = shutil.which("gdb")
    if path is None:
        sys.exit("native_stacks.py: gdb is not installed (apt-get install gdb)")
    return path


def python_gdb_extension(exe: str) -> Path | None:
    """CPython's gdb extension (py-bt and friends) installed next to the interpreter, if any."""
    real = Path(os.path.realpath(exe))
    for candidate in (real.with_name(real.name + "-gdb.py"),):
        if candidate.is_file():
            return candidate
    return None


def gdb_base(exe: str) -> list[str]:
    cmd = [gdb_path(), "-nx", "-batch"]
    ext = python_gdb_extension(exe)
    if ext is not None:
        cmd += ["-iex", f"add-auto-load-safe-path {ext}"]
    return cmd


def rank_of(pid: int) -> str:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return "?"
    for item in env:
        if item.startswith(b"RANK="):
            return item[5:].decode(errors="replace")
    return "-"


def exe_of(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return sys.executable


def main_thread_frames(text: str) -> list[tuple[str, str]]:
    """(function, whole line) of each frame of Thread 1, or of the only stack printed."""
    frames, in_main, seen_thread = [], False, False
    for line in text.splitlines():
        if line.startswith("Thread "):
            seen_thread = True
            in_main = line.startswith("Thread 1 ")
            continue
        if seen_thread and not in_main:
            continue
        m = FRAME.match(line)
        if m:
            if m.group(1) == "0" and frames:  # a second stack (e.g. a repeated bt): keep the first
                break
            frames.append((m.group(2), line))
    return frames


def python_lines(text: str) -> list[str]:
    """The 'File ..., line N, in func' lines that py-bt prints."""
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith("File \"")]


def summarize(text: str) -> dict[str, str]:
    frames = main_thread_frames(text)
    outside = next((f for f, line in frames if not f.startswith("__") and f != "??"
                    and not any(h in line for h in LIBC_HINTS)), "?")
    py = python_lines(text)
    return {"innermost": frames[0][0] if frames else "?", "first_outside_libc": outside,
            "python": py[0] if py else "(no Python frames: CPython's gdb extension not found)"}


def attach(pids: list[int], out: Path | None, timeout: float) -> int:
    failures = 0
    if out:
        out.mkdir(parents=True, exist_ok=True)
    host = os.uname().nodename
    for pid in pids:
        cmd = gdb_base(exe_of(pid)) + ["-p", str(pid), "-ex", "thread apply all bt", "-ex", "py-bt"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            text = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            text = f"gdb did not finish within {timeout:g} s"
        rank = rank_of(pid)
        if out:
            (out / f"{host}-rank{rank}-pid{pid}.txt").write_text(text, encoding="utf-8")
        if "ptrace: Operation not permitted" in text or "Could not attach" in text:
            print(f"rank {rank:>3} pid {pid}: gdb could not attach (ptrace permission; see the chapter)")
            failures += 1
            continue
        s = summarize(text)
        print(f"rank {rank:>3} pid {pid}: innermost {s['innermost']}, first outside libc "
              f"{s['first_outside_libc']}\n           {s['python']}")
    return 1 if failures else 0


def demo_hang(ranks: int, out: Path | None, timeout: float) -> int:
    procs = []
    try:
        for rank in range(ranks):
            code = DEADLOCK if rank == ranks - 1 else WAITER
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks))
            p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
            procs.append(p)
        for p in procs:  # wait until each one is blocked where it should be
            if p.stdout.readline().strip() != "ready":
                sys.exit("native_stacks.py: a demo rank did not start")
        time.sleep(0.2)  # from "ready" to the blocking call
        print(f"{ranks} ranks started and blocked; attaching gdb to each")
        return attach([p.pid for p in procs], out, timeout)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


def demo_crash(timeout: float) -> int:
    cmd = gdb_base(sys.executable) + ["-ex", "run", "-ex", "bt", "-ex", "py-bt",
                                      "--args", sys.executable, "-c", CRASH]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    text = proc.stdout + proc.stderr
    sig = next((ln for ln in text.splitlines() if ln.startswith("Program received signal")), None)
    if sig is None:
        print(text)
        print("native_stacks.py: the program did not stop on a signal under gdb")
        return 1
    print(sig)
    for number, (func, line) in enumerate(main_thread_frames(text)[:3]):
        where = line.rsplit(" at ", 1)[-1] if " at " in line else line.rsplit(" from ", 1)[-1]
        print(f"  #{number} {func} at {Path(where).name}")
    for line in python_lines(text):
        print("  Python: " + line)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("attach", help="attach gdb to running processes and print their stacks")
    a.add_argument("pids", nargs="+", type=int)
    h = sub.add_parser("demo-hang", help="start blocked demo ranks, attach to each, kill them")
    h.add_argument("--ranks", type=int, default=2, help="number of demo ranks, at least 2 (default 2)")
    for q in (a, h):
        q.add_argument("--out", type=Path, help="write each process's full gdb output to this directory")
    for q in (a, h, sub.add_parser("demo-crash", help="run a crashing program under gdb")):
        q.add_argument("--timeout", type=float, default=60, help="seconds allowed per gdb call (default 60)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.command == "attach":
        missing = [pid for pid in args.pids if not Path(f"/proc/{pid}").exists()]
        if missing:
            parser.error(f"no such process: {', '.join(map(str, missing))}")
        return attach(args.pids, args.out, args.timeout)
    if args.command == "demo-hang":
        if args.ranks < 2:
            parser.error("--ranks must be at least 2")
        return demo_hang(args.ranks, args.out, args.timeout)
    return demo_crash(args.timeout)


if __name__ == "__main__":
    sys.exit(main())
