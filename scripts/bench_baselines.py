#!/usr/bin/env python3
"""The site, the EPUB and the PDF against the programs a reader would otherwise use, on the same book.

The books (`--books`): `real`, a copy of the upstream ML Engineering book (`--book`, default
../shared/corpus/ml-engineering beside the repository: 47 chapters, 1.2 MB of markdown, 89 images; committed to a git
repository of its own, as it is upstream), the primary rows; `generated`, a book of the same size from
scripts/gen_large_book.py (`--scale`), a second row for the site and the EPUB; `ours`, this repository's
`chapters/`. Each command runs as a fresh process in alternating rounds, and the median of each is kept:

- site:  MkDocs 1.6 and Zensical (both from one `mkdocs.yml` with the chapter list as its `nav`, the book as its
         `docs_dir`, tables, fenced code, Pygments highlighting and footnotes; Zensical with `--clean`, so cold),
         then `tools build html` with an empty cache (cold), again (no change) and after one word of the middle
         chapter is swapped for another of the same length (one edit);
- epub:  pandoc (GitHub markdown to EPUB, the chapters in order, images found beside each chapter), then
         `tools build epub` with an empty cache;
- pdf:   one plain WeasyPrint render of the print document `tools build pdf` lays out (saved beforehand, outside the
         timing), then `tools build pdf` with an empty cache: wall time, peak memory (PSS of the process tree), CPU
         time (user + system of the tree) and the share of the wall time every core is busy (CPU time / (wall time x
         cores)); then one edit, whose page count must stay (issue 7's target of 0.3x a cold build). In the same
         rounds, the floors of a route that lays the book out a chapter at a time (scripts/pdf_floor.py, on each
         chapter's own print document, saved beforehand): every chapter laid out and written in turn in one process
         (the sum), and the slowest one alone as a fresh process; on C cores no such route beats
         max(slowest chapter, sum / C).

Each comparison is a row of the `--json` contract of scripts/bench.py (job, book, ours, peer, ratio, target, met);
the targets are issue 37's (`TARGETS`). The baselines come from `$BENCH_VENV` (default `.cache/bench-venv`, made by
scripts/bench.py) or the PATH; pandoc from Debian.

    python scripts/bench_baselines.py --only site,epub --repeat 5 --json out.json
    python scripts/bench_baselines.py --only pdf --repeat 1 --books real --book ../shared/corpus/ml-engineering
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from benchlib import (  # noqa: E402
    REAL_BOOK,
    Run,
    baseline_program,
    chapters_of,
    copy_book,
    exit_on_term,
    generate_book,
    measure,
    median,
    pdf_pages,
    plain_pdf_command,
    row,
    save_chapter_documents,
    save_print_document,
    short_label,
    swap_a_word,
    write_rows,
)

SECTIONS = ("site", "epub", "pdf")
BOOKS = ("real", "generated", "ours")
DEFAULT_BOOKS = {"site": "real,generated", "epub": "real,generated", "pdf": "real"}  # the generated book where it is cheap
# issue 37 (the edit: issue 7): at most these ratios of ours over the baseline; "pdf busy" is at least this share
TARGETS = {"site": 0.5, "epub": 0.25, "pdf": 0.55, "pdf memory": 0.5, "pdf cpu": 1.05, "pdf busy": 0.9, "pdf edit": 0.3}
CORES = os.cpu_count() or 1
RNG = random.Random(7)


def site_config(book: Path, work: Path) -> Path:
    """One mkdocs.yml for MkDocs and Zensical: Zensical wants `docs_dir` inside the config's folder, so the config
    sits beside the book (`work` holds both)."""
    config = work / "mkdocs.yml"
    nav = "\n".join(f"  - '{chapter}'" for chapter in chapters_of(book))
    config.write_text(f"site_name: bench\ndocs_dir: {book.name}\nsite_dir: baseline-site\nnav:\n{nav}\n"
                      "markdown_extensions:\n  - tables\n  - fenced_code\n  - codehilite\n  - footnotes\n")
    return config


def pandoc_command(book: Path, out: Path) -> list[str]:
    chapters = chapters_of(book)
    folders = sorted({os.path.dirname(chapter) or "." for chapter in chapters})  # images are relative to their chapter
    return [baseline_program("pandoc"), "-f", "gfm", "--resource-path", ":".join(folders), "--metadata", "title=bench",
            "-o", str(out), *chapters]


def ours(fmt: str, book: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "tools", "build", fmt, "--book", str(book), "--out", str(out)]


def shown(command: list[str], book: Path, work: Path) -> str:
    """A command as it is written in BENCHMARKS.md: this Python as `python`, the book as BOOK, the work folder as WORK."""
    def placed(word: str) -> str:
        if word == str(book) or word.startswith(f"{book}/"):
            return "BOOK" + word[len(str(book)):]
        return word.replace(str(work), "WORK")

    words = [placed(word) for word in command[1:]]
    words.insert(0, "python" if command[0] == sys.executable else Path(command[0]).name)
    text = " ".join(words)
    return text if len(text) < 160 else text[:150] + " ..."


def cold(command: list[str], cache: Path, out: Path) -> Run:
    """Our build with an empty cache and no previous output: a first build."""
    shutil.rmtree(cache, ignore_errors=True)
    if out.is_dir():
        shutil.rmtree(out)
    out.unlink(missing_ok=True)
    return measure(command, REPO, dict(os.environ, BOOK_CACHE_DIR=str(cache)))


def bench_site(book: Path, work: Path, rounds: int, label: str) -> list[dict]:
    config = site_config(book, work)
    mkdocs = [baseline_program("mkdocs"), "build", "-q", "-f", str(config)]
    try:
        zensical: list[str] | None = [baseline_program("zensical"), "build", "--clean", "-f", str(config)]
    except SystemExit as missing:  # the MkDocs comparison, the one with a target, goes on without it
        zensical, zensical_missing = None, str(missing)
    build, cache = ours("html", book, work / "site"), work / "cache"
    runs: dict[str, list[Run]] = {"mkdocs": [], "zensical": [], "cold": [], "no change": [], "one edit": []}
    again = dict(os.environ, BOOK_CACHE_DIR=str(cache))
    for number in range(rounds):
        runs["mkdocs"].append(measure(mkdocs, work))
        if zensical:
            runs["zensical"].append(measure(zensical, work))
        runs["cold"].append(cold(build, cache, work / "site"))
        runs["no change"].append(measure(build, REPO, again))
        swap_a_word(book, RNG)
        runs["one edit"].append(measure(build, REPO, again))
        progress("site", number, runs)
    best = {name: median(found) for name, found in runs.items() if found}
    command = shown(build, book, work)
    named = {"book": short_label(label), "book_size": label}
    return [row("site, cold", best["cold"], "MkDocs 1.6, same features", best["mkdocs"], TARGETS["site"], command=command,
                peer_command=shown(mkdocs, book, work), **named),
            row("site, cold, against Zensical", best["cold"], "Zensical, same features", best["zensical"], None, command=command,
                peer_command=shown(zensical, book, work), record=True, **named) if zensical
            else {"job": "site, cold, against Zensical", "status": "not run", "note": zensical_missing, **named},
            row("site, no change", best["no change"], "our cold build", best["cold"], None, command=command + " (again)", peer_command=command, **named),
            row("site, one word edited", best["one edit"], "our cold build", best["cold"], None, command=command + " (after the edit)",
                peer_command=command, **named)]


def bench_epub(book: Path, work: Path, rounds: int, label: str) -> list[dict]:
    pandoc = pandoc_command(book, work / "pandoc.epub")
    build, cache = ours("epub", book, work / "book.epub"), work / "cache"
    runs: dict[str, list[Run]] = {"pandoc": [], "cold": []}
    for number in range(rounds):
        runs["pandoc"].append(measure(pandoc, book))
        runs["cold"].append(cold(build, cache, work / "book.epub"))
        progress("epub", number, runs)
    best = {name: median(found) for name, found in runs.items()}
    return [row("EPUB, cold", best["cold"], version_of("pandoc"), best["pandoc"], TARGETS["epub"], command=shown(build, book, work),
                peer_command="cd BOOK && " + shown(pandoc, book, work), book=short_label(label), book_size=label)]


def version_of(program: str) -> str:
    """`pandoc 3.1.3`, as the program says; the bare name when it says nothing readable."""
    import re
    import subprocess

    said = subprocess.run([baseline_program(program), "--version"], capture_output=True, text=True).stdout
    found = re.search(r"\d+(\.\d+)+", said)
    return f"{program} {found.group(0)}" if found else program


FLOOR = [sys.executable, str(HERE / "pdf_floor.py")]


def floor_times(run: Run) -> list[dict]:
    """Each chapter's times as scripts/pdf_floor.py printed them."""
    return json.loads(run.output.splitlines()[-1])["chapters"]


