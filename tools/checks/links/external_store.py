"""What `check-links --external` remembers between runs (the outcome of each URL, cached in one JSON file) and
which lines `--changed-since` keeps (git's added lines)."""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.book.link_model import Status
from tools.core.errors import BookError
from tools.core.git import GitError, GitResult, run_git
from tools.core.safe_io import MIB, UnsafeFile, read_text

PERMANENT = {301, 308, "meta"}
CACHEABLE = {Status.OK, Status.REDIRECTED, Status.BROKEN, Status.FORBIDDEN}


@dataclass
class Outcome:
    """What one URL gave. `hops`: each redirect as [code or 'meta', the URL it led to]."""

    url: str
    status: Status
    code: int | None = None
    final_url: str = ""
    message: str = ""
    hops: list = field(default_factory=list)
    checked_at: float = 0.0
    attempts: int = 0
    cacheable: bool = False
    from_cache: bool = False

    @property
    def permanent_target(self) -> str:
        """Where the link should point: the URL reached after the leading permanent redirects ('' if none)."""
        target = ""
        for code, location in self.hops:
            if code not in PERMANENT:
                break
            target = location
        return target

    def to_cache(self) -> dict:
        return {"status": self.status.value, "code": self.code, "final_url": self.final_url, "message": self.message, "hops": self.hops, "checked_at": self.checked_at}

    @classmethod
    def load(cls, url: str, entry: dict) -> Outcome:
        return cls(url, Status(entry["status"]), entry.get("code"), entry.get("final_url", ""), entry.get("message", ""), [list(h) for h in entry.get("hops", [])], entry.get("checked_at", 0.0), 0, True, True)



class ExternalCache:
    """URL -> the last definite outcome, in one JSON file; entries older than `max_age_days` are stale."""

    def __init__(self, directory: Path | None, max_age_days: float) -> None:
        self.path = None if directory is None else directory / "external.json"
        self.max_age = max_age_days * 86400
        self.entries: dict[str, dict] = {}
        if self.path is not None and self.path.is_file():
            try:  # a FIFO or a huge file in the cache folder is ignored, not waited on
                data = json.loads(read_text(self.path, None, 256 * MIB))
                if isinstance(data, dict) and data.get("version") == 1 and isinstance(data.get("urls"), dict):
                    self.entries = data["urls"]
            except (OSError, ValueError, UnsafeFile):
                self.entries = {}

    def get(self, url: str, now: float | None = None) -> Outcome | None:
        entry = self.entries.get(url)
        if not entry:
            return None
        now = time.time() if now is None else now
        if now - entry.get("checked_at", 0) > self.max_age:
            return None
        try:
            return Outcome.load(url, entry)
        except (KeyError, ValueError):
            return None

    def put(self, outcome: Outcome) -> None:
        if outcome.cacheable:
            self.entries[outcome.url] = outcome.to_cache()
        else:
            self.entries.pop(outcome.url, None)

    def save(self) -> None:
        if self.path is None:
            return
        from tools.core.atomic import atomic_file

        horizon = time.time() - self.max_age
        kept = {url: entry for url, entry in sorted(self.entries.items()) if entry.get("checked_at", 0) >= horizon}
        try:
            with atomic_file(self.path) as temp:
                temp.write_text(json.dumps({"version": 1, "urls": kept}, indent=1, ensure_ascii=False), encoding="utf-8")
        except OSError:
            pass


def added_lines(root: Path, revision: str) -> dict[str, set[int] | None]:
    """Lines added since `revision` per file (relative to the book root); None: the whole file is new."""
    def git(*args: str) -> GitResult:
        try:
            return run_git(root, *args)
        except GitError as exc:
            raise BookError(f"--changed-since needs git: {exc}") from None

    check = git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if check.returncode != 0:
        raise BookError(f"--changed-since: '{revision}' is not a git revision of the repository at {root}.")
    diff = git("diff", "--unified=0", "--no-color", "--no-ext-diff", "--relative", revision, "--", ".")
    if diff.returncode != 0:
        raise BookError(f"--changed-since: git diff failed: {diff.stderr.strip()}")
    changed: dict[str, set[int] | None] = {}
    current: str | None = None
    for line in diff.stdout.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = None if name == "/dev/null" else (name[2:] if name.startswith("b/") else name)
            if current is not None:
                changed.setdefault(current, set())
        elif line.startswith("@@") and current is not None:
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or 1)
                lines = changed.get(current)
                if lines is not None:
                    lines.update(range(start, start + count))
    untracked = git("ls-files", "--others", "--exclude-standard", "--", ".")
    for name in untracked.stdout.splitlines():
        if name:
            changed[name] = None
    return changed
