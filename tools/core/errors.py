"""Errors that stop a command, and the diagnostics that a command collects and reports at the end."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import click

# Exit codes, documented in `tools --help`.
EXIT_OK = 0
EXIT_PROBLEMS = 1  # errors were found (or warnings, with --strict)
EXIT_USAGE = 2  # bad command line, unusable configuration or output, another build writing the same output (--no-wait)
EXIT_CRASH = 3  # an unexpected internal error (a bug): one sentence and the path of a saved report
EXIT_SIGINT = 130  # interrupted by SIGINT (Ctrl-C)
EXIT_SIGTERM = 143  # stopped by SIGTERM


class BookError(click.ClickException):
    """A problem that makes the command impossible (bad config, missing chapter list...)."""

    exit_code = EXIT_USAGE

    def format_message(self) -> str:
        return self.message


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Diagnostic:
    """One finding, located in a source file: `file:line:col: severity: message (suggestion)`."""

    severity: Severity
    file: str
    line: int
    message: str
    col: int = 0
    suggestion: str = ""
    code: str = ""  # a stable machine-readable kind, e.g. "missing-anchor"

    def location(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}:{self.col}" if self.col else where

    def __str__(self) -> str:
        text = f"{self.location()}: {self.severity.value}: {self.message}"
        if self.suggestion:
            text += f" {self.suggestion}"
        return text


@dataclass
class Diagnostics:
    """Collects findings in order, without duplicates, so one run shows every problem."""

    items: list[Diagnostic] = field(default_factory=list)
    _seen: set = field(default_factory=set, repr=False)

    def add(self, diag: Diagnostic) -> None:
        key = (diag.severity, diag.file, diag.line, diag.col, diag.message)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(diag)

    def error(self, file: str, line: int, message: str, **kw) -> None:
        self.add(Diagnostic(Severity.ERROR, file, line, message, **kw))

    def warning(self, file: str, line: int, message: str, **kw) -> None:
        self.add(Diagnostic(Severity.WARNING, file, line, message, **kw))

    def extend(self, other: Diagnostics) -> None:
        for diag in other.items:
            self.add(diag)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.WARNING]

    def exit_code(self, strict: bool) -> int:
        if self.errors or (strict and self.warnings):
            return EXIT_PROBLEMS
        return EXIT_OK
