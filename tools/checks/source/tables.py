"""Tables as GitHub renders them: find the ones it would not render, fix what can be fixed, re-pad the rest.

GitHub shows a table only when its delimiter row (`| --- | :-: |`) is the table's second line and the table
follows a blank line. Two mistakes hide that in the source and are obvious to a reader of the rendered page:

- a header spread over several lines (stacked words per column, or a header row wrapped in the middle of a cell);
- no blank line between the paragraph above and the table.

Tables and code are found with the book's one parser (`tools.markdown.parser.create_markdown`), never by pattern
matching on the text: a table markdown-it already sees is a `table_open` token; a table it does not see (its
header is broken) is a paragraph whose lines include a delimiter row. Code blocks, raw HTML and front matter are
never touched. Every rewritten table is parsed again and its cells compared with the original ones, so a fix can
add `<br>`, blank lines and padding but never change what a cell says.

Columns are padded to one width (cells aligned as the delimiter row says) when the padded rows fit in `width`
characters; a wider table (long links in a cell, say) gets one space around each cell instead, and a wide table that
renders already is left exactly as it is, so that no fix turns it into rows hundreds of characters wide.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tools.checks.source.table_cells import (
    DEFAULT_WIDTH,
    alignment,
    ends_with_pipe,
    fits,
    format_table,
    has_pipe,
    is_delimiter_row,
    split_cells,
    starts_with_pipe,
    unescape_pipes,
)

_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)*")
_BR_JOIN = re.compile(r"[ \t]*\n[ \t]*")


@dataclass(frozen=True)
class Problem:
    """A table that cannot be fixed safely; `line` is 1-based."""

    line: int
    message: str
    suggestion: str = ""


@dataclass(frozen=True)
class Change:
    """One fix applied to a table; `line` is the 1-based line where the table started."""

    line: int
    what: str


@dataclass
class Result:
    text: str  # the fixed text (the original when nothing changed)
    changes: list[Change] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    tables: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.changes)


class CellsChanged(AssertionError):
    """Raised when a rewritten table would not parse back into the same cells: a bug in this module."""


# --- finding tables ------------------------------------------------------------------------------------------------


@dataclass
class _Table:
    """One table found in the source, with the lines it spans (0-based, end exclusive)."""

    delimiter: int
    start: int  # first line of the header
    end: int
    keep_above: int  # lines [keep_above, start) belong to a paragraph above, which needs a blank line after it
    header_lines: list[int]
    original_cells: list[list[str]] | None  # markdown-it's cells when it already saw a table (header, rows...)


def _protected_lines(tokens) -> set[int]:
    """Lines inside code, raw HTML and front matter: never read as tables, never rewritten."""
    lines: set[int] = set()
    for token in tokens:
        if token.type in ("fence", "code_block", "html_block", "front_matter") and token.map:
            lines.update(range(*token.map))
    return lines


def _markdown_it_cells(tokens, start: int) -> list[list[str]]:
    """The cells markdown-it gives the table that opens at token `start`: a list of rows, header first."""
    rows: list[list[str]] = []
    depth = 0
    for index in range(start, len(tokens)):  # not tokens[start:] nor islice: each walks from 0, quadratic
        token = tokens[index]
        if token.type == "table_open":
            depth += 1
        elif token.type == "table_close":
            depth -= 1
            if depth == 0:
                break
        elif token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(token.content)
    return rows


def _split_prefix(line: str) -> tuple[str, str]:
    match = _PREFIX.match(line)
    end = match.end() if match else 0  # the pattern matches the empty string: always a match
    return line[:end], line[end:]


def _line_text(line: str) -> str:
    return line.rstrip("\r\n")


class _Finder:
    def __init__(self, text: str) -> None:
        from tools.markdown.parser import create_markdown  # the parser is imported when a file is read, not for --help

        self.md = create_markdown()
        self.tokens = self.md.parse(text)
        self.lines = text.splitlines(keepends=True)
        self.protected = _protected_lines(self.tokens)

    def body(self, index: int) -> str:
        return _split_prefix(_line_text(self.lines[index]))[1]

    def tables(self) -> list[_Table]:
        found: list[_Table] = []
        paragraph_ending_at: dict[int, tuple[int, int]] = {}
        for token in self.tokens:
            if token.type == "paragraph_open" and token.map:
                paragraph_ending_at[token.map[1]] = (token.map[0], token.map[1])
        for index, token in enumerate(self.tokens):
            if token.type == "table_open" and token.map:
                start, end = token.map
                table = _Table(start + 1, start, end, start, [start], _markdown_it_cells(self.tokens, index))
                above = paragraph_ending_at.get(start)
                if above is not None:
                    self._absorb_stacked_header(table, above)
                found.append(table)
            elif token.type == "paragraph_open" and token.map:
                found.extend(self._broken_tables(*token.map))
        return sorted(found, key=lambda t: t.start)

    def _absorb_stacked_header(self, table: _Table, paragraph: tuple[int, int]) -> None:
        """A table right under a paragraph: the paragraph's last lines may be more lines of the header."""
        columns = len(split_cells(self.body(table.delimiter)))
        first = table.start
        if starts_with_pipe(self.body(table.start)):
            while first - 1 >= paragraph[0]:
                text = self.body(first - 1)
                if not (starts_with_pipe(text) and len(split_cells(text)) == columns):
                    break
                first -= 1
        table.header_lines = list(range(first, table.start + 1))
        table.keep_above = paragraph[0]
        table.start = first

    def _broken_tables(self, first: int, end: int) -> list[_Table]:
        """A paragraph with a delimiter row in it: a table markdown-it (and GitHub) does not see."""
        for line in range(first, end):
            if line in self.protected or not is_delimiter_row(self.body(line)):
                continue
            table = _Table(line, line, end, first, [], None)
            table.header_lines = self._header_lines(first, line) if line > first else []
            table.start = table.header_lines[0] if table.header_lines else line
            return [table]
        return []

    def _header_lines(self, first: int, delimiter: int) -> list[int]:
        """The fewest lines right above the delimiter that make a header with as many cells as it has."""
        columns = len(split_cells(self.body(delimiter)))
        for count in range(1, delimiter - first + 1):
            lines = list(range(delimiter - count, delimiter))
            if not has_pipe(self.body(lines[0])):
                break
            if _join_header([self.body(i) for i in lines], columns) is not None:
                return lines
        return []


