"""`tools fix-tables`: tables GitHub would not render are fixed, cells never change, code is never touched."""
from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import REPO
from tools.checks.source.table_cells import display_width
from tools.checks.source.tables import CellsChanged, fix_tables, format_table, split_cells
from tools.cli import main
from tools.markdown.parser import create_markdown


def tables_of(text: str) -> list[list[list[str]]]:
    """Every table markdown-it (GitHub's rules) sees in `text`: rows of cell texts, header first."""
    tokens = create_markdown().parse(text)
    found, rows = [], None
    for token in tokens:
        if token.type == "table_open":
            rows = []
        elif token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows is not None:
            rows[-1].append(token.content)
        elif token.type == "table_close":
            found.append(rows)
            rows = None
    return found


# --- what gets fixed -----------------------------------------------------------------------------------------------

FIXED = {
    "no blank line above": (
        "Some text\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        "Some text\n\n| a   | b   |\n| --- | --- |\n| 1   | 2   |\n",
        "inserted the blank line",
    ),
    "header stacked over two lines": (
        "| Accelerator | Peak |\n|             | TFLOPS |\n|---|---:|\n| H100 | 989 |\n",
        "| Accelerator | Peak<br>TFLOPS |\n| ----------- | -------------: |\n| H100        |            989 |\n",
        "joined the header's 2 lines",
    ),
    "header wrapped inside a cell": (
        "| GPU | memory\nbandwidth |\n|---|---|\n| H100 | 3.35 TB/s |\n",
        "| GPU  | memory<br>bandwidth |\n| ---- | ------------------- |\n| H100 | 3.35 TB/s           |\n",
        "joined the header's 2 lines",
    ),
    "stacked header under a paragraph": (
        "Intro:\n| a | b |\n| x | y |\n|---|---|\n| 1 | 2 |\n",
        "Intro:\n\n| a<br>x | b<br>y |\n| ------ | ------ |\n| 1      | 2      |\n",
        "inserted the blank line",
    ),
    "row wrapped inside a cell": (
        "| a | b |\n|---|---|\n| 1 | long\ntext |\n| 3 | 4 |\n",
        "| a   | b            |\n| --- | ------------ |\n| 1   | long<br>text |\n| 3   | 4            |\n",
        "wrapped inside a cell",
    ),
    "short row and escaped pipe": (
        "| a | b |\n|:-:|---|\n| `x\\|y` | 2 |\n| 1 |\n",
        "|   a    | b   |\n| :----: | --- |\n| `x\\|y` | 2   |\n|   1    |     |\n",
        "re-padded",
    ),
    "empty cell past the last column": (
        "| a | b |\n|---|---|\n| 1 | 2 | |\n",
        "| a   | b   |\n| --- | --- |\n| 1   | 2   |\n",
        "re-padded",
    ),
    "in a quote": (
        "> Text\n> | a | b |\n> |---|---|\n> | 1 | 2 |\n",
        "> Text\n>\n> | a   | b   |\n> | --- | --- |\n> | 1   | 2   |\n",
        "inserted the blank line",
    ),
    "in a list item": (
        "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n",
        "- item\n\n  | a   | b   |\n  | --- | --- |\n  | 1   | 2   |\n",
        "re-padded",
    ),
    "no line end at the end of the file": (
        "Text\n| a | b |\n|---|---|\n| 1 | 2 |",
        "Text\n\n| a   | b   |\n| --- | --- |\n| 1   | 2   |",
        "inserted the blank line",
    ),
    "wide characters": (
        "| 名前 | x |\n|---|---|\n| a | b |\n",
        "| 名前 | x   |\n| ---- | --- |\n| a    | b   |\n",
        "re-padded",
    ),
}


@pytest.mark.parametrize("name", list(FIXED))
def test_fixes(name):
    source, expected, what = FIXED[name]
    result = fix_tables(source)
    assert result.text == expected
    assert result.problems == []
    assert any(what in change.what for change in result.changes), result.changes
    assert fix_tables(result.text).changes == []  # a fixed table stays fixed
    assert tables_of(result.text), "the fixed text has a table GitHub renders"


