"""`[redirects]` in book.toml: the old path of each moved chapter and where it is now ("old.md" = "new.md").

The site writes a page at each old URL that sends the reader on (tools/render/site/write.py); `tools mv` and
`tools mv-links` keep the table up to date (`after_move`, `edit_table`), so a chain of moves stays one hop. The
table is edited as text, line by line, and the result is read back with tomllib before it is used: a book.toml
this cannot edit exactly is refused, never rewritten.
"""
from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable

from tools.book.config_check import bad_character
from tools.book.resolve import MARKDOWN_SUFFIXES
from tools.core.errors import BookError

TABLE = "redirects"
EXAMPLE = '"old/intro.md" = "new/intro.md"'
_HEADER = re.compile(r"\s*\[\s*redirects\s*\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"\s*\[")
_VALUE = re.compile(r"""(\s*=\s*)("(?:[^"\\]|\\.)*"|'[^']*')""")


def _path_problem(path: str) -> str:
    """Why `path` cannot be a page of the book, or ''."""
    if bad_character(path, ""):
        return "holds an invisible or control character"
    if path.startswith("/") or "\\" in path or re.match(r"[A-Za-z]:", path):
        return "is not relative to the book's root folder"
    if posixpath.normpath(path) != path or path.startswith("../") or path == "..":
        return "is outside the book's root folder or not written plainly (no '.', '..' or '//' parts)"
    if not path.lower().endswith(MARKDOWN_SUFFIXES):
        return "is not a markdown file (.md)"
    return ""


def check_redirects(table: dict, where: Callable[[str], str]) -> dict[str, str]:
    """The `[redirects]` table, checked: relative markdown paths inside the root, no cycle. `where(key)` is the
    key's `book.toml:line`. Whether the paths exist is `problems`' concern (reported by check-links and builds), so
    that `tools mv-links` can still load a book whose files were moved by hand."""
    redirects: dict[str, str] = {}
    for key, value in table.items():
        if not isinstance(value, str):
            raise BookError(f"{where(key)}: the redirect '{key}' must map an old path to a new one, both in quotes, e.g. {EXAMPLE} (a bare a.md = ... is a dotted key).")
        for what, path in (("old path", key), ("new path", value)):
            problem = _path_problem(path)
            if problem:
                raise BookError(f"{where(key)}: the redirect's {what} '{path}' {problem}; write paths relative to the root, e.g. {EXAMPLE}.")
        redirects[key] = value
    for key in redirects:
        chain = [key]
        while chain[-1] in redirects:
            following = redirects[chain[-1]]
            if following in chain:
                cycle = " -> ".join([*chain[chain.index(following) :], following])
                raise BookError(f"{where(key)}: the redirects form a cycle ({cycle}); a reader would never arrive. Point each old path at the chapter's current path.")
            chain.append(following)
    return redirects


def problems(redirects: dict[str, str], files: Iterable[str], chapters: Iterable[str]) -> list[tuple[str, str, str]]:
    """(key, message, suggestion) for each redirect that cannot work: its old path is a file of the book again (the
    redirect would hide its page) or its final target is not a chapter."""
    import difflib  # only for a broken redirect

    files, chapters = set(files), sorted(chapters)
    found = []
    for key in redirects:
        target = final_target(redirects, key)
        if key in files:
            found.append((key, f"the redirect's old path '{key}' is a file of the book; a redirect page would hide its page.", "Remove the entry from [redirects] (or move the file away)."))
        elif target not in chapters:
            close = difflib.get_close_matches(target, chapters, n=1, cutoff=0.5)
            hint = f"Did you mean '{close[0]}'?" if close else "Point it at a chapter of the chapter list."
            found.append((key, f"the redirect target '{target}' (from '{key}') does not exist as a chapter; readers of the old URL would get nowhere.", hint))
    return found


def final_target(redirects: dict[str, str], path: str) -> str:
    """Where `path` ends up after following the redirects (checked to have no cycle)."""
    seen = {path}
    while path in redirects and redirects[path] not in seen:
        path = redirects[path]
        seen.add(path)
    return path


def collapsed(redirects: dict[str, str]) -> dict[str, str]:
    """Each old path with its final target: one hop."""
    return {key: final_target(redirects, key) for key in redirects}


def _remap(path: str, src: str, dst: str) -> str:
    if path == src:
        return dst
    return dst + path[len(src) :] if path.startswith(src + "/") else path


def after_move(redirects: dict[str, str], src: str, dst: str, chapters: Iterable[str], new_files: Iterable[str]) -> dict[str, str]:
    """The table once `src` moves to `dst`: every target under `src` follows it, each moved chapter (`chapters`,
    old paths) gets an entry from its old path, and a key that is a file again (`new_files`) is dropped. A chapter
    moving back where an entry says it came from drops that entry instead of adding the reverse one, so `mv a b`
    then `mv b a` gives back the table as it was."""
    taken = set(new_files)
    result = {key: _remap(value, src, dst) for key, value in redirects.items() if key not in taken}
    for old in chapters:
        new = _remap(old, src, dst)
        if new != old and redirects.get(new) != old:
            result[old] = new
    return {key: value for key, value in collapsed(result).items() if key != value}


def _entry(line: str, any_value: bool = False) -> tuple[str, str] | None:
    """(key, value) when `line` is one `"key" = "value"` pair (or, with `any_value`, one key of any value), else None."""
    try:
        data = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    if len(data) == 1:
        key, value = next(iter(data.items()))
        if isinstance(value, str) or any_value:
            return key, value
    return None


def _lines(text: str) -> list[str]:
    """The lines of `text`, ends kept, split at \\n only as TOML splits them (str.splitlines also splits at U+0085)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _table_span(lines: list[str]) -> tuple[int, int] | None:
    """(header index, end index) of the `[redirects]` table's lines, or None."""
    for number, line in enumerate(lines):
        if _HEADER.match(line.rstrip("\r\n")):
            end = next((n for n in range(number + 1, len(lines)) if _ANY_HEADER.match(lines[n])), len(lines))
            return number, end
    return None


def entry_lines(text: str) -> dict[str, int]:
    """The line of each entry of the `[redirects]` table in book.toml's text."""
    lines = _lines(text)
    span = _table_span(lines)
    found: dict[str, int] = {}
    if span is not None:
        for number in range(span[0] + 1, span[1]):
            entry = _entry(lines[number], any_value=True)
            if entry:
                found.setdefault(entry[0], number + 1)
    return found


def _quoted(path: str) -> str:
    """`path` as a TOML basic string: quotes, backslashes and control characters (DEL too) escaped."""
    return '"' + "".join(f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else ("\\" + c if c in '"\\' else c) for c in path) + '"'


def edit_table(text: str, old: dict[str, str], new: dict[str, str], shown: str = "book.toml") -> str:
    """book.toml's text with its `[redirects]` table changed from `old` to `new`; every other byte kept. Raises
    BookError when the table is written in a form this edit does not handle (an inline table, dotted keys)."""
    if old == new:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = _lines(text)
    span = _table_span(lines)
    if span is None:
        if old:
            raise BookError(f"{shown}: the redirects are not written as a [redirects] table of their own, so the move cannot update them; write them as [redirects] followed by one {EXAMPLE} per line.")
        block = [f"[{TABLE}]{newline}", *(f"{_quoted(k)} = {_quoted(v)}{newline}" for k, v in new.items())]
        lead = [] if not text else ([newline] if text.endswith("\n") else [newline, newline])
        result = text + "".join(lead + block)
    else:
        header, end = span
        body: list[str] = []
        last_entry = -1
        for line in lines[header + 1 : end]:
            entry = _entry(line)
            if entry is None:
                body.append(line)
                continue
            key, value = entry
            if key not in new:
                continue
            if new[key] != value:
                line = _VALUE.sub(lambda m, v=new[key]: m.group(1) + _quoted(v), line, count=1)  # type: ignore[misc]
            body.append(line)
            last_entry = len(body) - 1
        if body and not body[-1].endswith("\n"):
            body[-1] += newline
        added = [f"{_quoted(k)} = {_quoted(v)}{newline}" for k, v in new.items() if k not in old]
        body[last_entry + 1 : last_entry + 1] = added
        head = lines[:header]
        if not new and end == len(lines) and not "".join(body).strip() and lines[header].strip() == f"[{TABLE}]":
            # the table this tool appended, empty again: taken away with the blank line before it
            if head and not head[-1].strip():
                head = head[:-1]
            result = "".join(head)
        else:
            result = "".join([*head, lines[header], *body, *lines[end:]])
    _verify(text, result, new, shown)
    return result


def _verify(before: str, after: str, new: dict[str, str], shown: str) -> None:
    """The edit changed the redirects to `new` and nothing else, as tomllib reads it."""
    try:
        was, now = tomllib.loads(before), tomllib.loads(after)
    except tomllib.TOMLDecodeError:
        now, was = {}, {"": None}
    was.pop(TABLE, None)
    got = now.pop(TABLE, {})
    if was != now or got != new:
        raise BookError(f"{shown}: the [redirects] table could not be updated without touching other lines; write each redirect as {EXAMPLE} on a line of its own, or update it by hand.")
