"""Printing for people: a progress display, one summary line (diagnostics: `tools/core/report_formats.py`)."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from tools.core.errors import Diagnostics


def counts(diagnostics: Diagnostics) -> str:
    errors, warnings = len(diagnostics.errors), len(diagnostics.warnings)
    return f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"


@contextmanager
def progress(label: str, total: int):
    """Yield a callback `advance(item)`; shows a bar on a terminal and stays silent in logs and pipes."""
    if not sys.stderr.isatty():
        yield lambda item: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[item]}"), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(label, total=total, item="")
        yield lambda item: bar.update(task, advance=1, item=item)


class Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __str__(self) -> str:
        return f"{time.perf_counter() - self.start:.1f}s"
