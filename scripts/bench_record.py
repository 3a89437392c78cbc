#!/usr/bin/env python3
"""Put a `make bench` run into the table at the top of BENCHMARKS.md, so a run is recorded without hand-editing.

    python scripts/bench_record.py RUN.json [--benchmarks BENCHMARKS.md] [--history scripts/benchmarks-history.md]
    python scripts/bench.py ... --json RUN.json --record      # the same, right after the run

RUN.json is what `scripts/bench.py --json` writes (date, machine, rows). The rows recorded are those with a target,
the floors (`"floor": true`) and those a script marks `"record": true`, each as one line of the table under
"## Current results": job, ours, baseline, ratio, target, date, machine, book (the cells as scripts/bench.py shows
them). A run replaces every line of each job it measured, on whatever book (so the real book's rows take the place
of the generated book's), in the place of the first; the lines of jobs it did not measure stay as they are (a run
of `--only site` leaves the PDF's lines alone); jobs new to the table come after the last line it replaced. The
lines replaced go to scripts/benchmarks-history.md as a short dated entry, the latest first, under "## Rows replaced
in BENCHMARKS.md". Both files are written whole (a temporary file renamed over each).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench import values  # noqa: E402

COLUMNS = ["job", "ours", "baseline", "ratio", "target", "date", "machine", "book"]
TABLE_HEADING = "## Current results"
HISTORY_HEADING = "## Rows replaced in BENCHMARKS.md"
HISTORY_INTRO = ("What `scripts/bench_record.py` took out of the table at the top of BENCHMARKS.md when a later run replaced it, the"
                 " latest first; each line keeps the date, machine and book it was measured on.")
PIPE = re.compile(r"(?<!\\)\|")


def recorded(row: dict) -> bool:
    return not row.get("status") and (row.get("target") is not None or bool(row.get("floor")) or bool(row.get("record")))


def line_of(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("\n", " ") for cell in cells) + " |"


def escape(text: str) -> str:
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def cells_of(row: dict, date: str, machine: str) -> list[str]:
    ours, peer, ratio, target = values(row)
    return [escape(str(cell)) for cell in (row["job"], ours, peer, ratio, target, date, machine, row.get("book", ""))]


def parse_line(line: str) -> list[str]:
    return [cell.strip() for cell in PIPE.split(line.strip().strip("|"))]


def find_table(lines: list[str], path: Path) -> tuple[int, int]:
    """The first and past-the-last line index of the table's body (after its header and rule) under TABLE_HEADING."""
    try:
        heading = next(i for i, line in enumerate(lines) if line.strip() == TABLE_HEADING)
        header = next(i for i in range(heading + 1, len(lines)) if lines[i].startswith("|"))
    except StopIteration:
        raise SystemExit(f"{path}: no table under '{TABLE_HEADING}'; put one there with the columns {', '.join(COLUMNS)}.") from None
    if [cell.lower() for cell in parse_line(lines[header])] != COLUMNS:
        raise SystemExit(f"{path}:{header + 1}: the table's columns are not {', '.join(COLUMNS)}; put them back so that runs can be recorded.")
    end = header + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return header + 2, end


def merge(old: list[list[str]], new: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
    """The table's lines after the run (see the module's docstring), and the old lines it replaced."""
    jobs = {cells[0] for cells in new}
    merged, replaced, placed = [], [], set()
    after = None  # where the jobs new to the table go: after the last line the run replaced
    for cells in old:
        job = cells[0]
        if job not in jobs:
            merged.append(cells)
            continue
        replaced.append(cells)
        if job not in placed:
            placed.add(job)
            merged += [line for line in new if line[0] == job]
            after = len(merged)
    fresh = [line for line in new if line[0] not in placed]
    at = len(merged) if after is None else after
    return merged[:at] + fresh + merged[at:], replaced


def write(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.recording")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def history_text(text: str, entry: list[str]) -> str:
    lines = text.splitlines()
    try:
        at = next(i for i, line in enumerate(lines) if line.strip() == HISTORY_HEADING) + 1
        while at < len(lines) and not lines[at].startswith("###") and not lines[at].startswith("## "):
            at += 1  # past the section's introduction, before its latest entry
    except StopIteration:
        first = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
        lines[first:first] = [HISTORY_HEADING, "", HISTORY_INTRO, ""]
        at = first + 4
    lines[at:at] = entry + [""]
    return "\n".join(lines) + "\n"


def record(run: dict, benchmarks: Path, history: Path) -> str:
    """Put `run` (scripts/bench.py's --json) into `benchmarks`' table and what it replaced into `history`; returns a
    sentence saying what changed."""
    date, machine = str(run.get("date", ""))[:10], str(run.get("machine", ""))
    rows = [row for row in run.get("rows", []) if isinstance(row, dict) and "job" in row]
    new = [cells_of(row, date, machine) for row in rows if recorded(row)]
    if not new:
        return f"nothing to record: the run has no row with a target or a floor (of {len(rows)} rows); {benchmarks} is unchanged."
    lines = benchmarks.read_text(encoding="utf-8").splitlines()
    first, end = find_table(lines, benchmarks)
    merged, replaced = merge([parse_line(line) for line in lines[first:end]], new)
    lines[first:end] = [line_of(cells) for cells in merged]
    write(benchmarks, "\n".join(lines) + "\n")
    if replaced:
        when = str(run.get("date", "")).replace("T", " ")[:16]
        kind = "a `scripts/bench.py --quick` run" if run.get("quick") else "a `make bench` run"
        entry = [f"### Replaced on {date}, by {kind} of {when} UTC on {machine or 'an unnamed machine'}", "",
                 line_of(COLUMNS), "|" + " --- |" * len(COLUMNS), *(line_of(cells) for cells in replaced)]
        write(history, history_text(history.read_text(encoding="utf-8") if history.exists() else "# Benchmarks\n", entry))
    return (f"recorded {len(new)} rows of the run of {date} in {benchmarks}; {len(replaced)} rows it replaced went to {history}"
            if replaced else f"recorded {len(new)} rows of the run of {date} in {benchmarks}; it replaced none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the JSON `scripts/bench.py --json` wrote")
    parser.add_argument("--benchmarks", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--history", type=Path, default=REPO / "scripts" / "benchmarks-history.md")
    args = parser.parse_args()
    try:
        run = json.loads(args.run.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{args.run}: not a run scripts/bench.py --json wrote ({exc}); run `python scripts/bench.py --json {args.run}` first.") from None
    if not isinstance(run, dict) or not isinstance(run.get("rows"), list):
        raise SystemExit(f"{args.run}: it has no list of rows; give it the JSON `scripts/bench.py --json` writes.")
    print(record(run, args.benchmarks, args.history))


if __name__ == "__main__":
    main()
