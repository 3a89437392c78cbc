#!/usr/bin/env python
"""Run a benchmark a few times and answer good, bad or untestable in git bisect's exit codes.

    python bench_gate.py --record base.txt --metric 'step_ms=([0-9.]+)' -- python bench.py   # on a good commit
    git bisect start BAD GOOD
    git bisect run python /tmp/bench_gate.py --baseline-file base.txt --tolerance 0.2 \\
        --metric 'step_ms=([0-9.]+)' -- python bench.py
    python bench_gate.py demo                     # a throwaway repository with a regression, bisected

The command after -- runs --repeat times. The measured value of a run is the last match
of --metric (a regular expression with one group) in its standard output, or its wall
time in seconds without --metric. The median of the runs is compared with the baseline:
more than --tolerance above it (below it with --higher-is-better) is a regression, exit
status 1; otherwise 0. A run that fails, or prints no match, makes the commit
untestable, exit status 125, which git bisect run treats as "skip" (git-bisect(1)).
Keep this script and the baseline file outside the repository being bisected, so that
checking out old commits does not change them.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOOD, BAD, SKIP = 0, 1, 125


def measure(cmd: list[str], metric: str | None, timeout: float) -> float | None:
    start = time.perf_counter()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"bench_gate: {cmd[0]}: {exc}", file=sys.stderr)
        return None
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"bench_gate: the benchmark failed (exit {run.returncode}): {tail}", file=sys.stderr)
        return None
    if metric is None:
        return elapsed
    found = re.findall(metric, run.stdout)
    if not found:
        print(f"bench_gate: no match for {metric!r} in the benchmark's output", file=sys.stderr)
        return None
    return float(found[-1])


def gate(args: argparse.Namespace) -> int:
    values = []
    for _ in range(args.repeat):
        value = measure(args.cmd, args.metric, args.timeout)
        if value is None:
            print("verdict: untestable (exit 125, bisect skips this commit)")
            return SKIP
        values.append(value)
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    summary = f"median {median:.4g} over {len(values)} runs (min {min(values):.4g}, max {max(values):.4g})"
    if args.record:
        args.record.write_text(f"{median!r}\n")
        print(f"{summary}; recorded as the baseline in {args.record}")
        return GOOD
    baseline = float(args.baseline_file.read_text()) if args.baseline_file else args.baseline
    if args.higher_is_better:
        limit, bad = baseline * (1 - args.tolerance), median < baseline * (1 - args.tolerance)
    else:
        limit, bad = baseline * (1 + args.tolerance), median > baseline * (1 + args.tolerance)
    print(f"{summary}; baseline {baseline:.4g}, limit {limit:.4g}")
    if spread > args.tolerance:
        print(f"warning: the runs spread over {spread:.0%} of the median, more than the tolerance "
              f"({args.tolerance:.0%}); raise --repeat, or quiet the machine", file=sys.stderr)
    print("verdict: " + ("regression (exit 1)" if bad else "good (exit 0)"))
    return BAD if bad else GOOD


# ---------------------------------------------------------------------------------------------- demo
STEP = '''# {message}
import time
LAYERS = {layers}
ACCUMULATION = {accum}          # micro-batches per step
def layer(x):
    return sum(v * v for v in x) / len(x)
start = time.perf_counter()
for _ in range(ACCUMULATION):
    for _ in range(LAYERS):
        layer([0.5] * 100000)
print(f"step_ms={{(time.perf_counter() - start) * 1000:.2f}}")
'''
HISTORY = [  # (commit message, layers, accumulation): commit 5 changes a default by accident
    ("first version", 8, 1), ("add logging", 8, 1), ("refactor the data path", 8, 1),
    ("tidy imports", 8, 1), ("new config defaults", 8, 2), ("fix a typo", 8, 2),
    ("more tests", 8, 2), ("update the docs", 8, 2)]


def git(repo: Path, *args: str, when: int = 0) -> str:
    date = f"2026-01-01T00:{when:02d}:00+00:00"  # fixed dates: the same commit ids on every run
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def demo(args: argparse.Namespace) -> int:
    if shutil.which("git") is None:
        print("error: the demo needs git", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        repo, outside = Path(tmp) / "repo", Path(tmp)
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        git(repo, "config", "user.email", "demo@example.invalid")
        git(repo, "config", "user.name", "demo")
        for when, (message, layers, accum) in enumerate(HISTORY):
            (repo / "step.py").write_text(STEP.format(message=message, layers=layers, accum=accum))
            git(repo, "add", "step.py")
            git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", message, when=when)
        commits = git(repo, "log", "--reverse", "--format=%h %s").splitlines()
        print("history, oldest first:\n  " + "\n  ".join(commits))
        gate_copy = outside / "bench_gate.py"  # outside the repository, as git-bisect(1) advises
        shutil.copy(__file__, gate_copy)
        base = outside / "base.txt"
        git(repo, "checkout", "-q", commits[0].split()[0])
        metric = ["--metric", r"step_ms=([0-9.]+)", "--repeat", str(args.repeat), "--", sys.executable, "step.py"]
        subprocess.run([sys.executable, str(gate_copy), "--record", str(base), *metric], cwd=repo, check=True)
        git(repo, "checkout", "-q", "main")
        git(repo, "bisect", "start", "HEAD", commits[0].split()[0])
        run = subprocess.run(["git", "-C", str(repo), "bisect", "run", sys.executable, str(gate_copy),
                              "--baseline-file", str(base), "--tolerance", str(args.tolerance), *metric],
                             capture_output=True, text=True)
        found = re.search(r"^(\w+) is the first bad commit", run.stdout, re.M)
        steps = run.stdout.count("verdict:")
        git(repo, "bisect", "reset")
        if not found:
            print(run.stdout + run.stderr)
            return 1
        subject = git(repo, "log", "-1", "--format=%s", found[1]).strip()
        print(f"git bisect run tested {steps} commits; first bad commit: {found[1][:7]} {subject}")
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv[:1] == ["demo"]:
        parser = argparse.ArgumentParser(prog="bench_gate.py demo", description="Bisect a made-up regression.")
        parser.add_argument("--repeat", type=int, default=5, help="runs per commit (default: 5)")
        parser.add_argument("--tolerance", type=float, default=0.3, help="allowed slowdown (default: 0.3)")
        args = parser.parse_args(argv[1:])
        args.mode = "demo"
        return args
    cmd: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, cmd = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(prog="bench_gate.py", description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s [options] -- COMMAND [ARGS...]  |  %(prog)s demo")
    parser.add_argument("--repeat", type=int, default=5, help="runs per verdict (default: 5)")
    parser.add_argument("--metric", help="regular expression with one group: the number to compare "
                                         "(default: wall time of the command)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--baseline", type=float, help="the value of a good commit")
    source.add_argument("--baseline-file", type=Path, help="a file holding it (written by --record)")
    source.add_argument("--record", type=Path, help="measure, write the median to this file, exit 0")
    parser.add_argument("--tolerance", type=float, default=0.05, help="allowed relative change (default: 0.05)")
    parser.add_argument("--higher-is-better", action="store_true", help="for throughputs: lower values are bad")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per run (default: 600)")
    args = parser.parse_args(argv)
    args.cmd, args.mode = cmd, "gate"
    if not cmd:
        parser.error("no benchmark command: put it after --")
    if args.baseline is None and args.baseline_file is None and args.record is None:
        parser.error("one of --baseline, --baseline-file or --record is required")
    if args.baseline_file is not None and not args.baseline_file.is_file():
        parser.error(f"{args.baseline_file}: no such file")
    if args.repeat < 1 or not 0 <= args.tolerance < 1:
        parser.error("--repeat must be >= 1 and --tolerance between 0 and 1")
    if args.metric is not None:
        try:
            if re.compile(args.metric).groups != 1:
                parser.error("--metric needs exactly one group, e.g. 'step_ms=([0-9.]+)'")
        except re.error as exc:
            parser.error(f"--metric: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return demo(args) if args.mode == "demo" else gate(args)


if __name__ == "__main__":
    sys.exit(main())
