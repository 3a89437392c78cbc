"""Every git command the tool runs: under a total deadline, in its own process group, never a traceback.

git can hang (an index lock, a hook, a credential prompt) or print without end, so it runs through
`bounded_run` like the book's scripts: stdin closed, the whole process group ended at the deadline, output
kept up to a bound. A git that is missing, hangs or prints too much is a `GitError`, an `OSError` whose
message is a sentence; helpers that only decorate an output (the revision on a cover, the repository path
of a file link) answer a neutral value instead.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tools.core.bounded_run import run_bounded

QUERY_DEADLINE = 10.0  # seconds for a question about the work tree (prefix, revision, status)
CHANGE_DEADLINE = 60.0  # seconds for a command that works on files (mv, diff)
OUTPUT_LIMIT = 32 * 1024 * 1024  # bytes of stdout kept; a diff larger than this is refused, not cut


class GitError(OSError):
    """git could not start, did not finish within its deadline, or printed more than `OUTPUT_LIMIT`."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_git(root: Path, *args: str, deadline: float = CHANGE_DEADLINE) -> GitResult:
    """Run `git ARGS` in `root`; a nonzero exit is a result, anything else that goes wrong is a `GitError`."""
    try:
        ran = run_bounded(["git", *args], cwd=root, env=dict(os.environ), timeout=deadline, keep=OUTPUT_LIMIT)
    except OSError as exc:
        raise GitError(f"git could not be started ({exc.strerror or exc})") from None
    if ran.timed_out or ran.returncode is None:
        raise GitError(f"git {args[0]} did not finish within {deadline:g} s")
    if ran.stdout_dropped:
        raise GitError(f"git {args[0]} printed more than {OUTPUT_LIMIT // (1024 * 1024)} MiB")
    return GitResult(ran.returncode, ran.stdout.decode("utf-8", "replace"), ran.stderr.decode("utf-8", "replace"))


def git_output(root: Path, *args: str) -> str | None:
    """The stripped output of a quick git query, or None when git fails, is missing or hangs."""
    try:
        done = run_git(root, *args, deadline=QUERY_DEADLINE)
    except GitError:
        return None
    return done.stdout.strip() if done.ok else None


@lru_cache(maxsize=64)
def repository_prefix(root: Path) -> str:
    """The book root's path inside its git work tree ('' at the top or outside git)."""
    return git_output(root, "rev-parse", "--show-prefix") or ""


def revision(root: Path) -> str:
    """Short commit id, with '+dirty' when the work tree has changes; '' outside git, where outputs say nothing of it."""
    commit = git_output(root, "rev-parse", "--short", "HEAD")
    if not commit:
        return ""
    dirty = git_output(root, "status", "--porcelain", "--untracked-files=no", "--", ".")
    return f"{commit}+dirty" if dirty else commit


def head_commit(root: Path) -> str:
    """The full id of HEAD, or '' outside git (or before the first commit)."""
    return git_output(root, "rev-parse", "--verify", "--quiet", "HEAD") or ""


_DATE = re.compile(r"\x01(\d{4}-\d\d-\d\dT[0-9:]+(?:Z|[+-]\d\d:\d\d))")


def last_commit_dates(root: Path) -> dict[str, str]:
    """{path relative to `root`: committer date (ISO 8601) of the last commit touching it}, from one `git log` over
    the root; {} outside git or when git fails. Uncommitted edits do not count: the date is the last commit's."""
    try:
        done = run_git(root, "-c", "core.quotePath=false", "log", "--format=%x01%cI", "--name-only", "-z", "--relative", "--", ".")
    except GitError:
        return {}
    if not done.ok:
        return {}
    dates: dict[str, str] = {}
    date = ""
    for field in done.stdout.split("\0"):  # "\x01DATE", then "\nfirst", "second", ... per commit, newest first
        found = _DATE.fullmatch(field)
        if found:
            date = found.group(1)
        elif field.strip("\n") and date:
            dates.setdefault(field.lstrip("\n"), date)
    return dates


def is_tracked(root: Path, rel: str) -> bool:
    """Whether git tracks `rel` (relative to `root`); False outside a work tree or when git fails."""
    if git_output(root, "rev-parse", "--is-inside-work-tree") != "true":
        return False
    return bool(git_output(root, "ls-files", "--", rel))
