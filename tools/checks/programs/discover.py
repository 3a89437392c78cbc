"""The scripts a book links to, found through the book model: what each one is and every link to it.

Discovery reads only resolved link targets: a `FILE` target is a script when its suffix is .py, .sh, .bash or
.slurm, or when it has no suffix and starts with a shebang or has an executable bit. A `BROKEN` target with a
script suffix is a missing script. Links inside code are not links in the model, so they are never found here.
A linked script that is not a regular file inside the root, or is too large, is refused: never read nor run.
"""
from __future__ import annotations

import ast
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tools.book.link_model import Link, Problem, TargetKind
from tools.book.model import Book
from tools.core.errors import Diagnostic, Severity
from tools.core.safe_io import MIB, UnsafeFile, check_regular

SCRIPT_SUFFIXES = {".py": "python", ".sh": "shell", ".bash": "shell", ".slurm": "slurm"}
SHELLS = {"sh", "bash", "dash", "ksh"}
SCRIPT_LIMIT = 16 * MIB  # a script larger than this is not read nor run

class Status:
    OK = "ok"
    FAILED = "failed"
    MISSING = "missing"


@dataclass
class Check:
    """One subprocess run against one script."""

    name: str  # "--help", "import", "bash -n", "shellcheck", "start"
    command: list[str]
    returncode: int | None = None  # None: it timed out or could not start
    output: str = ""  # stdout and stderr, the tail
    stdout: str = ""
    duration: float = 0.0
    timed_out: bool = False
    error: str = ""  # why it could not start (OSError)
    ok: bool = False
    findings: list[str] = field(default_factory=list)  # shellcheck's, as `line N: message [SCxxxx]`

    def to_json(self) -> dict:
        return {
            "name": self.name, "command": self.command, "returncode": self.returncode, "ok": self.ok,
            "timed_out": self.timed_out, "duration_s": round(self.duration, 3), "output": self.output,
            "error": self.error, "findings": self.findings,
        }


@dataclass
class Program:
    """One script of the book, with every link to it, in book order."""

    path: str  # relative to the book root, posix
    kind: str  # python | module | shell | slurm | executable | missing
    links: list[Link]
    interpreter: list[str] = field(default_factory=list)  # the shebang's argv, if any
    shell: str = "bash"  # for shellcheck --shell
    status: str = ""
    checks: list[Check] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    duration: float = 0.0

    @property
    def first(self) -> Link:
        return self.links[0]

    def to_json(self) -> dict:
        return {
            "path": self.path, "kind": self.kind, "status": self.status, "duration_s": round(self.duration, 3),
            "linked_from": [{"file": link.source, "line": link.line, "col": link.col} for link in self.links],
            "checks": [c.to_json() for c in self.checks],
            "problems": [_diag_json(d) for d in self.problems],
        }


def _diag_json(d: Diagnostic) -> dict:
    return {"severity": d.severity.value, "file": d.file, "line": d.line, "col": d.col, "message": d.message, "suggestion": d.suggestion, "code": d.code}


# ---------------------------------------------------------------- discovery


def read_shebang(path: Path) -> list[str]:
    """The argv of a `#!` line (`#!/usr/bin/env -S python3 -u` -> ['/usr/bin/env', '-S', 'python3', '-u']), or []."""
    try:
        with path.open("rb") as fh:
            head = fh.read(512)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split()


def interpreter_name(shebang: list[str]) -> str:
    """`python3` for `/usr/bin/env python3` or `/usr/bin/python3`; '' without a shebang."""
    if not shebang:
        return ""
    name = posixpath.basename(shebang[0])
    if name == "env":
        rest = [a for a in shebang[1:] if not a.startswith("-") and "=" not in a]
        name = posixpath.basename(rest[0]) if rest else ""
    return name


def _is_python(name: str) -> bool:
    return bool(re.fullmatch(r"python[0-9.]*|pypy[0-9.]*", name))


def _is_shell(name: str) -> bool:
    return name in SHELLS


