#!/usr/bin/env python3
"""Build speed at book scale: cold, no-change and one-edit builds of every format, against baselines run here.

Baselines, installed for the benchmark only (never by the tests): MkDocs for the site (into .cache/bench-venv),
pandoc (Debian) for the EPUB, and one plain WeasyPrint render of the same print document for the PDF. Every
figure is a ratio against its baseline measured in the same run, so the machine's speed cancels out.

    python scripts/bench.py                 # the generated large book and our own book, every format
    python scripts/bench.py --formats html  # only the site
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from gen_large_book import generate  # noqa: E402

BENCH_VENV = REPO / ".cache" / "bench-venv"


def timed(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def mkdocs() -> Path:
    exe = BENCH_VENV / "bin" / "mkdocs"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(BENCH_VENV / "bin" / "pip"), "install", "-q", "mkdocs"], check=True, stderr=subprocess.DEVNULL)
    return exe


def mkdocs_config(book: Path, work: Path) -> Path:
    chapters = [line.strip() for line in (book / "chapters-md.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    config = work / "mkdocs.yml"
    nav = "\n".join(f"  - '{c}'" for c in chapters)
    config.write_text(f"site_name: bench\ndocs_dir: {book}\nsite_dir: {work / 'mkdocs-site'}\nnav:\n{nav}\nmarkdown_extensions:\n  - tables\n  - fenced_code\n  - codehilite\n  - footnotes\n")
    return config


def tools(*args: str) -> list[str]:
    return [sys.executable, "-m", "tools", *args]


def edit_one(book: Path) -> None:
    chapters = [line.strip() for line in (book / "chapters-md.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    target = book / chapters[len(chapters) // 2]
    target.write_text(target.read_text() + f"\nAn edit at {time.time()}.\n")


def bench_book(name: str, book: Path, formats: list[str], work: Path) -> list[str]:
    rows = []
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BOOK_CACHE_DIR=str(work / "cache"))
    outs = {"html": work / "site", "pdf": work / "book.pdf", "epub": work / "book.epub"}
    for fmt in formats:
        shutil.rmtree(work / "cache", ignore_errors=True)
        command = tools("build", fmt, "--book", str(book), "--out", str(outs[fmt]))
        cold = timed(command, env)
        same = timed(command, env)
        edit_one(book)
        edited = timed(command, env)
        if fmt == "html":
            base = timed([str(mkdocs()), "build", "-q", "-f", str(mkdocs_config(book, work))])
            label = "MkDocs build"
        elif fmt == "epub":
            if not shutil.which("pandoc"):
                rows.append(f"| {name} | epub | pandoc missing: apt-get install pandoc | | | |")
                continue
            chapters = [str(book / l.strip()) for l in (book / "chapters-md.txt").read_text().splitlines() if l.strip() and not l.startswith("#")]
            base = timed(["pandoc", "-f", "gfm", "-o", str(work / "pandoc.epub"), "--metadata", "title=bench", *chapters])
            label = "pandoc EPUB"
        else:
            html = work / "print.html"
            code = f"from tools.book import load_book; from tools.errors import Diagnostics; from tools.render.single import print_document; from pathlib import Path; Path({str(html)!r}).write_text(print_document(load_book({str(book)!r}), Diagnostics()))"
            subprocess.run([sys.executable, "-c", code], check=True)
            plain = f"from weasyprint import HTML; HTML(filename={str(html)!r}, base_url={str(book) + '/'!r}).write_pdf({str(work / 'plain.pdf')!r})"
            base = timed([sys.executable, "-c", plain])
            label = "plain WeasyPrint"
        rows.append(f"| {name} | {fmt} | {label}: {base[0]:.2f} s, {base[1]:.0f} MB | cold {cold[0]:.2f} s ({cold[0] / base[0]:.2f}x), {cold[1]:.0f} MB | no change {same[0]:.2f} s ({same[0] / cold[0]:.2f}x of cold) | one edit {edited[0]:.2f} s ({edited[0] / cold[0]:.2f}x of cold) |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formats", default="html,epub,pdf", help="comma-separated: html, epub, pdf")
    parser.add_argument("--chapters", type=int, default=60, help="chapters of the generated book")
    parser.add_argument("--books", default="large,ours", help="comma-separated: large (generated), ours (chapters/)")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    if not set(formats) <= {"html", "epub", "pdf"}:
        parser.error("--formats takes html, epub and pdf")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, CPython {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print("| book | format | baseline | tools build | rebuild, no change | rebuild, one chapter edited |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in args.books.split(","):
            book = work / f"{name}-book"
            if name == "large":
                generate(book, chapters=args.chapters)
            else:
                shutil.copytree(REPO / "chapters", book)
            bench_book(name, book, formats, work / f"{name}-work")


if __name__ == "__main__":
    main()
