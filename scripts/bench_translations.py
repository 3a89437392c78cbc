#!/usr/bin/env python3
"""What a translation costs (issue 36): building every language against building the original alone.

Two rows, each the median of alternating rounds:

1. `tools build all` of our own book (English and its Chinese translation, `chapters/`), cold: a fresh cache for each
   run, against `tools build all --lang en` the same way. Target: at most 1.3x. The machine is shared, so each row
   also carries the CPU time of the whole process tree (workers included) and benchlib's estimate of the wall time
   alone on the machine: `make bench` shows their ratios beside the wall time's.
2. The sites of a course-like book (a generated one: `--lessons` lessons in folders, each showing `--images` images
   of `--image-kib` KiB, translated into Chinese, Japanese and Spanish, some lessons as empty placeholders), all
   languages against the English site alone: bytes on disk. Target: at most 1.3x (each language's site links to the
   images the original's site holds).

    python scripts/bench_translations.py                   # 3 rounds
    python scripts/bench_translations.py --rounds 1 --json rows.json
    python scripts/bench.py --only translations

The `--json PATH` rows follow the contract of scripts/bench.py.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import sys
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from benchlib import Run, measure, median, row, write_rows  # noqa: E402

TARGET = 1.3
LANGUAGES = {"zh": "第{n}课", "ja": "レッスン{n}", "es": "Lección {n}"}


def tools_command() -> list[str]:
    return [sys.executable, "-m", "tools"]


def png(path: Path, kib: int, rng: random.Random) -> None:
    """A valid PNG of noise (no compression can shrink it) of about `kib` KiB: an image of a course's size."""
    side = max(8, int((kib * 1024 / 3) ** 0.5))
    rows = b"".join(b"\0" + rng.randbytes(side * 3) for _ in range(side))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b""))


