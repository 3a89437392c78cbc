#!/usr/bin/env python3
"""Time `tools check-links` against LinkChecker over the built site of a generated large book, in the same run.

The book comes from scripts/gen_large_book.py with `--broken N` defects planted (N missing files, N missing
anchors). The site is built once in local mode (not timed); LinkChecker then checks it with tools/checks/links/linkcheckerrc
(anchor checking on), and `tools check-links` checks the markdown, each as a fresh process. LinkChecker's findings
are mapped back to the chapters the way `tools check-links --html` does, and both sets of findings must be equal:
same file, line and column. Target: check-links at least 50x faster than LinkChecker, no finding missed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gen_large_book import generate  # noqa: E402


def check_links(book: Path, *extra: str) -> tuple[float, dict]:
    command = [sys.executable, "-m", "tools", "check-links", "--book", str(book), "--format", "json", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"tools check-links failed: {done.stderr}")
    return elapsed, json.loads(done.stdout)


def best_of(repeat: int, book: Path, *extra: str) -> tuple[float, dict]:
    runs = [check_links(book, *extra) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=60)
    parser.add_argument("--sections", type=int, default=12)
    parser.add_argument("--broken", type=int, default=10, help="plant N missing files and N missing anchors")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of tools check-links")
    parser.add_argument("--threads", type=int, default=None, help="LinkChecker threads (default: its own, 10)")
    args = parser.parse_args()

    from tools.book.load import load_book
    from tools.checks.links.linkchecker import map_findings, readable_by_all, run_linkchecker, start_pages
    from tools.core.errors import Diagnostics
    from tools.render.site.write import build_site

    temp = Path(tempfile.mkdtemp(prefix="bench-links-"))
    try:
        os.chmod(temp, 0o755)  # LinkChecker run as root drops to `nobody`, who must reach the site
        book_dir = temp / "book"
        info = generate(book_dir, chapters=args.chapters, sections=args.sections, broken=args.broken)
        book = load_book(book_dir)
        site = temp / "site"
        build_site(book, site, Diagnostics(), local=True)
        readable_by_all(temp)

        rows, linkchecker_seconds = run_linkchecker(site, start_pages(book), threads=args.threads)
        theirs = {(f.file, f.line, f.col) for f in map_findings(book, site, rows) if f.kind in ("broken", "anchor")}

        cold, data = best_of(args.repeat, book_dir, "--no-cache")
        ours = {(f["file"], f["line"], f["col"]) for f in data["findings"] if f["severity"] == "error"}
        cache = temp / "cache"
        check_links(book_dir, "--cache-dir", str(cache))  # fill the cache
        warm, warm_data = best_of(args.repeat, book_dir, "--cache-dir", str(cache))
        assert {(f["file"], f["line"], f["col"]) for f in warm_data["findings"] if f["severity"] == "error"} == ours
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, cores: {os.cpu_count()}")
    print(f"book: {info['chapters']} chapters, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links, {info['broken']} planted defects")
    print(f"LinkChecker over the built site:  {linkchecker_seconds:8.2f} s, {len(theirs)} findings")
    print(f"tools check-links, no cache:      {cold:8.2f} s (best of {args.repeat}; {data['summary']['seconds']:.2f} s inside the command), {len(ours)} findings")
    print(f"tools check-links, parse cache:   {warm:8.2f} s (best of {args.repeat}; {warm_data['summary']['seconds']:.2f} s inside the command)")
    missed_by_us, missed_by_them = theirs - ours, ours - theirs
    print(f"same findings: {'yes' if not missed_by_us and not missed_by_them else 'no'}"
          + (f"; only LinkChecker: {sorted(missed_by_us)[:5]}" if missed_by_us else "")
          + (f"; only check-links: {sorted(missed_by_them)[:5]}" if missed_by_them else ""))
    print(f"ratio: {linkchecker_seconds / cold:.0f}x without cache, {linkchecker_seconds / warm:.0f}x with it (target: at least 50x)")
    if missed_by_us:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
