"""The benchmarks' book generator (scripts/gen_large_book.py), run as a user runs it: its size, its planted defects."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, run_tools

GENERATOR = REPO / "scripts" / "gen_large_book.py"
CODES = {"missing-file": "missing-file", "wrong-case-file": "missing-file", "missing-anchor-other": "missing-anchor",
         "missing-anchor-same": "missing-anchor", "wrong-case-anchor": "missing-anchor", "missing-image": "missing-image",
         "outside-root": "outside-root", "folder-fragment": "directory-fragment"}


def generate(out: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, str(GENERATOR), str(out), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_scale_one_is_the_upstream_books_size(tmp_path):
    line = generate(tmp_path / "book", "--scale", "1")
    found = re.fullmatch(r"(\d+) chapters, ([\d.]+) MB of markdown, (\d+) links, (\d+) images, 0 planted defects -> .+\n", line)
    assert found, line
    chapters, megabytes, links, images = int(found[1]), float(found[2]), int(found[3]), int(found[4])
    assert chapters == 47 and 1.1 <= megabytes <= 1.3 and 1450 <= links <= 1750 and images >= 47
    listed = (tmp_path / "book" / "chapters-md.txt").read_text().split()
    assert len(listed) == 47 and listed[0] == "README.md" and any(p.count("/") == 2 and p.endswith("README.md") for p in listed)
    text = "\n".join((tmp_path / "book" / p).read_text() for p in listed)
    for needle in ("\n## ", "\n### ", "\n#### ", "\n- ", "\n| --- |", "```python", "```bash", "> [!", "```math", "](https://", "![", ".png)", ".svg)"):
        assert needle in text, needle
    png = next((tmp_path / "book").rglob("*.png")).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")


def test_check_links_finds_exactly_the_planted_defects(tmp_path):
    book, manifest = tmp_path / "book", tmp_path / "defects.json"
    line = generate(book, "--scale", "0.1", "--broken", "1", "--seed", "3", "--defects", str(manifest))
    assert "8 planted defects" in line, line
    planted = json.loads(manifest.read_text())
    assert sorted(d["kind"] for d in planted) == sorted(CODES)
    result = run_tools(tmp_path, "check-links", "--book", str(book), "--format", "json", "--no-cache")
    assert result.returncode == 1, result.stderr
    found = {(f["file"], f["line"], f["col"], f["code"]) for f in json.loads(result.stdout)["findings"]}
    assert found == {(d["file"], d["line"], d["col"], CODES[d["kind"]]) for d in planted}


def test_same_seed_same_book_and_the_unplanted_book_builds_without_a_warning(tmp_path):
    generate(tmp_path / "a", "--scale", "0.1", "--seed", "5")
    generate(tmp_path / "b", "--scale", "0.1", "--seed", "5")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in files)
    result = run_tools(tmp_path, "build", "html", "--book", str(tmp_path / "a"), "--out", str(tmp_path / "site"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b0 errors, 0 warnings\b", result.stdout) and "warning:" not in result.stderr, result.stdout + result.stderr
    assert list((tmp_path / "site").rglob("*.png")) and list((tmp_path / "site").rglob("*.svg"))


def test_the_parse_floor_parses_every_chapter_on_every_core_and_only_that(tmp_path, monkeypatch):
    """scripts/parse_floor.py (the cold check-links' floor in scripts/bench_lychee.py): it exits 0 on a generated
    book with one and two processes, fails when a listed chapter cannot be read, and splits the chapters into shares
    of about equal size that hold each chapter once."""
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    from parse_floor import shares

    floor = REPO / "scripts" / "parse_floor.py"
    book = tmp_path / "book"
    generate(book, "--scale", "0.2")
    for jobs in ("1", "2"):
        done = subprocess.run([sys.executable, str(floor), str(book), "--jobs", jobs], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    (book / "chapters-md.txt").write_text((book / "chapters-md.txt").read_text() + "gone.md\n")
    assert subprocess.run([sys.executable, str(floor), str(book)], capture_output=True, text=True, timeout=120).returncode != 0
    sizes = [50, 10, 40, 10, 30, 20, 5]
    split = shares(sizes, 2)
    assert sorted(i for part in split for i in part) == list(range(len(sizes)))
    totals = [sum(sizes[i] for i in part) for part in split]
    assert max(totals) - min(totals) <= max(sizes)
