"""`tools check-programs`: does every script the chapters link to start? (`--help`, `bash -n`, shellcheck)."""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import click

from tools.book.config import load_config
from tools.book.load import load_book
from tools.checks.programs.run import DEFAULT_TIMEOUT, Options, Status, check_programs, discover, find_shellcheck, needs_shellcheck
from tools.commands.common import EXIT_CODES, book_option, default_book
from tools.core.errors import EXIT_OK, EXIT_PROBLEMS, BookError
from tools.core.report import Timer, progress
from tools.core.report_formats import print_diagnostics

_STYLE = {Status.OK: ("ok", "green"), Status.FAILED: ("FAIL", "red"), Status.MISSING: ("MISSING", "red")}
_HOW = {"python": "--help", "module": "import", "shell": "bash -n, shellcheck", "slurm": "bash -n, shellcheck", "executable": "--help", "missing": "not found", "refused": "not run"}


def _how(program, shellcheck: bool) -> str:
    how = _HOW[program.kind]
    if program.kind in ("shell", "slurm") and not shellcheck:
        how = "bash -n"
    return how


@click.command("check-programs", epilog=EXIT_CODES)
@book_option
@click.option("--python", "python", default=None, metavar="PATH", help="The Python that runs the .py scripts (default: the one running this tool).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=DEFAULT_TIMEOUT, show_default=True, help="Seconds each check may take.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Checks run at once (default: the number of CPUs).")
@click.option("--no-shellcheck", is_flag=True, help="Check shell and .slurm files with `bash -n` only.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="json: one object on stdout with every script, check and problem.")
def check_programs_command(book_dir: Path | None, python: str | None, timeout: float, jobs: int | None, no_shellcheck: bool, fmt: str) -> None:
    """Check that every script the chapters link to starts.

    Scripts are found through the book's links (never in code blocks): .py, .sh, .bash and .slurm files, and
    files without a suffix that have a shebang or an executable bit. Python scripts must answer `--help` with
    exit status 0 and some output (a file with no shebang and no `__main__` block is a module and must import);
    shell and .slurm files must pass `bash -n` and shellcheck (they are never run); other executables must
    answer `--help`. A link to a script that does not exist is reported as missing.
    """
    timer = Timer()
    config = load_config(book_dir or default_book())
    book = load_book(config.root, config=config)
    python = python or sys.executable
    resolved_python = shutil.which(python)
    if resolved_python is None:
        raise BookError(f"the Python '{python}' does not exist or is not executable; pass --python with a working interpreter.")
    programs = discover(book)
    shellcheck = None
    if not no_shellcheck and needs_shellcheck(programs):
        shellcheck = find_shellcheck()
        if shellcheck is None:
            raise BookError(
                "shellcheck is not installed, and the book links to shell scripts that need it. "
                "Install it (Debian/Ubuntu: apt-get install shellcheck; macOS: brew install shellcheck; "
                "or `make system-deps`), or pass --no-shellcheck to check them with `bash -n` only."
            )
    options = Options(python=python, timeout=timeout, shellcheck=shellcheck, jobs=jobs or 0)
    with progress("Checking scripts", len(programs)) as advance:
        diagnostics = check_programs(book, programs, options, advance)
    failed = sum(p.status == Status.FAILED for p in programs)
    missing = sum(p.status == Status.MISSING for p in programs)
    ok = len(programs) - failed - missing
    places = sum(len(p.links) for p in programs)
    code = EXIT_PROBLEMS if failed or missing else EXIT_OK
    if fmt == "json":
        out = {
            "book": str(book.root), "python": python, "shellcheck": shellcheck, "timeout_s": timeout,
            "scripts": [p.to_json() for p in programs],
            "summary": {"scripts": len(programs), "links": places, "ok": ok, "failed": failed, "missing": missing, "duration_s": round(time.perf_counter() - timer.start, 3)},
        }
        click.echo(json.dumps(out, indent=2))
        sys.exit(code)
    for program in programs:
        label, color = _STYLE[program.status]
        links = f", linked {len(program.links)}×" if len(program.links) > 1 else ""
        click.echo(f"{click.style(f'{label:<7}', fg=color, bold=True)} {program.path} ({_how(program, shellcheck is not None)}{links}, {program.duration:.1f}s)")
    print_diagnostics(diagnostics)
    if not programs:
        click.echo(f"No scripts: the {len(book.chapters)} chapters link to no .py, .sh, .bash, .slurm or executable file, in {timer}.")
        sys.exit(code)
    parts = [f"{ok} ok", f"{failed} failed"] + ([f"{missing} missing"] if missing else [])
    skipped = " (shellcheck skipped)" if no_shellcheck and needs_shellcheck(programs) else ""
    click.echo(f"Checked {len(programs)} script{'s' if len(programs) != 1 else ''} linked from {places} place{'s' if places != 1 else ''}: {', '.join(parts)}{skipped} in {timer}.")
    sys.exit(code)
