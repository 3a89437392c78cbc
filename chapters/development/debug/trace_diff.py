#!/usr/bin/env python
"""Compare two profiler traces operator by operator and list what changed most, by self time.

    python trace_diff.py before.json after.json            # Chrome traces from torch.profiler
    python trace_diff.py before.json after.json --cat kernel --top 15
    python trace_diff.py demo --out traces                 # record two CPU traces of a toy model, then compare

A trace from torch.profiler (prof.export_chrome_trace, or tensorboard_trace_handler)
lists every operator and kernel as a complete event with a start and a duration. Totals
per name double-count nesting (aten::linear contains aten::addmm), so the script first
computes each event's self time, its duration minus that of the events nested in it on
the same thread, then sums self time and counts calls per name in each trace, divides
by the number of profiled steps (user annotations named ProfilerStep#N, or --step-name),
and prints the names whose self time per step changed most. A new name, or a call count
that changed, usually points at the line of code that changed.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path


def load_events(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def self_times(events: list[dict]) -> list[tuple[dict, float]]:
    """(event, self time in microseconds) for every event, nesting resolved per (pid, tid)."""
    by_thread: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    out = []
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        children = [0.0] * len(thread_events)
        stack: list[int] = []
        for i, e in enumerate(thread_events):
            while stack and thread_events[stack[-1]]["ts"] + thread_events[stack[-1]]["dur"] <= e["ts"] + 1e-3:
                stack.pop()
            if stack:
                children[stack[-1]] += e["dur"]
            stack.append(i)
        out += [(e, max(0.0, e["dur"] - c)) for e, c in zip(thread_events, children)]
    return out


def summarize(path: Path, cats: set[str] | None, step_name: str) -> tuple[dict[str, list[float]], int, float]:
    """name -> [calls, self us]; the number of steps; the mean step duration in us (0 if no step events)."""
    events = load_events(path)
    steps = [e for e in events if e.get("cat") == "user_annotation" and re.fullmatch(step_name, e.get("name", ""))]
    table: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e, own in self_times(events):
        if e.get("cat") == "user_annotation" or (cats is not None and e.get("cat") not in cats):
            continue
        row = table[e["name"]]
        row[0] += 1
        row[1] += own
    mean_step = sum(e["dur"] for e in steps) / len(steps) if steps else 0.0
    return table, max(1, len(steps)), mean_step


def diff(a: Path, b: Path, cats: set[str] | None, step_name: str, top: int) -> str:
    ta, na, sa = summarize(a, cats, step_name)
    tb, nb, sb = summarize(b, cats, step_name)
    rows = []
    for name in set(ta) | set(tb):
        ca, ua = ta.get(name, [0, 0.0])
        cb, ub = tb.get(name, [0, 0.0])
        rows.append((name, ca / na, cb / nb, ua / na / 1000, ub / nb / 1000))
    rows.sort(key=lambda r: -abs(r[4] - r[3]))
    lines = []
    if sa and sb:
        lines.append(f"step time: {sa / 1000:.2f} ms -> {sb / 1000:.2f} ms ({(sb - sa) / sa:+.0%}), "
                     f"{na} and {nb} steps")
    total_a, total_b = sum(r[3] for r in rows), sum(r[4] for r in rows)
    lines.append(f"self time per step, all listed events: {total_a:.2f} ms -> {total_b:.2f} ms")
    lines.append(f"{'name':<34} {'calls/step':>17} {'self ms/step':>17} {'change':>8}")
    for name, ca, cb, ua, ub in rows[:top]:
        calls = f"{ca:g} -> {cb:g}"
        mark = "  new" if ca == 0 else ("  gone" if cb == 0 else ("  calls changed" if ca != cb else ""))
        lines.append(f"{name[:34]:<34} {calls:>17} {ua:7.2f} -> {ub:7.2f} {ub - ua:+8.2f}{mark}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- demo
def record(path: Path, regressed: bool, steps: int) -> None:
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    class ErfGELU(nn.Module):  # the "regression": GELU written out by hand, as a refactor might
        def forward(self, x):
            return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    act = ErfGELU if regressed else nn.GELU
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(128, 512), act(), nn.Linear(512, 128)) for _ in range(4))
    x0 = torch.randn(16, 64, 128)

    def step():
        x = x0
        for block in blocks:
            x = x + block(x)
        x.square().mean().backward()

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=2, active=steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(steps + 2):
            step()
            prof.step()


def run_demo(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    before, after = args.out / "before.json", args.out / "after.json"
    record(before, regressed=False, steps=args.steps)
    record(after, regressed=True, steps=args.steps)
    print(f"demo: wrote {before} and {after} ({args.steps} profiled steps each)\n")
    print(diff(before, after, {"cpu_op"}, args.step_name, args.top))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv[:1] == ["demo"]:
        parser = argparse.ArgumentParser(prog="trace_diff.py demo", description="Record and compare two CPU traces.")
        parser.add_argument("--out", type=Path, default=Path("traces"), help="folder for the traces (default: traces)")
        parser.add_argument("--steps", type=int, default=5, help="profiled steps per trace (default: 5)")
        parser.add_argument("--top", type=int, default=8, help="rows to print (default: 8)")
        args = parser.parse_args(argv[1:])
        args.mode, args.step_name = "demo", r"ProfilerStep#\d+"
        if not 1 <= args.steps <= 50:
            parser.error("--steps must be between 1 and 50")
        return args
    parser = argparse.ArgumentParser(prog="trace_diff.py", description=__doc__.split("\n\n")[0],
                                     epilog="`trace_diff.py demo --help` for the demo.")
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--cat", default="cpu_op,kernel",
                        help="event categories to compare, comma-separated, or 'all' (default: cpu_op,kernel)")
    parser.add_argument("--step-name", default=r"ProfilerStep#\d+",
                        help=r"regular expression for the step annotations (default: ProfilerStep#\d+)")
    parser.add_argument("--top", type=int, default=12, help="rows to print (default: 12)")
    args = parser.parse_args(argv)
    args.mode = "diff"
    for path in (args.before, args.after):
        if not path.is_file():
            parser.error(f"{path}: no such file")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.mode == "demo":
        return run_demo(args)
    cats = None if args.cat == "all" else set(args.cat.split(","))
    try:
        print(diff(args.before, args.after, cats, args.step_name, args.top))
    except (json.JSONDecodeError, KeyError) as exc:
        print(f"error: not a Chrome trace: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
