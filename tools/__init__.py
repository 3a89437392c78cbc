"""The book tool: build a GitHub-style markdown book into a site, a PDF and an EPUB; check and move its links.

The package's layers, lowest first (ARCHITECTURE.md, checked by `lint-imports`): core, markdown, book, render,
checks and edit, build, serve, commands. Importing it does nothing else: the command's entry is tools/__main__.py.
"""

__version__ = "0.1.0"
