#!/usr/bin/env python3
"""Build speed at book scale: cold, no-change and one-edit builds of every format, against baselines run here.

For each book (a generated one the size of a real 500-page book, and our own `chapters/`) and each format, as fresh
processes in alternating rounds:

- baseline: MkDocs for the site (installed into .cache/bench-venv), pandoc for the EPUB (markdown chapters to EPUB,
  Debian's pandoc), one plain WeasyPrint render of the same print document for the PDF (saved beforehand);
- cold:      `tools build FORMAT` with an empty cache;
- no change: the same again;
- one edit:  one word of the middle chapter swapped for another of the same length (for the PDF the script checks
  that the page count stayed, the case the target is about).

Every figure is a ratio against its baseline measured in the same run, so the machine's speed cancels out. Wall time
is the least of the rounds; memory is the peak PSS of the whole process tree (scripts/benchlib.py). Targets (issue 7):
site cold at most MkDocs's time, EPUB cold at most 0.5x pandoc's, PDF cold at most 0.6x the plain render with at
most half its peak memory, and a one-edit PDF rebuild at most 0.3x of a cold build.

    python scripts/bench.py                              # both books, every format
    python scripts/bench.py --formats html,epub --repeat 5
    python scripts/bench.py --books large --formats pdf
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from benchlib import Run, least, measure, pdf_pages, plain_pdf_command, save_print_document, swap_a_word, verdict  # noqa: E402
from gen_large_book import generate  # noqa: E402

BENCH_VENV = REPO / ".cache" / "bench-venv"
TARGETS = {"html": 1.0, "epub": 0.5, "pdf": 0.6}  # cold build / baseline, wall time
PDF_MEMORY, PDF_EDIT = 0.5, 0.3
BASELINES = {"html": "MkDocs", "epub": "pandoc", "pdf": "plain WeasyPrint"}

def chapters_of(book: Path) -> list[str]:
    lines = (book / "chapters-md.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def mkdocs() -> Path:
    exe = BENCH_VENV / "bin" / "mkdocs"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(BENCH_VENV / "bin" / "pip"), "install", "-q", "mkdocs"], check=True)
    return exe


def mkdocs_config(book: Path, work: Path) -> Path:
    config = work / "mkdocs.yml"
    nav = "\n".join(f"  - '{chapter}'" for chapter in chapters_of(book))
    config.write_text(f"site_name: bench\ndocs_dir: {book}\nsite_dir: {work / 'mkdocs-site'}\nnav:\n{nav}\n"
                      "markdown_extensions:\n  - tables\n  - fenced_code\n  - codehilite\n  - footnotes\n")
    return config


def baseline_command(fmt: str, book: Path, work: Path) -> tuple[list[str], Path]:
    """The command of the format's baseline, and the folder it runs in."""
    if fmt == "html":
        return [str(mkdocs()), "build", "-q", "-f", str(mkdocs_config(book, work))], work
    if fmt == "epub":
        if not shutil.which("pandoc"):
            raise SystemExit("pandoc is missing: apt-get install pandoc (it is installed for the benchmark only)")
        chapters = chapters_of(book)
        folders = sorted({os.path.dirname(chapter) or "." for chapter in chapters})  # images are relative to their chapter
        return ["pandoc", "-f", "gfm", "--resource-path", ":".join(folders), "--metadata", "title=bench",
                "-o", str(work / "pandoc.epub"), *chapters], book
    html = work / "print.html"
    if not html.exists():
        save_print_document(book, html)
    return plain_pdf_command(html, book, work / "plain.pdf"), REPO


