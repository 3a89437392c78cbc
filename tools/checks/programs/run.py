"""Whether each script a book links to starts (discovery is in `program_discovery`).

Checks, each a subprocess run from an empty temporary folder with stdin closed, a total deadline that ends the
script's whole process group, and only the tail of its output kept (`bounded_run`):
- Python (`.py`, or a shebang naming python): `<python> SCRIPT --help` must exit 0 and print something.
  A file with neither a shebang nor an `if __name__ == "__main__"` block is a module: it must import.
- Shell (`.sh`, `.bash`, `.slurm`, or a shebang naming a shell): `bash -n`, then `shellcheck`. Shell scripts are
  never run: one that does not parse `--help` would do its real work.
- Any other executable: `SCRIPT --help` (through its shebang's interpreter when it is not executable).
"""
from __future__ import annotations

import difflib
import os
import posixpath
import re
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tools.book.model import Book
from tools.checks.programs.discover import SCRIPT_SUFFIXES, Check, Program, Status, classify, discover, interpreter_name, read_shebang  # noqa: F401 - re-exported: the command and the tests import them from here
from tools.core.atomic import private_folder
from tools.core.bounded_run import run_bounded
from tools.core.errors import Diagnostic, Diagnostics, Severity

BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"MZ")
OUTPUT_KEEP = 4000  # characters of a check's output kept for reports
DEFAULT_TIMEOUT = 60.0

# ---------------------------------------------------------------- running


