"""What each key of book.toml may hold: a wrong type, an unusable value or a control character is an exit-2 error
at the key's line that says what would be right; the renderers then never meet a value they cannot write."""
from __future__ import annotations

import math
import os
import posixpath
import re
import unicodedata
from urllib.parse import urlsplit

from tools.core import safe_io
from tools.core.errors import BookError

COVER_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")  # what both the PDF and the EPUB can show
FAVICON_SUFFIXES = (".svg", ".png", ".ico")  # what every current browser shows as a tab's icon
# Bidirectional overrides and isolates (text that displays other than it reads), the BOM, and the annotation marks.
_INVISIBLE = {*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF, *range(0xFFF9, 0xFFFC)}
_LANGUAGE = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*")
_SITE_OWN_FOLDERS = {"assets"}  # folders a site writes itself, which no translation's site (`<site>/<tag>/`) may take
_BRANCH_FORBIDDEN = re.compile(r"[\s~^:?*\[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$|//")
# (lowest, highest, whether the lowest is allowed) of each number of [links]: a timeout of 0 or inf would hang.
_LINK_RANGES = {
    "cache_max_age_days": (0.0, 3650.0, True),
    "host_delay": (0.0, 60.0, True),
    "timeout": (0.0, 300.0, False),
    "retries": (0, 10, True),
    "backoff": (0.0, 60.0, True),
}
_EXAMPLES = {
    "title": 'title = "My book"', "authors": 'authors = ["Ada Lovelace", "Alan Turing"]', "language": 'language = "en"',
    "repository": 'repository = "https://github.com/owner/name"', "branch": 'branch = "main"', "cover": 'cover = "images/cover.png"', "favicon": 'favicon = "images/icon.svg"',
    "chapters": 'chapters = "chapters-md.txt"', "site_url": 'site_url = "https://owner.github.io/name/"', "exclude": 'exclude = ["^https://example\\\\.com/"]',
}


def _example(name: str) -> str:
    return f", e.g. {_EXAMPLES[name]}" if name in _EXAMPLES else ""


def bad_character(value: str, allowed: str = "\t") -> str:
    """The first character of `value` that has no place in a plain-text field (a control character, a line or
    paragraph separator, a bidirectional override, a noncharacter), or ''."""
    for char in value:
        if char in allowed:
            continue
        code = ord(char)
        if unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs") or code in _INVISIBLE or 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE:
            return char
    return ""


def _plain_text(where: str, key: str, value: str, allowed: str = "\t") -> str:
    char = bad_character(value, allowed)
    if char:
        name = unicodedata.name(char, "a control character")
        raise BookError(f"{where}: '{key}' holds the invisible character U+{ord(char):04X} ({name}); remove it: the value must be plain text{_example(key)}.")
    return value


def check_book_value(where: str, key: str, name: str, value):
    """The value of `[book] key` (`name` after aliases), checked; BookError otherwise."""
    if name == "authors":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise BookError(f"{where}: '{key}' must be a list of names in quotes, not {value!r}{_example('authors')}.")
        return [_plain_text(where, key, item) for item in value]
    if not isinstance(value, str):
        raise BookError(f"{where}: '{key}' must be a string in quotes, not {type(value).__name__} ({value!r}){_example(name)}.")
    _plain_text(where, key, value, "\t\n" if name in ("description", "subject") else "\t")
    if name == "language" and value and not _LANGUAGE.fullmatch(value):
        raise BookError(f"{where}: 'language' is {value!r}, which is not a language tag; use a BCP 47 tag such as \"en\", \"de\" or \"pt-BR\".")
    if name == "repository" and value:
        try:
            parts = urlsplit(value)
        except ValueError:  # an unclosed IPv6 bracket
            parts = urlsplit("")
        if parts.scheme not in ("http", "https") or not parts.netloc or any(char.isspace() for char in value):
            raise BookError(f"{where}: 'repository' is {value!r}, which is not an http(s) URL{_example('repository')}.")
    if name == "site_url" and value:
        return _site_url(where, value)
    if name == "branch" and (not value or _BRANCH_FORBIDDEN.search(value)):
        raise BookError(f"{where}: 'branch' is {value!r}, which is not a usable git branch name (no spaces, '..', '~^:?*[\\\\'){_example('branch')}.")
    return value


