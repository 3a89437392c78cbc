"""The registry of output formats: `tools build` offers every registered format (and `all`), and builds each
through the pipeline (tools/pipeline.py). The site, the PDF and the EPUB are three registrations; `register` is
how another format joins (the protocol: tools/render/format.py)."""
from __future__ import annotations

from .render.builtin import BUILTIN_FORMATS
from .render.format import BuildOptions, Built, Format, Prepared

__all__ = ["BuildOptions", "Built", "Format", "Prepared", "get", "names", "register", "registered"]

_REGISTRY: dict[str, Format] = {}


def register(fmt: Format) -> None:
    """Add an output format (or replace the one of the same name); `tools build <name>` then builds it."""
    missing = [attribute for attribute in ("name", "default_output", "cache_namespace", "prepare", "render_chapter", "finish") if not hasattr(fmt, attribute)]
    if missing:
        raise TypeError(f"{fmt!r} is not an output format: it has no {', '.join(missing)} (see tools/render/format.py)")
    if fmt.name == "all" or not fmt.name:
        raise ValueError(f"an output format cannot be named {fmt.name!r}")
    _REGISTRY[fmt.name] = fmt


def registered() -> dict[str, Format]:
    """Every registered format by name, in the order they were registered (the order `all` builds them in)."""
    return dict(_REGISTRY)


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Format:
    return _REGISTRY[name]


for _builtin in BUILTIN_FORMATS:
    register(_builtin)