UNCHANGED = {
    "padded already": "| a   | b   |\n| --- | --- |\n| 1   | 2   |\n",
    "in a fenced code block": "Text\n```markdown\nText\n| a | b |\n|---|---|\n```\n",
    "in a tilde fence": "~~~\n| a |\nb\n|---|\n~~~\n",
    "in an indented code block": "Para.\n\n    Text\n    | a | b |\n    |---|---|\n",
    "in raw HTML": "<div>\nText\n| a | b |\n|---|---|\n</div>\n",
    "in front matter": "---\ntitle: x\nrow: a | b\nsep: --- | ---\n---\n\n# T\n",
    "a setext heading": "Title | x\n---\n",
    "prose with a pipe": "Run `a | b` to pipe.\nAnd a second line.\n",
    "a thematic break": "Text\n\n---\n\nMore\n",
}


@pytest.mark.parametrize("name", list(UNCHANGED))
def test_leaves_alone(name):
    result = fix_tables(UNCHANGED[name])
    assert result.text == UNCHANGED[name] and result.changes == [] and result.problems == []


def test_wide_tables_are_not_padded_but_still_fixed():
    wide = "x" * 150
    valid = f"| a | b |\n|---|---|\n| {wide} | 2 |\n"
    assert fix_tables(valid).changes == []  # renders on GitHub; padding it would make every row 150 characters wide
    broken = "Text\n" + valid
    result = fix_tables(broken)
    assert result.text == f"Text\n\n| a | b |\n| --- | --- |\n| {wide} | 2 |\n"
    assert fix_tables(broken, width=0).text.splitlines()[2] == "| a" + " " * 149 + " | b   |"


PROBLEMS = {
    "too many cells": ("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", 3, "has 3 cells and the header 2"),
    "header and delimiter differ": ("| a | b | c |\n|---|---|\n| 1 | 2 |\n", 2, "has 3 cells and the delimiter row 2"),
    "no header": ("Text\n\n|---|---|\n| 1 | 2 |\n", 3, "no header row"),
    "text glued under the table": ("| a | b |\n|---|---|\n| 1 | 2 |\nSource: vendor\n", 4, "has no '|'"),
}


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_reports_what_it_cannot_fix(name):
    source, line, message = PROBLEMS[name]
    result = fix_tables(source)
    assert result.text == source  # a table with a problem is left exactly as it is
    assert [p.line for p in result.problems] == [line]
    assert message in result.problems[0].message


def test_other_tables_of_the_file_are_still_fixed():
    source = "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n\nText\n| c | d |\n|---|---|\n"
    result = fix_tables(source)
    assert len(result.problems) == 1 and len(result.changes) == 1
    assert "Text\n\n| c   | d   |" in result.text


def test_crlf_line_ends_are_kept():
    result = fix_tables("Text\r\n| a | b |\r\n|---|---|\r\n")
    assert result.text == "Text\r\n\r\n| a   | b   |\r\n| --- | --- |\r\n"


def test_split_cells_follows_gfm():
    assert split_cells("| a | b |") == ["a", "b"]
    assert split_cells("a | b") == ["a", "b"]
    assert split_cells("| a \\| b | c |") == ["a \\| b", "c"]
    assert split_cells("| a | |") == ["a", ""]
    assert display_width("名前") == 4 and display_width("é") == 1


def test_format_table_aligns_cells():
    lines = format_table(["n", "name"], ["right", "center"], [["1", "ab"]])
    assert lines == ["|   n | name |", "| --: | :--: |", "|   1 |  ab  |"]


# --- the cells never change (property) ----------------------------------------------------------------------------

_cell_text = st.text(alphabet=st.sampled_from("abcXYZ019 -_.:`*|é名"), min_size=0, max_size=12).map(lambda s: " ".join(s.replace("|", "\\|").split())).filter(lambda s: s == "" or s.strip("-: ") != "")  # a cell of dashes would make a delimiter row