def course_book(root: Path, lessons: int, images: int, image_kib: int, seed: int = 0) -> Path:
    """A course laid out as the one of issue 36: lessons in folders with their images, English and three
    translations at the same relative paths; every third lesson of a translation is an empty placeholder."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    tables = "".join(f'\n[translations.{tag}]\nfolder = "translations/{tag}"\n' for tag in LANGUAGES)
    (root / "book.toml").write_text(f'[book]\ntitle = "Generative AI for Beginners, a course"\nlanguage = "en"\n{tables}', encoding="utf-8")
    names = [f"{n:02d}-lesson-{n}" for n in range(1, lessons + 1)]
    (root / "chapters-md.txt").write_text("README.md\n\nPart: Lessons\n" + "".join(f"{name}/README.md\n" for name in names), encoding="utf-8")
    prose = "Every lesson explains one idea with a worked example, a diagram and a short exercise at its end. " * 12
    (root / "README.md").write_text("# The course\n\n" + "".join(f"- [Lesson {n}]({name}/README.md)\n" for n, name in enumerate(names, 1)), encoding="utf-8")
    for n, name in enumerate(names, 1):
        shown = "".join(f"![figure {k}](images/figure-{k}.png)\n\n{prose}\n\n" for k in range(1, images + 1))
        (root / name).mkdir()
        (root / name / "README.md").write_text(f"# Lesson {n}\n\n{prose}\n\n{shown}Next: [the course](../README.md).\n", encoding="utf-8")
        for k in range(1, images + 1):
            png(root / name / "images" / f"figure-{k}.png", image_kib, rng)
    for tag, title in LANGUAGES.items():
        folder = root / "translations" / tag
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(f"# {title.format(n=0)}\n\n" + "".join(f"- [{title.format(n=n)}]({name}/README.md)\n" for n, name in enumerate(names, 1)), encoding="utf-8")
        for n, name in enumerate(names, 1):
            (folder / name).mkdir()
            text = "" if n % 3 == 0 else f"# {title.format(n=n)}\n\n{prose}\n\n" + "".join(f"![{k}](../../../{name}/images/figure-{k}.png)\n\n" for k in range(1, images + 1))
            (folder / name / "README.md").write_text(text, encoding="utf-8")
    return root


def size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build_rounds(book: Path, rounds: int, work: Path) -> tuple[Run, Run]:
    """`tools build all` and `tools build all --lang en`, alternating, each with a cache of its own (cold)."""
    ours: list[Run] = []
    theirs: list[Run] = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for number in range(rounds):
        for runs, extra in ((ours, []), (theirs, ["--lang", "en"])) if number % 2 == 0 else ((theirs, ["--lang", "en"]), (ours, [])):
            cache, out = work / f"cache-{number}-{len(extra)}", work / f"out-{number}-{len(extra)}"
            command = [*tools_command(), "build", "all", "--book", str(book), "--out", str(out), *extra]
            found = measure(command, REPO, dict(env, BOOK_CACHE_DIR=str(cache)))
            print(f"round {number + 1}: {'--lang en' if extra else 'every language'}: {found.wall:.1f} s, CPU {found.cpu:.1f} s, load {found.load:.1f}", flush=True)
            runs.append(found)
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    return median(ours), median(theirs)


def site_sizes(book: Path, work: Path) -> tuple[int, int, Run, Run]:
    """Bytes of every language's site against the English site's alone, and the two builds' runs."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), BOOK_CACHE_DIR=str(work / "course-cache"))
    every, english = work / "course-all", work / "course-en"
    ours = measure([*tools_command(), "build", "html", "--book", str(book), "--out", str(every)], REPO, env)
    theirs = measure([*tools_command(), "build", "html", "--book", str(book), "--out", str(english), "--lang", "en"], REPO, env)
    return size(every), size(english), ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each build (the median is kept)")
    parser.add_argument("--book", type=Path, default=REPO / "chapters", help="the translated book to build (default: ours)")
    parser.add_argument("--lessons", type=int, default=20)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--image-kib", type=int, default=400)
    parser.add_argument("--skip-build", action="store_true", help="measure the course's sites only")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here (scripts/bench.py's contract)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-translations-") as folder:
        work = Path(folder)
        if not args.skip_build:
            ours, theirs = build_rounds(args.book.resolve(), args.rounds, work)
            shown = os.path.relpath(args.book.resolve(), REPO)
            rows.append(row(f"translations: build all of {shown}, cold", ours, "build all --lang en", theirs, TARGET,
                            command=f"tools build all --book {shown}", peer_command=f"tools build all --book {shown} --lang en",
                            note=f"CPU {ours.cpu / theirs.cpu:.2f}x; median of {args.rounds} alternating rounds, a fresh cache each"))
            rows[-1]["book"] = f"{shown} (every language)"
        book = course_book(work / "course", args.lessons, args.images, args.image_kib)
        every, english, ours_run, theirs_run = site_sizes(book, work)
        ratio = every / english
        mib = 1024 * 1024
        rows.append({"job": f"translations: sites of a course ({args.lessons} lessons, 4 languages)", "ours_s": round(ours_run.wall, 4), "peer": "the English site",
                     "peer_s": round(theirs_run.wall, 4), "ratio": round(ratio, 4), "target": TARGET, "met": ratio <= TARGET, "measure": "site size on disk",
                     "ours_mib": round(every / mib, 1), "peer_mib": round(english / mib, 1), "ours_cpu_s": round(ours_run.cpu, 4), "peer_cpu_s": round(theirs_run.cpu, 4),
                     "command": "tools build html --book COURSE", "peer_command": "tools build html --book COURSE --lang en",
                     "note": f"{every / mib:.1f} MiB against {english / mib:.1f} MiB", "book": f"generated course ({args.lessons} lessons)"})
    for found in rows:
        extra = f", CPU {found['ours_cpu_s']:.1f} s against {found['peer_cpu_s']:.1f} s" if "ours_cpu_s" in found else ""
        print(f"{found['job']}: {found['ratio']:.2f}x ({found['measure']}; target at most {TARGET}x: {'met' if found['met'] else 'NOT met'}){extra}")
    write_rows(args.json, rows)


if __name__ == "__main__":
    main()
