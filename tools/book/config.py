"""The book's configuration: optional `book.toml` at the book root, with defaults for any GitHub-style book."""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

from tools.book.config_check import check_book_value, check_files, check_link_value, check_switch, check_translation
from tools.book.redirects import check_redirects, entry_lines
from tools.core import safe_io
from tools.core.errors import BookError
from tools.core.extensions import Extensions, MarkdownPlugin, activate, load_plugin, load_theme, make_extensions

CONFIG_NAME = "book.toml"
DEFAULT_CHAPTER_LISTS = ("chapters-md.txt", "SUMMARY.txt", "chapters.txt")


@dataclass
class LinkConfig:
    """`[links]`: settings for `tools check-links --external`."""

    exclude: list[str] = field(default_factory=list)  # regexes of URLs never fetched
    cache_max_age_days: float = 7.0
    host_delay: float = 1.0  # seconds between two requests to one host
    timeout: float = 15.0
    retries: int = 3
    backoff: float = 1.0  # seconds before the first retry (doubled each time) when the server gives no Retry-After


# `[checks]`: the warnings a book may turn off, by their code (book.toml key -> field of ChecksConfig)
CHECK_SWITCHES = {"image-alt": "image_alt"}


@dataclass
class ChecksConfig:
    """`[checks]`: which optional warnings `build` and `check-links` give (each on unless set to false)."""

    image_alt: bool = True  # `image-alt`: an image without alt text (markdownlint's MD045)


@dataclass(frozen=True)
class Translation:
    """`[translations.<tag>]`: a translation kept in a folder of the book, at the same relative paths as the original."""

    language: str  # its BCP 47 tag, the table's name
    folder: str  # relative to the root, posix
    title: str = ""  # default: the original's title
    description: str = ""
    chapters: str = ""  # its own chapter list (relative to the root, entries relative to the folder); '' follows the original's


@dataclass
class BookConfig:
    """`[book]`: what a reader sees on the cover and where the tool finds things."""

    root: Path
    title: str = ""
    authors: list[str] = field(default_factory=list)
    language: str = "en"
    description: str = ""
    subject: str = ""
    repository: str = ""  # e.g. https://github.com/owner/name, for links to files that are not chapters
    branch: str = "main"
    repository_path: str | None = None  # the book root inside the repository; `load_book` asks git when unset
    chapters: str = ""  # the chapter list, relative to the root
    output: str = ""  # outputs go to <output>/<format>; default: _build in the current folder
    cover: str = ""  # a cover image, relative to the root
    favicon: str = ""  # the site's icon (.svg, .png or .ico), relative to the root; default: the tool's own
    site_url: str = ""  # where the site is published (https://owner.github.io/name/): canonical links, sitemap, cards
    theme: str = ""  # a folder whose files replace the built-in templates and assets of the same name
    links: LinkConfig = field(default_factory=LinkConfig)
    checks: ChecksConfig = field(default_factory=ChecksConfig)
    extensions: Extensions = field(default_factory=Extensions)  # [markdown] plugins and the theme, loaded
    redirects: dict[str, str] = field(default_factory=dict)  # [redirects]: old chapter path -> new (tools/book/redirects.py)
    redirect_lines: dict[str, int] = field(default_factory=dict)  # the book.toml line of each redirect
    config_file: Path | None = None
    translations: dict[str, Translation] = field(default_factory=dict)  # [translations.<tag>], in book.toml's order
    translation: Translation | None = None  # set in a translation's view of the book (tools/book/translations.py)
    original_language: str = ""  # set in a translation's view: the original's language

    @property
    def chapter_list(self) -> Path:
        return self.root / self.chapters

    def blob_url(self, rel_path: str, is_dir: bool = False) -> str:
        """The repository URL of a file of the book, or '' when no repository is configured."""
        if not self.repository:
            return ""
        prefix = self.repository_path or ""
        path = f"{prefix}{rel_path}".strip("/")
        kind = "tree" if is_dir else "blob"
        return f"{self.repository.rstrip('/')}/{kind}/{self.branch}/{path}"

    def edit_url(self, rel_path: str) -> str:
        """The page that edits a file of the book on GitHub or GitLab, or '' for other hosts or no repository."""
        host = urlsplit(self.repository).hostname or ""
        if host in ("github.com", "www.github.com"):
            kind = "edit"
        elif host == "gitlab.com" or host.startswith("gitlab."):
            kind = "-/edit"
        else:
            return ""
        path = f"{self.repository_path or ''}{rel_path}".strip("/")
        return f"{self.repository.rstrip('/')}/{kind}/{self.branch}/{path}"


_BOOK_KEYS = {f.name for f in fields(BookConfig)} - {"root", "links", "checks", "config_file", "extensions", "redirects", "redirect_lines", "translations", "translation", "original_language"}
_MARKDOWN_KEYS = {"plugins"}
_TABLES = ("book", "links", "checks", "markdown", "redirects", "translations")
_LINK_KEYS = {f.name for f in fields(LinkConfig)}
_ALIASES = {"author": "authors", "repo": "repository", "repo_url": "repository", "lang": "language", "chapter_list": "chapters", "output_dir": "output"}


