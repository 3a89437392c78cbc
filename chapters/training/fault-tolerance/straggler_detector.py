#!/usr/bin/env python3
"""Find ranks that are persistently slower than their peers, from per-rank step times.

Input: one record per (step, rank) with the seconds that rank spent on its own work in
that step, as CSV with a header naming the columns `step`, `rank` and `seconds` (other
columns are ignored), or as JSON lines with the same keys. Measure the time a rank is
busy (forward, backward, optimizer; data loading if you suspect it), not the wall time
of the whole step: in synchronous training every rank waits for the slowest one in the
next collective, so whole-step times look the same on every rank.

For every step the script takes the median m and the median absolute deviation MAD of
the times across ranks, and scores each rank with a robust z-score,

    z = (seconds - m) / (1.4826 * max(MAD, --mad-floor * m)),

the modified z-score of Iglewicz and Hoaglin (1.4826 = 1 / 0.6745 makes the MAD of
normally distributed noise comparable to a standard deviation; the floor keeps a
near-zero MAD from turning a 1% difference into a huge score). A rank-step with
z > --threshold is slow. A rank is a straggler when at least --persistence of its last
--window steps are slow; a rank with slow steps that never reaches that count had
transient spikes. Because every step is scored against that step's own median, a
slowdown of the whole job (a storage stall, congestion, a slow shared service) moves
the median and flags nobody; steps whose median exceeds --cluster-factor times the
median of all step medians are reported separately as cluster-wide slow steps.

For each straggler the report gives the step at which it was flagged, the first slow
step of that run (onset), its median score and slowdown, and the seconds the job lost
to it: in synchronous training a step lasts as long as its slowest rank, so on every
step where the rank was the slowest, the time above the second-slowest rank is the
time the job would have saved without it.

    straggler_detector.py steps.csv
    straggler_detector.py steps.jsonl --window 50 --persistence 20 --json
    straggler_detector.py --synthetic                  # analyse a built-in example
    straggler_detector.py --synthetic --emit > s.csv   # write the example as CSV

Exit status: 0 when no rank is a straggler, 1 when at least one is, 2 for a usage
error or unreadable input. The standard library is enough.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import random
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

MAD_TO_SIGMA = 1.4826  # 1 / 0.6745: the MAD of normal noise times this estimates its standard deviation


class InputError(ValueError):
    """The input cannot be read as step times."""


# ---------------------------------------------------------------- reading

def _record(step, rank, seconds, where: str) -> tuple[int, int, float]:
    try:
        s, r, t = int(step), int(rank), float(seconds)
    except (TypeError, ValueError):
        raise InputError(f"{where}: step and rank must be integers and seconds a number, "
                         f"got step={step!r} rank={rank!r} seconds={seconds!r}") from None
    if s < 0 or r < 0:
        raise InputError(f"{where}: step and rank must not be negative")
    if not t >= 0 or t == float("inf"):
        raise InputError(f"{where}: seconds must be a finite number >= 0, got {seconds!r}")
    return s, r, t


def parse(text: str, fmt: str = "auto") -> dict[int, dict[int, float]]:
    """Step -> rank -> seconds, from CSV or JSON lines text."""
    stripped = text.lstrip()
    if fmt == "auto":
        fmt = "jsonl" if stripped.startswith("{") else "csv"
    records: list[tuple[int, int, float]] = []
    if fmt == "jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(f"line {lineno}: not JSON ({err.msg})") from None
            if not isinstance(obj, dict) or not {"step", "rank", "seconds"} <= obj.keys():
                raise InputError(f"line {lineno}: need an object with the keys step, rank and seconds")
            records.append(_record(obj["step"], obj["rank"], obj["seconds"], f"line {lineno}"))
    else:
        reader = csv.DictReader(io.StringIO(text))
        names = {n.strip().lower(): n for n in (reader.fieldnames or [])}
        missing = [k for k in ("step", "rank", "seconds") if k not in names]
        if missing:
            raise InputError(f"the CSV header must name the columns step, rank and seconds; missing: {', '.join(missing)}")
        for row in reader:
            lineno = reader.line_num
            if all(v in (None, "") for v in row.values()):
                continue
            records.append(_record(row[names["step"]], row[names["rank"]], row[names["seconds"]], f"line {lineno}"))
    table: dict[int, dict[int, float]] = {}
    for step, rank, seconds in records:
        per_step = table.setdefault(step, {})
        if rank in per_step:
            raise InputError(f"step {step}, rank {rank} appears twice")
        per_step[rank] = seconds
    if not table:
        raise InputError("no records in the input")
    ranks = {r for per_step in table.values() for r in per_step}
    if len(ranks) < 3:
        raise InputError(f"need at least 3 ranks to compare ranks with each other, got {len(ranks)}")
    return table


# ---------------------------------------------------------------- synthetic example

@dataclass
class Scenario:
    ranks: int = 16
    steps: int = 200
    seed: int = 0
    base: float = 1.0          # seconds of work per step on a healthy rank
    noise: float = 0.02        # relative standard deviation of the per-rank noise
    slow: tuple[int, float, int] | None = (11, 1.12, 80)  # rank, factor, first step
    spikes: list[tuple[int, int, float]] = field(default_factory=lambda: [(3, 50, 2.5)])  # rank, step, factor
    cluster: list[tuple[int, int, float]] = field(default_factory=lambda: [(120, 129, 1.4)])  # first, last, factor


def synthetic(sc: Scenario) -> dict[int, dict[int, float]]:
    """Seeded per-rank step times with a slow rank, one-off spikes and whole-job slowdowns, rounded to 0.1 ms."""
    rng = random.Random(sc.seed)
    table: dict[int, dict[int, float]] = {}
    for step in range(sc.steps):
        factor_all = 1.0
        for first, last, factor in sc.cluster:
            if first <= step <= last:
                factor_all *= factor
        per_step = {}
        for rank in range(sc.ranks):
            t = sc.base * max(0.5, 1.0 + rng.gauss(0.0, sc.noise)) * factor_all
            if sc.slow and rank == sc.slow[0] and step >= sc.slow[2]:
                t *= sc.slow[1]
            for s_rank, s_step, factor in sc.spikes:
                if rank == s_rank and step == s_step:
                    t *= factor
            per_step[rank] = round(t, 4)
        table[step] = per_step
    return table


def to_csv(table: dict[int, dict[int, float]]) -> str:
    lines = ["step,rank,seconds"]
    for step in sorted(table):
        for rank in sorted(table[step]):
            lines.append(f"{step},{rank},{table[step][rank]:.4f}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- analysis

@dataclass
class Params:
    window: int = 20
    persistence: int = 10
    threshold: float = 3.5
    mad_floor: float = 0.01
    cluster_factor: float = 1.2


@dataclass
class Straggler:
    rank: int
    flagged_at: int          # the step at which the persistence count was reached
    onset: int               # the first slow step of the window that reached it
    slow_steps: int          # slow steps over the whole input
    slow_in_last_window: int
    median_z: float          # over its slow steps
    median_slowdown: float   # seconds / step median, over its slow steps
    lost_seconds: float      # time the job waited for this rank beyond the second-slowest rank
    slow_step_list: list[int]


@dataclass
class Transient:
    rank: int
    steps: list[int]
    max_slowdown: float


@dataclass
class ClusterSlow:
    first: int
    last: int
    median_seconds: float
    factor: float            # step median / median of all step medians, highest in the range


@dataclass
class Report:
    params: Params
    ranks: int
    steps: int
    first_step: int
    last_step: int
    typical_step_seconds: float
    job_seconds: float       # sum over steps of the slowest rank's time: what synchronous training paid
    stragglers: list[Straggler]
    transients: list[Transient]
    cluster_slow: list[ClusterSlow]


def step_scores(per_step: dict[int, float], mad_floor: float) -> tuple[float, float, dict[int, float]]:
    """(median, MAD, rank -> robust z) of one step."""
    values = list(per_step.values())
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    scale = MAD_TO_SIGMA * max(mad, mad_floor * med)
    if scale == 0.0:  # every time is exactly 0: nothing to compare
        return med, mad, {r: 0.0 for r in per_step}
    return med, mad, {r: (v - med) / scale for r, v in per_step.items()}


def analyse(table: dict[int, dict[int, float]], p: Params) -> Report:
    steps = sorted(table)
    ranks = sorted({r for per_step in table.values() for r in per_step})
    medians: dict[int, float] = {}
    slow: dict[int, list[int]] = {r: [] for r in ranks}
    z_of: dict[tuple[int, int], float] = {}
    lost: dict[int, float] = {r: 0.0 for r in ranks}
    job = 0.0
    flagged: dict[int, tuple[int, int]] = {}
    recent: dict[int, list[tuple[int, bool]]] = {r: [] for r in ranks}  # (step, slow) over the last --window
    for step in steps:
        per_step = table[step]
        med, _, scores = step_scores(per_step, p.mad_floor)
        medians[step] = med
        for rank, z in scores.items():
            z_of[(step, rank)] = z
            is_slow = z > p.threshold
            if is_slow:
                slow[rank].append(step)
            window = recent[rank]
            window.append((step, is_slow))
            if len(window) > p.window:
                window.pop(0)
            if rank not in flagged and sum(flag for _, flag in window) >= p.persistence:
                onset = next(s for s, flag in window if flag)
                flagged[rank] = (step, onset)
        ordered = sorted(per_step.items(), key=lambda kv: (-kv[1], kv[0]))
        (top_rank, top), (_, second) = ordered[0], ordered[1]
        job += top
        if z_of[(step, top_rank)] > p.threshold:
            lost[top_rank] += top - second

    typical = statistics.median(medians.values())
    stragglers = []
    transients = []
    for rank in ranks:
        if not slow[rank]:
            continue
        ratios = [table[s][rank] / medians[s] if medians[s] else 0.0 for s in slow[rank]]
        if rank in flagged:
            at, onset = flagged[rank]
            stragglers.append(Straggler(
                rank=rank, flagged_at=at, onset=onset, slow_steps=len(slow[rank]),
                slow_in_last_window=sum(flag for _, flag in recent[rank]),
                median_z=round(statistics.median(z_of[(s, rank)] for s in slow[rank]), 2),
                median_slowdown=round(statistics.median(ratios), 4),
                lost_seconds=round(lost[rank], 4), slow_step_list=slow[rank]))
        else:
            transients.append(Transient(rank=rank, steps=slow[rank], max_slowdown=round(max(ratios), 4)))

    cluster: list[ClusterSlow] = []
    for i, step in enumerate(steps):
        factor = medians[step] / typical if typical else 1.0
        if factor <= p.cluster_factor:
            continue
        if cluster and i and cluster[-1].last == steps[i - 1]:
            c = cluster[-1]
            c.last = step
            c.median_seconds = round(max(c.median_seconds, medians[step]), 4)
            c.factor = round(max(c.factor, factor), 3)
        else:
            cluster.append(ClusterSlow(step, step, round(medians[step], 4), round(factor, 3)))
    return Report(params=p, ranks=len(ranks), steps=len(steps), first_step=steps[0], last_step=steps[-1],
                  typical_step_seconds=round(typical, 4), job_seconds=round(job, 4), stragglers=stragglers, transients=transients,
                  cluster_slow=cluster)


# ---------------------------------------------------------------- output

def _steps_text(steps: list[int], limit: int = 12) -> str:
    """Compress a sorted step list into ranges: 3, 7-9, 12."""
    ranges: list[list[int]] = []
    for s in steps:
        if ranges and s == ranges[-1][1] + 1:
            ranges[-1][1] = s
        else:
            ranges.append([s, s])
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in ranges]
    if len(parts) > limit:
        parts = parts[:limit] + [f"... ({len(parts) - limit} more ranges)"]
    return ", ".join(parts)


def render(rep: Report) -> str:
    p = rep.params
    out = [f"{rep.ranks} ranks, {rep.steps} steps ({rep.first_step}-{rep.last_step}), "
           f"typical step median {rep.typical_step_seconds:.4f} s, job time {rep.job_seconds:.2f} s "
           "(sum of the slowest rank per step)",
           f"rule: robust z > {p.threshold:g} (MAD floor {p.mad_floor:g} x median) on at least "
           f"{p.persistence} of a rank's last {p.window} steps", ""]
    if rep.stragglers:
        out.append(f"STRAGGLERS: {len(rep.stragglers)}")
        for s in rep.stragglers:
            out.append(f"  rank {s.rank}: flagged at step {s.flagged_at} (slow since step {s.onset}), "
                       f"{s.slow_steps} slow steps, {s.slow_in_last_window} of the last {p.window}")
            share = 100 * s.lost_seconds / rep.job_seconds if rep.job_seconds else 0.0
            out.append(f"    median z {s.median_z:.1f}, median {100 * (s.median_slowdown - 1):+.1f}% against the "
                       f"step median; the job waited {s.lost_seconds:.2f} s for it beyond the next-slowest rank "
                       f"({share:.1f}% of the job time)")
            out.append(f"    slow steps: {_steps_text(s.slow_step_list)}")
    else:
        out.append("stragglers: none")
    if rep.transients:
        out.append(f"transient spikes (not persistent, not flagged): {len(rep.transients)}")
        for t in rep.transients:
            word = "step" if len(t.steps) == 1 else "steps"
            out.append(f"  rank {t.rank}: {word} {_steps_text(t.steps)}, up to {100 * (t.max_slowdown - 1):+.1f}%")
    else:
        out.append("transient spikes: none")
    if rep.cluster_slow:
        out.append(f"cluster-wide slow steps (every rank slow, no rank to blame): {len(rep.cluster_slow)}")
        for c in rep.cluster_slow:
            span = f"step {c.first}" if c.first == c.last else f"steps {c.first}-{c.last}"
            out.append(f"  {span}: step median up to {c.median_seconds:.4f} s, {c.factor:.2f}x the typical step")
    else:
        out.append("cluster-wide slow steps: none")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- command line

def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _positive(text: str) -> float:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def _tuple(text: str, kinds: tuple, what: str):
    parts = text.split(":")
    if len(parts) != len(kinds):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    try:
        return tuple(k(v) for k, v in zip(kinds, parts))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def _slow(text: str):
    if text == "none":
        return None
    return _tuple(text, (int, float, int), "RANK:FACTOR:FROM_STEP or none")


def _spike(text: str):
    return _tuple(text, (int, int, float), "RANK:STEP:FACTOR")


def _cluster(text: str):
    return _tuple(text, (int, int, float), "FIRST:LAST:FACTOR")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Exit status: 0 no straggler, 1 straggler(s) found, 2 usage or input error.")
    parser.add_argument("input", nargs="?", help="CSV or JSON lines file of step,rank,seconds ('-' for stdin)")
    parser.add_argument("--format", choices=("auto", "csv", "jsonl"), default="auto",
                        help="input format (default: auto, JSON lines if the text starts with '{')")
    d = Params()
    parser.add_argument("--window", type=_positive_int, default=d.window,
                        help=f"steps per rank the persistence count looks back over (default {d.window})")
    parser.add_argument("--persistence", type=_positive_int, default=d.persistence,
                        help=f"slow steps within the window that make a straggler (default {d.persistence})")
    parser.add_argument("--threshold", type=_positive, default=d.threshold,
                        help=f"robust z-score above which a rank-step is slow (default {d.threshold})")
    parser.add_argument("--mad-floor", type=_non_negative, default=d.mad_floor,
                        help=f"lower bound of the MAD as a fraction of the step median (default {d.mad_floor})")
    parser.add_argument("--cluster-factor", type=_positive, default=d.cluster_factor,
                        help="a step whose median exceeds this many times the typical step median is reported "
                             f"as cluster-wide slow (default {d.cluster_factor})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    g = parser.add_argument_group("synthetic example")
    s = Scenario()
    g.add_argument("--synthetic", action="store_true", help="generate seeded example data instead of reading a file")
    g.add_argument("--emit", action="store_true", help="with --synthetic: print the data as CSV and stop")
    g.add_argument("--ranks", type=_positive_int, default=s.ranks, help=f"ranks (default {s.ranks})")
    g.add_argument("--steps", type=_positive_int, default=s.steps, help=f"steps (default {s.steps})")
    g.add_argument("--seed", type=int, default=s.seed, help=f"random seed (default {s.seed})")
    g.add_argument("--noise", type=_non_negative, default=s.noise,
                   help=f"relative standard deviation of the noise (default {s.noise})")
    g.add_argument("--slow", type=_slow, default=s.slow, metavar="RANK:FACTOR:FROM",
                   help="a rank that becomes FACTOR times slower from step FROM on, or 'none' "
                        "(default 11:1.12:80)")
    g.add_argument("--spike", type=_spike, action="append", metavar="RANK:STEP:FACTOR",
                   help="a one-off slow step; repeatable (default 3:50:2.5)")
    g.add_argument("--cluster-slowdown", type=_cluster, action="append", metavar="FIRST:LAST:FACTOR",
                   help="every rank FACTOR times slower from step FIRST to LAST; repeatable (default 120:129:1.4)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.persistence > args.window:
        parser.error(f"--persistence ({args.persistence}) cannot exceed --window ({args.window})")
    if args.synthetic == bool(args.input):
        parser.error("give either an input file or --synthetic")
    if args.emit and not args.synthetic:
        parser.error("--emit only works with --synthetic")
    if args.synthetic:
        sc = Scenario(ranks=args.ranks, steps=args.steps, seed=args.seed, noise=args.noise, slow=args.slow,
                      spikes=args.spike if args.spike is not None else Scenario().spikes,
                      cluster=args.cluster_slowdown if args.cluster_slowdown is not None else Scenario().cluster)
        if sc.ranks < 3:
            parser.error("--ranks must be at least 3")
        for rank in ([sc.slow[0]] if sc.slow else []) + [sp[0] for sp in sc.spikes]:
            if rank >= sc.ranks:
                parser.error(f"rank {rank} does not exist with --ranks {sc.ranks}")
        table = synthetic(sc)
        if args.emit:
            sys.stdout.write(to_csv(table))
            return 0
    else:
        try:
            text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
            table = parse(text, args.format)
        except OSError as err:
            parser.error(f"cannot read {args.input}: {err.strerror}")
        except InputError as err:
            parser.error(f"{args.input}: {err}")
    params = Params(window=args.window, persistence=args.persistence, threshold=args.threshold,
                    mad_floor=args.mad_floor, cluster_factor=args.cluster_factor)
    rep = analyse(table, params)
    if args.json:
        print(json.dumps(asdict(rep), indent=1))
    else:
        sys.stdout.write(render(rep))
    return 1 if rep.stragglers else 0


if __name__ == "__main__":
    sys.exit(main())
