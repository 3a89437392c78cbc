"""Run a program under a total deadline, keeping only the tail of what it prints.

`subprocess.communicate` holds all of a program's output (a script printing 300 MB made the tool hold 1.5 GB) and,
after a timeout, waits for the pipes to close, which a grandchild that left the process group may never do. Here
two threads read stdout and stderr in chunks into bounded buffers (the last `keep` bytes of each), the program runs
in its own session, and at the deadline, or when it ends, its whole process group is killed (SIGTERM, then
SIGKILL for one that ignores SIGTERM) so that nothing it started outlives the check.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from tools.core.interrupt import deferred

KEEP = 64 * 1024  # bytes of each stream kept: the end of a traceback or a usage message fits many times over
GRACE = 1.0  # seconds between SIGTERM and SIGKILL
CHUNK = 64 * 1024


@dataclass
class Ran:
    returncode: int | None  # None: timed out (or killed by us)
    stdout: bytes
    stderr: bytes
    timed_out: bool
    dropped: int  # bytes of output read and dropped to keep memory bounded
    stdout_dropped: int = 0  # of which from stdout


class _Tail:
    """The last `keep` bytes read from a pipe, and how many were dropped before them."""

    def __init__(self, pipe, keep: int) -> None:
        self.pipe = pipe
        self.keep = keep
        self.data = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fd = self.pipe.fileno()
        try:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    return
                self.data += chunk
                if len(self.data) > 2 * self.keep:  # trim in batches: linear in the output, not quadratic
                    cut = len(self.data) - self.keep
                    self.dropped += cut
                    del self.data[:cut]
        except OSError:
            return

    def result(self) -> bytes:
        if len(self.data) > self.keep:
            cut = len(self.data) - self.keep
            self.dropped += cut
            del self.data[:cut]
        return bytes(self.data)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the whole group, SIGKILL to what is still there after GRACE seconds."""
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(GRACE)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait()


def run_bounded(command: list[str], cwd, env: dict[str, str], timeout: float, keep: int = KEEP) -> Ran:
    """Run `command` with stdin closed for at most `timeout` seconds; raises OSError when it cannot start."""
    with deferred():  # a signal right after the fork would leave the child in its own session, ended by nobody
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out, err = _Tail(proc.stdout, keep), _Tail(proc.stderr, keep)
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if timed_out or proc.returncode is None:
            _end_group(proc)
        else:
            _kill_group(proc.pid, signal.SIGKILL)  # what it left running in its group (a daemon) ends with it
        deadline = time.monotonic() + GRACE
        for tail in (out, err):
            tail.thread.join(max(0.0, deadline - time.monotonic()))
        for tail in (out, err):
            if not tail.thread.is_alive():  # one still blocked holds the fd: closing it under the thread is unsafe
                try:
                    tail.pipe.close()
                except OSError:
                    pass
    stdout, stderr = out.result(), err.result()
    return Ran(None if timed_out else proc.returncode, stdout, stderr, timed_out, out.dropped + err.dropped, out.dropped)