def _line_of(text: str, key: str) -> int:
    """The line where `key = ...` is set (bare, quoted or dotted, as in `book.title = ...`), or 0."""
    pattern = re.compile(rf"""\s*(?:[\w"'.-]+\.\s*)?["']?{re.escape(key)}["']?\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return 0


def _where(path: Path, text: str, key: str) -> str:
    line = _line_of(text, key)
    return f"{path}:{line}" if line else str(path)


def _unknown(path: Path, text: str, table: str, key: str, known: set[str]) -> BookError:
    return BookError(f"{_where(path, text, key)}: unknown key '{key}' in [{table}]; known keys are: {', '.join(sorted(known))}.")


def _book_root(root: Path) -> Path:
    """The real path of the --book folder, or an exit-2 sentence saying why it cannot be the book."""
    real = Path(os.path.realpath(root))  # never raises, even on a link loop
    if not real.is_dir():
        what = "is not a folder" if os.path.lexists(root) and not os.path.islink(root) else "does not exist (or is a broken symbolic link)"
        raise BookError(f"The book root '{root}' {what}; pass --book DIR pointing at the folder with the chapter list.")
    if not os.access(real, os.R_OK | os.X_OK):
        raise BookError(f"The book root '{root}' cannot be read (permission denied); make it readable or pass another --book DIR.")
    return real


def _read_config(path: Path, root: Path) -> tuple[str, dict]:
    """book.toml's text and table: a regular UTF-8 file inside the root (BOM and CRLF accepted), valid TOML."""
    try:
        text = safe_io.read_text(path, root, safe_io.CONFIG_LIMIT, shown=str(path))
    except safe_io.UnsafeFile as exc:
        raise BookError(f"{exc.path}: the configuration file {exc.reason}. {exc.suggestion or 'Make book.toml a plain text file in the book folder.'}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\s*\(at line (\d+), column (\d+)\)", message)
        if found:
            where, message = f"{path}:{found.group(1)}:{found.group(2)}", message[: found.start()] + message[found.end() :]
        elif "end of document" in message:
            where, message = f"{path}:{text.count(chr(10)) + 1}", re.sub(r"\s*\(at end of document\)", "", message)
        else:
            where = str(path)
        raise BookError(f"{where}: not valid TOML: {message}; strings need quotes and lists brackets, e.g. title = \"My book\" and authors = [\"Ada\"].") from None


def load_config(root: Path) -> BookConfig:
    """Read `book.toml` when present; fill in the defaults of a plain GitHub-style book otherwise. The book's
    extensions (markdown plugins, theme) become the active ones of this process (tools/core/extensions.py)."""
    root = _book_root(root)
    config = BookConfig(root=root)
    path = root / CONFIG_NAME
    if os.path.lexists(path):
        config.config_file = path
        text, data = _read_config(path, root)
        for table, values in data.items():
            if table not in _TABLES:
                raise BookError(f"{_table_where(path, text, table)}: unknown table [{table}]; use [book], [links], [checks], [markdown], [redirects] and [translations.<language>].")
            if not isinstance(values, dict):
                raise BookError(f"{_where(path, text, table)}: '{table}' must be a table, e.g. [{table}] on a line of its own followed by its keys.")
        for key, value in data.get("book", {}).items():
            name = _ALIASES.get(key, key)
            if name not in _BOOK_KEYS:
                raise _unknown(path, text, "book", key, _BOOK_KEYS)
            setattr(config, name, check_book_value(_where(path, text, key), key, name, value))
        for key, value in data.get("links", {}).items():
            if key not in _LINK_KEYS:
                raise _unknown(path, text, "links", key, _LINK_KEYS)
            setattr(config.links, key, check_link_value(_where(path, text, key), key, value))
        for key, value in data.get("checks", {}).items():
            if key not in CHECK_SWITCHES:
                raise _unknown(path, text, "checks", key, set(CHECK_SWITCHES))
            setattr(config.checks, CHECK_SWITCHES[key], check_switch(_where(path, text, key), key, value))
        check_files(config, lambda key: _where(path, text, key), {_ALIASES.get(key, key): key for key in data.get("book", {})})
        config.redirect_lines = entry_lines(text)
        config.redirects = check_redirects(data.get("redirects", {}), lambda key: f"{path}:{config.redirect_lines[key]}" if key in config.redirect_lines else _table_where(path, text, "redirects"))
        config.translations = _translations(config, path, text, data.get("translations", {}))
        _redirects_beside_sites(config, lambda key: f"{path}:{config.redirect_lines.get(key, 0)}")
        plugins = _markdown_plugins(path, text, data.get("markdown", {}))
        theme_files = load_theme(root, config.theme, _where(path, text, "theme")) if config.theme else {}
        config.extensions = make_extensions(plugins, config.theme, theme_files)
    activate(config.extensions)
    if not config.chapters:
        config.chapters = next((name for name in DEFAULT_CHAPTER_LISTS if os.path.lexists(root / name)), "")
    return config


def _redirects_beside_sites(config: BookConfig, where) -> None:
    """A redirect page is written at its old path's URL in the original's site: under a translation's site folder
    (`html/zh/`) or the assets it would be lost or replace that site, so such an old path is refused."""
    taken = {tag.casefold(): f"the {tag} translation's site" for tag in config.translations} | {"assets": "the site's assets"}
    for old in config.redirects:
        first = old.split("/")[0].casefold()
        if "/" in old and first in taken:
            raise BookError(f"{where(old)}: the redirect from '{old}' would write its page inside '{old.split('/')[0]}/', the folder of {taken[first]}; remove the entry (a reader of that site follows its own links).")


def _markdown_plugins(path: Path, text: str, table: dict) -> tuple[MarkdownPlugin, ...]:
    """`[markdown] plugins`: "module:function" strings or {use, options} tables, imported and tried on a parser."""
    for key in table:
        if key not in _MARKDOWN_KEYS:
            raise _unknown(path, text, "markdown", key, _MARKDOWN_KEYS)
    entries = table.get("plugins", [])
    if not isinstance(entries, list):
        raise BookError(f"{_where(path, text, 'plugins')}: 'plugins' must be a list, e.g. plugins = [\"mdit_py_plugins.deflist:deflist_plugin\"].")
    plugins = []
    for entry in entries:
        spec = entry.get("use") if isinstance(entry, dict) else entry
        line = _line_of_value(text, spec) if isinstance(spec, str) else 0
        plugins.append(load_plugin(entry, f"{path}:{line}" if line else _table_where(path, text, "markdown")))
    if plugins:
        from tools.markdown.parser import check_plugins  # markdown-it is imported only by the commands that parse

        check_plugins(tuple(plugins))
    return tuple(plugins)


_TRANSLATION_KEYS = {f.name for f in fields(Translation)} - {"language"}


def _translations(config: BookConfig, path: Path, text: str, tables: dict) -> dict[str, Translation]:
    """`[translations.<tag>]` tables, each checked (tools/book/config_check.py) with errors at the line of the key."""
    found: dict[str, Translation] = {}
    for tag, table in tables.items():
        line = _header_line(text, f"translations.{tag}") or _line_in_table(text, "translations", tag)  # or `zh = ...` under [translations]
        header = f"{path}:{line}" if line else str(path)
        if not isinstance(table, dict):
            raise BookError(f"{header}: 'translations.{tag}' must be a table, e.g. [translations.{tag}] on a line of its own followed by folder = \"{tag}\".")

        def where(key: str, tag=tag, header=header) -> str:
            line = _line_in_table(text, f"translations.{tag}", key)
            return f"{path}:{line}" if line else header

        for key in table:
            if key not in _TRANSLATION_KEYS:
                raise BookError(f"{where(key)}: unknown key '{key}' in [translations.{tag}]; known keys are: {', '.join(sorted(_TRANSLATION_KEYS))}.")
        found[tag] = Translation(tag, *check_translation(config, tag, table, where, header, {t.folder: t.language for t in found.values()}))
    return found


def _table_name(line: str) -> str | None:
    """The name of the table a `[table]` line opens, quotes and blanks removed (`[translations."zh"]`), or None."""
    header = re.match(r"\s*\[\[?\s*([^\]]+?)\s*\]", line)
    return header.group(1).replace('"', "").replace("'", "").replace(" ", "") if header else None


def _header_line(text: str, table: str) -> int:
    return next((number for number, line in enumerate(text.splitlines(), 1) if _table_name(line) == table), 0)


def _line_in_table(text: str, table: str, key: str) -> int:
    """The line of `key = ...` inside the table `[table]` (or written `table.key = ...` / `tag.key` under its parent), or 0."""
    lines = text.splitlines()
    inside = False
    parent, _, last = table.rpartition(".")
    key_line = re.compile(rf"""\s*["']?{re.escape(key)}["']?\s*=""")
    dotted = re.compile(rf"""\s*(?:{re.escape(parent)}\.)?["']?{re.escape(last)}["']?\s*\.\s*["']?{re.escape(key)}["']?\s*=""")
    for number, line in enumerate(lines, 1):
        name = _table_name(line)
        if name is not None:
            inside = name == table  # elsewhere, `tag.key = ...` under [translations] is matched by `dotted`
            continue
        if inside and key_line.match(line):
            return number
        if not inside and dotted.match(line):
            return number
    return 0


def _line_of_value(text: str, value: str) -> int:
    """The first line holding `value` in quotes (a plugin's name in its list or `use = ...`), or 0."""
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return number
    return 0


def _table_where(path: Path, text: str, table: str) -> str:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*\[\[?\s*{re.escape(table)}\b", line):
            return f"{path}:{number}"
    return _where(path, text, table)
