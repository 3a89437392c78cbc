"""The Jinja2 environment over the repository's `templates/` folder."""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(os.environ.get("BOOK_TEMPLATES", Path(__file__).resolve().parents[2] / "templates"))


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "xhtml", "xml"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset_text(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")