def bench_pdf(book: Path, work: Path, rounds: int, label: str) -> list[dict]:
    html, docs = work / "print.html", work / "chapter-documents"
    save_print_document(book, html)
    save_chapter_documents(book, docs)
    plain = plain_pdf_command(html, book, work / "plain.pdf")
    build, cache = ours("pdf", book, work / "book.pdf"), work / "cache"
    runs: dict[str, list[Run]] = {"plain": [], "cold": [], "one edit": [], "chapters": [], "slowest": []}
    kept, sums, layouts = [], [], []
    slowest = ""
    for number in range(rounds):
        runs["plain"].append(measure(plain, REPO))
        runs["cold"].append(cold(build, cache, work / "book.pdf"))
        pages = pdf_pages(work / "book.pdf")
        swap_a_word(book, RNG)
        runs["one edit"].append(measure(build, REPO, dict(os.environ, BOOK_CACHE_DIR=str(cache))))
        kept.append(pdf_pages(work / "book.pdf") == pages)
        runs["chapters"].append(measure([*FLOOR, str(docs), str(book)], REPO))
        times = floor_times(runs["chapters"][-1])
        sums.append(sum(entry["layout_s"] + entry["write_s"] for entry in times))
        layouts.append(sum(entry["layout_s"] for entry in times))
        if not slowest:  # the same chapter in every round: the slowest of the first
            top = max(times, key=lambda entry: entry["layout_s"] + entry["write_s"])
            slowest, slowest_chapter = top["name"], top["chapter"]
        runs["slowest"].append(measure([*FLOOR, str(docs), str(book), "--only", slowest], REPO))
        progress("pdf", number, runs)
    best = {name: median(found) for name, found in runs.items()}
    command, peer = shown(build, book, work), "python -c 'weasyprint.HTML(WORK/print.html).write_pdf(...)'"
    named = {"book": short_label(label), "book_size": label}
    cold_run, plain_run = best["cold"], best["plain"]
    total = statistics.median(sums)
    floor = max(best["slowest"].wall, total / CORES)
    floor_ratio = floor / plain_run.wall
    busy, plain_busy = cold_run.cpu / (cold_run.wall * CORES), plain_run.cpu / (plain_run.wall * CORES)
    beside = (f"the floor of a chapter-at-a-time route is {floor_ratio:.2f}x the plain render, so the target of {TARGETS['pdf']}x is"
              f" {'above' if floor_ratio <= TARGETS['pdf'] else 'BELOW'} it")
    floor_note = (f"max(slowest chapter {best['slowest'].wall:.2f} s as a fresh process ({slowest_chapter}), sum of the {len(times)} chapters'"
                  f" layouts {total:.2f} s / {CORES} cores); the layouts alone (no writing) sum to {statistics.median(layouts):.2f} s; in CPU time,"
                  f" the slowest chapter took {best['slowest'].cpu:.2f} s and the process laying out every chapter {best['chapters'].cpu:.2f} s")
    time_row = row("PDF, cold, time", cold_run, "plain WeasyPrint of the same print document, one process", plain_run, TARGETS["pdf"], command=command,
                   peer_command=peer, note=beside, floor_ratio=round(floor_ratio, 4), **named)
    cpu_ratio = cold_run.cpu / plain_run.cpu
    return [time_row,
            row("PDF, cold, peak memory", cold_run, "the same WeasyPrint run", plain_run, TARGETS["pdf memory"], memory=True,
                command=command, peer_command=peer, **named),
            dict(time_row, job="PDF, cold, CPU time", measure="CPU time", ratio=round(cpu_ratio, 4), target=TARGETS["pdf cpu"],
                 met=cpu_ratio <= TARGETS["pdf cpu"], ours_text=f"{cold_run.cpu:.2f} s CPU", peer_text=f"the same WeasyPrint run, {plain_run.cpu:.2f} s CPU",
                 note="user + system time of every process of each", floor_ratio=None),
            dict(time_row, job="PDF, cold, both cores busy", measure="busy share", ratio=round(busy, 4), target=TARGETS["pdf busy"],
                 target_is="at least", met=busy >= TARGETS["pdf busy"], ours_text=f"{busy:.0%} of {cold_run.wall:.2f} s x {CORES} cores",
                 peer_text=f"the same WeasyPrint run, {plain_busy:.0%}", ratio_text=f"{busy:.0%}", target_text=f"at least {TARGETS['pdf busy']:.0%}",
                 note="CPU time / (wall time x cores)", floor_ratio=None),
            row("PDF, one word edited", best["one edit"], "our cold build", cold_run, TARGETS["pdf edit"], command=command + " (after the edit)",
                peer_command=command, note="page count kept" if all(kept) else "the page count changed", **named),
            derived(row("PDF floor, chapter at a time on every core", Run(floor, 0, 0, 0, 0, 0), "plain WeasyPrint of the same print document, one process",
                        plain_run, None, floor=True, note=floor_note, command="python scripts/pdf_floor.py DOCS BOOK", peer_command=peer, **named)),
            dict(row("PDF floor, slowest chapter as a fresh process", best["slowest"], "plain WeasyPrint of the same print document, one process",
                     plain_run, None, command=f"python scripts/pdf_floor.py DOCS BOOK --only {slowest}", peer_command=peer, **named),
                 floor=True, note=f"{slowest_chapter}: WeasyPrint's layout and writing of its own print document, start-up included"),
            derived(row("PDF floor, sum of the chapters' layouts", Run(total, 0, 0, 0, 0, 0), "plain WeasyPrint of the same print document, one process",
                        plain_run, None, command="python scripts/pdf_floor.py DOCS BOOK", peer_command=peer, floor=True, **named,
                        note=f"each chapter's own print document laid out and written in turn in one process; {len(times)} chapters"))]


