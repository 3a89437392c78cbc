"""What a book adds to the tool through book.toml: markdown-it plugins (`[markdown] plugins`) and a theme folder
(`[book] theme`).

`load_config` loads them (an error is a `book.toml:line` sentence, exit 2) and makes them the active extensions of
the process: the one MarkdownIt factory (tools/markdown/parser.py) applies the plugins, the Jinja2 environment and the
assets (tools/render/templates.py) look in the theme first, and every cache key (tools/core/cache.py) includes their
fingerprint, so a changed plugin or theme file re-parses and re-renders. Forked workers inherit them, so every
format and the link checker see the same parse. Formats added by installed packages live in tools/render/registry.py.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import posixpath
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.core import safe_io
from tools.core.errors import BookError

_SPEC = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
PLUGIN_EXAMPLE = 'plugins = ["mdit_py_plugins.deflist:deflist_plugin"]'
THEME_FILES_LIMIT = 1000  # a theme is a handful of templates and assets; more means `theme` names the wrong folder
THEME_BYTES_LIMIT = 64 * safe_io.MIB


@dataclass(frozen=True)
class MarkdownPlugin:
    """One entry of `[markdown] plugins`: `md.use(function, **options)` on every parser the tool makes."""

    spec: str  # "module:function", as written
    function: Callable[..., Any]
    options: dict[str, Any]
    where: str  # book.toml:line, for every sentence about it
    module: str


@dataclass(frozen=True)
class Extensions:
    plugins: tuple[MarkdownPlugin, ...] = ()
    theme: str = ""  # the theme folder relative to the root, as written
    theme_files: dict[str, bytes] = field(default_factory=dict)  # posix name inside the theme -> bytes, read once
    fingerprint: bytes = b""  # part of every cache key


_active = Extensions()


def activate(extensions: Extensions) -> None:
    """Make `extensions` the ones every parser, template and cache key of this process (and its forks) uses."""
    global _active
    _active = extensions


def active() -> Extensions:
    return _active


def theme_file(name: str) -> bytes | None:
    """The active theme's file `name` (e.g. "style.css"), or None when the theme has none (or there is no theme)."""
    return _active.theme_files.get(name)


def _entry(value: Any, where: str) -> tuple[str, dict[str, Any]]:
    """(spec, options) of a `plugins` item: "module:function" or a table {use = "module:function", options = {...}}."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"use", "options"})
        if unknown:
            raise BookError(f"{where}: a markdown plugin table has the unknown key '{unknown[0]}'; it takes 'use' and 'options', e.g. {{ use = \"mdit_py_plugins.container:container_plugin\", options = {{ name = \"note\" }} }}.")
        spec, options = value.get("use"), value.get("options", {})
        if not isinstance(options, dict):
            raise BookError(f"{where}: the options of the markdown plugin {spec!r} must be a table, e.g. options = {{ name = \"note\" }}, not {options!r}.")
    else:
        spec, options = value, {}
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec):
        raise BookError(f"{where}: {spec!r} does not name a markdown plugin; write \"module:function\" (a function of an installed package), e.g. {PLUGIN_EXAMPLE}.")
    return spec, options


def load_plugin(value: Any, where: str) -> MarkdownPlugin:
    """Import the function a `plugins` item names; a missing module, a failing import or something that is not a
    function is an exit-2 sentence at `where`."""
    spec, options = _entry(value, where)
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BookError(f"{where}: the markdown plugin '{spec}' cannot be imported: {exc}; install the package that provides it (pip install ...) or correct the name.") from None
    except Exception as exc:  # noqa: BLE001 - the plugin's own code failed while importing: a sentence, not a traceback
        raise BookError(f"{where}: the markdown plugin '{spec}' failed while importing: {type(exc).__name__}: {_one_line(exc)}.") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise BookError(f"{where}: the module '{module_name}' has no '{attribute}', so the markdown plugin '{spec}' does not exist; check the name after the colon.")
        target = getattr(target, part)
    if not callable(target):
        raise BookError(f"{where}: '{spec}' is not a function (it is of type {type(target).__name__}); a markdown plugin is a function that takes the MarkdownIt parser.")
    return MarkdownPlugin(spec, target, dict(options), where, module_name)


def plugin_failure(plugins: tuple[MarkdownPlugin, ...], exc: BaseException) -> BookError:
    """The sentence for a plugin that raised while parsing: the plugin whose code is deepest in the traceback."""
    modules = [frame.tb_frame.f_globals.get("__name__", "") for frame in _frames(exc)]
    guilty = [p for p in plugins if any(m == p.module or m.startswith(p.module + ".") for m in modules)]
    named = guilty[-1:] or list(plugins)
    which = " or ".join(f"'{p.spec}'" for p in named)
    return BookError(f"{named[0].where}: the markdown plugin {which} failed while parsing: {type(exc).__name__}: {_one_line(exc)}; fix or remove it.")


def _frames(exc: BaseException):
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300].rstrip(".") or "(no message)"


def _plugin_fingerprint(plugin: MarkdownPlugin) -> bytes:
    """The plugin's name, options, package version and module source: what its output depends on."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    parts = [plugin.spec, json.dumps(plugin.options, sort_keys=True, default=repr)]
    for distribution in packages_distributions().get(plugin.module.split(".")[0], []):
        try:
            parts.append(f"{distribution}={version(distribution)}")
        except PackageNotFoundError:
            pass
    source = getattr(sys.modules.get(plugin.module), "__file__", None)
    if source:
        try:
            parts.append(hashlib.sha256(Path(source).read_bytes()).hexdigest())
        except OSError:
            pass
    return "\0".join(parts).encode()


