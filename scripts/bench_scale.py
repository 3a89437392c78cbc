#!/usr/bin/env python3
"""Time the site, the EPUB and check-links on books 1, 2, 5 and 10 times the upstream one; how they grow with size.

    python scripts/bench_scale.py [--book DIR | --generated] [--scales 1,2,5,10] [--repeat 3] [--seed 0] [--json PATH]
                                  [--plot PATH] [--queries "bandwidth,gpu memory,..."] [--no-search] [--keep DIR]

Each book N times the size is N copies of the real book (`--book`, default the upstream ML Engineering book in
../shared/corpus/ml-engineering; scripts/benchlib.py's `copy_book`: copy n in the folder `copy-n/`, the chapter
lists concatenated, the images copied along, committed to a git repository of its own), or with `--generated` a book
from scripts/gen_large_book.py (`--scale N`, `--seed`). Each job runs as a fresh process: `tools build html
--no-cache` (site, cold), `tools build epub --no-cache` (EPUB, cold), `tools check-links --no-cache` (cold) and
`tools check-links --cache-dir D` with D filled beforehand (warm). Rounds alternate over every size and job, and each
time is the median of --repeat rounds. The table gives each time and its ratio to the smallest size's; the target is
a ratio at most 1.1 times the size ratio (11x at 10x). Then, on the largest size's site served over HTTP, Chromium
(Debian's, through Playwright) types each query into the search box of a fresh page and the bytes of every response
the search fetches are summed; the largest is the search download (target: at most 1 MB). `--json` writes all of it,
`--plot` draws time against book size (PNG or SVG by its suffix) with matplotlib, run by the benchmark's environment's python
($BENCH_VENV, .cache/bench-venv) when this one has no matplotlib (`BENCH_PLOT_PYTHON` names another), else a plain SVG.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import http.server
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import BENCH_VENV, REAL_BOOK, chapters_of, copy_book, exit_on_term  # noqa: E402
from gen_large_book import generate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
JOBS = ("site", "epub", "check-links cold", "check-links warm")
QUERIES = "bandwidth,gpu memory,checkpoint,nccl all-reduce,throughput of the cluster,kv cache,a"
PLOT_PYTHON = os.environ.get("BENCH_PLOT_PYTHON") or os.environ.get("BENCH_PYTHON") or str(BENCH_VENV / "bin" / "python")
MB = 1_000_000


def command(job: str, book: Path, work: Path) -> list[str]:
    tools = [sys.executable, "-m", "tools"]
    if job == "site":
        return [*tools, "build", "html", "--no-cache", "--book", str(book), "--out", str(work / "site")]
    if job == "epub":
        return [*tools, "build", "epub", "--no-cache", "--book", str(book), "--out", str(work / "book.epub")]
    if job == "check-links cold":
        return [*tools, "check-links", "--no-cache", "--book", str(book)]
    return [*tools, "check-links", "--cache-dir", str(work / "links-cache"), "--book", str(book)]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: problems found in the book, which the run still measured
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def make_book(book: Path, scale: float, args: argparse.Namespace) -> dict:
    """The book `scale` times the size at `book`: copies of the real book, or a generated one; its size."""
    if args.generated:
        info = generate(book, seed=args.seed, scale=scale)
        return {"chapters": info["chapters"], "megabytes": info["bytes"] / MB, "links": info["links"], "images": info["images"]}
    label = copy_book(args.book, book, int(scale))
    chapters = chapters_of(book)
    return {"chapters": len(chapters), "megabytes": sum((book / chapter).stat().st_size for chapter in chapters) / MB,
            "links": int(scale) * links_of(args.book), "images": int(label.rsplit(",", 1)[1].split()[0]), "label": label}


@functools.cache
def links_of(book: Path) -> int:
    """The links `tools check-links` counts in `book` (each copy has as many)."""
    done = subprocess.run([sys.executable, "-m", "tools", "check-links", "--no-cache", "--format", "json", "--book", str(book)],
                          cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        return int(json.loads(done.stdout)["summary"]["links"])
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"tools check-links of {book} failed ({done.returncode}): {done.stderr[-2000:]}") from None


def search_downloads(site: Path, queries: list[str]) -> dict[str, int]:
    """Bytes of the responses each query's search fetches, in a fresh browser context (nothing cached)."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    found: dict[str, int] = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, headless=True)
            for query in queries:
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
                page.wait_for_load_state("networkidle")
                sizes: list[int] = []
                page.on("requestfinished", lambda request, sizes=sizes: sizes.append(request.sizes()["responseBodySize"]))
                page.fill("#search-input", query)
                page.wait_for_selector("#search-results:not([aria-busy]) li", timeout=60_000)
                page.wait_for_load_state("networkidle")
                found[query] = sum(sizes)
                context.close()
            browser.close()
    finally:
        server.shutdown()
    return found


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def plot(data: dict, path: Path) -> str:
    """Draw with matplotlib (this python's, else PLOT_PYTHON's); a plain SVG only when neither has it."""
    script = PLOT_SCRIPT.format(data=json.dumps(data), path=str(path))
    for python in (sys.executable, PLOT_PYTHON):
        if Path(python).exists() and subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            subprocess.run([python, "-c", script], check=True)
            return f"matplotlib ({python})"
    path.with_suffix(".svg").write_text(plain_svg(data), encoding="utf-8")
    return "plain SVG (matplotlib is not installed)"


