"""Each command imports only what it needs (issue 15, start-up): `tools --help` lists the commands without importing
them, `--help` of a command loads no parser or renderer, and `check-links` loads no renderer (and, with every chapter
in its cache, not even the parser). What a process imported is read from `python -X importtime`, never timed:
scripts/bench_startup.py measures the time (BENCHMARKS.md, "Start-up")."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import REPO, write_book
from tools import cli

HEAVY = ("markdown_it", "mdit_py_plugins", "yaml", "jinja2", "pygments", "weasyprint", "ebooklib", "lxml", "rich", "pypdf")
RENDERERS = ("tools.render", "jinja2", "pygments", "weasyprint", "ebooklib", "pypdf")
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$")


def imported_by(*args: str, cwd: Path | None = None, env: dict | None = None) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules `tools ARGS` imported (top-level names and tools.* modules), and how it ended."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tools", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=120)
    names = {match.group(1) for line in done.stderr.splitlines() if (match := _IMPORTED.match(line))}
    assert names, done.stderr[-2000:]
    return names, done


def loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes))


def test_help_lists_every_command_without_importing_one():
    names, done = imported_by("--help")
    assert done.returncode == 0, done.stderr
    assert loaded(names, HEAVY) == []
    assert loaded(names, tuple(f"tools.commands.{module}" for module, _, _ in cli.COMMANDS.values())) == []
    listed = re.findall(r"^  ([a-z-]+)  ", done.stdout.split("Commands:")[1], re.M)
    assert listed == sorted(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_a_commands_help_loads_no_parser_or_renderer(command):
    names, done = imported_by(command, "--help")
    assert done.returncode == 0, done.stderr
    assert f"Usage: tools {command}" in done.stdout
    # The output formats' registry and its adapters (tools/render/registry.py, protocol.py, builtin.py) name the formats for `tools build --help`;
    # they import no renderer, which is what this checks.
    adapters = {"tools.render", "tools.render.registry", "tools.render.protocol", "tools.render.builtin"} if command == "build" else set()
    assert [name for name in loaded(names, HEAVY + ("tools.render",)) if name not in adapters] == []


def test_check_links_loads_no_renderer_and_a_cached_book_no_parser(tmp_path):
    book = write_book(tmp_path / "book", {
        "README.md": "# Start\n\nSee [the next chapter](next.md#usage) and ![a figure](figure.png).\n\n```python\nprint('hi')\n```\n",
        "next.md": "# Next\n\n## Usage\n\n<div align=\"center\">Back to [the start](README.md).</div>\n",
        "figure.png": b"\x89PNG\r\n\x1a\n",
    })
    cache = {"BOOK_CACHE_DIR": str(tmp_path / "cache")}
    first, done = imported_by("check-links", "--book", str(book), env=cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "markdown_it" in first  # the chapters were parsed
    assert loaded(first, RENDERERS) == []
    again, done = imported_by("check-links", "--book", str(book), env=cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Checked 2 chapters" in done.stderr
    assert loaded(again, HEAVY + ("tools.render",)) == []


@pytest.mark.parametrize("width", [40, 80, 200])
def test_each_listed_summary_is_the_commands_own(width):
    """The summaries `tools --help` shows without importing the commands are the ones the commands would show."""
    for name, (module, attribute, summary) in cli.COMMANDS.items():
        command = cli.load_command(name)
        assert command is getattr(__import__(f"tools.commands.{module}", fromlist=[attribute]), attribute)
        assert command.get_short_help_str(width) == click.Command(name, help=summary).get_short_help_str(width), name
    assert set(cli.COMMANDS) == {name for name in cli.COMMANDS if cli.main.get_command(click.Context(cli.main), name) is not None}


def test_version_is_looked_up_only_when_asked():
    names, done = imported_by("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tools, version {cli.installed_version()}"


def test_the_top_help_is_clicks_own():
    """`tools --help` at full width is printed from TOP_HELP without click: it must be what click writes."""
    from click.testing import CliRunner

    from tools.commands import TOP_HELP

    written = CliRunner().invoke(cli.main, ["--help"], prog_name="tools", terminal_width=80)
    assert written.exit_code == 0
    assert TOP_HELP == written.output, f"update TOP_HELP in tools/commands/__init__.py to:\n{written.output}"


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_help_and_version_import_no_click(args):
    names, done = imported_by(*args, env={"COLUMNS": "120"})
    assert done.returncode == 0, done.stderr
    assert loaded(names, ("click",)) == [], "tools --help and --version print without importing click"
    assert done.stdout.startswith("Usage: tools [OPTIONS] COMMAND" if args != ["--version"] else "tools, version ")


def test_a_narrow_terminal_gets_clicks_wrapping():
    names, done = imported_by("--help", env={"COLUMNS": "60"})
    assert done.returncode == 0, done.stderr
    assert loaded(names, ("click",)) != []  # click wraps the text to the terminal
    assert "  The book tool: build, check and reorganize a markdown\n  book laid out the GitHub way." in done.stdout


def test_help_into_a_closed_pipe_is_quiet():
    done = subprocess.run(f"'{sys.executable}' -m tools --help | head -c 10 >/dev/null", shell=True, cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}, timeout=60)
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr
