"""`tools`: build a GitHub-style markdown book into a site, a PDF and an EPUB; check and move its links.

The exit codes are a contract (tools/commands/common.py EXIT_CODES): every way a command can end maps to one of them,
and a user never sees a Python traceback: an unexpected error prints one sentence and the path of a saved report.
"""
from __future__ import annotations

import errno
import os
import sys

import click

from tools import __version__
from tools.commands.common import EXIT_CODES
from tools.core import interrupt
from tools.core.errors import EXIT_CRASH, EXIT_USAGE
from tools.core.safe_io import UnsafeFile

_AS_COMMAND = interrupt.EARLY  # run as the command: tools/__main__.py installed the handlers before importing this


def installed_version() -> str:
    """The version (pyproject.toml reads it from tools/__init__.py, so the installed one is the package's)."""
    return __version__


# Every command: its module and object, imported only when that command runs (or shows its own --help), and the
# first paragraph of its help, which `tools --help` lists without importing anything (tests/test_startup.py checks
# that each summary is the command's own). Start-up stays small: `tools --help` loads no parser or renderer.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "build": ("build", "build", "Build the book as FORMAT: html (a site), pdf, epub, or all of them."),
    "check-links": ("check_links", "check_links", "Check every link and image of every chapter; report each finding at file:line:col with a suggestion."),
    "check-programs": ("check_programs", "check_programs_command", "Check that every script the chapters link to starts."),
    "check-style": ("check_style", "check_style_command", "Report prose paragraphs hard-wrapped over several lines, with file and line."),
    "fix-tables": ("fix_tables", "fix_tables_command", "Fix the markdown tables that GitHub would not render, and re-pad the columns of the narrow ones."),
    "init": ("init", "init_command", "Make a new book in FOLDER (default: the current folder): a chapter list, book.toml, two chapters and an image."),
    "mv": ("mv", "mv", "Move SRC to DST (git mv inside a git work tree) and rewrite every link the move would break."),
    "mv-links": ("mv", "mv_links", "After SRC was moved to DST (a file or a folder), rewrite every link the move broke."),
    "serve": ("serve", "serve_command", "Serve the site on 127.0.0.1, rebuild when a source changes, and reload the open pages."),
    "system-packages": ("system_packages", "system_packages_command", "List the Debian packages the book's outputs need, each with why."),
}


class ToolsGroup(click.Group):
    """The group whose `main` keeps the exit-code contract (see `run`) and whose commands are imported lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            self.add_command(load_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `tools --help`, as click writes it, from the summaries: no command module is imported."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name][2])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        code = run(lambda: super(ToolsGroup, self).main(args, prog_name or "tools", complete_var, standalone_mode=False, **extra), args)
        if _AS_COMMAND:  # the command is over: exit now, so that no signal lands in the interpreter's shutdown
            _flush()
            os._exit(code)
        sys.exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _quiet_stdout()
        except (OSError, ValueError, AttributeError):
            pass


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--version, as click's version_option prints it; the installed version is looked up only when asked for."""
    if value and not ctx.resilient_parsing:
        click.echo(f"tools, version {installed_version()}")
        ctx.exit()


@click.group(cls=ToolsGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version, help="Show the version and exit.")
def main() -> None:
    """The book tool: build, check and reorganize a markdown book laid out the GitHub way."""


def _command_name(args) -> str:
    words = [word for word in (sys.argv[1:] if args is None else list(args)) if not word.startswith("-")]
    return words[0] if words else ""


def _interrupted(signum: int, args) -> int:
    name = _command_name(args)
    if name == "serve":
        message = "Interrupted: the preview server stopped; the site it wrote is the last good build."
    elif name == "build":
        written = list(dict.fromkeys(interrupt.WRITTEN))
        if written:
            message = f"Interrupted: the build stopped after writing {', '.join(repr(w) for w in written)}; every other output is unchanged."
        else:
            message = "Interrupted: the build stopped; the last good output is unchanged."
    else:
        message = f"Interrupted: tools {name} stopped.".replace("tools  ", "tools ")
    _say(message)
    return interrupt.exit_code(signum)


def _say(message: str) -> None:
    try:
        click.echo(message, err=True)
    except (OSError, ValueError):
        pass


def _os_error(exc: OSError) -> int:
    where = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or str(exc)
    writing = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EISDIR, errno.ENOTDIR)
    verb = "cannot write" if writing else "cannot use"
    _say(f"{verb} '{where}': {reason}; check the file's permissions and the free space, or choose another path (--out).")
    return EXIT_USAGE


def _crash(exc: BaseException) -> int:
    import datetime as dt
    import tempfile
    import traceback

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    report = os.path.join(tempfile.gettempdir(), f"tools-crash-{stamp}-{os.getpid()}.txt")
    try:
        with open(report, "w", encoding="utf-8") as handle:
            handle.write(f"tools {installed_version()}, Python {sys.version.split()[0]}, {sys.platform}\nargv: {sys.argv!r}\n\n{text}")
    except OSError:
        report = "(the report could not be saved)"
    summary = " ".join(str(exc).split())[:300].rstrip(".") or "(no message)"
    _say(f"internal error: {type(exc).__name__}: {summary}. This is a bug in tools; the full report is in {report}; please attach it to an issue.")
    return EXIT_CRASH


def _quiet_stdout() -> None:
    """The reader of our output went away (`tools ... | head`): no more writes, no 'Exception ignored' at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def run(call, args=None) -> int:
    """Run `call` (click in non-standalone mode) and turn however it ends into an exit code (EXIT_CODES)."""
    interrupt.install()
    interrupt.WRITTEN.clear()
    try:
        interrupt.release()  # a signal that came while importing stops here
        try:
            result = call()
        except click.exceptions.Abort as exc:  # click turns Ctrl-C into Abort
            if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
                return _interrupted(interrupt.received() or 2, args)
            _say("Aborted.")
            return 1
        code = result if isinstance(result, int) else 0
        signum = interrupt.received()
        return _interrupted(signum, args) if signum else code
    except SystemExit as exc:
        signum = interrupt.received()
        if signum:
            return _interrupted(signum, args)
        if isinstance(exc.code, int) or exc.code is None:
            return exc.code or 0
        _say(str(exc.code))
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted(2, args)
    except interrupt.Terminated as exc:
        return _interrupted(exc.signum, args)
    except UnsafeFile as exc:  # a refused read no command turned into a diagnostic: still a sentence, not a crash
        _say(f"{exc}." + (f" {exc.suggestion}" if exc.suggestion else ""))
        return EXIT_USAGE
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except Exception as exc:  # noqa: BLE001 - the contract: one sentence and a saved report, never a traceback
        signum = interrupt.received()
        if signum:  # raised where the signal's exception landed inside C code (an import, a codec): the signal's doing
            return _interrupted(signum, args)
        if isinstance(exc, OSError) and exc.filename is not None:
            return _os_error(exc)
        return _crash(exc)
    finally:
        interrupt.settle() if _AS_COMMAND else interrupt.uninstall()
        _flush()


def load_command(name: str) -> click.Command:
    """The command `name`, its module imported now."""
    from importlib import import_module

    module, attribute, _ = COMMANDS[name]
    command = getattr(import_module(f"{__package__}.commands.{module}"), attribute)
    assert isinstance(command, click.Command)
    return command


if __name__ == "__main__":
    main()