def bench_format(fmt: str, book: Path, work: Path, rounds: int, jobs: int | None, rng: random.Random) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    env = dict(os.environ, BOOK_CACHE_DIR=str(cache))
    out = work / {"html": "site", "pdf": "book.pdf", "epub": "book.epub"}[fmt]
    build = [sys.executable, "-m", "tools", "build", fmt, "--book", str(book), "--out", str(out)] + (["-j", str(jobs)] if jobs else [])
    runs: dict[str, list[Run]] = {name: [] for name in ("baseline", "cold", "no change", "one edit")}
    kept = []
    for number in range(rounds):
        command, cwd = baseline_command(fmt, book, work)
        runs["baseline"].append(measure(command, cwd))
        shutil.rmtree(cache, ignore_errors=True)
        runs["cold"].append(measure(build, REPO, env))
        before = pdf_pages(out) if fmt == "pdf" else 0
        runs["no change"].append(measure(build, REPO, env))
        swap_a_word(book, rng)
        runs["one edit"].append(measure(build, REPO, env))
        kept.append(pdf_pages(out) == before if fmt == "pdf" else True)
        print(f"  {fmt} round {number + 1}: " + ", ".join(f"{name} {found[-1].wall:.2f} s" for name, found in runs.items())
              + f" (load before {runs['baseline'][-1].load:.1f})", file=sys.stderr, flush=True)
    return {"best": {name: least(found) for name, found in runs.items()}, "kept": kept}


def report(book: str, fmt: str, result: dict) -> list[str]:
    best = result["best"]
    base, cold, same, edit = best["baseline"], best["cold"], best["no change"], best["one edit"]
    lines = [f"| {book} | {fmt} | {BASELINES[fmt]} {base.wall:.2f} s, {base.pss_mib:.0f} MiB"
             f" | {cold.wall:.2f} s, {cold.pss_mib:.0f} MiB | {verdict(cold.wall / base.wall, TARGETS[fmt])}"
             f" | {same.wall:.2f} s ({same.wall / cold.wall:.2f}x) | {edit.wall:.2f} s ({edit.wall / cold.wall:.2f}x) |"]
    if fmt == "pdf":
        lines.append(f"|  | pdf memory | | | peak PSS {verdict(cold.pss_mib / base.pss_mib, PDF_MEMORY)} | |"
                     f" one edit {verdict(edit.wall / cold.wall, PDF_EDIT)}, page count kept: {all(result['kept'])} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formats", default="html,epub,pdf", help="comma-separated: html, epub, pdf (default: all three)")
    parser.add_argument("--books", default="large,ours", help="comma-separated: large (generated), ours (chapters/)")
    parser.add_argument("--chapters", type=int, default=64, help="chapters of the generated book (default 64)")
    parser.add_argument("--sections", type=int, default=7, help="sections per generated chapter (default 7: about 1.5 MB, 515 pages)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds per format, the least kept (default: 3, and 2 for the PDF)")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="passed to tools build (default: its own, one per core)")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    books = [b for b in args.books.split(",") if b]
    if not set(formats) <= set(TARGETS) or not set(books) <= {"large", "ours"}:
        parser.error("--formats takes html, epub and pdf; --books takes large and ours")
    rng = random.Random(7)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in books:
            for fmt in formats:
                book = Path(tmp) / f"{name}-{fmt}-book"
                if name == "large":
                    info = generate(book, chapters=args.chapters, sections=args.sections)
                    label = f"generated, {info['chapters']} chapters, {info['bytes'] / 1e6:.2f} MB"
                else:
                    shutil.copytree(REPO / "chapters", book)
                    size = sum(len((book / c).read_bytes()) for c in chapters_of(book))
                    label = f"ours, {len(chapters_of(book))} chapters, {size / 1e6:.2f} MB"
                rounds = args.repeat or (2 if fmt == "pdf" else 3)
                result = bench_format(fmt, book, Path(tmp) / f"{name}-{fmt}-work", rounds, args.jobs, rng)
                lines += report(label, fmt, result)
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, CPython {platform.python_version()},"
          f" load average {os.getloadavg()[0]:.1f}; least of the rounds; memory: peak PSS of the process tree")
    print("| book | format | baseline | tools build, cold | cold / baseline | no change (x cold) | one edit (x cold) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
