#!/usr/bin/env python3
"""Time `tools build pdf` and `tools build epub` on a generated book against plain conversions of the same content.

- PDF: `tools build pdf` (load, check every link, render, lay out, write) against one plain WeasyPrint render of
  the very print document it lays out (saved beforehand, outside the timing). Target: at most 0.55x (issue 37).
- EPUB: `tools build epub` against pandoc's HTML-to-EPUB conversion of the same chapters (each chapter converted
  to bare HTML with markdown-it beforehand, outside the timing). pandoc is optional: `apt-get install pandoc`.

Every run is a fresh process (so all pay interpreter start-up); wall time, CPU time and peak resident memory are
read for that child with os.wait4 (scripts/benchlib.py). With --repeat N the commands alternate for N rounds and the least of each
measure is kept. Other jobs on the machine make wall times noisy: compare CPU times too, and only ratios taken in one session.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchlib import Run, least, measure, pdf_pages, plain_pdf_command, save_print_document  # noqa: E402
from gen_large_book import generate  # noqa: E402

BARE_HTML = """
import sys
from pathlib import Path
from markdown_it import MarkdownIt
md = MarkdownIt("commonmark").enable("table")
root = Path(sys.argv[1])
for line in (root / "chapters-md.txt").read_text().split():
    (root / (line[:-3] + ".bench.html")).write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + line + "</title></head><body>"
        + md.render((root / line).read_text()) + "</body></html>", encoding="utf-8")
"""


def alternate(commands: dict[str, tuple[list[str], Path | None]], repeat: int) -> dict[str, Run]:
    """Run the commands in turn, `repeat` rounds, so that a burst of load on the machine hits all of them alike."""
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (command, cwd) in commands.items():
            runs[name].append(measure(command, cwd))
    return {name: least(found) for name, found in runs.items()}


def row(label: str, run: Run) -> str:
    return f"{label:<40} {run.wall:8.2f} s wall {run.cpu:8.2f} s CPU {run.largest_mib:8.0f} MiB peak"


def ratio(label: str, ours: Run, base: Run, target: str = "") -> str:
    text = f"{label:<40} wall {ours.wall / base.wall:5.2f}x   CPU {ours.cpu / base.cpu:5.2f}x   peak memory {ours.largest_mib / base.largest_mib:5.2f}x"
    return text + (f"   (target: {target})" if target else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=24)
    parser.add_argument("--sections", type=int, default=6, help="sections per chapter (the default book is smaller than bench_build's, to keep the PDF runs to a minute or two each)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the book and the outputs in this folder")
    args = parser.parse_args()
    python = sys.executable
    tools = [python, "-m", "tools"]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        book = work / "book"
        if book.exists():
            shutil.rmtree(book)
        info = generate(book, chapters=args.chapters, sections=args.sections)
        out = work / "out"
        out.mkdir(exist_ok=True)
        env_repo = str(HERE.parent)

        # PDF: the print document is saved first (untimed), then laid out by a plain WeasyPrint call.
        html = out / "print.html"
        save_print_document(book, html)
        pdf = alternate({
            "ours": ([*tools, "build", "pdf", "--no-cache", "--book", str(book), "--out", str(out / "ours.pdf")], env_repo),
            "plain": (plain_pdf_command(html, book, out / "plain.pdf"), None),
        }, args.repeat)
        pdf_ours, pdf_plain = pdf["ours"], pdf["plain"]
        pages = pdf_pages(out / "ours.pdf"), pdf_pages(out / "plain.pdf")

        # EPUB: bare HTML of each chapter (untimed), beside its markdown so that images resolve, then pandoc.
        epub_commands = {"ours": ([*tools, "build", "epub", "--no-cache", "--book", str(book), "--out", str(out / "ours.epub")], env_repo)}
        pandoc = shutil.which("pandoc")
        if pandoc:
            subprocess.run([python, "-c", BARE_HTML, str(book)], check=True)
            chapters = [line[:-3] + ".bench.html" for line in (book / "chapters-md.txt").read_text().split()]
            folders = sorted({str(Path(c).parent) for c in chapters})
            epub_commands["pandoc"] = ([pandoc, "-f", "html", "-t", "epub3", "--metadata", "title=Benchmark", "--resource-path", ":".join(folders),
                                        "-o", str(out / "pandoc.epub"), *chapters], book)
            version = subprocess.run([pandoc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        epub = alternate(epub_commands, args.repeat)
        epub_ours, epub_pandoc = epub["ours"], epub.get("pandoc")

    import weasyprint

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, WeasyPrint {weasyprint.__version__}")
    print(f"book: {info['chapters']} chapters x {args.sections} sections, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links; PDF {pages[0]} pages (plain render {pages[1]})")
    print(f"least of {args.repeat} alternating fresh process(es) each (wall, CPU and peak taken separately)")
    print(row("tools build pdf", pdf_ours))
    print(row("plain WeasyPrint render", pdf_plain))
    print(ratio("PDF: tools / plain WeasyPrint", pdf_ours, pdf_plain, "at most 0.55x"))
    print(row("tools build epub", epub_ours))
    if epub_pandoc is not None:
        print(row(f"pandoc html -> epub3 ({version})", epub_pandoc))
        print(ratio("EPUB: tools / pandoc", epub_ours, epub_pandoc))
    else:
        print("pandoc is not installed: no EPUB baseline (apt-get install pandoc)")


if __name__ == "__main__":
    main()
