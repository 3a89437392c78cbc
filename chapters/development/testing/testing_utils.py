"""Small helpers for testing machine learning code with pytest or unittest.

Copy this file next to your tests (it depends only on the standard library;
torch is imported lazily by the GPU helpers) and import what you need:

    from testing_utils import (
        temp_dir, make_temp_dir, capture_output, run_cmd, CmdFailed,
        require_torch_gpu, require_torch_multi_gpu, require_package,
        patch_env, get_free_port, torchrun_cmd,
    )

Helpers:
    temp_dir()                  context manager: a fresh folder, removed at exit
    make_temp_dir(request)      a folder removed when the current test finishes
    capture_output()            context manager: collect what the code prints
    run_cmd(cmd)                run a program, show its output live, keep a copy
    require_torch_gpu           skip a test unless at least one CUDA GPU is visible
    require_torch_multi_gpu     skip a test unless at least two are
    require_package("name")     skip a test unless a package can be imported
    patch_env(NAME=value)       set/unset environment variables for a block
    get_free_port()             a TCP port that is free right now
    torchrun_cmd(script, ...)   the argv to launch a script with torchrun

Set KEEP_TEMP_DIRS=1 to keep every folder these helpers create (their paths are
printed), so you can look inside after a failing test.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import importlib.util
import io
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Sequence, TypeVar

__all__ = [
    "temp_dir",
    "make_temp_dir",
    "capture_output",
    "CapturedOutput",
    "run_cmd",
    "CmdResult",
    "CmdFailed",
    "get_gpu_count",
    "require_torch",
    "require_torch_gpu",
    "require_torch_multi_gpu",
    "require_package",
    "is_package_available",
    "patch_env",
    "get_free_port",
    "torchrun_cmd",
]

T = TypeVar("T")


def _keep_requested(keep: bool) -> bool:
    return keep or os.environ.get("KEEP_TEMP_DIRS", "").lower() in {"1", "true", "yes"}


# --------------------------------------------------------------- temp dirs
@contextlib.contextmanager
def temp_dir(prefix: str = "mltest-", parent: str | os.PathLike | None = None, keep: bool = False) -> Iterator[Path]:
    """A new empty folder that is deleted when the block ends (even on error).

    keep=True (or KEEP_TEMP_DIRS=1) leaves it in place and prints where it is.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield path
    finally:
        if _keep_requested(keep):
            print(f"temp_dir: kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def make_temp_dir(owner: Any = None, prefix: str = "mltest-", keep: bool = False) -> Path:
    """A new folder removed at the end of the current test.

    `owner` is what knows when the test ends:
      - pytest's `request` fixture (anything with `.addfinalizer`),
      - a unittest.TestCase (anything with `.addCleanup`, e.g. `self`),
      - None: removed when the interpreter exits.

        def test_save(request):
            out = make_temp_dir(request)

        class TestSave(unittest.TestCase):
            def test_save(self):
                out = make_temp_dir(self)
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))

    def cleanup() -> None:
        if _keep_requested(keep):
            print(f"make_temp_dir: kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)

    if owner is None:
        import atexit

        atexit.register(cleanup)
    elif hasattr(owner, "addfinalizer"):
        owner.addfinalizer(cleanup)
    elif hasattr(owner, "addCleanup"):
        owner.addCleanup(cleanup)
    else:
        shutil.rmtree(path, ignore_errors=True)
        raise TypeError(
            f"make_temp_dir() needs pytest's `request`, a unittest.TestCase or None, got {type(owner).__name__}"
        )
    return path


# ---------------------------------------------------------- output capture
class CapturedOutput:
    """What was written to stdout and stderr; filled in while the block runs."""

    def __init__(self) -> None:
        self._out = io.StringIO()
        self._err = io.StringIO()
        self._fd_out: str | None = None
        self._fd_err: str | None = None

    @property
    def out(self) -> str:
        return self._out.getvalue() + (self._fd_out or "")

    @property
    def err(self) -> str:
        return self._err.getvalue() + (self._fd_err or "")

    @staticmethod
    def last_frame(text: str) -> str:
        """Drop what a progress bar overwrote with carriage returns: keep the text after the last \\r of each line."""
        return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))

    def __repr__(self) -> str:
        return f"CapturedOutput(out={self.out!r}, err={self.err!r})"


@contextlib.contextmanager
def _redirect_fd(fd: int, store: Callable[[str], None]) -> Iterator[None]:
    """Point file descriptor `fd` at a temp file; hand its text to `store` at the end."""
    saved = os.dup(fd)
    tmp = tempfile.TemporaryFile(mode="w+b")
    try:
        os.dup2(tmp.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        tmp.seek(0)
        store(tmp.read().decode("utf-8", errors="replace"))
        tmp.close()


@contextlib.contextmanager
def capture_output(stdout: bool = True, stderr: bool = True, fd: bool = False) -> Iterator[CapturedOutput]:
    """Collect what the block writes to stdout/stderr into `.out` and `.err`.

    By default this swaps sys.stdout/sys.stderr, which catches print() and
    logging to those streams. fd=True also redirects file descriptors 1 and 2,
    which catches C/C++ extensions and child processes that inherit them; the
    fd-level text is appended to .out/.err when the block ends.
    """
    cap = CapturedOutput()
    with contextlib.ExitStack() as stack:
        if fd:
            if stdout:
                sys.stdout.flush()
                stack.enter_context(_redirect_fd(1, lambda text: setattr(cap, "_fd_out", text)))
            if stderr:
                sys.stderr.flush()
                stack.enter_context(_redirect_fd(2, lambda text: setattr(cap, "_fd_err", text)))
        if stdout:
            stack.enter_context(contextlib.redirect_stdout(cap._out))
        if stderr:
            stack.enter_context(contextlib.redirect_stderr(cap._err))
        yield cap


# ------------------------------------------------------------ subprocesses
@dataclasses.dataclass
class CmdResult:
    cmd: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float


class CmdFailed(RuntimeError):
    """A command exited non-zero or timed out; `.result` holds what it printed."""

    def __init__(self, message: str, result: CmdResult):
        super().__init__(message)
        self.result = result


def _tail(text: str, lines: int) -> str:
    parts = text.rstrip("\n").splitlines()
    cut = parts[-lines:]
    prefix = [f"... ({len(parts) - lines} earlier lines)"] if len(parts) > lines else []
    return "\n".join("    " + line for line in prefix + cut) or "    (nothing)"


def run_cmd(
    cmd: Sequence[str | os.PathLike] | str,
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float | None = None,
    check: bool = True,
    echo: bool = True,
    input: str | None = None,
    tail_lines: int = 30,
) -> CmdResult:
    """Run `cmd`, forward its output live to this process's stdout/stderr and keep a copy.

    Returns CmdResult(rc, stdout, stderr, ...). With check=True (the default) a
    non-zero exit or a timeout raises CmdFailed, whose message holds the command
    line, the exit code and the last `tail_lines` lines of both streams. `env` is
    merged into a copy of os.environ (use patch_env to remove variables). A string
    `cmd` is split with shlex, not run through a shell.
    """
    argv = shlex.split(cmd) if isinstance(cmd, str) else [os.fspath(c) for c in cmd]
    full_env = None if env is None else {**os.environ, **env}
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=cwd,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
    )
    out_chunks: list[str] = []
    err_chunks: list[str] = []

    def pump(src: IO[str], sink: list[str], dest_name: str) -> None:
        for line in iter(src.readline, ""):
            sink.append(line)
            if echo:
                dest = getattr(sys, dest_name)  # looked up per line: follows capture_output
                dest.write(line)
                dest.flush()
        src.close()

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, out_chunks, "stdout"), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err_chunks, "stderr"), daemon=True),
    ]
    for t in threads:
        t.start()
    if input is not None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(input)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        proc.wait()
    for t in threads:
        t.join(timeout=10)
    result = CmdResult(argv, proc.returncode, "".join(out_chunks), "".join(err_chunks), time.perf_counter() - started)

    if check and (timed_out or result.rc != 0):
        what = f"timed out after {timeout:g}s (killed)" if timed_out else f"exited with code {result.rc}"
        message = (
            f"command {what}: {shlex.join(argv)}\n"
            f"  cwd: {cwd or os.getcwd()}\n"
            f"  stderr (last {tail_lines} lines):\n{_tail(result.stderr, tail_lines)}\n"
            f"  stdout (last {tail_lines} lines):\n{_tail(result.stdout, tail_lines)}"
        )
        raise CmdFailed(message, result)
    return result


# ------------------------------------------------------------ skip markers
def is_package_available(name: str, min_version: str | None = None) -> bool:
    """Whether `import name` would work (and, if given, the installed version is >= min_version)."""
    try:
        if importlib.util.find_spec(name) is None:
            return False
    except (ImportError, ValueError):
        return False
    if min_version is None:
        return True
    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return _version_tuple(installed) >= _version_tuple(min_version)


def _version_tuple(version: str) -> tuple[int, ...]:
    """'2.13.0+cpu' -> (2, 13, 0); '1.4rc1' -> (1, 4): leading numbers only."""
    numbers = []
    for part in version.split("+")[0].split("."):
        match = re.match(r"\d+", part)
        if not match:
            break
        numbers.append(int(match.group()))
        if match.group() != part:
            break
    return tuple(numbers)


def get_gpu_count() -> int:
    """CUDA GPUs visible to torch; 0 when torch is missing or has no CUDA."""
    if not is_package_available("torch"):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _skip_unless(condition: bool, reason: str) -> Callable[[T], T]:
    # unittest.skipUnless works on functions and classes, under pytest and unittest.
    return unittest.skipUnless(condition, reason)


def require_package(name: str, min_version: str | None = None) -> Callable[[T], T]:
    """Decorator: skip the test (function or class) unless `name` can be imported."""
    wanted = f"{name}>={min_version}" if min_version else name
    return _skip_unless(is_package_available(name, min_version), f"test requires the package {wanted}")


def require_torch(obj: T) -> T:
    """Decorator: skip unless torch is installed."""
    return _skip_unless(is_package_available("torch"), "test requires torch")(obj)


def require_torch_gpu(obj: T) -> T:
    """Decorator: skip unless torch sees at least one CUDA GPU."""
    return _skip_unless(get_gpu_count() >= 1, "test requires a CUDA GPU")(obj)


def require_torch_multi_gpu(obj: T) -> T:
    """Decorator: skip unless torch sees at least two CUDA GPUs."""
    count = get_gpu_count()
    return _skip_unless(count >= 2, f"test requires 2 or more CUDA GPUs, found {count}")(obj)


# ----------------------------------------------------------- environment
_UNSET = object()


@contextlib.contextmanager
def patch_env(values: dict[str, str | None] | None = None, **kwargs: str | None) -> Iterator[None]:
    """Set environment variables for a block and restore the previous state after.

    A value of None removes the variable for the block. Works as a decorator too:

        with patch_env(CUDA_VISIBLE_DEVICES="", NCCL_DEBUG=None):
            ...

        @patch_env(OMP_NUM_THREADS="1")
        def test_threads(): ...
    """
    changes = {**(values or {}), **kwargs}
    saved = {name: os.environ.get(name, _UNSET) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        yield
    finally:
        for name, old in saved.items():
            if old is _UNSET:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old  # type: ignore[assignment]


# ------------------------------------------------------------- networking
def get_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it).

    Another process could take it before you bind it, so use it at once; for
    torchrun pass it as --master_port.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        return sock.getsockname()[1]


def torchrun_cmd(
    script: str | os.PathLike,
    *script_args: str,
    nproc: int = 2,
    port: int | None = None,
    python: str | None = None,
) -> list[str]:
    """argv that runs `script` under torchrun on this machine with a free port.

    Uses `python -m torch.distributed.run` (what the `torchrun` command runs) with
    the current interpreter, so it works inside a virtualenv that is not on PATH.
    """
    return [
        python or sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        str(nproc),
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(port or get_free_port()),
        os.fspath(script),
        *script_args,
    ]
