#!/usr/bin/env python3
"""The PDF at 1x and 10x the upstream book (issues 19 and 37): its peak memory at 10x against 1x, and `tools build
pdf` against one plain WeasyPrint render.

On copies of the real book (`--book`, default the upstream ML Engineering book in ../shared/corpus/ml-engineering;
scripts/benchlib.py's `copy_book`: 1x is one copy, 10x ten, each copy's chapters in a folder of its own, its images
copied along), or with `--generated` on books from scripts/gen_large_book.py, each command a fresh process, the 1x
ones alternating for --repeat rounds:

- plain 1x: one WeasyPrint render of the 1x book's print document (`tools.render.pdf.document.print_document`, saved
  beforehand, outside the timing) to a PDF (left out with `--no-plain`: scripts/bench_baselines.py's `pdf` section
  compares it, and `make bench` runs that);
- pdf 1x:   `python -m tools build pdf --no-cache -j JOBS` of the 1x book (cold: no cache);
- pdf 10x:  the same of the 10x book (--repeat-10x rounds; minutes on two cores).

Wall time and memory are the least over the rounds; memory is the peak PSS of the whole process tree (forked
workers' shared pages counted once; scripts/benchlib.py samples it every 0.5 s). Printed: each run, then the ratios
against the targets (`TARGETS`, issue 37): 10x memory / 1x memory at most 1.3; 1x time / plain at most 0.55; 1x
memory / plain at most 0.5. Only ratios from one session mean anything on a shared machine.

Flags:
  --book DIR       the book to copy (default the upstream book); --generated generates them instead
  --jobs N         worker processes of `tools build pdf` (default 2: the cores of the target machine)
  --repeat N       rounds of the 1x runs, alternating plain and ours (default 3)
  --repeat-10x N   rounds of the 10x build (default 1; 0 leaves it out)
  --scale N        the large book's size, a multiple of the 1x one (default 10; a whole number for copies)
  --no-plain       leave the plain WeasyPrint render out (only the 10x / 1x memory row)
  --keep DIR       keep the books, print document and PDFs there (reused by a later run with the same DIR)

    python scripts/bench_pdf_scale.py --no-plain --repeat 2   # what `make bench` runs
    python scripts/bench_pdf_scale.py --repeat 1 --repeat-10x 0 --keep /tmp/pdf-scale
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from benchlib import REAL_BOOK, Run, copy_book, exit_on_term, least, measure, pdf_pages, plain_pdf_command, save_print_document, short_label, verdict  # noqa: E402
from gen_large_book import generate  # noqa: E402

UPSTREAM_CHAPTERS = 47  # the upstream book; the generator's older interface makes it 47 chapters of 8 sections
SECTIONS = 8
TARGETS = {"memory 10x/1x": 1.3, "time 1x/plain": 0.55, "memory 1x/plain": 0.5}  # issue 37


def make_book(root: Path, scale: float, source: Path | None) -> dict:
    """The book at `scale`: `scale` copies of `source`, or generated when it is None (reused when `root` holds one
    already); its size and label."""
    marker = root.parent / f".{root.name}.bench-scale"
    wanted = f"{scale} {source}"
    if marker.is_file() and marker.read_text() == wanted and root.is_dir():
        files = [root / line for line in (root / "chapters-md.txt").read_text().split() if not line.startswith("#")]
        return {"chapters": len(files), "bytes": sum(p.stat().st_size for p in files if p.is_file()), "label": marker.with_suffix(".label").read_text()}
    shutil.rmtree(root, ignore_errors=True)
    if source is not None:
        label = copy_book(source, root, int(scale))
        files = [root / line for line in (root / "chapters-md.txt").read_text().split() if not line.startswith("#")]
        info = {"chapters": len(files), "bytes": sum(p.stat().st_size for p in files if p.is_file())}
    elif "scale" in inspect.signature(generate).parameters:
        info = generate(root, scale=scale)
        label = f"generated {scale:g}x, {info['chapters']} chapters"
    else:
        info = generate(root, chapters=round(UPSTREAM_CHAPTERS * scale), sections=SECTIONS)
        label = f"generated {scale:g}x, {info['chapters']} chapters"
    marker.write_text(wanted)
    marker.with_suffix(".label").write_text(label)
    return {"chapters": info["chapters"], "bytes": info["bytes"], "label": label}


def build_command(book: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "tools", "build", "pdf", "--book", str(book), "--out", str(out), "--no-cache", "-j", str(jobs)]


def show(name: str, run: Run) -> None:
    print(f"  {name:<9} {run.wall:8.2f} s wall {run.cpu:8.2f} s CPU {run.pss_mib:7.0f} MiB PSS {run.rss_mib:7.0f} MiB RSS"
          f"  (load before {run.load:.1f})", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=REAL_BOOK, help=f"the book to copy (default {REAL_BOOK})")
    parser.add_argument("--generated", action="store_true", help="generate the books (scripts/gen_large_book.py) instead of copying --book")
    parser.add_argument("--no-plain", action="store_true", help="leave the plain WeasyPrint render out")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-10x", dest="repeat_large", type=int, default=1)
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--json", type=Path, help="write the rows of scripts/bench.py's contract here")
    args = parser.parse_args()
    exit_on_term()
    if args.repeat < 1 or (args.no_plain and not args.repeat_large):
        parser.error("--repeat must be at least 1, and --no-plain needs the large book (--repeat-10x at least 1)")
    if not args.generated and args.scale != int(args.scale):
        parser.error("copies of a book come in whole numbers: give --scale a whole number, or --generated")
    benchlib.CORES = args.jobs
    source = None if args.generated else args.book
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.keep or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        small, large = work / "book-1x", work / f"book-{args.scale:g}x"
        info = {"1x": make_book(small, 1.0, source)}
        if args.repeat_large:
            info["large"] = make_book(large, args.scale, source)
        html = work / "print-1x.html"
        if not args.no_plain:
            save_print_document(small, html)
        runs: dict[str, list[Run]] = {"plain": [], "1x": [], "large": []}
        for round_number in range(args.repeat):
            print(f"round {round_number + 1} of {args.repeat}:", file=sys.stderr)
            if not args.no_plain:
                runs["plain"].append(measure(plain_pdf_command(html, small, work / "plain-1x.pdf"), REPO))
                show("plain 1x", runs["plain"][-1])
            runs["1x"].append(measure(build_command(small, work / "pdf-1x.pdf", args.jobs), REPO))
            show("pdf 1x", runs["1x"][-1])
        for _ in range(args.repeat_large):
            runs["large"].append(measure(build_command(large, work / "pdf-large.pdf", args.jobs), REPO))
            show(f"pdf {args.scale:g}x", runs["large"][-1])
        pages = {name: pdf_pages(work / f"{name}.pdf") for name in ("plain-1x", "pdf-1x", "pdf-large") if (work / f"{name}.pdf").exists()}

    import weasyprint

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f},"
          f" {platform.python_implementation()} {platform.python_version()}, WeasyPrint {weasyprint.__version__}")
    for found in info.values():
        print(f"book {found['label']}: {found['bytes'] / 1e6:.2f} MB of markdown")
    print(f"pages: {pages}; least of {args.repeat} alternating fresh processes (1x), {args.repeat_large} ({args.scale:g}x);"
          f" `tools build pdf --no-cache -j {args.jobs}`")
    best = {name: least(found) for name, found in runs.items() if found}
    print(f"{'':<28} {'wall s':>8} {'CPU s':>8} {'PSS MiB':>8}")
    labels = {"plain": "plain WeasyPrint, 1x", "1x": "tools build pdf, 1x", "large": f"tools build pdf, {args.scale:g}x"}
    for name, run in best.items():
        print(f"{labels[name]:<28} {run.wall:8.2f} {run.cpu:8.2f} {run.pss_mib:8.0f}")
    if "large" in best:
        print(f"memory {args.scale:g}x / 1x:   {verdict(best['large'].pss_mib / best['1x'].pss_mib, TARGETS['memory 10x/1x'])}")
        print(f"time {args.scale:g}x / 1x:     {best['large'].wall / best['1x'].wall:.2f}x")
    if "plain" in best:
        print(f"time 1x / plain:     {verdict(best['1x'].wall / best['plain'].wall, TARGETS['time 1x/plain'])}")
        print(f"CPU 1x / plain:      {best['1x'].cpu / best['plain'].cpu:.2f}x (the two-core floor of the time ratio is half of it)")
        print(f"memory 1x / plain:   {verdict(best['1x'].pss_mib / best['plain'].pss_mib, TARGETS['memory 1x/plain'])}")
    if args.json:
        write_rows(args, best, pages, info)


def write_rows(args: argparse.Namespace, best: dict, pages: dict, info: dict) -> None:
    """scripts/bench.py's rows: the 1x PDF's time and memory against the plain render (unless --no-plain), the large
    one's memory against the 1x one's."""
    ours = best["1x"]
    source = "--generated" if args.generated else f"--book {args.book}"
    command = (f"python scripts/bench_pdf_scale.py {source}{' --no-plain' if args.no_plain else ''} --repeat {args.repeat}"
               f" --repeat-10x {args.repeat_large} --scale {args.scale:g}")
    common = {"command": command, "peer_command": "weasyprint.HTML(print document).write_pdf()", "note": f"pages {pages}; -j {args.jobs}"}
    small = {"book": short_label(info["1x"]["label"]), "book_size": info["1x"]["label"]}
    rows = []
    if "plain" in best:
        plain = best["plain"]
        rows += [
            dict(common, **small, job="PDF, cold, time", ours_s=ours.wall, peer="plain WeasyPrint of the same print document, one process", peer_s=plain.wall,
                 ratio=ours.wall / plain.wall, target=TARGETS["time 1x/plain"], met=ours.wall / plain.wall <= TARGETS["time 1x/plain"],
                 ours_cpu_s=ours.cpu, peer_cpu_s=plain.cpu),
            dict(common, **small, job="PDF, cold, peak memory", ours_s=ours.wall, peer="the same WeasyPrint run", peer_s=plain.wall, measure="peak PSS",
                 ours_mib=ours.pss_mib, peer_mib=plain.pss_mib, ratio=ours.pss_mib / plain.pss_mib, target=TARGETS["memory 1x/plain"],
                 met=ours.pss_mib / plain.pss_mib <= TARGETS["memory 1x/plain"]),
        ]
    if "large" in best:
        large = best["large"]
        rows.append(dict(common, job=f"PDF of the book copied {args.scale:g}x, peak memory", book=short_label(info["large"]["label"]),
                         book_size=info["large"]["label"], ours_s=large.wall, peer=f"our {small['book'].rsplit(' ', 1)[-1]} build", peer_s=ours.wall,
                         measure="peak PSS", ours_mib=large.pss_mib, peer_mib=ours.pss_mib, ratio=large.pss_mib / ours.pss_mib,
                         target=TARGETS["memory 10x/1x"], met=large.pss_mib / ours.pss_mib <= TARGETS["memory 10x/1x"]))
    args.json.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
