#!/usr/bin/env python3
"""The book's size and originality, as issue 38 measures them.

    python scripts/book_stats.py                       # our book, against the upstream corpus when it is there
    python scripts/book_stats.py --by-folder            # words per top-level folder and per chapter
    python scripts/book_stats.py --json

- words: prose outside code blocks (fenced and indented), raw HTML and front matter; table cells count;
  a word is a run of letters or digits (so `H100` is one word and `8.0` two).
- figures: distinct images (SVG, PNG, JPEG) shown by the English chapters plus ```mermaid blocks.
- zh: the chapters of `chapters/zh/` that exist as files.
- shared 12-grams: the share of our 12-word runs (lower-cased words) that also occur in the upstream book
  (`../shared/corpus/ml-engineering`); a run of a table or of a list of names can match by chance, so the
  target is a share, not zero.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = REPO / "chapters"
UPSTREAM = REPO.parent / "shared" / "corpus" / "ml-engineering"
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+\.(?:svg|png|jpe?g|gif|webp))", re.IGNORECASE)
HTML_IMG = re.compile(r"<img\b[^>]*\bsrc=[\"']([^\"']+)", re.IGNORECASE)
N = 12

_md = MarkdownIt("commonmark").enable("table")


def prose(text: str) -> str:
    """The text a reader reads as prose: inline content only, code spans kept as words, blocks of code dropped."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            text = text[end + 4:]
    parts: list[str] = []
    for tok in _md.parse(text):
        if tok.type == "inline":
            for child in tok.children or []:
                if child.type in ("text", "code_inline"):
                    parts.append(child.content)
            parts.append("\n")
    return " ".join(parts)


def words(text: str) -> list[str]:
    return WORD.findall(text)


def chapter_files(root: Path, *, skip_zh: bool = True) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*.md")):
        rel = p.relative_to(root)
        if skip_zh and rel.parts[0] == "zh":
            continue
        if any(part.startswith(".") or part in ("node_modules", "_build") for part in rel.parts):
            continue
        out.append(p)
    return out


def grams(ws: list[str]) -> set[tuple[str, ...]]:
    low = [w.lower() for w in ws]
    return {tuple(low[i:i + N]) for i in range(len(low) - N + 1)}


def figures(files: list[Path]) -> tuple[set[str], int]:
    images: set[str] = set()
    mermaid = 0
    for p in files:
        text = p.read_text(encoding="utf-8")
        mermaid += len(re.findall(r"^\s*```+\s*mermaid\b", text, re.MULTILINE))
        for src in IMAGE.findall(text) + HTML_IMG.findall(text):
            if "://" in src:
                continue
            images.add(str((p.parent / src.split("#")[0]).resolve()))
    return images, mermaid


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", type=Path, default=CHAPTERS)
    ap.add_argument("--upstream", type=Path, default=UPSTREAM)
    ap.add_argument("--by-folder", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    files = chapter_files(args.book)
    per_file = {p: words(prose(p.read_text(encoding="utf-8"))) for p in files}
    total = sum(len(w) for w in per_file.values())
    images, mermaid = figures(files)
    zh = len(list((args.book / "zh").rglob("*.md"))) if (args.book / "zh").is_dir() else 0
    result: dict[str, object] = {"words": total, "chapters": len(files), "figures": len(images) + mermaid,
                                 "images": len(images), "mermaid": mermaid, "zh_chapters": zh}
    if args.upstream.is_dir():
        theirs: set[tuple[str, ...]] = set()
        for p in chapter_files(args.upstream, skip_zh=False):
            theirs |= grams(words(prose(p.read_text(encoding="utf-8", errors="replace"))))
        ours: set[tuple[str, ...]] = set()
        for ws in per_file.values():
            ours |= grams(ws)
        shared = ours & theirs
        result["shared_12grams"] = len(shared)
        result["shared_12gram_percent"] = round(100 * len(shared) / max(1, len(ours)), 4)
    if args.by_folder:
        folders: Counter[str] = Counter()
        for p, ws in per_file.items():
            rel = p.relative_to(args.book)
            folders[rel.parts[0] if len(rel.parts) > 1 else "."] += len(ws)
        result["folders"] = dict(sorted(folders.items()))
        result["files"] = {str(p.relative_to(args.book)): len(ws) for p, ws in per_file.items()}
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
        return 0
    for key, value in result.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {k:60} {v:>8}")
        else:
            print(f"{key:24} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
