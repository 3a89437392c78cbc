#!/usr/bin/env python3
"""Time live reload: from a chapter's save to the `load` event of the open page showing the change, in Chromium.

    python scripts/bench_reload.py [--edits 10] [--rounds 1] [--code-root DIR] [--baseline DIR]
                                   [--book DIR | --chapters 47 --sections 8] [--target 0.2] [--atomic-save]

It makes the book (scripts/gen_large_book.py with `--chapters`/`--sections`: 47 and 8 are about the upstream ML
Engineering book's size), or copies `--book DIR` (`make bench` gives the upstream book, ../shared/corpus/ml-engineering)
to a temporary folder with scripts/benchlib.py's `copy_book` (writable, committed to a repository of its own; the
original is never edited), starts
`tools serve` of `--code-root` (default: this checkout) on a free port in a subprocess with an empty build cache,
opens a chapter in headless Chromium (Debian's, `$CHROMIUM`, else Playwright's own), and `--edits` times writes a
visible change: two edits in three add a paragraph to the open chapter, every third renames another chapter, whose
title the open page shows in its navigation (so every page of the site changes). Each time is taken from just before
the write to the reloaded page's own `loadEventStart` (the page's clock and this script's are the machine's), once
the page shows the new text; Playwright's view of the same event is printed beside it.

`--server-log FILE` keeps what the servers say; the median of their rebuild times is printed either way. `--baseline DIR` times another checkout (e.g. the main branch) the same way in the same session, alternating with
`--code-root` for `--rounds` rounds, and prints the ratio of the medians. `--atomic-save` writes each change as
editors that save atomically do (a temporary file renamed over the chapter) instead of in place. It prints the
median and p90 of each kind of edit and of all, and the ratio of the median to `--target` seconds.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from benchlib import copy_book, exit_on_term  # noqa: E402

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_of(chapter: str) -> str:
    sys.path.insert(0, str(REPO))
    from tools.render.pages import page_path

    return page_path(chapter)


@contextlib.contextmanager
def serving(code_root: Path, book: Path, out: Path, cache: Path, log: Path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(code_root), "BOOK_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "tools", "serve", "--book", str(book), "--out", str(out), "--port", str(port)]
    said = open(log, "a", encoding="utf-8")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, cwd=code_root, env=env, stdout=said, stderr=said)  # -m puts the cwd first
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(base + "/__status", timeout=5) as answer:
                    json.load(answer)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"tools serve of {code_root} did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        said.close()


def write(path: Path, text: str, atomic: bool) -> None:
    if not atomic:
        path.write_text(text, encoding="utf-8")
        return
    temp = path.with_name(f".{path.name}.saving")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def shows(page, text: str) -> bool:
    try:
        return text in page.inner_text("body", timeout=2000)
    except Exception:  # noqa: BLE001 - the page is being replaced by the next reload
        return False


def rebuild_times(said: str) -> list[float]:
    """The seconds of each rebuild after the first build, from what the server said ("Rebuilt ... in 0.05s ...")."""
    serving = said.partition("Serving ")[2]
    return [float(m.group(1)) for m in re.finditer(r"^Rebuilt .*? in ([0-9.]+)s", serving, re.MULTILINE)]


def session(browser, code_root: Path, source: Path, edits: int, atomic: bool, log: Path | None = None) -> tuple[list[tuple[str, float, float]], list[float]]:
    """One server of `code_root` on a fresh copy of the book: (kind, page's seconds, Playwright's seconds) per edit,
    and the seconds of each rebuild as the server reported them."""
    with tempfile.TemporaryDirectory(prefix="bench-reload-") as temp:
        book = Path(temp) / "book"
        copy_book(source, book, 1)
        chapters = [line.strip() for line in (book / "chapters-md.txt").read_text(encoding="utf-8").splitlines() if line.strip().endswith(".md")]
        opened, other = chapters[len(chapters) // 2], chapters[len(chapters) // 2 + 1]
        results = []
        said = Path(temp) / "serve.log"
        with serving(code_root, book, Path(temp) / "out", Path(temp) / "cache", said) as base:
            page = browser.new_page()
            page.goto(f"{base}/{page_of(opened)}", wait_until="load")
            time.sleep(1.5)  # the page's first status arrives (a polling page needs one poll before it notices)
            for number in range(edits):
                kind = "other chapter's title" if number % 3 == 2 else "open chapter"
                marker = f"Reload check {number} {os.getpid()} {time.time_ns()}"
                target = book / (other if kind != "open chapter" else opened)
                text = target.read_text(encoding="utf-8")
                if kind == "open chapter":
                    text += f"\n{marker}.\n"
                else:
                    rest = text.partition("\n")[2]
                    text = f"# {marker}\n{rest}"
                started_wall, started = time.time(), time.perf_counter()
                seen = None
                with page.expect_event("load", timeout=60000):
                    write(target, text, atomic)
                while not shows(page, marker):  # a reload from an earlier burst: wait for the next
                    page.wait_for_event("load", timeout=60000)
                seen = time.perf_counter() - started
                loaded = page.evaluate("performance.timeOrigin + performance.getEntriesByType('navigation')[0].loadEventStart") / 1000
                results.append((kind, loaded - started_wall, seen))
                time.sleep(0.5)  # the next save is a separate one
            page.close()
        text = said.read_text(encoding="utf-8", errors="replace")
        if log:
            with log.open("a", encoding="utf-8") as handle:
                handle.write(text)
        return results, rebuild_times(text)


def summary(label: str, times: list[float], target: float) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    median = statistics.median(ordered)
    return f"{label}: median {median * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms over {len(times)} edits; {median / target:.2f}x the {target * 1000:.0f} ms target ({'met' if median <= target else 'NOT met'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=10, help="saves timed per server (default 10)")
    parser.add_argument("--rounds", type=int, default=1, help="servers per checkout, alternating with --baseline")
    parser.add_argument("--code-root", type=Path, default=REPO, help="the checkout whose tools to run")
    parser.add_argument("--baseline", type=Path, help="another checkout to time the same way, e.g. the main branch")
    parser.add_argument("--book", type=Path, help="a book to copy and edit, instead of a generated one")
    parser.add_argument("--chapters", type=int, default=47)
    parser.add_argument("--sections", type=int, default=8)
    parser.add_argument("--target", type=float, default=0.2, help="seconds the median should stay under")
    parser.add_argument("--atomic-save", action="store_true", help="save by renaming a temporary file over the chapter")
    parser.add_argument("--server-log", type=Path, help="a file that gets what the servers say (their rebuild times)")
    parser.add_argument("--scale", type=float, default=None, help="generate the book at this multiple of the upstream one (instead of --chapters/--sections)")
    parser.add_argument("--json", type=Path, help="write the rows of scripts/bench.py's contract here")
    args = parser.parse_args()
    exit_on_term()
    if args.edits < 1 or args.rounds < 1:
        parser.error("--edits and --rounds must be at least 1")
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("CHROMIUM") or next((c for c in CHROMIUM_CANDIDATES if os.access(c, os.X_OK)), None)
    with tempfile.TemporaryDirectory(prefix="bench-reload-book-") as temp:
        source = args.book
        if source is None:
            source = Path(temp) / "book"
            size = ["--scale", str(args.scale)] if args.scale else ["--chapters", str(args.chapters), "--sections", str(args.sections)]
            subprocess.run([sys.executable, str(REPO / "scripts" / "gen_large_book.py"), str(source), *size], check=True)
        roots = [("code", args.code_root.resolve())] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
        found: dict[str, list[tuple[str, float, float]]] = {name: [] for name, _ in roots}
        rebuilds: dict[str, list[float]] = {name: [] for name, _ in roots}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
            for _ in range(args.rounds):
                for name, root in roots:
                    results, times = session(browser, root, source, args.edits, args.atomic_save, args.server_log)
                    found[name] += results
                    rebuilds[name] += times
            browser.close()
    load = os.getloadavg()[0]
    print(f"live reload, save to the reloaded page's load event (Chromium), load average {load:.1f} on {os.cpu_count()} cores")
    for name, root in roots:
        results = found[name]
        print(f"{name} ({root}):")
        for kind in ("open chapter", "other chapter's title"):
            times = [page for k, page, _ in results if k == kind]
            if times:
                print("  " + summary(kind, times, args.target))
        print("  " + summary("all", [page for _, page, _ in results], args.target))
        print(f"  as Playwright saw the load event: median {statistics.median(seen for _, _, seen in results) * 1000:.0f} ms")
        if rebuilds[name]:
            print(f"  the server's rebuilds: median {statistics.median(rebuilds[name]) * 1000:.0f} ms over {len(rebuilds[name])}")
    if args.baseline:
        code, base = (statistics.median(page for _, page, _ in found[name]) for name, _ in roots)
        print(f"ratio code/baseline (medians): {code / base:.2f}")
    if args.json:
        write_rows(args, found["code"], rebuilds["code"])


def write_rows(args: argparse.Namespace, results: list[tuple[str, float, float]], rebuilds: list[float]) -> None:
    """The median save-to-page time against the target, as one row of scripts/bench.py's contract."""
    pages = sorted(page for _, page, _ in results)
    median = statistics.median(pages)
    p90 = pages[min(len(pages) - 1, int(0.9 * len(pages)))]
    if args.book:
        size, book = f"--book {args.book}", f"{args.book.resolve().name} 1x"
    else:
        size = f"--scale {args.scale}" if args.scale else f"--chapters {args.chapters} --sections {args.sections}"
        book = f"generated {args.scale:g}x" if args.scale else f"generated, {args.chapters} chapters"
    row = {"job": "live reload, saved chapter to reloaded page", "book": book, "ours_s": median,
           "peer": "none (an absolute target)", "peer_s": None, "ratio": None, "target": args.target, "target_unit": " s",
           "met": median <= args.target, "measure": "wall time against the target",
           "command": f"python scripts/bench_reload.py {size} --edits {args.edits}",
           "note": f"median of {len(pages)} saves in Chromium; p90 {p90 * 1000:.0f} ms; the server's own rebuild: median "
                   f"{statistics.median(rebuilds) * 1000 if rebuilds else float('nan'):.0f} ms"}
    args.json.write_text(json.dumps({"rows": [row]}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