def has_main_block(path: Path) -> bool:
    """Whether a Python file has `if __name__ == "__main__":` at top level (True when it cannot be parsed: run it)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return True
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(isinstance(n, ast.Constant) and n.value == "__main__" for n in names):
                return True
    return False


def classify(root: Path, rel: str) -> tuple[str, list[str]] | None:
    """(kind, shebang) of a file of the book, or None when it is not a script."""
    path = root / rel
    suffix = posixpath.splitext(posixpath.basename(rel))[1].lower()
    shebang = read_shebang(path)
    name = interpreter_name(shebang)
    if suffix in SCRIPT_SUFFIXES:
        kind = SCRIPT_SUFFIXES[suffix]
        if kind == "python" and not shebang and not has_main_block(path):
            kind = "module"
        return kind, shebang
    if suffix:
        return None
    try:
        executable = bool(path.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    except OSError:
        return None
    if not shebang and not executable:
        return None
    if _is_python(name):
        return "python", shebang
    if _is_shell(name):
        return "shell", shebang
    return "executable", shebang


def _refusal(root: Path, rel: str) -> UnsafeFile | Literal[False] | None:
    """Why a linked file must not be read nor run (a FIFO, a link leading outside the root, too large), else None.

    A file without a script suffix that is merely large is not a script: a falsy refusal (skip it, say nothing).
    """
    try:
        check_regular(root / rel, root, SCRIPT_LIMIT, shown=rel)
    except UnsafeFile as exc:
        suffix = posixpath.splitext(posixpath.basename(rel))[1].lower()
        if suffix not in SCRIPT_SUFFIXES and "larger than" in exc.reason:
            return False
        return exc
    return None


def _refused(rel: str, link: Link, refusal: UnsafeFile) -> Program:
    program = Program(rel, "refused", [link], status=Status.FAILED)
    suggestion = refusal.suggestion or "Link to a regular file inside the book."
    program.problems.append(Diagnostic(Severity.ERROR, link.source, link.line, f"the linked script '{rel}' {refusal.reason.removesuffix('; it is not read')}, so it is neither read nor run.", col=link.col, suggestion=suggestion, code="unsafe-script"))
    return program


def discover(book: Book) -> list[Program]:
    """Every script the chapters link to (and every missing one with a script suffix), in order of first link."""
    programs: dict[str, Program] = {}
    not_scripts: set[str] = set()
    for chapter in book.chapters:
        for link in chapter.links:
            target = link.target
            if target is not None and target.kind is TargetKind.BROKEN and target.problem is Problem.OUTSIDE_ROOT:
                shown = link.href.split("#", 1)[0].split("?", 1)[0]
                if posixpath.splitext(shown)[1].lower() in SCRIPT_SUFFIXES and shown not in programs:
                    programs[shown] = _refused(shown, link, UnsafeFile(shown, "leads outside the book's root folder"))
                continue
            if target is None or not target.path:
                continue
            if target.kind is TargetKind.FILE:
                if target.path in programs:
                    programs[target.path].links.append(link)
                    continue
                if target.path in not_scripts:
                    continue
                refusal = _refusal(book.root, target.path)
                if refusal is not None:
                    if refusal:
                        programs[target.path] = _refused(target.path, link, refusal)
                    else:
                        not_scripts.add(target.path)
                    continue
                found = classify(book.root, target.path)
                if found is None:
                    not_scripts.add(target.path)
                    continue
                kind, shebang = found
                program = Program(target.path, kind, [link], shebang)
                if kind in ("shell", "slurm"):
                    program.shell = "sh" if interpreter_name(shebang) in ("sh", "dash") else "bash"
                programs[target.path] = program
            elif target.kind is TargetKind.BROKEN and target.problem is Problem.REFUSED:
                if target.path in programs:
                    programs[target.path].links.append(link)
                elif posixpath.splitext(target.path)[1].lower() in SCRIPT_SUFFIXES or _refusal(book.root, target.path):
                    programs[target.path] = _refused(target.path, link, UnsafeFile(target.path, target.reason))
            elif target.kind is TargetKind.BROKEN and target.problem is Problem.MISSING_FILE:
                if posixpath.splitext(target.path)[1].lower() not in SCRIPT_SUFFIXES:
                    continue
                if target.path in programs:
                    programs[target.path].links.append(link)
                else:
                    programs[target.path] = Program(target.path, "missing", [link])
    return list(programs.values())
