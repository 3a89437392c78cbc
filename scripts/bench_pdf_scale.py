#!/usr/bin/env python3
"""The PDF at 1x and 10x the upstream book (issue 19): `tools build pdf` against one plain WeasyPrint render.

On books from scripts/gen_large_book.py (1x: the upstream ML Engineering book's size, 47 chapters; 10x: ten times
it), each command a fresh process, the 1x ones alternating for --repeat rounds:

- plain 1x: one WeasyPrint render of the 1x book's print document (`tools.render.pdf.document.print_document`, saved
  beforehand, outside the timing) to a PDF, as scripts/bench_pdf_parallel.py does it;
- pdf 1x:   `python -m tools build pdf --no-cache -j JOBS` of the 1x book (cold: no cache);
- pdf 10x:  the same of the 10x book (--repeat-10x rounds; minutes on two cores).

Wall time and memory are the least over the rounds; memory is the peak PSS of the whole process tree (forked
workers' shared pages counted once; scripts/benchlib.py samples it every 0.5 s). Printed: each run, then the ratios
against the targets: 10x memory / 1x memory at most 1.3; 1x time / plain at most 0.52; 1x memory / plain at most
0.4. Only ratios from one session mean anything on a shared machine.

Flags:
  --jobs N         worker processes of `tools build pdf` (default 2: the cores of the target machine)
  --repeat N       rounds of the 1x runs, alternating plain and ours (default 3)
  --repeat-10x N   rounds of the 10x build (default 1; 0 leaves it out)
  --scale N        the large book's size, a multiple of the 1x one (default 10)
  --keep DIR       keep the books, print document and PDFs there (reused by a later run with the same DIR)

    python scripts/bench_pdf_scale.py                      # what `make bench` runs
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
from benchlib import Run, least, measure, pdf_pages, plain_pdf_command, save_print_document, verdict  # noqa: E402
from gen_large_book import generate  # noqa: E402

UPSTREAM_CHAPTERS = 47  # the upstream book; the generator's older interface makes it 47 chapters of 8 sections
SECTIONS = 8
TARGETS = {"memory 10x/1x": 1.3, "time 1x/plain": 0.52, "memory 1x/plain": 0.4}


def make_book(root: Path, scale: float) -> dict:
    """The generated book at `scale` (reused when `root` holds one already)."""
    marker = root / ".bench-scale"
    if marker.is_file() and marker.read_text() == str(scale):
        return {"chapters": sum(1 for _ in root.rglob("*.md")), "bytes": sum(p.stat().st_size for p in root.rglob("*.md"))}
    shutil.rmtree(root, ignore_errors=True)
    if "scale" in inspect.signature(generate).parameters:
        info = generate(root, scale=scale)
    else:
        info = generate(root, chapters=round(UPSTREAM_CHAPTERS * scale), sections=SECTIONS)
    marker.write_text(str(scale))
    return info


def build_command(book: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "tools", "build", "pdf", "--book", str(book), "--out", str(out), "--no-cache", "-j", str(jobs)]


def show(name: str, run: Run) -> None:
    print(f"  {name:<9} {run.wall:8.2f} s wall {run.cpu:8.2f} s CPU {run.pss_mib:7.0f} MiB PSS {run.rss_mib:7.0f} MiB RSS"
          f"  (load before {run.load:.1f})", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-10x", dest="repeat_large", type=int, default=1)
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--json", type=Path, help="write the rows of scripts/bench.py's contract here")
    args = parser.parse_args()
    benchlib.CORES = args.jobs
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.keep or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        small, large = work / "book-1x", work / f"book-{args.scale:g}x"
        info = {"1x": make_book(small, 1.0)}
        if args.repeat_large:
            info["large"] = make_book(large, args.scale)
        html = work / "print-1x.html"
        save_print_document(small, html)
        runs: dict[str, list[Run]] = {"plain": [], "1x": [], "large": []}
        for round_number in range(args.repeat):
            print(f"round {round_number + 1} of {args.repeat}:", file=sys.stderr)
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
    for name, found in info.items():
        label = "1x" if name == "1x" else f"{args.scale:g}x"
        print(f"book {label}: {found['chapters']} chapters, {found['bytes'] / 1e6:.2f} MB of markdown")
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
    print(f"time 1x / plain:     {verdict(best['1x'].wall / best['plain'].wall, TARGETS['time 1x/plain'])}")
    print(f"CPU 1x / plain:      {best['1x'].cpu / best['plain'].cpu:.2f}x (the two-core floor of the time ratio is half of it)")
    print(f"memory 1x / plain:   {verdict(best['1x'].pss_mib / best['plain'].pss_mib, TARGETS['memory 1x/plain'])}")
    if args.json:
        write_rows(args, best, pages)


def write_rows(args: argparse.Namespace, best: dict, pages: dict) -> None:
    """scripts/bench.py's rows: the 1x PDF's time and memory against the plain render, the large one's memory
    against the 1x one's."""
    ours, plain = best["1x"], best["plain"]
    command = f"python scripts/bench_pdf_scale.py --repeat {args.repeat} --repeat-10x {args.repeat_large} --scale {args.scale:g}"
    common = {"command": command, "peer_command": "weasyprint.HTML(print document).write_pdf()", "note": f"pages {pages}; -j {args.jobs}"}
    rows = [
        dict(common, job="PDF, 1x, cold: time", ours_s=ours.wall, peer="plain WeasyPrint", peer_s=plain.wall, ratio=ours.wall / plain.wall,
             target=TARGETS["time 1x/plain"], met=ours.wall / plain.wall <= TARGETS["time 1x/plain"], ours_cpu_s=ours.cpu, peer_cpu_s=plain.cpu),
        dict(common, job="PDF, 1x, cold: peak memory", ours_s=ours.wall, peer="plain WeasyPrint", peer_s=plain.wall, measure="peak PSS",
             ours_mib=ours.pss_mib, peer_mib=plain.pss_mib, ratio=ours.pss_mib / plain.pss_mib, target=TARGETS["memory 1x/plain"],
             met=ours.pss_mib / plain.pss_mib <= TARGETS["memory 1x/plain"]),
    ]
    if "large" in best:
        large = best["large"]
        rows.append(dict(common, job=f"PDF, {args.scale:g}x, cold: peak memory", ours_s=large.wall, peer="tools build pdf, 1x", peer_s=ours.wall,
                         measure="peak PSS", ours_mib=large.pss_mib, peer_mib=ours.pss_mib, ratio=large.pss_mib / ours.pss_mib,
                         target=TARGETS["memory 10x/1x"], met=large.pss_mib / ours.pss_mib <= TARGETS["memory 10x/1x"]))
    args.json.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
