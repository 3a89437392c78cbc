"""The book tool: build a GitHub-style markdown book into a site, a PDF and an EPUB; check and move its links."""

__version__ = "0.1.0"
