#!/usr/bin/env python3
"""Time `tools build html` on a generated large book against a bare markdown-it-py conversion of the same files.

Both run as fresh processes in the same session (best of --repeat), so both pay interpreter start-up; the ratio is
what BENCHMARKS.md records. Target: the whole site (navigation, search index, highlighting) in at most 2x the bare run.
"""
from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_large_book import generate  # noqa: E402

BARE = """
import sys
from pathlib import Path
from markdown_it import MarkdownIt
md = MarkdownIt("commonmark").enable("table")
root, out = Path(sys.argv[1]), Path(sys.argv[2])
for line in (root / "chapters-md.txt").read_text().split():
    target = out / (line[:-3] + ".html")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(md.render((root / line).read_text()))
"""


def best_of(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "book"
        info = generate(book, chapters=args.chapters)
        bare = best_of([sys.executable, "-c", BARE, str(book), str(Path(tmp) / "bare")], args.repeat)
        ours = best_of([sys.executable, "-m", "tools", "build", "html", "--book", str(book), "--out", str(Path(tmp) / "site")], args.repeat)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, cores: {__import__('os').cpu_count()}")
    print(f"book: {info['chapters']} chapters, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links")
    print(f"bare markdown-it conversion: {bare:.2f} s (best of {args.repeat})")
    print(f"tools build html:            {ours:.2f} s (best of {args.repeat})")
    print(f"ratio: {ours / bare:.2f}x (target: at most 2x)")


if __name__ == "__main__":
    main()
