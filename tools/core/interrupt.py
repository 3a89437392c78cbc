"""SIGINT and SIGTERM stop a command cleanly: the main process unwinds (every `finally` removes its temporary files
and ends its workers), the last good output stays as it was, and the exit code is 130 or 143.

- SIGINT and SIGTERM raise `Terminated` in the main thread, so cleanup code runs for both (not KeyboardInterrupt,
  which click would turn into an Abort with a stray empty line, and which some libraries catch).
- Forked workers ignore SIGINT (a terminal's Ctrl-C reaches the whole process group: the main process ends them)
  and die quietly on SIGTERM, without a traceback.
- `deferred()` holds signals back during a critical section (swapping an output folder into place); the signal
  takes effect when the section ends.
- A repeated signal while the first one's cleanup runs is ignored for a moment, so cleanup is not cut short.
"""
from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from contextlib import contextmanager

EXIT_SIGINT = 130
EXIT_SIGTERM = 143
GRACE = 3.0  # seconds after the first signal during which repeats are ignored (cleanup is running)


class Terminated(BaseException):
    """SIGINT or SIGTERM, raised in the main thread."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.previous: dict[int, object] = {}
        self.deferred = 0  # depth of deferred() sections (any thread)
        self.pending: int | None = None  # a signal that arrived during a deferred section
        self.stopping_since: float | None = None  # when the first signal was raised
        self.signum: int | None = None  # the first signal raised


_STATE = _State()
_LOCK = threading.Lock()


def exit_code(signum: int) -> int:
    return EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM


WRITTEN: list[str] = []  # outputs put in place during this command (so an interrupt's message stays true)


def note_written(path) -> None:
    WRITTEN.append(str(path))


def pending_signal() -> int | None:
    """A signal held back by `deferred()` and not yet acted on (loops inside a deferred section look for it)."""
    return _STATE.pending


def received() -> int | None:
    """The signal that asked this process to stop, if one did (None when none did)."""
    return _STATE.signum


def check() -> None:
    """Raise again for a signal already received: its exception may have been swallowed (a finalizer, a library's
    broad except); called before an output is put in place, so an interrupted build never replaces it."""
    if _STATE.signum is not None and threading.current_thread() is threading.main_thread():
        raise Terminated(_STATE.signum)


def _raise(signum: int) -> None:
    _STATE.stopping_since = time.monotonic()
    _STATE.signum = _STATE.signum or signum
    raise Terminated(signum)


def _handler(signum, frame) -> None:
    if _STATE.stopping_since is not None and time.monotonic() - _STATE.stopping_since < GRACE:
        return  # the first signal's cleanup is running: let it finish
    if _STATE.deferred:
        _STATE.pending = _STATE.pending or signum
        return
    _raise(signum)


def _in_child() -> None:
    """After a fork: a worker leaves Ctrl-C to the main process and ends quietly on SIGTERM."""
    if _STATE.installed:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _STATE.installed = False
        _STATE.deferred, _STATE.pending, _STATE.stopping_since, _STATE.signum = 0, None, None, None


_FORK_HOOK = False
EARLY = False  # installed by the command's entry, before the rest is imported (tools/__main__.py)


def install(defer: bool = False) -> None:
    """Install the handlers (main thread only). `defer`: hold signals back until `release()` (while importing)."""
    global _FORK_HOOK, EARLY
    if threading.current_thread() is not threading.main_thread():
        return
    if not _STATE.installed:
        for signum in (signal.SIGINT, signal.SIGTERM):
            _STATE.previous[signum] = signal.signal(signum, _handler)
        _STATE.installed = True
    if defer:
        _STATE.deferred += 1
        EARLY = True
    if not _FORK_HOOK and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_in_child)
        _FORK_HOOK = True


def release() -> None:
    """End the import-time deferral of `install(defer=True)`: a signal that came meanwhile is raised now."""
    if _STATE.deferred:
        _leave()


def uninstall() -> None:
    """Restore the handlers that were there before `install` (in-process callers, e.g. tests)."""
    if not _STATE.installed or threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in _STATE.previous.items():
        signal.signal(signum, previous)  # type: ignore[arg-type]
    _STATE.installed = False
    _STATE.deferred, _STATE.pending, _STATE.stopping_since, _STATE.signum = 0, None, None, None


def settle() -> None:
    """The command is over and the process exits: a signal now ends it at once, with its exit code."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda number, frame: os._exit(exit_code(number)))


def _leave() -> None:
    with _LOCK:
        _STATE.deferred -= 1
        signum = _STATE.pending if not _STATE.deferred else None
        if signum is not None:
            _STATE.pending = None
    if signum is None:
        return
    if threading.current_thread() is threading.main_thread():
        _raise(signum)
    else:
        _thread.interrupt_main(signal.Signals(signum))  # the main thread gets the signal again, outside the section


@contextmanager
def deferred():
    """Signals that arrive inside the block take effect when it ends: the block is never cut in half."""
    with _LOCK:
        _STATE.deferred += 1
    try:
        yield
    finally:
        _leave()
