"""The registry of output formats: `tools build` offers every registered format (and `all`), and builds each
through the pipeline (tools/build/pipeline.py). The site, the PDF and the EPUB are three registrations; `register` is
how another format joins (the protocol: tools/render/protocol.py). Installed packages add formats through the
entry-point group `tools.render.registry`, imported only when their format is built, so a broken one stops nothing else."""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.core.errors import BookError
from tools.render.builtin import BUILTIN_FORMATS
from tools.render.protocol import BuildOptions, Built, Format, Prepared

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from tools.book.model import Book, Chapter
    from tools.core.errors import Diagnostics

__all__ = ["ENTRY_POINT_GROUP", "BuildOptions", "Built", "Format", "Prepared", "builtin_names", "get", "load_entry_point_formats",
           "names", "register", "registered"]

_REGISTRY: dict[str, Format] = {}
ENTRY_POINT_GROUP = "tools.render.registry"  # installed packages add formats here (pyproject.toml [project.entry-points])
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


def register(fmt: Format) -> None:
    """Add an output format (or replace the one of the same name); `tools build <name>` then builds it."""
    missing = [attribute for attribute in ("name", "default_output", "cache_namespace", "prepare", "render_chapter", "finish") if not hasattr(fmt, attribute)]
    if missing:
        raise TypeError(f"{fmt!r} is not an output format: it has no {', '.join(missing)} (see tools/render/protocol.py)")
    if fmt.name == "all" or not fmt.name:
        raise ValueError(f"an output format cannot be named {fmt.name!r}")
    _REGISTRY[fmt.name] = fmt


def registered() -> dict[str, Format]:
    """Every registered format by name, in the order they were registered (the order `all` builds them in)."""
    return dict(_REGISTRY)


def builtin_names() -> list[str]:
    """The formats `all` builds: those registered in this process (installed packages' formats are built by name)."""
    return list(_REGISTRY)


def names() -> list[str]:
    """Every format `tools build` can make: the registered ones, then those of installed packages."""
    return [*_REGISTRY, *(name for name in load_entry_point_formats() if name not in _REGISTRY)]


def get(name: str) -> Format:
    """The format called `name`; an installed package's format is imported and registered here, on first use."""
    if name not in _REGISTRY:
        entry = load_entry_point_formats()[name]
        register(_entry_point_format(entry, _load(entry)))
    return _REGISTRY[name]


@lru_cache(maxsize=1)
def load_entry_point_formats() -> dict[str, EntryPoint]:
    """The formats installed packages declare in the `tools.render.registry` entry-point group, by name, not yet imported.
    A name that is not lowercase letters, digits, '-' and '_', or that a built-in format or 'all' has, is left out."""
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if _NAME.fullmatch(entry.name) and entry.name not in _REGISTRY and entry.name != "all":
            found.setdefault(entry.name, entry)
    return found


def _described(entry: EntryPoint) -> str:
    package = f" of the package '{entry.dist.name}' {entry.dist.version}" if entry.dist is not None else ""
    return f"the format '{entry.name}' (entry point '{entry.name} = {entry.value}' in the group '{ENTRY_POINT_GROUP}'{package})"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300].rstrip(".") or "(no message)"


def _load(entry: EntryPoint) -> Any:
    try:
        loaded = entry.load()
    except Exception as exc:  # noqa: BLE001 - the package's own code or a wrong name: a sentence, not a traceback
        raise BookError(f"{_described(entry)} cannot be loaded: {type(exc).__name__}: {_one_line(exc)}; reinstall or uninstall that package.") from None
    if not callable(loaded) and not isinstance(loaded, Format):
        raise BookError(f"{_described(entry)} names something of type {type(loaded).__name__}, not a format object or a function build(book, folder, diagnostics, options); fix or uninstall that package.")
    return loaded


def _entry_point_format(entry: EntryPoint, loaded: Any) -> Format:
    """An entry point names either a `Format` (the full protocol, rendered per chapter in the pool), or a plain
    function `build(book, folder, diagnostics, options) -> summary` that writes a whole output folder at once."""
    if isinstance(loaded, Format):
        if loaded.name != entry.name:
            raise BookError(f"{_described(entry)} names a format called '{loaded.name}'; the entry point's name and the format's must agree.")
        return loaded
    return _FunctionFormat(entry, loaded)


class _FunctionFormat:
    """A package's `build(book, folder, diagnostics, options)` writes into a fresh folder that replaces the output
    only when it returns (tools/core/atomic.py), so a failed or interrupted build keeps the last good one."""

    cache_namespace = ""  # nothing per chapter: no cache entries

    def __init__(self, entry: EntryPoint, function: Callable[..., Any]):
        self.entry, self.function = entry, function
        self.name = self.default_output = entry.name

    def prepare(self, book: Book, diagnostics: Diagnostics, options: BuildOptions) -> Prepared:
        return Prepared([], [])  # nothing per chapter: `finish` gets the whole book

    def render_chapter(self, chapter: Chapter, tokens: list, context: Any) -> Any:
        return None

    def finish(self, book: Book, prepared: Prepared, results: list[Any], out: Path, diagnostics: Diagnostics, options: BuildOptions) -> Built:
        from tools.core.atomic import atomic_dir

        with atomic_dir(out, self.name) as folder:
            try:
                summary = self.function(book, folder, diagnostics, {"local": options.local, "cache": options.cache, "jobs": options.jobs})
            except BookError:
                raise
            except Exception as exc:  # noqa: BLE001 - the package's own code: a sentence naming it, not a traceback
                raise BookError(f"{_described(self.entry)} failed: {type(exc).__name__}: {_one_line(exc)}; the last good output is unchanged.") from None
        return Built(out, str(summary) if summary else "written")


for _builtin in BUILTIN_FORMATS:
    register(_builtin)
