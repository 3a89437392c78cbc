"""The Debian packages a book's outputs need, derived from the book: what `tools system-packages` prints and
`make book` installs (scripts/install-book-deps.sh), so that a fresh Debian or Ubuntu machine builds every output
with no error and no warning.

- Always: the libraries WeasyPrint draws the PDF with (Pango, HarfBuzz's subsetter), fontconfig (the PDF's check
  that every character has a font, tools/render/pdf/coverage.py) and DejaVu (Latin, Greek, Cyrillic).
- For each language the book declares (`language` and every `[translations.<tag>]`): the font package of its script
  (fonts-noto-cjk for zh, ja, ko; tools/render/pdf/scripts.py).
- For the characters its chapters and front matter hold: the font package of each script they are written in
  (Chinese words in an English chapter, emoji written as characters or as `:shortcodes:`). Symbols and math are left
  to DejaVu: a build names the package when one is still missing.
- For ```` ```mermaid ```` diagrams: a browser to draw them (Debian's chromium), unless one is found already, and
  Node's npm to install mermaid.js, unless npm or mermaid.js is there.

What is installed already is the caller's question (dpkg-query); this module only reads the book and the PATH.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import NamedTuple

from tools.book.config import BookConfig
from tools.core import safe_io
from tools.render.pdf.scripts import DEJAVU, PRIVATE, describe_script, language_package, script_key

BASE = (
    ("libpango-1.0-0", "the PDF: WeasyPrint lays text out with Pango"),
    ("libpangoft2-1.0-0", "the PDF: Pango's fonts"),
    ("libharfbuzz-subset0", "the PDF: fonts embedded as subsets, several times faster"),
    ("fontconfig", "the PDF: the check that every character has a font"),
    (DEJAVU, "the PDF: Latin, Greek and Cyrillic text"),
)
LEFT_TO_DEJAVU = {"Latn", "Grek", "Cyrl", "math", "symbols", "marks", PRIVATE}  # a build names a package if still missing
MERMAID_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})[ \t]*mermaid[ \t]*$", re.MULTILINE | re.IGNORECASE)
SHORTCODE = re.compile(r":([a-z0-9_+-]+):")


class Need(NamedTuple):
    package: str
    why: str


def _os_id() -> str:
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    found = re.search(r"^ID=\"?([\w.-]+)", text, re.MULTILINE)
    return found.group(1).lower() if found else ""


def browser_package() -> str:
    """Debian's chromium; Ubuntu has none of that name (its chromium-browser installs the snap)."""
    return "chromium-browser" if _os_id() == "ubuntu" else "chromium"


def _book_texts(config: BookConfig) -> list[tuple[str, str]]:
    """(path, text) of every chapter of every language, and of the chapter lists and book.toml (the cover's words)."""
    from tools.book.load import open_book
    from tools.book.translations import languages, view_config

    names: dict[str, None] = {}
    for language in languages(config):
        view = view_config(config, language)
        _, entries = open_book(view)
        names.update(dict.fromkeys(path for path, _ in entries))
        if view.chapters:
            names[view.chapters] = None
    if config.config_file is not None:
        names[config.config_file.name] = None
    texts = []
    for name in names:
        try:
            texts.append((name, safe_io.read_text(config.root / name, config.root, safe_io.CHAPTER_LIMIT, shown=name)))
        except safe_io.UnsafeFile:
            continue  # the build reports it
    return texts


def needed_packages(config: BookConfig) -> list[Need]:
    """Every Debian package the outputs of the book (each language) need, once, each with why, in a stable order."""
    from tools.book.translations import languages
    from tools.markdown.emoji import shortcodes

    found: dict[str, str] = dict(BASE)

    def need(package: str, why: str) -> None:
        if package and package not in found:
            found[package] = why

    for tag in languages(config):
        package = language_package(tag)
        need(package, f"the PDF: text in the book's language {tag}")
    texts = _book_texts(config)
    scripts: dict[str, str] = {}
    for name, text in texts:
        for char in set(text):
            if ord(char) > 0x7F:
                scripts.setdefault(script_key(char), name)
        if ":" in text and any(code in shortcodes() for code in SHORTCODE.findall(text)):
            scripts.setdefault("emoji", name)
    for key, name in sorted(scripts.items(), key=lambda item: (item[1], item[0])):
        if key not in LEFT_TO_DEJAVU:
            script = describe_script(key, config.language)
            need(script.package, f"the PDF: {script.name}{'' if key == 'emoji' else ' text'} (first in {name})")
    diagrams = next((name for name, text in texts if name.endswith((".md", ".markdown")) and MERMAID_FENCE.search(text)), "")
    if diagrams:
        from tools.render.diagrams.browser import find_mermaid_js

        if not _browser_found():
            need(browser_package(), f"mermaid diagrams (first in {diagrams}): the browser that draws them")
        if find_mermaid_js(config.root) is None and shutil.which("npm") is None:
            need("nodejs", f"mermaid diagrams (first in {diagrams}): Node runs npm")
            need("npm", f"mermaid diagrams (first in {diagrams}): npm installs mermaid.js")
    return [Need(package, why) for package, why in found.items()]


def _browser_found() -> bool:
    """Whether the drawing stage finds a browser (tools/render/diagrams/browser.py): the one TOOLS_CHROMIUM names, or
    chromium or Google Chrome on the PATH (GitHub's runners have Chrome)."""
    from tools.render.diagrams.browser import BROWSERS

    named = os.environ.get("TOOLS_CHROMIUM")
    if named:
        return shutil.which(named) is not None
    return any(shutil.which(name) for name in BROWSERS)
