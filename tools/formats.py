"""The output formats `tools build` knows: each takes the loaded book and writes one output."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .book import Book
from .errors import BookError, Diagnostics

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


@dataclass
class Built:
    path: Path  # the file or folder a reader opens
    summary: str  # e.g. "62 pages, 14 files"


Builder = Callable[[Book, Path, Diagnostics, dict], Built]


def _html(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.site import build_site
    from .report import progress

    with progress("html", len(book.chapters)) as advance:
        result = build_site(book, out, diagnostics, local=options.get("local", False), progress=advance, cache=options.get("cache"))
    return Built(out / "index.html", f"{result.pages} pages, {result.files} copied files")


def _pdf(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.pdf_parallel import build_pdf_parallel
    from .report import progress

    with progress("pdf", len(book.chapters)) as advance:
        pages = build_pdf_parallel(book, out, diagnostics, cache=options.get("cache"), jobs=options.get("jobs", 1), progress=advance)
    return Built(out, f"{pages} pages")


def _epub(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
    from .render.epub import build_epub

    files = build_epub(book, out, diagnostics, cache=options.get("cache"), jobs=options.get("jobs", 1))
    return Built(out, f"{files} files inside")


FORMATS: dict[str, tuple[str, Builder]] = {  # format name -> (default output under _build, builder)
    "html": ("html", _html),
    "pdf": ("book.pdf", _pdf),
    "epub": ("book.epub", _epub),
}


def register(name: str, default_out: str, builder: Builder) -> None:
    FORMATS[name] = (default_out, builder)


ENTRY_POINT_GROUP = "tools.formats"  # installed packages add formats here (pyproject.toml [project.entry-points])
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


@lru_cache(maxsize=1)
def load_entry_point_formats() -> dict[str, EntryPoint]:
    """The formats installed packages declare in the `tools.formats` entry-point group, by name, not yet imported:
    a package is imported only when its format is built, so a broken one stops nothing else. A name that is not
    lowercase letters, digits, '-' and '_', or that a built-in format or 'all' has, is left out."""
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if _NAME.fullmatch(entry.name) and entry.name not in FORMATS and entry.name != "all":
            found.setdefault(entry.name, entry)
    return found


def format_names() -> list[str]:
    """Every format `tools build` can make: the built-in ones, then those of installed packages."""
    return [*FORMATS, *(name for name in load_entry_point_formats() if name not in FORMATS)]


def format_builder(name: str) -> tuple[str, Builder]:
    """(default output under _build, builder) of a format; an installed package's format is imported here."""
    if name not in FORMATS:
        entry = load_entry_point_formats()[name]
        register(name, name, _plugin_builder(entry, _load(entry)))
    return FORMATS[name]


def _described(entry: EntryPoint) -> str:
    package = f" of the package '{entry.dist.name}' {entry.dist.version}" if entry.dist is not None else ""
    return f"the format '{entry.name}' (entry point '{entry.name} = {entry.value}' in the group '{ENTRY_POINT_GROUP}'{package})"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300].rstrip(".") or "(no message)"


def _load(entry: EntryPoint) -> Callable[..., Any]:
    try:
        function = entry.load()
    except Exception as exc:  # noqa: BLE001 - the package's own code or a wrong name: a sentence, not a traceback
        raise BookError(f"{_described(entry)} cannot be loaded: {type(exc).__name__}: {_one_line(exc)}; reinstall or uninstall that package.") from None
    if not callable(function):
        raise BookError(f"{_described(entry)} names something of type {type(function).__name__}, not a function build(book, folder, diagnostics, options); fix or uninstall that package.")
    return function


def _plugin_builder(entry: EntryPoint, function: Callable[..., Any]) -> Builder:
    """A package's `build(book, folder, diagnostics, options)` writes into a fresh folder that replaces the output
    only when it returns (tools/atomic.py), so a failed or interrupted build keeps the last good one."""

    def build(book: Book, out: Path, diagnostics: Diagnostics, options: dict) -> Built:
        from .atomic import atomic_dir

        with atomic_dir(out, entry.name) as folder:
            try:
                summary = function(book, folder, diagnostics, dict(options))
            except BookError:
                raise
            except Exception as exc:  # noqa: BLE001 - the package's own code: a sentence naming it, not a traceback
                raise BookError(f"{_described(entry)} failed: {type(exc).__name__}: {_one_line(exc)}; the last good output is unchanged.") from None
        return Built(out, str(summary) if summary else "written")

    return build
