"""Rows, cells and the padded layout of a markdown table, as markdown-it and GitHub read them (used by `tables`)."""
from __future__ import annotations

import re
import unicodedata

DEFAULT_WIDTH = 120  # pad columns when the widest padded row fits; wider tables get one space around each cell

_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")


# --- rows and cells ------------------------------------------------------------------------------------------------


def split_cells(row: str) -> list[str]:
    """A row's cells as markdown-it and GitHub split them: on `|` not preceded by a backslash, outer pipes dropped."""
    text = row.strip()
    cells: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if char == "|" and not escaped:
            cells.append("".join(current))
            current = []
        else:
            current.append(char)
        escaped = char == "\\"
    cells.append("".join(current))
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return [cell.strip() for cell in cells]


def has_pipe(text: str) -> bool:
    """Whether `text` has a `|` that is not escaped."""
    return any(char == "|" and (index == 0 or text[index - 1] != "\\") for index, char in enumerate(text))


def starts_with_pipe(text: str) -> bool:
    return text.lstrip().startswith("|")


def ends_with_pipe(text: str) -> bool:
    stripped = text.rstrip()
    return stripped.endswith("|") and not stripped.endswith("\\|")


def is_delimiter_row(text: str) -> bool:
    """`| --- | :-: |`, `--- | ---`, `|---|`: every cell dashes with optional colons, and at least one pipe."""
    if not has_pipe(text):
        return False
    cells = split_cells(text)
    return bool(cells) and all(_DELIMITER_CELL.match(cell) for cell in cells)


def alignment(cell: str) -> str:
    cell = cell.strip()
    left, right = cell.startswith(":"), cell.endswith(":")
    return "center" if left and right else "left" if left else "right" if right else ""


def display_width(text: str) -> int:
    """Columns a monospace editor gives `text`: wide East Asian characters count twice, combining marks not at all."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def unescape_pipes(cell: str) -> str:
    """What markdown-it keeps of a cell's source: `\\|` becomes `|`."""
    return cell.replace("\\|", "|")


# --- formatting ----------------------------------------------------------------------------------------------------


def _delimiter_cell(align: str, width: int) -> str:
    width = max(width, 3)
    if align == "center":
        return ":" + "-" * (width - 2) + ":"
    if align == "left":
        return ":" + "-" * (width - 1)
    if align == "right":
        return "-" * (width - 1) + ":"
    return "-" * width


def _pad(cell: str, width: int, align: str) -> str:
    missing = width - display_width(cell)
    if align == "right":
        return " " * missing + cell
    if align == "center":
        return " " * (missing // 2) + cell + " " * (missing - missing // 2)
    return cell + " " * missing


def fits(header: list[str], rows: list[list[str]], prefix: str = "", width: int = DEFAULT_WIDTH) -> bool:
    """Whether the table's rows, padded to common column widths, fit in `width` characters (0: no limit)."""
    if width <= 0:
        return True
    widths = [max(3, display_width(header[c]), *(display_width(r[c]) for r in rows)) for c in range(len(header))]
    return display_width(prefix) + sum(widths) + 3 * len(header) + 1 <= width


def format_table(header: list[str], aligns: list[str], rows: list[list[str]], prefix: str = "", width: int = DEFAULT_WIDTH) -> list[str]:
    """The table's lines (no line ends): columns padded to one width (cells aligned as the delimiter row says) when
    they fit in `width` characters (0: always), else one space around each cell."""
    columns = len(header)
    widths = [max(3, display_width(header[c]), *(display_width(r[c]) for r in rows)) for c in range(columns)]
    pad = fits(header, rows, prefix, width)

    def line(cells: list[str], delimiter: bool = False) -> str:
        if pad and not delimiter:
            cells = [_pad(cell, widths[c], aligns[c]) for c, cell in enumerate(cells)]
        return (prefix + "| " + " | ".join(cells) + " |").rstrip()

    delimiter = [_delimiter_cell(aligns[c], widths[c] if pad else 3) for c in range(columns)]
    return [line(header), line(delimiter, True)] + [line(row) for row in rows]
