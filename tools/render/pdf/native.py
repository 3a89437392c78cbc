"""The C libraries the PDF route loads, found without starting any program.

On Linux, `ctypes.util.find_library` runs `/sbin/ldconfig -p`, then `gcc` (linking into a `tempfile` of the system
temp folder) and `ld` when they are installed. WeasyPrint's import asks cffi for each library under Windows names
first (`libgobject-2.0-0`), and cffi calls `find_library` for every name it cannot open: dozens of programs started
per import (16, about 0.14 s, on the machine measured), a temp file left behind when a Ctrl-C ends the build during
one of them, and a `Popen.__del__` traceback when it lands between a start and a wait (WeasyPrint issue #1125). Where `find_library` could only answer
with a name the dynamic loader then opens by itself, it is skipped: WeasyPrint goes on to the names the loader opens
directly (`libgobject-2.0.so.0`), and a missing library still fails with WeasyPrint's own message."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache

# Linux only: there the lookup can only answer a soname the loader opens by itself. On the BSDs it reads `ldconfig -r`
# and may answer a versioned name (OpenBSD's libgobject-2.0.so.4200.x) that no fixed name of WeasyPrint's matches.
_SPAWNING_LOOKUP = sys.platform.startswith("linux")
_PATCH = threading.Lock()  # the lookup is the module's attribute: one import at a time replaces and restores it


@contextmanager
def loader_lookup_only() -> Iterator[None]:
    """While inside, `ctypes.util.find_library` answers None at once where it would start programs."""
    import ctypes.util

    if not _SPAWNING_LOOKUP:
        yield
        return
    with _PATCH:
        original = ctypes.util.find_library
        ctypes.util.find_library = lambda name: None
        try:
            yield
        finally:
            ctypes.util.find_library = original


def load_weasyprint() -> None:
    """Import WeasyPrint (once per process) without the library lookup's programs; its ImportError or OSError
    propagates as WeasyPrint raises it."""
    if "weasyprint" in sys.modules:
        return
    with loader_lookup_only():
        import weasyprint  # noqa: F401


@lru_cache(maxsize=1)
def malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, from the symbols this process already has (no lookup); None under another C library."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # TypeError: Windows has no "this process" handle
        return None
