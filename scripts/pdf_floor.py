#!/usr/bin/env python3
"""What WeasyPrint alone costs to lay out the book one chapter at a time: the floor of the PDF route (issue 37).

`tools build pdf` lays each chapter out as its own document (tools/render/pdf/), side by side on every core. This
script lays out chapter documents saved beforehand (`benchlib.save_chapter_documents`: each chapter's own print
document, as the route makes it) with plain WeasyPrint, one after the other in this process, and prints as JSON each
chapter's time to lay out (`HTML.render`) and to write its PDF (`Document.write_pdf`):

    python scripts/pdf_floor.py DOCS BOOK [--only NAME] [--out DIR]

`--only NAME` lays out that one document (scripts/bench_baselines.py runs it as a fresh process for the slowest
chapter: no route can finish before its slowest chapter is laid out, start-up included). The sum of the chapters'
times, over the cores, is the other bound: on C cores a chapter-at-a-time route takes at least
max(slowest chapter, sum / C). Images are resolved against BOOK, as the plain render of the whole document does.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, help="the folder of chapter documents (and its chapters.json)")
    parser.add_argument("book", type=Path, help="the book the documents' images are relative to")
    parser.add_argument("--only", default=None, help="lay out this one document only")
    parser.add_argument("--out", type=Path, default=None, help="write the PDFs here (default: a temporary folder)")
    args = parser.parse_args()
    from weasyprint import HTML

    listed = json.loads((args.docs / "chapters.json").read_text(encoding="utf-8"))
    if args.only:
        listed = [entry for entry in listed if entry[0] == args.only]
        if not listed:
            raise SystemExit(f"{args.docs}: no chapter document {args.only} in chapters.json")
    base = str(args.book.resolve()) + "/"
    found = []
    with tempfile.TemporaryDirectory(prefix="pdf-floor-") as temp:
        out = args.out or Path(temp)
        out.mkdir(parents=True, exist_ok=True)
        for name, chapter in listed:
            start = time.perf_counter()
            document = HTML(filename=str(args.docs / name), base_url=base).render()
            laid = time.perf_counter()
            document.write_pdf(out / (Path(name).stem + ".pdf"))
            done = time.perf_counter()
            found.append({"name": name, "chapter": chapter, "layout_s": round(laid - start, 4), "write_s": round(done - laid, 4),
                          "pages": len(document.pages)})
    json.dump({"chapters": found}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