@st.composite
def sloppy_tables(draw):
    columns = draw(st.integers(1, 4))
    header = [draw(_cell_text.filter(bool)) for _ in range(columns)]
    rows = [[draw(_cell_text) for _ in range(columns)] for _ in range(draw(st.integers(0, 4)))]
    outer = draw(st.booleans()) or columns == 1
    aligns = [draw(st.sampled_from(["---", ":--", "--:", ":-:"] + (["-"] if outer else []))) for _ in range(columns)]
    if not outer:  # without outer pipes an empty last cell cannot be written (GFM reads `x|` as x), and a first
        # cell like `1. a` or `- a` would start a list: begin the first cell with a letter
        header[0] = "x" + header[0]
        rows = [["x" + row[0]] + [cell or "x" if c == columns - 1 else cell for c, cell in enumerate(row)][1:] for row in rows]
    spaces = draw(st.sampled_from(["", " ", "  "]))

    def row(cells):
        inner = "|".join(f"{spaces}{c}{spaces}" for c in cells)
        return f"|{inner}|" if outer else inner

    stacked = draw(st.booleans()) and outer
    head = [row(header)]
    if stacked:
        head.append(row([draw(_cell_text) for _ in range(columns)]))
    above = draw(st.sampled_from(["", "Some prose above.\n", "Some prose above.\n\n", "# Heading\n"]))
    text = above + "\n".join(head + [row(aligns)] + [row(r) for r in rows]) + "\n"
    return text, header, rows, stacked


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sloppy_tables())
def test_cells_never_change(case):
    text, header, rows, stacked = case
    result = fix_tables(text)
    assert result.problems == []
    tables = tables_of(result.text)
    assert len(tables) == 1, result.text
    got_header, *got_rows = tables[0]
    unescape = lambda cells: [c.replace("\\|", "|") for c in cells]  # noqa: E731
    if stacked:
        assert [h.split("<br>")[0] for h in got_header] == unescape(header)
    else:
        assert got_header == unescape(header)
    assert got_rows == [unescape(r) for r in rows]
    assert fix_tables(result.text).changes == []  # idempotent


def test_the_verification_catches_a_bad_rewrite(monkeypatch):
    import tools.checks.source.tables as tables

    monkeypatch.setattr(tables, "format_table", lambda header, aligns, rows, prefix="", width=0: ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"])
    with pytest.raises(CellsChanged):
        tables.fix_tables("Text\n| a | b |\n|---|---|\n| 1 | 2 |\n")


# --- the command ---------------------------------------------------------------------------------------------------


def run(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args)
    finally:
        os.chdir(old)


def test_check_changes_nothing_and_exits_1(tmp_path):
    page = tmp_path / "book" / "a.md"
    page.parent.mkdir()
    page.write_text("# A\n\nText\n| a | b |\n|---|---|\n| 1 | 2 |\n", encoding="utf-8")
    before = page.read_bytes()
    result = run(["fix-tables", "--check", "--diff", "book"], tmp_path)
    assert result.exit_code == 1, result.output
    assert "book/a.md:4: would fix: inserted the blank line" in result.output
    assert "+| a   | b   |" in result.output  # the diff
    assert page.read_bytes() == before


def test_fix_writes_and_keeps_the_mode(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("Text\n| a | b |\n|---|---|\n", encoding="utf-8")
    page.chmod(0o664)
    result = run(["fix-tables", "a.md"], tmp_path)
    assert result.exit_code == 0, result.output
    assert page.read_text(encoding="utf-8") == "Text\n\n| a   | b   |\n| --- | --- |\n"
    assert stat.S_IMODE(page.stat().st_mode) == 0o664
    again = run(["fix-tables", "--check", "a.md"], tmp_path)
    assert again.exit_code == 0 and "would change 0" in again.output


def test_problems_fail_with_file_and_line(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", encoding="utf-8")
    result = run(["fix-tables", "a.md"], tmp_path)
    assert result.exit_code == 1
    assert "a.md:5: error: this row has 3 cells and the header 2" in result.output


def test_a_folder_is_searched_for_markdown_only(tmp_path):
    (tmp_path / "book" / "sub").mkdir(parents=True)
    (tmp_path / "book" / "sub" / "b.md").write_text("T\n| a |\n|---|\n", encoding="utf-8")
    (tmp_path / "book" / "notes.txt").write_text("T\n| a |\n|---|\n", encoding="utf-8")
    result = run(["fix-tables", "--check", "book"], tmp_path)
    assert result.exit_code == 1 and "book/sub/b.md:2" in result.output and "notes.txt" not in result.output


def test_the_books_tables_render_on_github():
    """Every table of the book renders on GitHub (padding aside), and fixing the book is safe and idempotent."""
    chapters = sorted((REPO / "chapters").rglob("*.md"))
    assert chapters
    for path in chapters:
        text = path.read_text(encoding="utf-8")
        result = fix_tables(text)  # raises CellsChanged if a fix would change a cell
        name = path.relative_to(REPO)
        assert result.problems == [], f"{name}: {result.problems}"
        assert all(change.what == "re-padded the columns" for change in result.changes), f"{name}: {result.changes}"
        assert fix_tables(result.text).changes == [], name
