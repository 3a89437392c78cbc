"""The command's entry (`tools ...`, `python -m tools ...`): what must happen before click is even imported.

From here on a Ctrl-C or SIGTERM is held back until the command runs, which then stops cleanly with exit code 130
or 143 (tools/core/interrupt.py, tools/cli.py); `tools check-links` on an unchanged book prints its last result
without importing the rest (tools/checks/links/replay.py).
"""
import sys


def main() -> None:
    from tools.core import interrupt

    interrupt.install(defer=True)
    if sys.argv[1:2] == ["check-links"]:
        from tools.checks.links import replay

        replay.replay()
    from tools.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
