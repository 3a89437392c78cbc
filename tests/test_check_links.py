"""`tools check-links`: every defect found at its `file:line:col`, nothing else; every output format; the
LinkChecker cross-check of the built site; the parse cache; the shared corpus with planted defects."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, require
from tools.cli import main
from tools.commands import check_links as check_links_module
from tools.core.errors import Diagnostics
from tools.core.report_formats import Report, render_sarif, render_text

DEFECTS = REPO / "tests" / "fixtures" / "defects"


def expected_findings() -> set[tuple[str, int, int, str]]:
    rows = set()
    for line in (DEFECTS / "expected.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            file, number, col, code = line.split("\t")
            rows.add((file, int(number), int(col), code))
    return rows


def run(*args: str, cache: Path | None = None):
    extra = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    return CliRunner().invoke(main, ["check-links", *args, *extra])


def findings_of(result) -> set[tuple[str, int, int, str]]:
    data = json.loads(result.stdout)
    return {(f["file"], f["line"], f["col"], f["code"]) for f in data["findings"]}


@pytest.fixture
def defects(tmp_path) -> Path:
    book = tmp_path / "defects"
    shutil.copytree(DEFECTS / "book", book)
    return book


def test_every_defect_is_found_at_its_place_and_nothing_else(defects):
    result = run("--book", str(defects), "--format", "json")
    assert result.exit_code == 1, result.output
    assert findings_of(result) == expected_findings()


def test_findings_read_as_sentences_with_suggestions(defects):
    result = run("--book", str(defects))
    lines = result.stdout.splitlines()
    assert "\x1b[" not in result.stdout  # no colors when the output is not a terminal
    by_place = {line.split(": ", 1)[0].split("defects/", 1)[-1]: line for line in lines}
    assert "Did you mean '#install'? Anchors are case-sensitive." in by_place["README.md:14:62"]
    assert "Did you mean '#install'?" in by_place["README.md:14:20"]
    assert "Link to 'guide/README.md#install' instead." in by_place["README.md:15:21"]
    assert "Did you mean 'guide/setup.md'?" in by_place["README.md:13:18"]
    assert "'guide/instal.md'" in by_place["README.md:13:18"]  # the link as written
    assert "Did you mean '#configure'?" in by_place["guide/setup.md:10:35"]
    assert "13 errors, 1 warning" in result.stderr


def test_text_is_colored_on_a_terminal(defects):
    book = check_links_module.load_book_for_links(defects)
    diagnostics = check_links_module.check_book(book)
    colored = render_text(Report(book.root, diagnostics), color=True)
    plain = render_text(Report(book.root, diagnostics), color=False)
    assert "\x1b[31m" in colored and "\x1b[" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


def test_code_is_never_a_link(defects):
    result = run("--book", str(defects), "--format", "json")
    assert not any(f["line"] >= 26 for f in json.loads(result.stdout)["findings"] if f["file"] == "README.md")


def test_github_annotations(defects, monkeypatch, tmp_path):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.chdir(defects.parent)
    result = run("--book", "defects", "--format", "github")
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected_findings())
    pattern = re.compile(r"^::(error|warning|notice) file=([^,]+)(?:,line=(\d+)(?:,col=(\d+))?)?,title=([^:]+)::(.+)$")
    seen = set()
    for line in lines:
        match = pattern.match(line)
        assert match, line
        assert match.group(2).startswith("defects/")  # relative to the workspace, as GitHub expects
        seen.add((match.group(2)[len("defects/"):], int(match.group(3) or 0), int(match.group(4) or 0), match.group(5)))
    assert seen == expected_findings()
    assert "::warning file=defects/README.md,line=17,col=15,title=not-a-chapter::" in result.stdout
    assert "| errors | 13 |" in summary.read_text()


def test_github_escapes_what_would_break_a_command():
    from tools.core.report_formats import render_github

    diagnostics = Diagnostics()
    diagnostics.error("a,b:c.md", 3, "100% broken\nnext line", col=2, code="missing-file")
    text = render_github(Report(Path("/nowhere"), diagnostics), base=Path("/elsewhere"))
    assert text == "::error file=a%2Cb%3Ac.md,line=3,col=2,title=missing-file::100%25 broken%0Anext line\n"


def test_sarif(defects, tmp_path):
    out = tmp_path / "links.sarif"
    result = run("--book", str(defects), "--format", "sarif", "--output", str(out))
    assert result.exit_code == 1
    assert result.stdout == ""  # written to the file instead
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    run_ = sarif["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted({code for *_, code in expected_findings()})
    places = set()
    for item in run_["results"]:
        assert item["level"] in ("error", "warning", "note")
        assert rules[item["ruleIndex"]]["id"] == item["ruleId"]
        assert item["message"]["text"]
        location = item["locations"][0]["physicalLocation"]
        region = location.get("region", {})
        places.add((location["artifactLocation"]["uri"].split("defects/", 1)[-1], region.get("startLine", 0), region.get("startColumn", 0), item["ruleId"]))
    assert places == expected_findings()


def test_sarif_keeps_a_finding_without_a_line():
    diagnostics = Diagnostics()
    diagnostics.warning("book", 0, "no chapter list found.", code="no-chapter-list")
    sarif = json.loads(render_sarif(Report(Path("/x"), diagnostics)))
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert "region" not in location and location["artifactLocation"]["uri"] == "book"


def test_json_has_the_summary(defects):
    data = json.loads(run("--book", str(defects), "--format", "json").stdout)
    summary = data["summary"]
    assert summary["chapters"] == 3 and summary["errors"] == 13 and summary["warnings"] == 1
    assert summary["links"] >= 20
    finding = next(f for f in data["findings"] if f["code"] == "directory-fragment")
    assert finding["suggestion"] == "Link to 'guide/README.md#install' instead."


def test_exit_status(tmp_book):
    clean = tmp_book({"README.md": "# A\n\nSee [b](b.md#bee).\n", "b.md": "# Bee\n"})
    assert run("--book", str(clean)).exit_code == 0
    warned = tmp_book({"README.md": "# A\n\n[n](notes.md)\n", "notes.md": "# N\n", "chapters-md.txt": "README.md\n"}, name="warned")
    assert run("--book", str(warned)).exit_code == 0
    assert run("--book", str(warned), "--strict").exit_code == 1
    broken = tmp_book({"README.md": "# A\n\n[x](x.md)\n"}, name="broken")
    assert run("--book", str(broken)).exit_code == 1
    assert run("--book", str(broken), "--no-local").exit_code == 0


def test_unusable_book_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run("--book", str(tmp_path / "empty"))
    assert result.exit_code == 2


def test_an_empty_link_is_reported_at_its_parentheses(tmp_book):
    root = tmp_book({"README.md": "# A\n\nAn [empty]() link.\n"})
    assert findings_of(run("--book", str(root), "--format", "json")) == {("README.md", 3, 12, "empty-link")}


def test_the_parse_cache_serves_unchanged_chapters_and_sees_every_edit(defects, tmp_path):
    cache = tmp_path / "cache"
    first = run("--book", str(defects), "--format", "json", cache=cache)
    assert any((cache / "parsed").rglob("*")), "the parsed chapters were not cached"
    second = run("--book", str(defects), "--format", "json", cache=cache)
    assert findings_of(first) == findings_of(second) == expected_findings()
    setup = defects / "guide" / "setup.md"
    setup.write_text(setup.read_text().replace("## Configure", "## Configuring"), encoding="utf-8")
    third = findings_of(run("--book", str(defects), "--format", "json", cache=cache))
    assert ("guide/setup.md", 10, 35, "missing-anchor") not in third  # '#configuring' exists now
    assert ("README.md", 14, 20, "missing-anchor") in third


def test_parallel_parsing_gives_the_same_model(defects, tmp_path, monkeypatch):
    from tools.book import load
    from tools.book.model import PARSE_LOG
    from tools.core.cache import Cache

    monkeypatch.setattr(load, "PARALLEL_BYTES", 1)
    log = tmp_path / "parses.log"
    monkeypatch.setenv(PARSE_LOG, str(log))
    cache = Cache(tmp_path / "parallel")
    book = check_links_module.load_book_for_links(defects, cache=cache, jobs=2)
    parses = [line.split() for line in log.read_text().splitlines()]
    assert sorted(path for _, path in parses) == sorted(chapter.path for chapter in book.chapters)  # each parsed once
    assert len({pid for pid, _ in parses}) == 2  # by this process and a forked worker
    again = Cache(tmp_path / "parallel")
    check_links_module.load_book_for_links(defects, cache=again, jobs=2)
    assert again.hits == len(book.chapters)  # the worker wrote its chapters into the cache after replying
    serial = check_links_module.load_book_for_links(defects)
    assert [(link.source, link.line, link.col, link.raw, link.target) for link in book.links()] == [(link.source, link.line, link.col, link.raw, link.target) for link in serial.links()]


def test_the_command_runs_as_a_real_process(defects):
    done = subprocess.run([sys.executable, "-m", "tools", "check-links", "--book", str(defects), "--format", "json", "--no-cache"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1, done.stderr
    assert findings_of(type("R", (), {"stdout": done.stdout})) == expected_findings()
    assert "Checked 3 chapters" in done.stderr


# --- the shared corpus, with defects planted in a copy --------------------------------------------------------

PLANTS = [  # (chapter, text appended as a new paragraph, code); the destination follows the first `](` or `="`
    ("README.md", "A [planted missing file](./methodology/READNE.md).", "missing-file"),
    ("unix/README.md", "A [planted missing anchor](../python/README.md#no-such-heading).", "missing-anchor"),
    ("python/README.md", "A [planted folder fragment](../pytorch/#profilers).", "directory-fragment"),
    ("pytorch/README.md", "A [planted escape](../../outside/x.md).", "outside-root"),
    ("compiled-programs/README.md", "A [planted side file](../incoming.md).", "not-a-chapter"),
    ("methodology/README.md", "A [planted paste](https://a.example/https://b.example/https://c.example/).", "nested-url"),
    ("build/README.md", "A ![planted image](../python/images/nope.png).", "missing-image"),
    ("methodology/README.md", '<a href="../unix/README.md#No-Such">planted raw HTML</a>', "missing-anchor"),
]


def destination_column(text: str) -> int:
    marks = [text.index(mark) + len(mark) + 1 for mark in ("](", '="') if mark in text]
    return min(marks)


# SKILL.md is linked but not a chapter, and one image has no alt text: real, and the only ones
CORPUS_WARNINGS = {("README.md", 52, 25, "not-a-chapter"), ("pytorch/README.md", 2241, 1, "image-alt")}


@pytest.mark.corpus
def test_corpus_with_planted_defects_reports_exactly_those(corpus_root, tmp_path):
    book = tmp_path / "corpus"
    shutil.copytree(corpus_root, book)
    os.chmod(book, 0o755)
    baseline = findings_of(run("--book", str(book), "--format", "json"))
    assert baseline == CORPUS_WARNINGS
    planted = set()
    for chapter, text, code in PLANTS:
        path = book / chapter
        os.chmod(path, 0o644)
        content = path.read_text(encoding="utf-8")
        if not content.endswith("\n"):
            content += "\n"
        content += "\n" + text + "\n"
        path.write_text(content, encoding="utf-8")
        planted.add((chapter, content.count("\n"), destination_column(text), code))
    listing = book / "chapters-md.txt"
    os.chmod(listing, 0o644)
    lines = listing.read_text().splitlines()
    lines.insert(3, "debugging/gone.md")
    listing.write_text("\n".join(lines) + "\n")
    planted.add(("chapters-md.txt", 4, 0, "missing-chapter"))
    result = run("--book", str(book), "--format", "json")
    assert result.exit_code == 1
    assert findings_of(result) == baseline | planted


@pytest.mark.corpus
def test_corpus_is_clean_of_errors(corpus_root):
    result = run("--book", str(corpus_root), "--format", "json")
    assert result.exit_code == 0
    assert findings_of(result) == CORPUS_WARNINGS


# --- the LinkChecker cross-check ---------------------------------------------------------------------------------

def _linkchecker() -> None:
    from tools.checks.links.linkchecker import find_linkchecker

    try:
        find_linkchecker()
    except Exception:  # noqa: BLE001
        require(False, "LinkChecker is not installed (pip install linkchecker; it is in the dev extra)")


@pytest.mark.xdist_group("linkchecker")
def test_html_cross_check_finds_the_same_defects(defects):
    _linkchecker()
    result = run("--book", str(defects), "--html", "--format", "json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert findings_of(result) == expected_findings()  # LinkChecker found nothing the local check missed
    assert data["summary"]["linkchecker_new"] == 0
    found = {(f["file"], f["line"], f["col"], f["kind"]) for f in data["linkchecker"]}
    # What a site checker can see: broken files and anchors, mapped back to the chapter's line and column.
    assert ("README.md", 13, 18, "broken") in found
    assert ("README.md", 14, 20, "anchor") in found
    assert ("README.md", 14, 62, "anchor") in found
    assert ("README.md", 20, 20, "broken") in found  # an image
    assert ("README.md", 20, 58, "broken") in found  # raw HTML <img src>
    assert ("README.md", 22, 15, "broken") in found  # through a reference definition
    assert ("guide/README.md", 5, 10, "anchor") in found  # raw HTML <a href> with a fragment
    assert ("guide/setup.md", 10, 35, "anchor") in found
    assert all(f["known"] for f in data["linkchecker"])


@pytest.mark.xdist_group("linkchecker")
def test_html_cross_check_reports_what_only_linkchecker_sees(tmp_book, monkeypatch):
    """A finding the local check does not have becomes an error of its own, at the chapter link that made it."""
    _linkchecker()
    from tools.checks.links import linkchecker

    root = tmp_book({"README.md": "# A\n\nSee [b](b.md#bee) and [c](b.md).\n", "b.md": "# Bee\n"})
    real = linkchecker.map_findings

    def with_an_extra(book, site, rows):
        rows = list(rows) + [{"urlname": "b.html", "parentname": (site / "README.html").as_uri(), "valid": "False", "result": "synthetic failure", "warningstring": ""}]
        return real(book, site, rows)

    monkeypatch.setattr(linkchecker, "map_findings", with_an_extra)
    result = run("--book", str(root), "--html", "--format", "json")
    data = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(f["file"], f["line"], f["col"], f["code"]) for f in data["findings"]] == [("README.md", 3, 27, "linkchecker-broken")]
    assert "synthetic failure" in data["findings"][0]["message"]


def test_linkchecker_csv_rows_may_start_with_a_hash():
    from tools.checks.links.linkchecker import parse_csv

    text = ("# created by LinkChecker\nurlname;parentname;base;result;warningstring;infostring;valid;url;line;column;name\n"
            "#nowhere;file:///s/a.html;;;Anchor `nowhere' not found.;;True;file:///s/a.html#nowhere;3;4;x\n# Stopped checking at 2026\n")
    rows = parse_csv(text)
    assert len(rows) == 1 and rows[0]["urlname"] == "#nowhere" and rows[0]["valid"] == "True"


# --- the CI workflow (its checks are in tests/test_adoption.py, with the action it uses) -------------------------------

def test_the_default_cache_dir_is_the_one_make_check_links_keeps():
    assert check_links_module.default_cache_dir().relative_to(Path.cwd()).as_posix() == ".cache/links"