def _join_header(texts: list[str], columns: int) -> list[str] | None:
    """Header lines as one row of `columns` cells, joined with `<br>`; None when they do not make one."""
    rows = [split_cells(t) for t in texts]
    if len(texts) > 1 and all(len(r) == columns for r in rows):  # stacked: one word per column on each line
        return ["<br>".join(r[c] for r in rows if r[c]) for c in range(columns)]
    cells = split_cells("\n".join(t.strip() for t in texts))  # wrapped: a line break inside a cell
    if len(cells) == columns:
        return [_BR_JOIN.sub("<br>", cell) for cell in cells]
    return None


# --- fixing --------------------------------------------------------------------------------------------------------


@dataclass
class _Fix:
    start: int  # the replaced lines of the original, 0-based, end exclusive
    end: int
    lines: list[str]  # their replacement, without line ends
    table_at: int  # where the table starts inside `lines`
    cells: list[list[str]]  # the cells the table must parse into, header first (as markdown-it keeps them)
    change: Change


def fix_tables(text: str, width: int = DEFAULT_WIDTH) -> Result:
    """Fix every table of a markdown document (see the module's docstring); a cell's content never changes.

    Raises `CellsChanged` when the fixed text would not parse back into the expected tables and the untouched text:
    that is a bug of this module, and the caller must then keep the file as it is.
    """
    finder = _Finder(text)
    result = Result(text)
    fixes: list[_Fix] = []
    expected: list[list[list[str]]] = []  # every table of the fixed text, in order
    for table in finder.tables():
        result.tables += 1
        outcome = _fix_one(finder, table, width)
        if isinstance(outcome, Problem):
            result.problems.append(outcome)
            if table.original_cells is not None:
                expected.append(_as_parsed(table.original_cells))
            continue
        if outcome is None:
            if table.original_cells is not None:
                expected.append(_as_parsed(table.original_cells))
            continue
        fixes.append(outcome)
        expected.append(_as_parsed(outcome.cells))
    if not fixes:
        return result
    lines = finder.lines
    newline = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    out = list(lines)
    for fix in sorted(fixes, key=lambda f: f.start, reverse=True):
        last = lines[fix.end - 1]
        block = [line + newline for line in fix.lines]
        if not last.endswith("\n"):  # the table was the file's last line, without a line end
            block[-1] = block[-1][: -len(newline)]
        out[fix.start : fix.end] = block
    fixed = "".join(out)
    _verify(finder, fixed, fixes, expected)
    result.text = fixed
    result.changes = [fix.change for fix in fixes]
    return result


def _as_parsed(rows: list[list[str]]) -> list[list[str]]:
    return [[unescape_pipes(cell) for cell in row] for row in rows]


