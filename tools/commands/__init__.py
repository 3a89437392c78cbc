"""One module per CLI command; tools/cli.py imports each only when it runs.

`TOP_HELP` is `tools --help` as click writes it at its full width (a terminal of 80 columns or more, or no terminal):
the command's entry (tools/__main__.py) prints it without importing click, which is most of the start-up's cost.
tests/test_startup.py keeps it equal to click's own (after changing a summary or an option, copy the text its
failure shows).
"""

TOP_HELP = """\
Usage: tools [OPTIONS] COMMAND [ARGS]...

  The book tool: build, check and reorganize a markdown book laid out the GitHub
  way.

Options:
  --version   Show the version and exit.
  -h, --help  Show this message and exit.

Commands:
  build            Build the book as FORMAT: html (a site), pdf, epub, or...
  check-links      Check every link and image of every chapter; report each...
  check-programs   Check that every script the chapters link to starts.
  check-style      Report prose paragraphs hard-wrapped over several lines,...
  fix-tables       Fix the markdown tables that GitHub would not render,...
  init             Make a new book in FOLDER (default: the current folder):...
  mv               Move SRC to DST (git mv inside a git work tree) and...
  mv-links         After SRC was moved to DST (a file or a folder), rewrite...
  serve            Serve the site on 127.0.0.1, rebuild when a source...
  system-packages  List the Debian packages the book's outputs need, each...

  Exit codes:
    0    success
    1    problems found in the book (errors, or warnings with --strict)
    2    usage or configuration error: a bad option, book.toml or chapter list,
         an output the tool refuses or cannot write, another build writing it (--no-wait)
    3    internal error (a bug): the message names a report to attach to an issue
    130  interrupted (Ctrl-C, SIGINT): the last good output is unchanged
    143  stopped by SIGTERM: the last good output is unchanged
"""