def derived(found: dict) -> dict:
    """A row whose time is worked out, not one process's: without CPU time or memory of its own."""
    for key in ("ours_cpu_s", "ours_idle_s", "ours_mib", "peer_mib"):
        found.pop(key, None)
    return found


def progress(section: str, number: int, runs: dict[str, list[Run]]) -> None:
    print(f"  {section} round {number + 1}: " + ", ".join(f"{name} {found[-1].wall:.2f} s" for name, found in runs.items() if found)
          + f" (load {next(iter(runs.values()))[-1].load:.1f})", file=sys.stderr, flush=True)


def make_book(name: str, book: Path, args: argparse.Namespace) -> str:
    """The book `name` (real, generated, ours) at `book`, writable; returns its label."""
    if name == "real":
        return copy_book(args.book, book, 1)
    if name == "generated":
        return generate_book(book, args.scale)
    shutil.copytree(REPO / "chapters", book)
    return f"our chapters/, {len(chapters_of(book))} chapters"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated: site, epub, pdf (default: all three)")
    parser.add_argument("--books", default=None, help="comma-separated: real (a copy of --book), generated (scripts/gen_large_book.py), ours"
                        " (chapters/); default: " + "; ".join(f"{name} {books}" for name, books in DEFAULT_BOOKS.items()))
    parser.add_argument("--book", type=Path, default=REAL_BOOK, help=f"the real book (default {REAL_BOOK})")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the generated book, times the upstream one (default 1)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 5, and 3 for the PDF); the median is kept")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here (scripts/bench.py's contract)")
    args = parser.parse_args()
    exit_on_term()
    sections = [name for name in args.only.split(",") if name]
    aliases = {"large": "generated"}  # the earlier name of the generated book
    chosen = {section: [aliases.get(name, name) for name in (args.books or DEFAULT_BOOKS[section]).split(",") if name] for section in sections}
    if not set(sections) <= set(SECTIONS) or not all(set(books) <= set(BOOKS) for books in chosen.values()):
        parser.error(f"--only takes {', '.join(SECTIONS)}; --books takes {', '.join(BOOKS)}")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-baselines-") as tmp:
        for section in sections:
            for name in chosen[section]:
                work = Path(tmp) / f"{name}-{section}"
                work.mkdir()
                book = work / "book"
                label = make_book(name, book, args)
                rounds = args.repeat or (3 if section == "pdf" else 5)
                bench = {"site": bench_site, "epub": bench_epub, "pdf": bench_pdf}[section]
                rows += bench(book, work, rounds, label)
                write_rows(args.json, rows)  # what is done so far survives a later failure
                shutil.rmtree(work, ignore_errors=True)
    write_rows(args.json, rows)
    for found in rows:
        if found.get("status"):
            print(f"{found['job']} ({found.get('book', '')}): {found['status']}: {found['note']}")
            continue
        if found["target"] is None:
            target = "no target"
        else:
            target = f"target {found.get('target_is', 'at most')} {found['target']}, {'met' if found['met'] else 'NOT met'}"
        print(f"{found['job']} ({found['book']}): {found['ratio']:.2f} against {found['peer']} ({found['measure']}; {target})")


if __name__ == "__main__":
    main()