def _fix_one(finder: _Finder, table: _Table, width: int) -> _Fix | Problem | None:
    """The fix of one table, a Problem when it cannot be fixed safely, or None when it is fine as it is."""
    at = table.delimiter + 1
    prefix, delimiter_text = _split_prefix(_line_text(finder.lines[table.delimiter]))
    depth = prefix.count(">")
    first = min(table.keep_above, table.start)
    if any(line in finder.protected for line in range(table.start, table.end)):
        return Problem(at, "the table overlaps a code block or raw HTML; it was left alone.")
    if any(_split_prefix(_line_text(finder.lines[i]))[0].count(">") != depth for i in range(first, table.end)):
        return Problem(at, "the lines of this table do not all have the same '>' quote markers; it was left alone.", "Give every line of the table the same prefix.")
    aligns = [alignment(cell) for cell in split_cells(delimiter_text)]
    columns = len(aligns)
    if not table.header_lines:
        if table.delimiter == table.keep_above or not has_pipe(finder.body(table.delimiter - 1)):
            return Problem(at, "this delimiter row has no header row right above it: GitHub shows no table.", "Put the header row on the line above the delimiter row, with no blank line between them.")
        cells = split_cells(finder.body(table.delimiter - 1))
        return Problem(at, f"the header row above this delimiter row has {len(cells)} cells and the delimiter row {columns}: GitHub shows no table.", "Give the header row and the delimiter row the same number of cells.")
    header = _join_header([finder.body(i) for i in table.header_lines], columns)
    if header is None:  # only when markdown-it saw a table whose stacked header lines changed shape
        return Problem(at, f"the header lines do not make a row of {columns} cells; the table was left alone.")
    outer = starts_with_pipe(delimiter_text)
    raw_rows: list[tuple[int, str]] = []
    for line in range(table.delimiter + 1, table.end):
        text = finder.body(line)
        if raw_rows and outer and not ends_with_pipe(raw_rows[-1][1]) and not starts_with_pipe(text) and has_pipe(text):
            raw_rows[-1] = (raw_rows[-1][0], raw_rows[-1][1].rstrip() + "\n" + text.strip())  # a row wrapped inside a cell
            continue
        if not has_pipe(text):
            return Problem(line + 1, "this line has no '|', yet GitHub shows it as a row of the table above it.", "Put a blank line between the table and this line, or make it a row.")
        raw_rows.append((line, text))
    rows = []
    for line, text in raw_rows:
        cells = [_BR_JOIN.sub("<br>", cell) for cell in split_cells(text)]
        while len(cells) > columns and cells[-1] == "":  # an empty cell past the last column: GitHub drops it too
            cells.pop()
        if len(cells) > columns:
            return Problem(line + 1, f"this row has {len(cells)} cells and the header {columns}: GitHub drops the cells after the {_ordinal(columns)}.", "Escape a '|' inside a cell as '\\|', or add a column to the header and the delimiter row.")
        rows.append(cells + [""] * (columns - len(cells)))
    new_lines = format_table(header, aligns, rows, prefix, width)
    table_at = 0
    whats = []
    if len(table.header_lines) > 1:
        whats.append(f"joined the header's {len(table.header_lines)} lines into one with <br>")
    wrapped = sum("\n" in text for _, text in raw_rows)
    if wrapped:
        whats.append(f"joined {wrapped} row{'s' if wrapped > 1 else ''} wrapped inside a cell with <br>")
    if table.keep_above < table.start:
        above = [_line_text(finder.lines[i]) for i in range(table.keep_above, table.start)]
        new_lines = above + [prefix.rstrip()] + new_lines
        table_at = len(above) + 1
        whats.append("inserted the blank line GitHub needs above the table")
    old_lines = [_line_text(finder.lines[i]) for i in range(first, table.end)]
    if new_lines == old_lines:
        return None
    if not whats:
        if not fits(header, rows, prefix, width):
            return None  # a wide table that renders: its columns are not padded, so it is left as it is
        whats.append("re-padded the columns")
    if table.original_cells is not None:  # markdown-it's own reading of the original must agree with ours
        original, ours = _as_parsed(table.original_cells), _as_parsed([header] + rows)
        if len(table.header_lines) == 1 and original[0] != ours[0]:
            raise CellsChanged(f"line {at}: the header would change from {original[0]} to {ours[0]}")
        if not wrapped and original[1:] != ours[1:]:
            raise CellsChanged(f"line {at}: the rows would change from {original[1:]} to {ours[1:]}")
    return _Fix(first, table.end, new_lines, table_at, [header] + rows, Change(table.start + 1, "; ".join(whats)))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _verify(finder: _Finder, fixed: str, fixes: list[_Fix], expected: list[list[list[str]]]) -> None:
    """Parse the fixed text again: the tables have the expected cells, in order, and nothing else changed."""
    from tools.markdown.parser import create_markdown

    tokens = create_markdown().parse(fixed)
    got = [_markdown_it_cells(tokens, i) for i, token in enumerate(tokens) if token.type == "table_open"]
    if got != expected:
        for index, (want, have) in enumerate(zip(expected, got)):
            if want != have:
                raise CellsChanged(f"table {index + 1} would parse into other cells: expected {want}, got {have}")
        raise CellsChanged(f"the fixed text has {len(got)} tables instead of {len(expected)}")
    new_lines = fixed.splitlines(keepends=True)
    old_kept, new_kept, old_at, new_at = [], [], 0, 0
    for fix in sorted(fixes, key=lambda f: f.start):
        new_start = new_at + (fix.start - old_at)
        old_kept.extend(finder.lines[old_at : fix.start])
        new_kept.extend(new_lines[new_at:new_start])
        old_at, new_at = fix.end, new_start + len(fix.lines)
    old_kept.extend(finder.lines[old_at:])
    new_kept.extend(new_lines[new_at:])
    if [_line_text(line) for line in old_kept] != [_line_text(line) for line in new_kept]:
        raise CellsChanged("text outside the tables would change")
