"""`tools init [DIR]`: make a new book that builds and checks clean, as a starting point to write in.

It never replaces anything: when any file it would write exists already, it writes nothing and exits 2. The files
are written together (tools/core/atomic.py `staged`), so an interrupted init leaves no half-made book behind.
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import click

from tools.commands.common import EXIT_CODES
from tools.core.atomic import atomic_file, staged
from tools.core.errors import BookError

SECOND = "getting-started.md"
IMAGE = "images/book.svg"

CHAPTER_LIST = f"""\
# The book's chapters in reading order, one path per line, relative to this folder.
README.md
{SECOND}
"""

README = f"""\
# {{title}}

This is the first chapter of the book. Every chapter is a markdown file listed in `chapters-md.txt`, and a link to another chapter's heading is checked by `tools check-links`: read on in [Writing a chapter]({SECOND}#writing-a-chapter).

![The book's pages side by side]({IMAGE})

A fenced code block is highlighted in every format:

```python
def greet(name: str) -> str:
    return f"Hello, {{{{name}}}}!"
```
"""

SECOND_CHAPTER = """\
# Getting started

## Writing a chapter

Add a markdown file, list it in `chapters-md.txt` and build again. Go back to [the first chapter](README.md).
"""

SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120" viewBox="0 0 240 120">
  <title>The book's pages side by side</title>
  <rect x="10" y="10" width="100" height="100" rx="6" fill="#f6f8fa" stroke="#57606a" stroke-width="2"/>
  <rect x="130" y="10" width="100" height="100" rx="6" fill="#f6f8fa" stroke="#57606a" stroke-width="2"/>
  <path d="M25 35h70M25 55h70M25 75h45M145 35h70M145 55h70M145 75h45" stroke="#0969da" stroke-width="4"/>
</svg>
"""


def book_title(folder: Path) -> str:
    """A title from the folder's name: `my-first_book` gives `My first book`."""
    name = folder.resolve().name
    words = "".join(c if c.isprintable() else " " for c in name.replace("-", " ").replace("_", " ")).split()
    title = " ".join(words) or "My book"
    return title[0].upper() + title[1:]


def book_files(title: str) -> dict[str, str]:
    """Each file of the new book, by its path relative to the book folder."""
    config = f'[book]\ntitle = {json.dumps(title, ensure_ascii=False)}\nlanguage = "en"\nchapters = "chapters-md.txt"\n'
    return {
        "chapters-md.txt": CHAPTER_LIST,
        "book.toml": config,
        "README.md": README.format(title=title),
        SECOND: SECOND_CHAPTER,
        IMAGE: SVG,
    }


def _refuse_existing(folder: Path, names) -> None:
    if folder.exists() and not folder.is_dir():
        raise BookError(f"{folder}: exists and is not a folder; tools init makes a book in a new or existing folder: choose another path.")
    taken = [name for name in names if os.path.lexists(folder / name)]
    if taken:
        listed = ", ".join(str(folder / name) for name in taken)
        verb = "already exists" if len(taken) == 1 else "already exist"
        raise BookError(f"{listed}: {verb}; tools init never replaces a file, so it wrote nothing: choose an empty folder, or move the file away.")


@click.command("init", epilog=EXIT_CODES)
@click.argument("folder", required=False, default=".", type=click.Path(path_type=Path))
def init_command(folder: Path) -> None:
    """Make a new book in FOLDER (default: the current folder): a chapter list, book.toml, two chapters and an image."""
    files = book_files(book_title(folder))
    _refuse_existing(folder, files)
    with staged():  # every file appears, or none does
        for name, text in files.items():
            with atomic_file(folder / name) as temp:
                temp.write_text(text, encoding="utf-8")
    shown = shlex.quote(str(folder))
    out = shlex.quote(str(folder / "_build"))
    click.echo(f"Made a new book in {folder}: build it with `tools build all --book {shown} --out {out}`, then check its links with `tools check-links --book {shown}`.")