def _tail(text: str, limit: int = OUTPUT_KEEP) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def run_check(name: str, command: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> Check:
    """Run `command` with stdin closed, keeping the tail of its output; at the deadline its whole group is killed."""
    check = Check(name, command)
    start = time.perf_counter()
    try:
        ran = run_bounded(command, cwd, env, timeout)
    except OSError as exc:
        check.error = exc.strerror or str(exc)
        check.duration = time.perf_counter() - start
        return check
    check.duration = time.perf_counter() - start
    check.timed_out = ran.timed_out
    check.stdout = ran.stdout.decode("utf-8", "replace")
    combined = check.stdout.strip() + "\n" + ran.stderr.decode("utf-8", "replace").strip()
    check.output = _tail(combined)
    check.returncode = ran.returncode
    return check


def last_error_line(output: str) -> str:
    """The line that says what went wrong: the last line of a traceback, else the last non-empty line."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line
    return lines[-1]


@dataclass
class Options:
    python: str
    timeout: float = DEFAULT_TIMEOUT
    shellcheck: str | None = None  # its path; None: do not run it
    jobs: int = 0


def _command_line(program: Program, check: Check, root: Path) -> str:
    shown = [program.path if arg == str(root / program.path) else arg for arg in check.command]
    return " ".join(shown)


class Checker:
    def __init__(self, book: Book, options: Options, workdir: Path) -> None:
        self.book = book
        self.options = options
        self.workdir = workdir
        self.env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")

    def _run(self, name: str, command: list[str]) -> Check:
        return run_check(name, command, self.workdir, self.options.timeout, self.env)

    def check(self, program: Program) -> Program:
        start = time.perf_counter()
        root = self.book.root
        path = str(root / program.path)
        if program.kind == "refused":
            program.duration = time.perf_counter() - start
            return program  # reported when found; never read nor run
        if program.kind == "missing":
            self._missing(program)
        elif program.kind == "python":
            self._help(program, self._run("--help", [self.options.python, path, "--help"]))
        elif program.kind == "module":
            code = "import os, runpy, sys; p = sys.argv[1]; sys.argv = [p, '--help']; sys.path.insert(0, os.path.dirname(p)); runpy.run_path(p, run_name='__check_programs__')"
            self._help(program, self._run("import", [self.options.python, "-c", code, path]), module=True)
        elif program.kind in ("shell", "slurm"):
            self._shell(program, path)
        else:
            self._executable(program, path)
        program.status = Status.MISSING if program.kind == "missing" else (Status.FAILED if program.problems else Status.OK)
        program.duration = time.perf_counter() - start
        return program

    # -- one method per kind

    def _missing(self, program: Program) -> None:
        link = program.first
        candidates = sorted(f for f in self.book.index.files if posixpath.splitext(f)[1].lower() == posixpath.splitext(program.path)[1].lower())
        close = difflib.get_close_matches(program.path, candidates, n=1, cutoff=0.7)
        hint = f"Did you mean '{posixpath.relpath(close[0], posixpath.dirname(link.source) or '.')}'? " if close else ""
        written = link.raw or link.href
        where = "" if written == program.path else f" ({program.path})"
        self._problem(program, f"the script '{written}' does not exist{where}, so it cannot be checked.", hint + "Create it or fix the link; `tools check-links` reports every broken link.", "missing-script")

    def _help(self, program: Program, check: Check, module: bool = False) -> None:
        """Judge a run of `--help` (or, for a module, of importing it)."""
        program.checks.append(check)
        root = self.book.root
        shown = f"import {program.path}" if module else _command_line(program, check, root)
        rerun = (f"{self.options.python} -c \"import runpy; runpy.run_path('{program.path}')\"") if module else _command_line(program, check, root)
        if check.error:
            self._problem(program, f"the script '{program.path}' cannot start: `{shown}` failed: {check.error}.", "Check the interpreter (--python) and the file's permissions.", "cannot-start")
        elif check.timed_out:
            fix = "Do no work at import time." if module else "Parse the arguments before heavy imports or work, so that --help returns at once."
            self._problem(program, f"the script '{program.path}' did not finish `{shown}` within {self.options.timeout:g} s.", f"{fix} Or raise --timeout.", "help-timeout")
        elif check.returncode != 0:
            what = "fails to import" if module else f"fails to start: `{shown}` exited with status {check.returncode}"
            self._failed(program, check, what, f"Run `{rerun}` to see the whole output.")
        elif not module and not check.output.strip():
            self._problem(program, f"the script '{program.path}' printed nothing for `{shown}`.", "Make it print its usage on --help (argparse does this), so a reader learns how to run it.", "help-silent")
        else:
            check.ok = True

    def _failed(self, program: Program, check: Check, what: str, suggestion: str) -> None:
        error = last_error_line(check.output)
        module = re.search(r"No module named '([^']+)'", check.output)
        if module:
            top = module.group(1).split(".")[0]
            suggestion = f"Install '{top}' for {self.options.python} (or pass --python with one that has it), or import it only after parsing the arguments so that --help works without it."
        detail = f": {error}" if error else ""
        self._problem(program, f"the script '{program.path}' {what}{detail}.", suggestion, "fails-to-start")

    def _shell(self, program: Program, path: str) -> None:
        syntax = self._run("bash -n", ["bash", "-n", path])
        program.checks.append(syntax)
        syntax.ok = syntax.returncode == 0
        if not syntax.ok:
            error = last_error_line(syntax.output.replace(path + ": ", "")) or syntax.error or "timed out"
            self._problem(program, f"bash cannot parse the script '{program.path}': {error}.", f"Fix the syntax; `bash -n {program.path}` shows where.", "shell-syntax")
        if self.options.shellcheck is None or not syntax.ok:
            return  # shellcheck would only repeat the parse error
        lint = self._run("shellcheck", [self.options.shellcheck, f"--shell={program.shell}", "--external-sources", "--source-path=SCRIPTDIR", "--format=gcc", path])
        program.checks.append(lint)
        lint.ok = lint.returncode == 0
        if lint.ok:
            return
        pattern = re.compile(r"^.*?:(\d+):(\d+): (\w+): (.*?) \[(SC\d+)\]$")
        codes: list[str] = []
        for line in lint.output.splitlines():
            m = pattern.match(line.strip())
            if m:
                lint.findings.append(f"line {m.group(1)}: {m.group(4).rstrip('.')} ({m.group(5)})")
                codes.append(m.group(5))
        if lint.findings:
            shown = "; ".join(lint.findings[:5]) + (f"; and {len(lint.findings) - 5} more" if len(lint.findings) > 5 else "")
            count = len(lint.findings)
            wiki = f"https://www.shellcheck.net/wiki/{codes[0]}"
            self._problem(program, f"shellcheck finds {count} problem{'s' if count != 1 else ''} in '{program.path}': {shown}.", f"Fix {'them' if count != 1 else 'it'} (see {wiki}), or silence one with a `# shellcheck disable={codes[0]}` comment that says why.", "shellcheck")
        else:
            reason = lint.error or ("timed out" if lint.timed_out else last_error_line(lint.output) or f"exit status {lint.returncode}")
            self._problem(program, f"shellcheck could not check '{program.path}': {reason}.", f"Run `shellcheck --shell={program.shell} {program.path}` to see why.", "shellcheck")

    def _executable(self, program: Program, path: str) -> None:
        mode = (self.book.root / program.path).stat().st_mode
        executable = bool(mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        if not program.interpreter:
            with open(path, "rb") as fh:
                head = fh.read(4)
            if not head.startswith(BINARY_MAGIC):
                self._problem(program, f"the file '{program.path}' is executable but has no shebang line, so it cannot start.", "Add one (`#!/usr/bin/env bash`, `#!/usr/bin/env python3`), or clear its executable bit (`chmod -x`) if it is not a program.", "no-shebang")
                return
            command = [path, "--help"]
        elif executable:
            command = [path, "--help"]
        else:
            command = [*program.interpreter, path, "--help"]
        self._help(program, self._run("--help", command))

    def _problem(self, program: Program, message: str, suggestion: str, code: str) -> None:
        link = program.first
        others = [f"{link.source}:{link.line}" for link in program.links[1:]]
        if others:
            message += f" It is also linked from {', '.join(others[:3])}{' and more' if len(others) > 3 else ''}."
        program.problems.append(Diagnostic(Severity.ERROR, link.source, link.line, message, col=link.col, suggestion=suggestion, code=code))


def check_programs(book: Book, programs: list[Program], options: Options, advance=lambda item: None) -> Diagnostics:
    """Check every program in parallel (each check is a subprocess); their problems, in book order."""
    jobs = options.jobs or os.cpu_count() or 2
    with private_folder("check-programs-") as tmp:
        checker = Checker(book, options, tmp)

        def one(program: Program) -> Program:
            try:
                return checker.check(program)
            finally:
                advance(program.path)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, programs))
    diagnostics = Diagnostics()
    for program in programs:
        for problem in program.problems:
            diagnostics.add(problem)
    return diagnostics


def needs_shellcheck(programs: list[Program]) -> bool:
    return any(p.kind in ("shell", "slurm") for p in programs)


def find_shellcheck() -> str | None:
    return shutil.which("shellcheck")
