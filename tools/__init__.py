"""The book tool: build a GitHub-style markdown book into a site, a PDF and an EPUB; check and move its links."""
import os as _os
import sys as _sys

__version__ = "0.1.0"

if _sys.argv and (_sys.argv[0] == "-m" or _os.path.basename(_sys.argv[0]) == "tools"):
    # Run as the command (`tools ...`, `python -m tools ...`): from here on a Ctrl-C or SIGTERM is held back until
    # the command runs, which then stops cleanly with exit code 130 or 143 (tools/interrupt.py, tools/cli.py).
    from . import interrupt as _interrupt

    _interrupt.install(defer=True)
    if _sys.argv[1:2] == ["check-links"]:  # an unchanged book's last result, printed before click is even imported
        from . import check_replay as _check_replay

        _check_replay.replay()