def _site_url(where: str, value: str) -> str:
    """An absolute http(s) URL of a folder, without query or fragment, given a trailing '/' when it lacks one."""
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:  # an unclosed IPv6 bracket
        host = None
    if not host or parts.scheme not in ("http", "https") or any(char.isspace() for char in value) or parts.query or parts.fragment or value.endswith("?") or "#" in value:
        raise BookError(f"{where}: 'site_url' is {value!r}, which is not the http(s) URL of the published site (no query or fragment){_example('site_url')}.")
    return value if value.endswith("/") else value + "/"


def check_switch(where: str, key: str, value):
    """The value of a `[checks]` switch: true or false; BookError otherwise."""
    if not isinstance(value, bool):
        raise BookError(f"{where}: '{key}' must be true or false (without quotes), not {value!r}, e.g. {key} = false.")
    return value


def check_link_value(where: str, key: str, value):
    """The value of `[links] key`, checked; BookError otherwise."""
    if key == "exclude":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise BookError(f"{where}: 'exclude' must be a list of regular expressions in quotes, not {value!r}{_example('exclude')}.")
        for pattern in value:
            _plain_text(where, key, pattern)
            try:
                re.compile(pattern)
            except re.error as exc:
                raise BookError(f"{where}: the exclusion pattern {pattern!r} is not a valid regex: {exc}.") from None
        return value
    low, high, low_ok = _LINK_RANGES[key]
    integer = isinstance(low, int)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        kind = "a whole number" if integer else "a number"
        raise BookError(f"{where}: '{key}' must be {kind}, not {type(value).__name__} ({value!r}), e.g. {key} = {high // 2 if integer else 5}.")
    if not math.isfinite(value) or value > high or value < low or (value == low and not low_ok):
        lowest = f"{'at least' if low_ok else 'more than'} {low:g}"
        raise BookError(f"{where}: '{key}' is {value!r}; it must be {lowest} and at most {high:g}.")
    return value


def check_files(config, where, given: dict[str, str]) -> None:
    """The files book.toml names: the chapter list, the cover and the favicon are regular files inside the root.

    `where(key)` is the `book.toml:line` of a key; `given` maps each key's name to the key as written.
    """
    for name in ("chapters", "cover", "favicon"):
        value = getattr(config, name)
        if not value:
            continue
        at = where(given.get(name, name))
        key = given.get(name, name)
        if value.startswith("/") or posixpath.normpath(value).startswith("../") or posixpath.normpath(value) == "..":
            raise BookError(f"{at}: '{key}' is {value!r}, outside the book's root folder; name a file inside it, relative to the root{_example(name)}.")
        limit = safe_io.CONFIG_LIMIT if name == "chapters" else safe_io.ASSET_LIMIT
        try:
            safe_io.check_regular(os.path.join(config.root, value), config.root, limit, shown=value)
        except safe_io.UnsafeFile as exc:
            raise BookError(f"{at}: '{key}' names '{value}', which {exc.reason}; name a regular file inside the book's root folder{_example(name)}.") from None
        if name == "cover" and not value.lower().endswith(COVER_SUFFIXES):
            raise BookError(f"{at}: 'cover' is {value!r}, which is not an image the PDF and EPUB can show; use a {', '.join(COVER_SUFFIXES)} file.")
        if name == "favicon" and not value.lower().endswith(FAVICON_SUFFIXES):
            raise BookError(f"{at}: '{key}' is {value!r}, which is not an icon browsers show; use a {', '.join(FAVICON_SUFFIXES)} file{_example(name)}.")