PLOT_SCRIPT = """
import json, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
data = json.loads({data!r})
sizes = [s["megabytes"] for s in data["books"]]
fig, ax = plt.subplots(figsize=(7, 4.5))
for job, times in data["seconds"].items():
    ax.plot(sizes, times, marker="o", label=job)
base = data["seconds"]["site"][0]
ax.plot(sizes, [base * s / sizes[0] for s in sizes], linestyle="--", color="grey", label="site, linear")
ax.set_xlabel("book size (MB of markdown; 1x = the upstream book)")
ax.set_ylabel("seconds (median of %d runs)" % data["repeat"])
ax.set_title("Time against book size, %s" % data["date"][:10])
ax.set_xticks(sizes, ["%gx\\n%.1f MB" % (s["scale"], s["megabytes"]) for s in data["books"]])
ax.set_xlim(left=0)
ax.set_ylim(bottom=0)
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig({path!r})
"""


def plain_svg(data: dict) -> str:
    sizes = [s["megabytes"] for s in data["books"]]
    top = max(max(v) for v in data["seconds"].values()) or 1
    colours = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="640" height="400">', '<rect width="640" height="400" fill="white"/>']
    for (job, times), colour in zip(data["seconds"].items(), colours):
        points = " ".join(f"{60 + 540 * s / sizes[-1]:.1f},{360 - 320 * t / top:.1f}" for s, t in zip(sizes, times))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="70" y="{30 + 16 * list(data["seconds"]).index(job)}" fill="{colour}" font-size="12">{job}</text>')
    parts.append(f'<text x="320" y="390" text-anchor="middle" font-size="12">MB of markdown (up to {sizes[-1]:.1f}); seconds up to {top:.2f}</text>')
    return "\n".join(parts + ["</svg>", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,2,5,10", help="book sizes as multiples of the upstream book")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each time is the median")
    parser.add_argument("--book", type=Path, default=REAL_BOOK, help=f"the book to copy N times (default {REAL_BOOK})")
    parser.add_argument("--generated", action="store_true", help="generate each book (scripts/gen_large_book.py) instead of copying --book")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed (with --generated)")
    parser.add_argument("--json", type=Path, default=None, help="write the measurements here")
    parser.add_argument("--plot", type=Path, default=None, help="draw time against size here (.png or .svg)")
    parser.add_argument("--queries", default=QUERIES, help="comma-separated queries for the search download")
    parser.add_argument("--no-search", action="store_true", help="skip the search download (no browser)")
    parser.add_argument("--keep", type=Path, default=None, help="generate the books here and keep them")
    args = parser.parse_args()
    exit_on_term()
    scales = [float(s) for s in args.scales.split(",")]
    if args.repeat < 1 or not scales or any(s <= 0 for s in scales):
        parser.error("--repeat must be at least 1 and every scale above 0")
    if not args.generated and any(s != int(s) for s in scales):
        parser.error("copies of a book come in whole numbers: give --scales whole numbers, or --generated")
    temp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    root = args.keep or temp
    try:
        books = []
        for scale in scales:
            work = root / f"{scale:g}x"
            shutil.rmtree(work, ignore_errors=True)
            books.append({"scale": scale, **make_book(work / "book", scale, args), "work": work})
            timed(command("check-links warm", work / "book", work))  # fills the warm run's cache
        runs: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.repeat):
            for index, book in enumerate(books):
                for job in JOBS:
                    runs.setdefault((job, index), []).append(timed(command(job, book["work"] / "book", book["work"])))
        seconds = {job: [statistics.median(runs[(job, i)]) for i in range(len(books))] for job in JOBS}
        search = {} if args.no_search else search_downloads(books[-1]["work"] / "site", [q.strip() for q in args.queries.split(",") if q.strip()])
    finally:
        if args.keep is None:
            shutil.rmtree(temp, ignore_errors=True)
    machine = f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}, cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.2f}"
    print(f"machine: {machine}")
    print(f"{'book':>6} {'chapters':>8} {'MB':>6} {'links':>6}  " + "  ".join(f"{job:>22}" for job in JOBS))
    for i, book in enumerate(books):
        cells = [f"{seconds[job][i]:7.2f} s {seconds[job][i] / seconds[job][0]:6.2f}x" for job in JOBS]
        print(f"{book['scale']:>5g}x {book['chapters']:>8} {book['megabytes']:6.2f} {book['links']:>6}  " + "  ".join(f"{c:>22}" for c in cells))
    size_ratio = books[-1]["megabytes"] / books[0]["megabytes"]
    for job in JOBS:
        ratio = seconds[job][-1] / seconds[job][0]
        verdict = "ok" if ratio <= 1.1 * size_ratio else "OVER"
        print(f"{job}: {ratio:.2f}x at {size_ratio:.2f}x the size (target: at most {1.1 * size_ratio:.2f}x): {verdict}")
    if search:
        worst = max(search, key=lambda q: search[q])
        print("search downloads at the largest size: " + ", ".join(f"'{q}' {b / 1024:.0f} KiB" for q, b in search.items()))
        print(f"largest: '{worst}' {search[worst] / MB:.2f} MB (target: at most 1 MB): {'ok' if search[worst] <= MB else 'OVER'}")
    data = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "machine": machine,
            "repeat": args.repeat, "books": [{k: v for k, v in b.items() if k != "work"} for b in books],
            "jobs": list(JOBS), "seconds": seconds, "runs": {f"{job} {books[i]['scale']:g}x": r for (job, i), r in runs.items()},
            "search_bytes": search}
    if args.plot:
        print(f"plot: {args.plot} by {plot(data, args.plot)}")
    if args.json:
        data["rows"] = rows(data, books, seconds, search, size_ratio, args)
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def rows(data: dict, books: list[dict], seconds: dict, search: dict, size_ratio: float, args: argparse.Namespace) -> list[dict]:
    """scripts/bench.py's rows: each job at the largest size against the same job on the smallest book, and the
    largest search download against 1 MB."""
    largest, smallest = books[-1]["scale"], books[0]["scale"]
    name = "generated" if args.generated else args.book.resolve().name
    source = "--generated" if args.generated else f"--book {args.book}"
    plot_file = [str(args.plot.resolve().relative_to(REPO))] if args.plot and args.plot.resolve().is_relative_to(REPO) else []
    found = [{"job": f"{job} at {largest:g}x the book", "book": f"{name} {largest:g}x", "book_size": books[-1].get("label", ""), "ours_s": seconds[job][-1], "peer": f"the same at {smallest:g}x",
              "peer_s": seconds[job][0], "ratio": seconds[job][-1] / seconds[job][0], "target": round(1.1 * size_ratio, 2),
              "met": seconds[job][-1] / seconds[job][0] <= 1.1 * size_ratio, "measure": "wall time, larger book over smaller",
              "command": f"python scripts/bench_scale.py {source} --scales {args.scales} --repeat {args.repeat}",
              "note": f"{size_ratio:.2f}x the markdown; medians of {args.repeat}; times at every size: "
                      + ", ".join(f"{b['scale']:g}x {t:.2f} s" for b, t in zip(books, seconds[job])), "files": plot_file}
             for job in data["jobs"]]
    if search:
        worst = max(search, key=lambda q: search[q])
        found.append({"job": f"largest search download at {largest:g}x", "book": f"{name} {largest:g}x", "ours_s": None, "peer": "1 MB",
                      "peer_s": None, "ratio": search[worst] / MB, "target": 1.0, "met": search[worst] <= MB, "measure": "bytes over 1 MB",
                      "ours_text": f"{search[worst] / 1024:.0f} KiB", "peer_text": "none (an absolute target)",
                      "target_text": "at most 1 MB", "note": "Chromium, the largest of the queries: " + ", ".join(f"'{q}' {b / 1024:.0f} KiB" for q, b in search.items())})
    return found


if __name__ == "__main__":
    main()
