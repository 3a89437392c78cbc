#!/usr/bin/env python3
"""The least time any link check of a book can take with the tool's one parser: a fresh process that imports
markdown-it-py with the tool's plugins (`tools.markdown.parser.create_markdown`), reads the chapters of BOOK's chapter list
and parses them split over JOBS processes (forked, by size, this one included), and does nothing else: no model, no
resolving, no cache, no report. scripts/bench_lychee.py times it beside `tools check-links` and lychee, as a fresh
process like theirs, so the cold target can be read against what the parser alone costs on this machine.

    python scripts/parse_floor.py BOOK [--jobs N]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.core.parallel import default_jobs  # noqa: E402
from tools.markdown.parser import create_markdown  # noqa: E402


def shares(sizes: list[int], count: int) -> list[list[int]]:
    """Chapter indexes in `count` shares of about equal size (the largest first, each to the lightest share)."""
    result: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        lightest = totals.index(min(totals))
        result[lightest].append(index)
        totals[lightest] += sizes[index]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", type=Path)
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="processes (default: one per core, as tools uses)")
    args = parser.parse_args()
    md = create_markdown()
    names = (args.book / "chapters-md.txt").read_text(encoding="utf-8").split()
    texts = [(args.book / name).read_text(encoding="utf-8") for name in names]
    parts = shares([len(text) for text in texts], max(1, args.jobs))
    children = []
    for part in parts[1:]:  # one forked process per share but the first, which this process parses
        pid = os.fork()
        if pid == 0:
            for index in part:
                md.parse(texts[index], {})
            os._exit(0)
        children.append(pid)
    for index in parts[0]:
        md.parse(texts[index], {})
    failed = 0
    for pid in children:
        failed |= os.waitpid(pid, 0)[1]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
