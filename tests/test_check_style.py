"""`tools check-style`: hard-wrapped prose paragraphs are reported with file and line; the rest is left alone.
Also the spelling check: codespell with the project's word list."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, require
from tools.checks.source.style import check_style, find_markdown
from tools.cli import main

LEFT_ALONE = {
    "one line": "A paragraph on one line, however long it is.\n",
    "list": "- an item\n  wrapped on purpose\n- another\n\n1. first\n   wrapped\n",
    "quote": "> a quote\n> over two lines\n",
    "nested quote in list": "- item\n\n  > quoted\n  > lines\n",
    "table": "| a | b |\n| --- | --- |\n| 1 | 2 |\n",
    "fenced code": "```text\nline one\nline two\n```\n",
    "indented code": "Intro.\n\n    code one\n    code two\n",
    "html block": "<details>\n<summary>More</summary>\nraw lines\nof html\n</details>\n",
    "front matter": "---\ntitle: A\nauthors: B\n---\n\n# Title\n",
    "hard breaks": "An address  \nline two\\\nline three\n",
    "heading then text": "# Title\nText right under it.\n",
    "setext heading": "A title\nover two lines\n===\n",
    "reference definitions": "[a]: https://example.com\n[b]: https://example.org\n",
}


@pytest.mark.parametrize("name", list(LEFT_ALONE))
def test_left_alone(name):
    assert check_style(LEFT_ALONE[name]) == []


def test_hard_wrapped_paragraphs_are_found_with_their_lines():
    text = "# Title\n\nOne line.\n\nA wrapped\nparagraph over\nthree lines.\n\n- list\n  wrapped\n\nAgain `code\nspan` wrapped.\n\nMixed  \nhard and\nsoft.\n"
    findings = check_style(text)
    assert [(f.line, f.last_line) for f in findings] == [(5, 7), (12, 13), (15, 17)]
    assert "3 lines (5-7)" in findings[0].message


def test_footnotes_are_prose():
    text = "Text[^1].\n\n[^1]: A footnote\n    wrapped over two lines.\n"
    assert [f.line for f in check_style(text)] == [3]


def run(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args)
    finally:
        os.chdir(old)


def test_command_reports_file_and_line_and_exits_1(tmp_path):
    book = tmp_path / "book"
    (book / "part").mkdir(parents=True)
    (book / "a.md").write_text("# A\n\nFine.\n", encoding="utf-8")
    (book / "part" / "b.md").write_text("# B\n\n```\nnot\nprose\n```\n\nHard\nwrapped.\n", encoding="utf-8")
    result = run(["check-style", "book"], tmp_path)
    assert result.exit_code == 1, result.output
    assert "book/part/b.md:8: error: this paragraph is hard-wrapped over 2 lines" in result.output
    assert "Checked 2 files: 1 problem" in result.output
    clean = run(["check-style", "book/a.md"], tmp_path)
    assert clean.exit_code == 0 and "0 problems" in clean.output


def test_find_markdown_skips_hidden_and_build_folders(tmp_path):
    for rel in ("a.md", "b.markdown", "c.txt", ".hidden/d.md", "_build/e.md", "node_modules/f.md", "sub/g.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n", encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in find_markdown([tmp_path])]
    assert found == ["a.md", "b.markdown", "sub/g.md"]


def _codespell() -> str:
    path = Path(sys.executable).with_name("codespell")
    require(path.is_file(), "codespell is not installed in the virtualenv (make install-dev installs it)")
    return str(path)


def test_codespell_uses_the_project_word_list(tmp_path):
    codespell = _codespell()
    words = REPO / "build" / "codespell-words.txt"
    page = tmp_path / "page.md"
    page.write_text("Transformer Engine (TE) and Azure ND VMs; HSA_ENABLE_SDMA.\n", encoding="utf-8")
    ok = subprocess.run([codespell, "--ignore-words", str(words), str(page)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    page.write_text("This is teh wrong word.\n", encoding="utf-8")
    bad = subprocess.run([codespell, "--ignore-words", str(words), str(page)], capture_output=True, text=True)
    assert bad.returncode != 0 and f"{page}:1: teh ==> the" in bad.stdout


def test_pre_commit_config_runs_the_same_checks():
    config = (REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    for entry in (".venv/bin/tools fix-tables", ".venv/bin/tools check-style", ".venv/bin/codespell --ignore-words build/codespell-words.txt"):
        assert f"entry: {entry}" in config
    assert "repo: local" in config and "language: system" in config  # offline: no hook repository to download
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "fix-tables --check" in makefile and "check-style" in makefile and "codespell-words.txt" in makefile
