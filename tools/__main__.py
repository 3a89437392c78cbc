"""The command's entry (`tools ...`, `python -m tools ...`): what must happen before click is even imported.

From here on a Ctrl-C or SIGTERM is held back until the command runs, which then stops cleanly with exit code 130
or 143 (tools/core/interrupt.py, tools/cli.py); `tools check-links` on an unchanged book prints its last result
without importing the rest (tools/checks/links/replay.py); `tools --version` and `tools --help` (at full width)
print without importing click (tools/commands/__init__.py TOP_HELP).
"""
import os
import sys


def _quick(args: list[str]) -> str | None:
    """What `tools --version` or `tools --help` prints, when it needs no click; else None."""
    if args == ["--version"]:
        from tools import __version__

        return f"tools, version {__version__}\n"
    if args in (["--help"], ["-h"]):
        import shutil

        if shutil.get_terminal_size().columns >= 80:  # click's help is then 78 columns wide, as TOP_HELP is
            from tools.commands import TOP_HELP

            return TOP_HELP
    return None


def main() -> None:
    text = _quick(sys.argv[1:])
    if text is not None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # `tools --help | head`: the reader went away, as tools/cli.py handles it
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        return
    from tools.core import interrupt

    interrupt.install(defer=True)
    if sys.argv[1:2] == ["check-links"]:
        from tools.checks.links import replay

        replay.replay()
    from tools.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
