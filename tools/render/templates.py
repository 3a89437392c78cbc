"""The Jinja2 environment over the templates shipped in the package (`tools/templates/`, see tools/resources.py)."""
from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ..resources import PACKAGE, TEMPLATES, template_bytes, template_text


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(
        loader=PackageLoader(PACKAGE, TEMPLATES),
        autoescape=select_autoescape(["html", "xhtml", "xml"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset_bytes(name: str) -> bytes:
    return template_bytes(name)


def asset_text(name: str) -> str:
    return template_text(name)
