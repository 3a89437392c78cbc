#!/usr/bin/env python3
"""Time the parallel PDF route (tools/render/pdf/) against one plain WeasyPrint render of the same book.

On a generated book (scripts/gen_large_book.py), each as a fresh process, alternating for --repeat rounds:

- plain:     one WeasyPrint render of the print document (`tools.render.pdf.document.print_document`, saved beforehand,
             outside the timing) to a PDF: the baseline of issue 7;
- single:    load + check + `build_whole_pdf` (the fall-back: one render of the whole book);
- cold:      load + check + `build_pdf`, with an empty cache;
- no change: the same again, with the cache the cold build filled;
- one edit:  one chapter in the middle edited (one word swapped for another of the same length, so that its page
             count stays; the script checks that it did), with the cache of the build before.

Wall time is the least of the rounds; CPU time is the process tree's (user + system of the process and of the
workers it waited for, as `wait4` reports them on Linux). Memory is sampled over the whole process tree (psutil;
RSS every 50 ms, PSS every 0.5 s, as reading PSS costs the sampler real CPU time): the peak of the summed resident set
(RSS; pages shared by forked workers count once per process, so this overstates) and of the summed proportional set
(PSS; shared pages split between the processes that share them), and the largest single process. The targets:
cold wall time at most 0.55x the plain render, peak memory at most half of it (issue 37), one edit at most 0.3x of a cold build.
Other jobs on the machine make wall times noisy: the load average before each run is printed, --repeat helps, and
an "idle" column estimates each run's wall time alone on the machine from its processes' CPU times (the main
process's own work plus its busiest worker, or the total CPU time over the cores, whichever is longer; for one
process, its CPU time).

    python scripts/bench_pdf_parallel.py                    # 64 chapters x 7 sections (about a minute plain)
    python scripts/bench_pdf_parallel.py --chapters 24 --sections 6 --repeat 1
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from benchlib import Run, least, measure, pdf_pages, plain_pdf_command, save_print_document, swap_a_word, verdict  # noqa: E402
from gen_large_book import generate  # noqa: E402

BUILD = """
import sys
from pathlib import Path
from tools.book.load import load_book
from tools.core.cache import Cache
from tools.checks.links.local import check_book
route, root, out, cache_dir, jobs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
cache = Cache(Path(cache_dir)) if cache_dir != "-" else Cache(enabled=False)
book = load_book(root, cache=cache)  # as `tools build pdf` loads it
diagnostics = check_book(book)
if route == "single":
    from tools.render.pdf.whole import build_whole_pdf
    pages = build_whole_pdf(book, out, diagnostics)
else:
    from tools.render.pdf import build_pdf
    pages = build_pdf(book, out, diagnostics, cache=cache, jobs=jobs)
print(pages)
"""


def run_code(python: str, code: str, args: list[str]) -> Run:
    return measure([python, "-c", code, *args], REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=64)
    parser.add_argument("--sections", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes of the parallel route (default 2, the cores of the target machine)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the least of each measure is kept")
    parser.add_argument("--keep", type=Path, help="keep the book, caches and PDFs in this folder")
    args = parser.parse_args()
    benchlib.CORES = args.jobs
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.keep or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        book = work / "book"
        if book.exists():
            shutil.rmtree(book)
        info = generate(book, chapters=args.chapters, sections=args.sections)
        html = work / "print.html"
        save_print_document(book, html)
        rng = random.Random(7)
        runs: dict[str, list[Run]] = {name: [] for name in ("plain", "single", "cold", "no change", "one edit")}
        pages: dict[str, int] = {}
        edits_kept_pages = []
        for round_number in range(args.repeat):
            cache = work / f"cache-{round_number}"
            shutil.rmtree(cache, ignore_errors=True)
            runs["plain"].append(measure(plain_pdf_command(html, book, work / "plain.pdf"), REPO))
            runs["single"].append(run_code(python, BUILD, ["single", str(book), str(work / "single.pdf"), "-", "1"]))
            parallel = ["parallel", str(book), str(work / "parallel.pdf"), str(cache), str(args.jobs)]
            runs["cold"].append(run_code(python, BUILD, parallel))
            before = pdf_pages(work / "parallel.pdf")
            runs["no change"].append(run_code(python, BUILD, parallel))
            swap_a_word(book, rng)
            runs["one edit"].append(run_code(python, BUILD, parallel))
            edits_kept_pages.append(pdf_pages(work / "parallel.pdf") == before)
            for name in runs:
                print(f"round {round_number + 1}: {name:<10} {runs[name][-1].wall:7.2f} s wall, {runs[name][-1].cpu:7.2f} s CPU,"
                      f" {runs[name][-1].pss_mib:6.0f} MiB PSS (load before {runs[name][-1].load:.1f})", file=sys.stderr)
            shutil.rmtree(cache, ignore_errors=True)
        pages = {name: pdf_pages(work / f"{name}.pdf") for name in ("plain", "single", "parallel")}
        sizes = {name: (work / f"{name}.pdf").stat().st_size for name in ("plain", "single", "parallel")}
        best = {name: least(found) for name, found in runs.items()}

    import weasyprint

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, WeasyPrint {weasyprint.__version__}")
    print(f"book: {info['chapters']} chapters x {args.sections} sections, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links;"
          f" PDF pages: plain {pages['plain']}, single {pages['single']}, parallel {pages['parallel']};"
          f" sizes: plain {sizes['plain'] / 1e6:.2f} MB, parallel {sizes['parallel'] / 1e6:.2f} MB")
    print(f"least of {args.repeat} alternating fresh process(es) each; parallel route with {args.jobs} workers;"
          f" the one-edit rounds kept the page count: {edits_kept_pages}")
    print(f"{'':<26} {'wall s':>8} {'idle s':>8} {'CPU s':>8} {'RSS MiB':>8} {'PSS MiB':>8} {'largest':>8}  (memory: tree peaks)")
    labels = {"plain": "plain WeasyPrint render", "single": "build_whole_pdf (one render)", "cold": "parallel, cold",
              "no change": "parallel, no change", "one edit": "parallel, one edit"}
    for name, run in best.items():
        print(f"{labels[name]:<26} {run.wall:8.2f} {run.idle:8.2f} {run.cpu:8.2f} {run.rss_mib:8.0f} {run.pss_mib:8.0f} {run.largest_mib:8.0f}")
    plain, cold = best["plain"], best["cold"]

    print(f"cold / plain, wall:          {verdict(cold.wall / plain.wall, 0.55)}")
    print(f"cold / plain, idle estimate: {verdict(cold.idle / plain.idle, 0.55)}")
    print(f"cold / plain, peak PSS:      {verdict(cold.pss_mib / plain.pss_mib, 0.5)}")
    print(f"cold / plain, peak RSS sum:  {cold.rss_mib / plain.rss_mib:.2f}x (shared pages counted once per process)")
    print(f"cold / plain, largest proc.: {cold.largest_mib / plain.largest_mib:.2f}x")
    print(f"cold / plain, CPU:           {cold.cpu / plain.cpu:.2f}x")
    print(f"one edit / cold, wall:       {verdict(best['one edit'].wall / cold.wall, 0.3)}")
    print(f"one edit / cold, idle est.:  {verdict(best['one edit'].idle / cold.idle, 0.3)}")
    print(f"no change / cold, wall:      {best['no change'].wall / cold.wall:.2f}x")
    print(f"build_whole_pdf / plain, wall:     {best['single'].wall / plain.wall:.2f}x")


if __name__ == "__main__":
    main()
