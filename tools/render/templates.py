"""The Jinja2 environment over the templates shipped in the package (`tools/render/theme/`, see tools/core/resources.py),
with the book's theme folder (book.toml `theme`, tools/core/extensions.py) in front: a theme file of the same name
replaces a template or an asset in every format."""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FunctionLoader,
    PackageLoader,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateSyntaxError,
    select_autoescape,
)
from markupsafe import Markup, escape

from tools.core.errors import BookError
from tools.core.extensions import active, theme_file
from tools.core.resources import template_bytes, templates


def environment() -> Environment:
    return _environment(active().fingerprint)


def _theme_template(name: str) -> tuple[str, str | None, Callable[[], bool] | None] | None:
    data = theme_file(name)
    if data is None:
        return None
    return _decoded(name, data), f"{active().theme}/{name}", lambda: True


def _themed() -> bool:
    return any(name.endswith(".html") for name in active().theme_files)


def _theme_error(name: str, exc: TemplateError) -> BookError:
    """A theme template that does not compile or render: a sentence at its file (and line), exit 2."""
    if isinstance(exc, TemplateSyntaxError):
        where = f"{exc.filename or name}:{exc.lineno}"
    else:
        where = f"{active().theme}/{name}" if theme_file(name) is not None else active().theme
    message = " ".join(str(exc.message or exc).split())
    return BookError(f"{where}: the theme's template cannot be rendered: {type(exc).__name__}: {message}; fix the theme file or remove it to use the built-in one.")


class _ThemedTemplate(Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        try:
            return super().render(*args, **kwargs)
        except TemplateError as exc:
            if _themed():
                raise _theme_error(self.name or "", exc) from None
            raise


class _ThemedEnvironment(Environment):
    template_class = _ThemedTemplate

    def get_template(self, name, *args: Any, **kwargs: Any):
        try:
            return super().get_template(name, *args, **kwargs)
        except TemplateError as exc:
            if _themed():
                raise _theme_error(str(name), exc) from None
            raise


def fill(text: str, **values: Any) -> Markup:
    """An interface text (tools/book/interface_text.py) with its `{name}` placeholders filled: the text and each value
    escaped, unless a value is markup already (a `{% set %}` block of the template)."""
    return Markup(re.sub(r"\{(\w+)\}", lambda m: str(escape(values[m.group(1)])) if m.group(1) in values else m.group(0), str(escape(text))))


@lru_cache(maxsize=4)
def _environment(theme_fingerprint: bytes) -> Environment:  # one per theme: its templates are compiled once
    env = _ThemedEnvironment(
        loader=ChoiceLoader([FunctionLoader(_theme_template), PackageLoader("tools.render", "theme")]),
        autoescape=select_autoescape(["html", "xhtml", "xml"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fill"] = fill
    return env


def asset_bytes(name: str) -> bytes:
    data = theme_file(name)
    return data if data is not None else template_bytes(name)


def asset_text(name: str) -> str:
    data = theme_file(name)
    return _decoded(name, data) if data is not None else template_bytes(name).decode("utf-8")


def theme_extras() -> list[str]:
    """The theme's files that replace nothing built in and are not templates (a logo, a font, another stylesheet):
    the site copies them into its assets folder."""
    shipped = {item.name for item in templates().iterdir()}
    return [name for name in active().theme_files if name not in shipped and not name.endswith(".html")]


def _decoded(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BookError(f"{active().theme}/{name}:{line}: the theme file is not valid UTF-8 (byte 0x{data[exc.start]:02x}); save it as UTF-8.") from None
