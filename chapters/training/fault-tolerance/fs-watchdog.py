#!/usr/bin/env python
"""Watch how full the filesystems behind some paths are, and raise an alert before they fill up.

A training run that cannot write its next checkpoint because the disk is full loses everything since the
last one; a full /tmp or home directory breaks jobs in stranger ways. This tool looks at the filesystem of
each given path (space and inodes, the same figures `df` and `df -i` show) and alerts when usage reaches a
threshold. It alerts once when a filesystem crosses the threshold and once more when it drops back below,
instead of repeating the same alert every interval.

Examples:

    fs-watchdog.py --once /checkpoints /tmp                   # one check, report, exit 1 if any is over
    fs-watchdog.py --threshold 85 --interval 600 /checkpoints # check every 10 minutes, forever
    fs-watchdog.py --alert-cmd 'mail -s "disk alert" me@example.com' /data

The alert command runs through the shell with the message on its standard input and in the environment:
FS_WATCHDOG_PATH, FS_WATCHDOG_KIND (space or inodes), FS_WATCHDOG_PERCENT, FS_WATCHDOG_THRESHOLD,
FS_WATCHDOG_STATE (over or ok) and FS_WATCHDOG_MESSAGE. Without --alert-cmd the message is printed.
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    path: str
    kind: str  # "space" or "inodes"
    used: int
    total: int  # what an unprivileged user can reach: used + available
    percent: int  # rounded up, as df does, so that 99.1% never shows as 99%

    def describe(self) -> str:
        if self.kind == "space":
            return (f"{self.path}: {self.percent}% of space used "
                    f"({human(self.used)} used, {human(self.total - self.used)} available)")
        return f"{self.path}: {self.percent}% of inodes used ({self.used:,} of {self.total:,})"


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError("unreachable")


def percent(used: int, total: int) -> int:
    return 0 if total <= 0 else math.ceil(100 * used / total)


def measure(path: str) -> list[Usage]:
    """Space and inode usage of the filesystem holding `path`, computed as df computes Use%."""
    st = os.statvfs(path)
    used_blocks = st.f_blocks - st.f_bfree
    reachable = used_blocks + st.f_bavail  # blocks reserved for root do not count as available
    out = [Usage(path, "space", used_blocks * st.f_frsize, reachable * st.f_frsize, percent(used_blocks, reachable))]
    if st.f_files > 0:  # some filesystems (btrfs, many network filesystems) report no inode limit
        used_inodes = st.f_files - st.f_ffree
        out.append(Usage(path, "inodes", used_inodes, st.f_files, percent(used_inodes, st.f_files)))
    return out


def alert(cmd: str | None, usage: Usage, threshold: int, state: str) -> None:
    if state == "over":
        message = f"ALERT {usage.describe()}, at or above the {threshold}% threshold"
    else:
        message = f"OK {usage.describe()}, back below the {threshold}% threshold"
    if not cmd:
        print(message, flush=True)
        return
    env = dict(os.environ, FS_WATCHDOG_PATH=usage.path, FS_WATCHDOG_KIND=usage.kind,
               FS_WATCHDOG_PERCENT=str(usage.percent), FS_WATCHDOG_THRESHOLD=str(threshold),
               FS_WATCHDOG_STATE=state, FS_WATCHDOG_MESSAGE=message)
    result = subprocess.run(cmd, shell=True, input=message + "\n", text=True, env=env)
    if result.returncode != 0:
        # A broken alert channel must not stop the watching; say so where someone may see it.
        print(f"fs-watchdog: alert command {shlex.quote(cmd)} exited {result.returncode}; message was: {message}",
              file=sys.stderr, flush=True)


def check(paths: list[str], threshold: int, inode_threshold: int, cmd: str | None,
          over: set[tuple[str, str]], verbose: bool) -> int:
    """One round over all paths. `over` remembers what is already alerted; returns how many are over now."""
    n_over = 0
    for path in paths:
        try:
            usages = measure(path)
        except OSError as e:
            print(f"fs-watchdog: cannot check {path}: {e.strerror}", file=sys.stderr, flush=True)
            n_over += 1  # an unreachable mount point is as much a problem as a full one
            continue
        for u in usages:
            limit = threshold if u.kind == "space" else inode_threshold
            key = (u.path, u.kind)
            if u.percent >= limit:
                n_over += 1
                if key not in over:
                    over.add(key)
                    alert(cmd, u, limit, "over")
            elif key in over:
                over.discard(key)
                alert(cmd, u, limit, "ok")
            if verbose:
                print(u.describe(), flush=True)
    return n_over


def threshold_type(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("a percentage between 0 and 100")
    return value


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0], epilog=doc.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", help="paths whose filesystems to watch")
    p.add_argument("--threshold", type=threshold_type, default=90,
                   help="alert when space usage reaches this percentage (default: 90)")
    p.add_argument("--inode-threshold", type=threshold_type, default=90,
                   help="alert when inode usage reaches this percentage (default: 90)")
    p.add_argument("--interval", type=float, default=300, help="seconds between checks (default: 300)")
    p.add_argument("--alert-cmd", help="shell command to run for each alert (default: print the alert)")
    p.add_argument("--once", action="store_true", help="check once and exit: 1 if any filesystem is over, else 0")
    p.add_argument("--verbose", "-v", action="store_true", help="also print the usage of every path at every check")
    args = p.parse_args(argv)

    over: set[tuple[str, str]] = set()
    while True:
        n_over = check(args.paths, args.threshold, args.inode_threshold, args.alert_cmd, over, args.verbose)
        if args.once:
            return 1 if n_over else 0
        time.sleep(args.interval)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