def load_theme(root: Path, theme: str, where: str) -> dict[str, bytes]:
    """Every regular file of the theme folder, read through safe_io: the folder and its files lie inside the root."""
    normal = posixpath.normpath(theme)
    if theme.startswith("/") or normal == ".." or normal.startswith("../") or normal == ".":
        raise BookError(f"{where}: 'theme' is {theme!r}; name a folder inside the book's root folder (not the root itself), relative to it, e.g. theme = \"theme\".")
    folder = os.path.realpath(root / theme)
    if not safe_io.is_inside(folder, os.path.realpath(root)):
        raise BookError(f"{where}: the theme folder '{theme}' leads outside the book's root folder (to '{folder}'); keep the theme inside the book.")
    if not os.path.isdir(folder):
        raise BookError(f"{where}: the theme folder '{theme}' does not exist or is not a folder; create it, or remove 'theme' to use the built-in look.")
    found: dict[str, bytes] = {}
    total = 0
    for current, dirs, names in safe_io.walk(folder):
        dirs.sort()
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(current, name), folder).replace(os.sep, "/")
            shown = f"{theme.rstrip('/')}/{rel}"
            try:
                data = safe_io.read_bytes(os.path.join(current, name), root, safe_io.ASSET_LIMIT, shown=shown)
            except safe_io.UnsafeFile as exc:
                raise BookError(f"{where}: the theme file {exc}; {exc.suggestion or 'make it a regular file inside the book.'}") from None
            found[rel] = data
            total += len(data)
            if len(found) > THEME_FILES_LIMIT or total > THEME_BYTES_LIMIT:
                raise BookError(f"{where}: the theme folder '{theme}' holds more than {THEME_FILES_LIMIT} files or 64 MiB; a theme holds templates and assets only.")
    return found


def make_extensions(plugins: tuple[MarkdownPlugin, ...], theme: str, theme_files: dict[str, bytes]) -> Extensions:
    digest = hashlib.sha256()
    for plugin in plugins:
        digest.update(b"plugin\0" + _plugin_fingerprint(plugin) + b"\0")
    for name, data in sorted(theme_files.items()):
        digest.update(f"theme\0{name}\0{len(data)}\0".encode() + data)
    fingerprint = digest.digest() if plugins or theme_files else b""
    return Extensions(plugins, theme, theme_files, fingerprint)
