#!/usr/bin/env python3
"""The site, the EPUB and the PDF against the programs a reader would otherwise use, on the same book.

For a generated book the size of the upstream one (`scripts/gen_large_book.py`, `--scale`, committed to a git
repository of its own as a real book is) and optionally our own `chapters/`, as fresh processes in alternating
rounds, the median of each kept:

- site:  MkDocs 1.6 and Zensical (both from one `mkdocs.yml` with the chapter list as its `nav`, the book as its
         `docs_dir`, tables, fenced code, Pygments highlighting and footnotes; Zensical with `--clean`, so cold),
         then `tools build html` with an empty cache (cold), again (no change) and after one word of the middle
         chapter is swapped for another of the same length (one edit);
- epub:  pandoc (GitHub markdown to EPUB, the chapters in order, images found beside each chapter), then
         `tools build epub` with an empty cache;
- pdf:   one plain WeasyPrint render of the print document `tools build pdf` lays out (saved beforehand, outside the
         timing), then `tools build pdf` with an empty cache: time and peak memory (PSS of the process tree); then
         one edit, whose page count must stay (the case issue 7's target of 0.3x a cold build is about).

Each comparison is a row of the `--json` contract of scripts/bench.py (job, ours, peer, ratio, target, met); the
targets are issue 19's: site cold at most 0.5x MkDocs, EPUB at most 0.25x pandoc, PDF at most 0.52x the plain render
in time and 0.4x in peak memory. The baselines come from `$BENCH_VENV` (default `.cache/bench-venv`, made by
scripts/bench.py) or the PATH; pandoc from Debian.

    python scripts/bench_baselines.py --only site,epub --repeat 5 --json out.json
    python scripts/bench_baselines.py --only pdf --repeat 3 --books large,ours
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from benchlib import (  # noqa: E402
    Run,
    baseline_program,
    chapters_of,
    generate_book,
    measure,
    median,
    pdf_pages,
    plain_pdf_command,
    row,
    save_print_document,
    swap_a_word,
    write_rows,
)

SECTIONS = ("site", "epub", "pdf")
TARGETS = {"site": 0.5, "epub": 0.25, "pdf": 0.52, "pdf memory": 0.4, "pdf edit": 0.3}  # issue 19; the edit: issue 7
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
    return [row(f"site, cold ({label})", best["cold"], "MkDocs 1.6", best["mkdocs"], TARGETS["site"], command=command, peer_command=shown(mkdocs, book, work)),
            row(f"site, cold ({label})", best["cold"], "Zensical", best["zensical"], None, command=command, peer_command=shown(zensical, book, work)) if zensical
            else {"job": f"site, cold ({label}), Zensical", "status": "not run", "note": zensical_missing},
            row(f"site, no change ({label})", best["no change"], "our cold build", best["cold"], None, command=command + " (again)", peer_command=command),
            row(f"site, one word edited ({label})", best["one edit"], "our cold build", best["cold"], None, command=command + " (after the edit)", peer_command=command)]


def bench_epub(book: Path, work: Path, rounds: int, label: str) -> list[dict]:
    pandoc = pandoc_command(book, work / "pandoc.epub")
    build, cache = ours("epub", book, work / "book.epub"), work / "cache"
    runs: dict[str, list[Run]] = {"pandoc": [], "cold": []}
    for number in range(rounds):
        runs["pandoc"].append(measure(pandoc, book))
        runs["cold"].append(cold(build, cache, work / "book.epub"))
        progress("epub", number, runs)
    best = {name: median(found) for name, found in runs.items()}
    return [row(f"EPUB, cold ({label})", best["cold"], "pandoc", best["pandoc"], TARGETS["epub"], command=shown(build, book, work),
                peer_command="cd BOOK && " + shown(pandoc, book, work))]


def bench_pdf(book: Path, work: Path, rounds: int, label: str) -> list[dict]:
    html = work / "print.html"
    save_print_document(book, html)
    plain = plain_pdf_command(html, book, work / "plain.pdf")
    build, cache = ours("pdf", book, work / "book.pdf"), work / "cache"
    runs: dict[str, list[Run]] = {"plain": [], "cold": [], "one edit": []}
    kept = []
    for number in range(rounds):
        runs["plain"].append(measure(plain, REPO))
        runs["cold"].append(cold(build, cache, work / "book.pdf"))
        pages = pdf_pages(work / "book.pdf")
        swap_a_word(book, RNG)
        runs["one edit"].append(measure(build, REPO, dict(os.environ, BOOK_CACHE_DIR=str(cache))))
        kept.append(pdf_pages(work / "book.pdf") == pages)
        progress("pdf", number, runs)
    best = {name: median(found) for name, found in runs.items()}
    command, peer = shown(build, book, work), "python -c 'weasyprint.HTML(WORK/print.html).write_pdf(...)'"
    return [row(f"PDF, cold ({label}): time", best["cold"], "plain WeasyPrint", best["plain"], TARGETS["pdf"], command=command, peer_command=peer),
            row(f"PDF, cold ({label}): peak memory", best["cold"], "plain WeasyPrint", best["plain"], TARGETS["pdf memory"], memory=True,
                command=command, peer_command=peer),
            row(f"PDF, one word edited ({label})", best["one edit"], "our cold build", best["cold"], TARGETS["pdf edit"], command=command + " (after the edit)",
                peer_command=command, note="page count kept" if all(kept) else "the page count changed")]


def progress(section: str, number: int, runs: dict[str, list[Run]]) -> None:
    print(f"  {section} round {number + 1}: " + ", ".join(f"{name} {found[-1].wall:.2f} s" for name, found in runs.items() if found)
          + f" (load {next(iter(runs.values()))[-1].load:.1f})", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated: site, epub, pdf (default: all three)")
    parser.add_argument("--books", default="large", help="comma-separated: large (generated), ours (chapters/); default large")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the generated book, times the upstream one (default 1)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 5, and 3 for the PDF); the median is kept")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here (scripts/bench.py's contract)")
    args = parser.parse_args()
    sections = [name for name in args.only.split(",") if name]
    books = [name for name in args.books.split(",") if name]
    if not set(sections) <= set(SECTIONS) or not set(books) <= {"large", "ours"}:
        parser.error(f"--only takes {', '.join(SECTIONS)}; --books takes large and ours")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-baselines-") as tmp:
        for name in books:
            for section in sections:
                work = Path(tmp) / f"{name}-{section}"
                work.mkdir()
                book = work / "book"
                if name == "large":
                    label = generate_book(book, args.scale)
                else:
                    shutil.copytree(REPO / "chapters", book)
                    label = f"our chapters/, {len(chapters_of(book))} chapters"
                rounds = args.repeat or (3 if section == "pdf" else 5)
                bench = {"site": bench_site, "epub": bench_epub, "pdf": bench_pdf}[section]
                rows += bench(book, work, rounds, label)
                write_rows(args.json, rows)  # what is done so far survives a later failure
    write_rows(args.json, rows)
    for found in rows:
        if found.get("status"):
            print(f"{found['job']}: {found['status']}: {found['note']}")
            continue
        target = f"target {found['target']}x, {'met' if found['met'] else 'NOT met'}" if found["target"] is not None else "no target"
        print(f"{found['job']}: {found['ratio']:.2f}x {found['peer']} ({found['measure']}; {target})")


if __name__ == "__main__":
    main()
