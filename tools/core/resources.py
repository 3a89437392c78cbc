"""The files the tool ships inside its package: the default theme (tools/render/theme/: the Jinja2 templates, the
site's stylesheets and scripts, the print and EPUB stylesheets) and the LinkChecker settings. They are package data (pyproject.toml) read through
`importlib.resources`, so that they are found wherever the package lives: a wheel installed anywhere, an editable
checkout, or the source tree on PYTHONPATH."""
from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable


def templates() -> Traversable:
    return files("tools.render") / "theme"


def template_bytes(name: str) -> bytes:
    return (templates() / name).read_bytes()


def template_text(name: str) -> str:
    return template_bytes(name).decode("utf-8")


def linkcheckerrc() -> Traversable:
    """The LinkChecker settings `check-links --html` uses unless given --linkcheckerrc."""
    return files("tools.checks.links") / "linkcheckerrc"
