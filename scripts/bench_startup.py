"""How long `tools` takes to start, against a bare `python -c pass` (issue 15: within 3x).

Each command runs in a fresh process, several times after one warm-up run (which writes the bytecode), and the
median wall time of the whole process is compared with the median of `python -c pass` run the same way:

    python scripts/bench_startup.py            # 21 runs each
    python scripts/bench_startup.py --runs 51

`tools check-links` runs on a small book made by `tools init` in a temporary folder (two chapters, an image, a code
block), as a user runs it again and again: with its cache (in the temporary folder), which the warm-up run fills. The numbers go into BENCHMARKS.md ("Start-up").
`python -X importtime -m tools --help` shows what a command imports.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 3.0  # issue 15: each command starts within 3x of `python -c pass`


def tools_command() -> list[str]:
    """`tools` as a user runs it: the script beside this interpreter, else `python -m tools`."""
    script = Path(sys.executable).parent / "tools"
    return [str(script)] if script.exists() and not os.environ.get("PYTHONPATH") else [sys.executable, "-m", "tools"]


def child_environment(folder: Path) -> dict[str, str]:
    """Bytecode on, kept in a folder of its own (as an installed package has its .pyc files): with
    PYTHONDONTWRITEBYTECODE set, every run would compile the tool's modules again and time the compiler."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


def timings(command: list[str], runs: int, cwd: Path, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall seconds (start to exit) and CPU seconds (user + system) of `runs` fresh processes, after one warm-up run.
    The CPU time says how much work a start is when other processes share the machine and stretch the wall time."""
    walls, cpus = [], []
    for number in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited with {done.returncode}:\n{done.stderr}")
        if number:
            walls.append(took)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs per command (default: 21)")
    args = parser.parse_args()
    tools = tools_command()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        work = Path(folder)
        book = work / "book"
        subprocess.run([*tools, "init", str(book)], check=True, stdout=subprocess.DEVNULL)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "tools --help": [*tools, "--help"],
            "tools build --help": [*tools, "build", "--help"],
            "tools check-links (small book)": [*tools, "check-links", "--book", str(book)],
        }
        env = child_environment(work)
        results = {name: timings(command, args.runs, work, env) for name, command in commands.items()}
    base_wall, base_cpu = (statistics.median(values) for values in results["python -c pass"])
    print(f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}; "
          f"median of {args.runs} fresh processes; `tools` is {' '.join(Path(part).name for part in tools)}")
    print(f"{'command':<32} {'wall':>9} {'ratio':>7}  {'within ' + format(TARGET, 'g') + 'x':<9} {'cpu':>9} {'ratio':>7}")
    for name, (walls, cpus) in results.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        ratio = wall / base_wall
        verdict = "" if name == "python -c pass" else ("met" if ratio <= TARGET else "NOT met")
        print(f"{name:<32} {wall * 1000:>7.1f}ms {ratio:>6.2f}x  {verdict:<9} {cpu * 1000:>7.1f}ms {cpu / base_cpu:>6.2f}x")

if __name__ == "__main__":
    main()
