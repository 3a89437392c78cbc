"""Before the PDF is laid out: does some font WeasyPrint can use have a glyph for every character a chapter prints?

The fonts are those fontconfig gives Pango for the families the print stylesheet names (the built-in print.css or
the theme's), with the fallbacks it would add: one `fc-match --sort` of all the families, whose charsets (read from
fontconfig's own cache) are the code points that print. The text is each chapter's printed HTML, outside tags,
attributes, styles and scripts; math is an SVG image there and needs no font. tools/render/pdf/glyphs.py decides and
words the errors: one per script with no font, for this PDF only (the site and the EPUB use the reader's fonts)."""
from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from html import unescape
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from tools.core.bounded_run import run_bounded
from tools.render.pdf.glyphs import Coverage, missing_glyphs, needs_glyph, script_errors
from tools.render.templates import asset_text

if TYPE_CHECKING:
    from tools.book.model import Book
    from tools.core.errors import Diagnostics

REFERENCE = re.compile(r"&#?\w+;?")
FC_TIMEOUT = 30.0  # seconds for fc-match, which reads fontconfig's cache (a cold cache is built once, in seconds)


def stylesheet_families(css: str) -> list[str]:
    """Every family a `font-family` or `font` declaration names, in order, once (tinycss2, WeasyPrint's parser)."""
    import tinycss2

    families: dict[str, None] = {}

    def declarations(content) -> None:
        for item in tinycss2.parse_blocks_contents(content, skip_comments=True, skip_whitespace=True):
            if item.type == "declaration" and item.lower_name in ("font-family", "font"):
                families.update(dict.fromkeys(_family_list(item.value, shorthand=item.lower_name == "font")))
            elif item.type in ("qualified-rule", "at-rule") and item.content is not None:
                declarations(item.content)

    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type in ("qualified-rule", "at-rule") and rule.content is not None:
            declarations(rule.content)
    return list(families)


def _family_list(tokens, shorthand: bool) -> list[str]:
    if shorthand:  # `font: bold 10pt/1.2 "A", serif`: the families follow the size
        sizes = [at for at, token in enumerate(tokens) if token.type in ("dimension", "percentage")]
        if not sizes:
            return []
        tokens = tokens[sizes[0] + 1:]
        while tokens and (tokens[0].type == "whitespace" or (tokens[0].type == "literal" and tokens[0].value == "/") or tokens[0].type in ("number", "dimension", "percentage")):
            tokens = tokens[1:]
    names: list[str] = []
    words: list[str] = []
    for token in [*tokens, None]:
        if token is None or (token.type == "literal" and token.value == ","):
            if words:
                names.append(" ".join(words))
            words = []
        elif token.type == "string":
            words.append(token.value)
        elif token.type == "ident" and token.lower_value not in ("inherit", "initial", "unset", "revert"):
            words.append(token.value)
    return names


def _pattern(families: tuple[str, ...]) -> str:
    """A fontconfig pattern naming the families in order (its special characters escaped)."""
    escaped = ["".join("\\" + char if char in "\\-:,=" else char for char in family) for family in families]
    return ",".join(escaped)


def _charset_ranges(line: str) -> list[tuple[int, int]]:
    ranges = []
    for part in line.split():
        low, _, high = part.partition("-")
        try:
            ranges.append((int(low, 16), int(high or low, 16)))
        except ValueError:
            continue
    return ranges


@lru_cache(maxsize=8)
def font_coverage(families: tuple[str, ...]) -> Coverage | None:
    """The code points the fonts for `families` and their fallbacks have; None when fontconfig cannot tell (fc-match
    missing or failing)."""
    program = shutil.which("fc-match")
    if program is None:
        return None
    try:
        ran = run_bounded([program, "--sort", "--format", "%{charset}\n", _pattern(families) or "serif"], cwd=None, env=dict(os.environ), timeout=FC_TIMEOUT, keep=64 << 20)
    except OSError:
        return None
    if ran.returncode != 0 or ran.dropped:
        return None
    ranges = [pair for line in ran.stdout.decode("ascii", "replace").splitlines() for pair in _charset_ranges(line)]
    return Coverage(ranges) if ranges else None


class _PrintedText(HTMLParser):
    """The text of an HTML fragment as printed: character references decoded, styles and scripts left out."""

    SILENT = {"style", "script", "title", "desc"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.silent = 0

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self.SILENT:
            self.silent += 1

    def handle_endtag(self, tag) -> None:
        if tag in self.SILENT and self.silent:
            self.silent -= 1

    def handle_data(self, data) -> None:
        if not self.silent:
            self.parts.append(data)


def printed_text(html: str) -> str:
    parser = _PrintedText()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def _characters(html: str) -> set[str]:
    """Every character the HTML holds or a character reference in it stands for."""
    return set(html).union(*(unescape(reference) for reference in set(REFERENCE.findall(html))))


def check_glyphs(book: Book, chapter_html: list[str], diagnostics: Diagnostics, output: str = "book.pdf") -> bool:
    """Report each script a chapter prints that no usable font has (`missing-glyph` errors, one per script, naming
    `output`); False when some character is missing. Without fontconfig's fc-match nothing can be known: one warning
    says so."""
    families = tuple(stylesheet_families(asset_text("print.css")))
    coverage = font_coverage(families if "serif" in families else (*families, "serif"))  # WeasyPrint's default
    if coverage is None:
        diagnostics.warning(book.chapters[0].path if book.chapters else "book.toml", 0, f"the fonts of {output} were not checked for missing glyphs: fontconfig's fc-match is not installed or failed.",
                            suggestion="Install fontconfig (Debian's fontconfig package), which lists the fonts WeasyPrint uses.", code="glyph-check-skipped")
        return True
    found = []
    for chapter, html in zip(book.chapters, chapter_html):
        # Most chapters have every character: the set of them, references decoded, is quick to check; only a chapter
        # with a suspect (which may sit in an attribute or a style) is parsed for the text it really prints.
        if any(needs_glyph(char) and char not in coverage for char in _characters(html or "")):
            found += missing_glyphs(chapter.path, chapter.text, printed_text(html), coverage.__contains__)
    found += _front_matter_glyphs(book, coverage.__contains__)
    for diagnostic in script_errors(found, output, book.config.language):
        diagnostics.add(diagnostic)
    return not found


def _front_matter_glyphs(book: Book, covered) -> list:
    """The cover's and the parts' words, which no chapter holds: the title, authors and description at their
    book.toml line, the part titles at their chapter list line (both files were read and checked on loading)."""
    config = book.config
    found = []
    for name, printed in ((config.config_file.name if config.config_file else "", " ".join([book.title, *config.authors, config.description])),
                          (config.chapters, " ".join(part.title for part in getattr(book, "parts", [])))):
        if not name or not any(needs_glyph(char) and not covered(char) for char in printed):
            continue
        try:
            source = (config.root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            source = ""
        found += missing_glyphs(name, source, printed, covered)
    return found
