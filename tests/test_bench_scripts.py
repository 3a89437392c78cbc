"""The benchmark scripts (scripts/bench.py and the section scripts it runs), as the lead runs them, on tiny books:
the N-times copy of a book that the scale and PDF-memory benchmarks use (issue 37), what `--quick` runs, recording a
run into BENCHMARKS.md, and one round of the PDF comparison with its floors. No timed assertion: the numbers are
only checked for being what they claim to be."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require, run_tools, write_book

SCRIPTS = REPO / "scripts"
REAL_BOOK = REPO.parent / "shared" / "corpus" / "ml-engineering"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4f50000000049454e44ae426082")


@pytest.fixture(scope="module")
def benchlib():
    sys.path.insert(0, str(SCRIPTS))
    import benchlib as module

    return module


def script(*args: str, timeout: int = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """A script of scripts/ run as the lead runs it; a traceback fails the test."""
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **(env or {})))
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    return done


def findings(book: Path, tmp: Path) -> list[tuple[str, int, str, str]]:
    result = run_tools(tmp, "check-links", "--book", str(book), "--format", "json", "--no-cache")
    assert result.returncode in (0, 1), result.stderr
    return sorted((f["file"], f["line"], f["code"], f["severity"]) for f in json.loads(result.stdout)["findings"])


def small_book(root: Path) -> Path:
    """Two parts, a chapter in a folder, an image, links across folders and to headings, and a book.toml."""
    return write_book(root, {
        "book.toml": '[book]\ntitle = "Small"\nchapters = "chapters-md.txt"\n',
        "chapters-md.txt": "# the list\nREADME.md\n\nPart: Hardware\ngpu/README.md\ngpu/memory.md\n\nPart: Software\nsoft.md\n",
        "README.md": "# Small\n\nSee [memory](gpu/memory.md#bandwidth) and [software](soft.md).\n",
        "gpu/README.md": "# GPUs\n\n![a chip](../images/chip.png)\n\nBack to [the start](../README.md).\n",
        "gpu/memory.md": "# Memory\n\n## Bandwidth\n\nSee [GPUs](README.md) and [here](#bandwidth).\n",
        "soft.md": "# Software\n\nSee [the GPUs](gpu/README.md) and [a missing one](gpu/nope.md).\n",
        "images/chip.png": PNG,
    })


def test_copy_book_concatenates_the_lists_and_every_copy_resolves_like_the_original(tmp_path, benchlib):
    source = small_book(tmp_path / "source")
    for path in source.rglob("*"):  # the corpus is read-only: the copy must be writable all the same
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        label = benchlib.copy_book(source, tmp_path / "book", 3)
    finally:
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    book = tmp_path / "book"
    assert label == "source 3x, 12 chapters, 0.00 MB, 3 images", label
    listed = (book / "chapters-md.txt").read_text(encoding="utf-8")
    assert "Part: Hardware (copy 2)\ncopy-2/gpu/README.md\ncopy-2/gpu/memory.md" in listed and "Part: Software (copy 3)\ncopy-3/soft.md" in listed
    assert benchlib.chapters_of(book) == [prefix + path for prefix in ("", "copy-2/", "copy-3/") for path in benchlib.chapters_of(source)]
    assert all((book / prefix / "images" / "chip.png").read_bytes() == PNG for prefix in ("", "copy-2", "copy-3"))
    (book / "copy-2" / "soft.md").write_text("edited\n")  # writable, whatever the source's modes
    (book / "copy-2" / "soft.md").write_text((source / "soft.md").read_text())
    original = findings(source, tmp_path)
    assert [f[2] for f in original] == ["missing-file"]
    assert findings(book, tmp_path) == sorted(original + [(f"{prefix}/{file}", line, code, severity)
                                                          for prefix in ("copy-2", "copy-3") for file, line, code, severity in original])
    if shutil.which("git"):
        log = subprocess.run(["git", "-C", str(book), "log", "--oneline"], capture_output=True, text=True, check=True).stdout
        assert len(log.splitlines()) == 1 and "3 copies of source" in log
        assert subprocess.run(["git", "-C", str(book), "status", "--porcelain"], capture_output=True, text=True).stdout == ""


@pytest.mark.corpus
@pytest.mark.slow
def test_copy_book_of_the_real_book_three_times(tmp_path, benchlib):
    """3 copies of the upstream book: 3 x 47 chapters, every image of each copy there, and check-links finds in each
    copy exactly what it finds in the original (no error: every relative link still resolves)."""
    require(REAL_BOOK.is_dir(), f"the shared corpus is not at {REAL_BOOK}")
    book = tmp_path / "book"
    label = benchlib.copy_book(REAL_BOOK, book, 3, git=False)
    assert label.startswith("ml-engineering 3x, 141 chapters, ")
    assert len(benchlib.chapters_of(book)) == 3 * 47 == 3 * len(benchlib.chapters_of(REAL_BOOK))
    images = sorted(p.relative_to(REAL_BOOK) for p in REAL_BOOK.rglob("*") if p.suffix.lower() in benchlib.IMAGE_SUFFIXES)
    assert len(images) >= 89
    for prefix in (Path("."), Path("copy-2"), Path("copy-3")):
        assert [path for path in images if not (book / prefix / path).is_file()] == []
    original = findings(REAL_BOOK, tmp_path)
    assert [f for f in original if f[3] == "error"] == []
    copied = findings(book, tmp_path)
    # A copy's chapters have the original's titles: the one finding a copy adds, and only to copies' chapters.
    repeated = [f for f in copied if f[2] == "duplicate-title"]
    assert repeated and all(f[0].startswith(("copy-2/", "copy-3/")) for f in repeated), repeated[:3]
    assert not [f for f in original if f[2] == "duplicate-title"]
    copied = [f for f in copied if f[2] != "duplicate-title"]
    assert copied == sorted(original + [(f"{prefix}/{file}", line, code, severity)
                                        for prefix in ("copy-2", "copy-3") for file, line, code, severity in original])


def test_quick_mode_runs_fewer_rounds_and_only_1x_and_10x_for_the_scale(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import bench

    book = tmp_path / "book"
    full = {name: bench.section_runs(name, book) for name in bench.SECTIONS}
    quick = {name: bench.section_runs(name, book, quick=True, extra=["--extra"]) for name in bench.SECTIONS}
    for name, runs in full.items():
        for script_name, _ in runs:
            assert (SCRIPTS / script_name).is_file() and '"--json"' in (SCRIPTS / script_name).read_text()
        assert [words[-1] for _, words in quick[name]] == ["--extra"] * len(runs)  # the user's --args come last, so they win
    real = [name for name, runs in full.items() if any(str(book) in words for _, words in runs)]
    # every section runs on the real book, but translations: its book is ours, the real multilingual one
    assert real == [name for name in bench.SECTIONS if name != "translations"]
    assert quick["translations"][0][1][:2] == ["--rounds", "1"]
    assert [words for _, words in full["links"]][1][:2] == ["--scale", "1"]  # and the generated book beside it
    assert quick["scale"][0][1][-5:-1] == ["--scales", "1,10", "--repeat", "1"]
    assert all(words[words.index("--repeat") + 1] == "1" for name in ("site", "epub", "pdf") for _, words in quick[name][-1:]
               if "--repeat" in words)
    assert bench.section_runs("site", book, repeat=4, books="generated")[0][1][-4:] == ["--repeat", "4", "--books", "generated"]
    done = script(str(SCRIPTS / "bench.py"), "--only", "nothing", "--no-install")
    assert done.returncode == 2 and "unknown section nothing" in done.stderr


def a_run(date: str) -> dict:
    common = {"peer_s": 1.2, "ours_cpu_s": 0.5, "peer_cpu_s": 1.0}
    return {"date": f"{date}T10:00:00+00:00", "machine": "2-core Test CPU", "rows": [
        dict(common, job="site, cold", book="ml-engineering 1x", ours_s=0.7, peer="MkDocs 1.6, same features", ratio=0.58, target=0.5, met=False),
        dict(common, job="site, cold", book="generated 1x", ours_s=0.6, peer="MkDocs 1.6, same features", ratio=0.5, target=0.5, met=True),
        dict(common, job="site, no change", book="ml-engineering 1x", ours_s=0.3, peer="our cold build", ratio=0.4, target=None, met=None),
        dict(common, job="PDF floor, slowest chapter as a fresh process", book="ml-engineering 1x", ours_s=3.0, peer="plain WeasyPrint", peer_s=30.0,
             ratio=0.1, target=None, met=None, floor=True),
        dict(common, job="PDF, cold, both cores busy", book="ml-engineering 1x", ours_s=14.0, peer="plain", ratio=0.93, target=0.9, met=True,
             target_is="at least", ours_text="93% of 14.00 s x 2 cores", ratio_text="93%", target_text="at least 90%", peer_text="the same WeasyPrint run, 50%"),
        {"job": "epub", "status": "failed", "note": "scripts/bench_baselines.py: exit status 1"},
    ]}


def table(path: Path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8")
    body = text.split("## Current results", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in body.splitlines() if line.startswith("|")]
    assert lines[0] == "| job | ours | baseline | ratio | target | date | machine | book |" and lines[1].count("---") == 8
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))] for line in lines[2:]]


def test_record_puts_a_run_into_the_table_and_the_rows_it_replaced_into_the_history(tmp_path):
    benchmarks, history = tmp_path / "BENCHMARKS.md", tmp_path / "history.md"
    shutil.copy(REPO / "BENCHMARKS.md", benchmarks)
    shutil.copy(SCRIPTS / "benchmarks-history.md", history)
    before = table(benchmarks)
    old_site = [cells for cells in before if cells[0] == "site, cold"]
    assert old_site and any(cells[0].startswith("`tools --help`") for cells in before)
    measured = {"site, cold", "PDF floor, slowest chapter as a fresh process", "PDF, cold, both cores busy"}  # the jobs of `a_run`
    replaced = [cells for cells in before if cells[0] in measured]  # whatever the live table holds of them
    (tmp_path / "run.json").write_text(json.dumps(a_run("2031-01-02")))
    done = script(str(SCRIPTS / "bench_record.py"), str(tmp_path / "run.json"), "--benchmarks", str(benchmarks), "--history", str(history))
    assert done.returncode == 0, done.stderr
    assert "recorded 4 rows" in done.stdout and f"{len(replaced)} rows it replaced" in done.stdout, done.stdout
    after = table(benchmarks)
    assert all(len(cells) == 8 for cells in after)
    assert [cells for cells in after if cells[0] == "site, cold"] == [
        ["site, cold", "0.70 s", "MkDocs 1.6, same features, 1.20 s", "0.58x", "at most 0.5x", "2031-01-02", "2-core Test CPU", "ml-engineering 1x"],
        ["site, cold", "0.60 s", "MkDocs 1.6, same features, 1.20 s", "0.50x", "at most 0.5x", "2031-01-02", "2-core Test CPU", "generated 1x"]]
    assert ["PDF floor, slowest chapter as a fresh process", "3.00 s", "plain WeasyPrint, 30.00 s", "0.10x", "none: a floor", "2031-01-02",
            "2-core Test CPU", "ml-engineering 1x"] in after
    assert ["PDF, cold, both cores busy", "93% of 14.00 s x 2 cores", "the same WeasyPrint run, 50%", "93%", "at least 90%", "2031-01-02",
            "2-core Test CPU", "ml-engineering 1x"] in after
    assert not any(cells[0] in ("site, no change", "epub") for cells in after)  # no target, no floor; a failed section
    untouched = [cells for cells in before if cells[0] not in measured]
    assert [cells for cells in after if cells[5] != "2031-01-02"] == untouched  # the jobs the run did not measure stay
    text = history.read_text(encoding="utf-8")
    entry = text.split("## Rows replaced in BENCHMARKS.md", 1)[1].split("\n## ", 1)[0]
    assert "### Replaced on 2031-01-02" in entry and all("| " + " | ".join(cells) + " |" in entry for cells in replaced)
    assert text.index("## Rows replaced in BENCHMARKS.md") < text.index("## Issue 19: the recorded runs")
    assert len(benchmarks.read_bytes()) <= 30 * 1024

    (tmp_path / "run.json").write_text(json.dumps(a_run("2031-02-03")))  # a later run: its entry comes first in the history
    assert script(str(SCRIPTS / "bench_record.py"), str(tmp_path / "run.json"), "--benchmarks", str(benchmarks), "--history", str(history)).returncode == 0
    text = history.read_text(encoding="utf-8")
    assert text.index("### Replaced on 2031-02-03") < text.index("### Replaced on 2031-01-02")
    assert [cells[5] for cells in table(benchmarks) if cells[0] == "site, cold"] == ["2031-02-03", "2031-02-03"]


def test_record_says_what_is_wrong_in_one_sentence(tmp_path):
    (tmp_path / "B.md").write_text("# Benchmarks\n\nNo table here.\n")
    (tmp_path / "run.json").write_text(json.dumps(a_run("2031-01-02")))
    done = script(str(SCRIPTS / "bench_record.py"), str(tmp_path / "run.json"), "--benchmarks", str(tmp_path / "B.md"), "--history", str(tmp_path / "H.md"))
    assert done.returncode == 1 and "no table under '## Current results'" in done.stderr
    (tmp_path / "bad.json").write_text("{")
    done = script(str(SCRIPTS / "bench_record.py"), str(tmp_path / "bad.json"))
    assert done.returncode == 1 and "not a run scripts/bench.py --json wrote" in done.stderr


@pytest.mark.slow
def test_one_round_of_the_pdf_comparison_measures_time_memory_cpu_and_the_floors(tmp_path):
    book = small_book(tmp_path / "tiny")
    (book / "soft.md").write_text("# Software\n\nSee [the GPUs](gpu/README.md).\n\n" + "A paragraph of words. " * 400 + "\n")
    done = script(str(SCRIPTS / "bench_baselines.py"), "--only", "pdf", "--books", "real", "--book", str(book), "--repeat", "1",
                  "--json", str(tmp_path / "rows.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["job"]: row for row in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert set(rows) == {"PDF, cold, time", "PDF, cold, peak memory", "PDF, cold, CPU time", "PDF, cold, both cores busy", "PDF, one word edited",
                         "PDF floor, chapter at a time on every core", "PDF floor, slowest chapter as a fresh process",
                         "PDF floor, sum of the chapters' layouts"}
    assert {row["book"] for row in rows.values()} == {"tiny 1x"}
    time, cpu, busy = rows["PDF, cold, time"], rows["PDF, cold, CPU time"], rows["PDF, cold, both cores busy"]
    assert time["target"] == 0.55 and rows["PDF, cold, peak memory"]["target"] == 0.5 and cpu["target"] == 1.05 and busy["target"] == 0.9
    assert cpu["ratio"] == pytest.approx(time["ours_cpu_s"] / time["peer_cpu_s"], rel=1e-3)
    cores = os.cpu_count() or 1
    assert busy["ratio"] == pytest.approx(time["ours_cpu_s"] / (time["ours_s"] * cores), rel=1e-2) and 0 < busy["ratio"] <= 1.01
    assert busy["target_is"] == "at least" and busy["met"] == (busy["ratio"] >= 0.9)
    slowest, total = rows["PDF floor, slowest chapter as a fresh process"], rows["PDF floor, sum of the chapters' layouts"]
    floor = rows["PDF floor, chapter at a time on every core"]
    assert all(row["floor"] and row["target"] is None for row in (slowest, total, floor))
    assert floor["ours_s"] == pytest.approx(max(slowest["ours_s"], total["ours_s"] / cores), rel=1e-3)
    assert time["floor_ratio"] == pytest.approx(floor["ratio"], rel=1e-3)
    assert slowest["note"].split(":")[0] in ("README.md", "gpu/README.md", "gpu/memory.md", "soft.md")


@pytest.mark.slow
def test_bench_runs_the_scale_and_pdf_memory_sections_on_copies_and_writes_the_run(tmp_path):
    book = small_book(tmp_path / "tiny")
    (book / "gpu" / "nope.md").write_text("# Nope\n")  # the scale section times builds that must succeed
    plot = tmp_path / "scale.svg"
    done = script(str(SCRIPTS / "bench.py"), "--no-install", "--quick", "--only", "scale,pdf-scale", "--book", str(book),
                  "--args", f"scale=--scales 1,2 --no-search --plot {plot}", "--args", "pdf-scale=--scale 2", "--json", str(tmp_path / "run.json"))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["date"] and run["machine"].startswith(f"{os.cpu_count()}-core") and set(run["seconds"]) == {"scale", "pdf-scale"} and run["quick"]
    rows = {(row["job"], row["book"]): row for row in run["rows"]}
    assert not [row for row in run["rows"] if row.get("status")], run["rows"]
    assert set(rows) == {("site at 2x the book", "tiny 2x"), ("epub at 2x the book", "tiny 2x"), ("check-links cold at 2x the book", "tiny 2x"),
                         ("check-links warm at 2x the book", "tiny 2x"), ("PDF of the book copied 2x, peak memory", "tiny 2x")}
    memory = rows[("PDF of the book copied 2x, peak memory", "tiny 2x")]
    assert memory["target"] == 1.3 and memory["ratio"] == pytest.approx(memory["ours_mib"] / memory["peer_mib"], rel=1e-3)
    assert rows[("site at 2x the book", "tiny 2x")]["target"] == pytest.approx(2.2) and plot.is_file()
    assert re.search(r"\b\d of 5 targets met; 0 sections not run or failed", done.stdout), done.stdout