def check_translation(config, tag: str, table: dict, where, header: str, folders: dict[str, str]) -> tuple[str, str, str, str]:
    """One `[translations.<tag>]` table's (folder, title, description, chapter list): a language tag other than the book's, a folder inside
    the root that exists (and no other translation's), an optional chapter list inside that folder. `where(key)` is
    the `book.toml:line` of a key, `header` that of the table, `folders` the folders of the translations before it."""
    if not _LANGUAGE.fullmatch(tag):
        raise BookError(f"{header}: [translations.{tag}] does not name a language; use a BCP 47 tag such as [translations.zh] or [translations.pt-BR].")
    if tag.casefold() == (config.language or "en").casefold():
        raise BookError(f"{header}: [translations.{tag}] is the book's own language ([book] language = {config.language!r}); a translation needs another one.")
    for language in folders.values():
        if language.casefold() == tag.casefold():
            raise BookError(f"{header}: [translations.{tag}] is the language of [translations.{language}] again (tags ignore case); keep one table per language.")
    if tag.casefold() in _SITE_OWN_FOLDERS:
        raise BookError(f"{header}: [translations.{tag}] would put its site in the site's own '{tag}/' folder; use the language's BCP 47 tag, e.g. [translations.de].")
    values: dict[str, str] = {}
    for key, value in table.items():
        if not isinstance(value, str):
            raise BookError(f"{where(key)}: '{key}' must be a string in quotes, not {type(value).__name__} ({value!r}), e.g. {key} = \"{tag}\".")
        values[key] = _plain_text(where(key), key, value, "\t\n" if key == "description" else "\t")
    if "folder" not in values:
        raise BookError(f"{header}: [translations.{tag}] has no 'folder'; add the folder that holds the translated chapters, e.g. folder = \"{tag}\".")
    folder = posixpath.normpath(values["folder"].replace("\\", "/").strip())
    if not values["folder"].strip() or folder == "." or values["folder"].startswith("/") or folder == ".." or folder.startswith("../"):
        raise BookError(f"{where('folder')}: 'folder' is {values['folder']!r}, not a folder inside the book's root; name one relative to the root, e.g. folder = \"{tag}\".")
    real = os.path.realpath(os.path.join(config.root, folder))
    if not safe_io.is_inside(real, os.path.realpath(config.root)):
        raise BookError(f"{where('folder')}: 'folder' is {values['folder']!r}, which leads outside the book's root folder; keep the translation inside the book.")
    if not os.path.isdir(real):
        what = "is not a folder" if os.path.lexists(os.path.join(config.root, folder)) else "does not exist"
        raise BookError(f"{where('folder')}: 'folder' is {values['folder']!r}, which {what}; create it and put the translated chapters in it at the same paths as the originals.")
    for other, language in folders.items():
        if folder == other or folder.startswith(other + "/") or other.startswith(folder + "/"):
            raise BookError(f"{where('folder')}: 'folder' {folder!r} overlaps the folder of [translations.{language}] ({other!r}); give each translation a folder of its own.")
    _check_site_base(config.root, tag, folder, header, [*folders, folder])
    chapters = values.get("chapters", "")
    if chapters:
        listed = posixpath.normpath(chapters)
        if not listed.startswith(folder + "/"):
            raise BookError(f"{where('chapters')}: 'chapters' is {chapters!r}, outside the translation's folder; name a file in it, relative to the book's root, e.g. chapters = \"{folder}/chapters-md.txt\".")
        try:
            safe_io.check_regular(os.path.join(config.root, listed), config.root, safe_io.CONFIG_LIMIT, shown=listed)
        except safe_io.UnsafeFile as exc:
            raise BookError(f"{where('chapters')}: 'chapters' names '{listed}', which {exc.reason}; name the translation's chapter list, e.g. chapters = \"{folder}/chapters-md.txt\".") from None
        chapters = listed
    elif os.path.isfile(os.path.join(config.root, folder, "chapters-md.txt")):
        chapters = f"{folder}/chapters-md.txt"
    return folder, values.get("title", ""), values.get("description", ""), chapters


def _check_site_base(root, tag: str, folder: str, header: str, translation_folders: list[str]) -> None:
    """A translation's site is `<site>/<tag>/`: the book may have no file or folder of its own there (case ignored,
    as a Windows or macOS server ignores it), or the two sites would write the same pages. A translation's folder
    named by the tag is fine: the original's site leaves the translations' folders out."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if name.casefold() != tag.casefold() or _holds_only_translations(root, name, translation_folders):
            continue
        raise BookError(f"{header}: the {tag} translation's site goes into the '{tag}/' folder of the book's site, where the book's own '{name}' is published too, "
                        f"so one would overwrite the other; rename '{name}', or keep the translation there with folder = \"{name}\".")


def _holds_only_translations(root, name: str, translation_folders: list[str]) -> bool:
    """Whether the root's entry `name` is a translation's folder, or a folder holding nothing but the way to one."""
    if name in translation_folders:
        return True
    path = name
    while any(other.startswith(path + "/") for other in translation_folders):
        try:
            inside = [entry for entry in os.listdir(os.path.join(root, path)) if not entry.startswith(".")]
        except OSError:
            return False
        if len(inside) != 1:
            return False
        path = f"{path}/{inside[0]}"
        if path in translation_folders:
            return True
    return False
