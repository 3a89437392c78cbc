"""`tools check-links --html`: an independent cross-check of the built site with LinkChecker (the PyPI package).

The site is built in local mode into a temporary folder, LinkChecker follows every page with anchor checking on
(`tools/checks/links/linkcheckerrc`, package data), and each finding is mapped back to the link of the chapter that produced
it: the page tells the chapter, the URL written in the page tells which of the chapter's links it is (the site's own
link policy gives every link's URL), so the finding gets the chapter's `file:line:col`.
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tools.book.model import Book
from tools.core.atomic import private_folder
from tools.core.bounded_run import run_bounded
from tools.core.errors import BookError, Diagnostics, Severity
from tools.core.resources import linkcheckerrc
from tools.core.safe_io import CONFIG_LIMIT, MIB, UnsafeFile, read_text, walk
from tools.render.policy import MultiPagePolicy

TIMEOUT = float(os.environ.get("TOOLS_LINKCHECKER_TIMEOUT") or 600)  # seconds LinkChecker may run in all
OUTPUT_LIMIT = 256 * MIB  # its CSV report; a site whose report is larger is not one this tool builds
FALLBACK_RC = "[checking]\nrecursionlevel=-1\nrobotstxt=0\n[filtering]\ncheckextern=0\n[output]\nwarnings=1\nstatus=0\n[AnchorCheck]\n"


@dataclass
class Finding:
    """One LinkChecker result, mapped back to the source when possible."""

    kind: str  # "broken", "anchor" or "warning"
    url: str  # the URL as written in the page
    page: str  # the page, relative to the site root
    message: str
    file: str = ""  # the chapter (relative to the book root), or the page when it comes from no chapter
    line: int = 0
    col: int = 0
    known: bool = False  # the local check reported the same place

    @property
    def code(self) -> str:
        return {"broken": "linkchecker-broken", "anchor": "linkchecker-anchor"}.get(self.kind, "linkchecker-warning")

    def as_json(self) -> dict:
        return {"kind": self.kind, "url": self.url, "page": self.page, "file": self.file, "line": self.line, "col": self.col, "message": self.message, "known": self.known}


@dataclass
class CrossCheck:
    findings: list[Finding] = field(default_factory=list)
    new: int = 0  # findings the local check did not have
    seconds: float = 0.0  # LinkChecker's own run time


def find_linkchecker() -> str:
    """The `linkchecker` program: beside this Python (the virtualenv) or on the PATH."""
    beside = Path(sys.executable).parent / "linkchecker"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("linkchecker")
    if not found:
        raise BookError("LinkChecker is not installed; run `.venv/bin/pip install linkchecker` (it is in the dev extra) or `make check-links-html`.")
    return found


def readable_by_all(folder: Path) -> None:
    """LinkChecker drops root privileges to `nobody`: let that user read the site it is given."""
    for current, _dirs, files in walk(folder):
        os.chmod(current, 0o755)
        for name in files:
            path = os.path.join(current, name)
            if not os.path.islink(path):  # chmod follows a link: never change a file outside the site
                os.chmod(path, 0o644)


def _rc_text(rc: Path | None) -> str:
    if rc is None:
        packaged = linkcheckerrc()
        return packaged.read_text(encoding="utf-8") if packaged.is_file() else FALLBACK_RC
    try:
        return read_text(rc, None, CONFIG_LIMIT, shown=str(rc))
    except UnsafeFile as exc:
        raise BookError(f"{exc}; --linkcheckerrc must be a LinkChecker configuration file (UTF-8 text).") from None


def run_linkchecker(site: Path, start_pages: list[str], rc: Path | None = None, threads: int | None = None, timeout: float | None = None) -> tuple[list[dict], float]:
    """Run LinkChecker over `site` from `start_pages` (relative to it); its CSV rows and its run time.

    It runs under a total deadline (its whole process group is ended then), and it only checks the syntax of any
    file: URL outside the site, so it never reads a file outside the site it was given.
    """
    program = find_linkchecker()
    config_copy = site.parent / "linkcheckerrc"
    config_copy.write_text(_rc_text(rc), encoding="utf-8")
    os.chmod(config_copy, 0o644)
    inside = site.resolve().as_uri().removeprefix("file:") + "/"
    command = [program, "-f", str(config_copy), "-o", "csv/utf-8", "--no-status", "--ignore-url", f"^file:(?!{re.escape(inside)})"]
    if threads is not None:
        command += ["-t", str(threads)]
    command += [(site / page).as_uri() for page in start_pages]
    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")
    limit = TIMEOUT if timeout is None else timeout
    started = time.perf_counter()
    try:
        done = run_bounded(command, site.parent, env, limit, keep=OUTPUT_LIMIT)
    except OSError as exc:
        raise BookError(f"LinkChecker could not start ({exc.strerror or exc}): {program}.") from None
    seconds = time.perf_counter() - started
    if done.timed_out:
        raise BookError(f"LinkChecker did not finish within {limit:g} s and was stopped; set TOOLS_LINKCHECKER_TIMEOUT to give it longer.")
    if done.returncode not in (0, 1):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise BookError(f"LinkChecker failed (exit status {done.returncode}): " + " / ".join(tail))
    if done.stdout_dropped:
        raise BookError(f"LinkChecker's report is larger than {OUTPUT_LIMIT // MIB} MiB; it was not read.")
    return parse_csv(done.stdout.decode("utf-8", "replace")), seconds


def parse_csv(text: str) -> list[dict]:
    """LinkChecker's CSV: comment lines around a header and rows. A row may itself start with '#' (an in-page
    link such as `#missing`), so comments are told apart by having a single field, not by their first character."""
    start = text.find("urlname;")
    if start < 0:
        return []
    reader = csv.reader(io.StringIO(text[start:]), delimiter=";")
    header = next(reader, [])
    rows = []
    for fields in reader:
        if len(fields) < len(header) // 2:
            continue  # "# Stopped checking at ..." and other comments
        rows.append(dict(zip(header, fields)))
    return rows


def _page_of(url: str, site: Path) -> str:
    parts = urlsplit(url)
    path = Path(unquote(parts.path))
    try:
        return path.relative_to(site.resolve()).as_posix()
    except ValueError:
        try:
            return path.relative_to(site).as_posix()
        except ValueError:
            return path.as_posix()


def _classify(row: dict) -> tuple[str, str] | None:
    valid = (row.get("valid") or "").strip().lower() == "true"
    result = (row.get("result") or "").strip()
    warning = (row.get("warningstring") or "").strip()
    if not valid:
        return "broken", result or "the link does not work"
    if warning:
        if "Anchor" in warning and "not found" in warning:
            return "anchor", warning.split(" Available anchors")[0]
        return "warning", warning
    return None


def map_findings(book: Book, site: Path, rows: list[dict]) -> list[Finding]:
    """Attach every LinkChecker row that reports a problem to the chapter link that produced it."""
    policy = MultiPagePolicy(book, Diagnostics(), ".html", local=True)
    by_page = {policy.page_of(chapter.path): chapter for chapter in book.chapters}
    urls_cache: dict[str, dict[str, list]] = {}
    findings: list[Finding] = []
    seen: set[tuple] = set()
    for row in rows:
        classified = _classify(row)
        if classified is None:
            continue
        kind, message = classified
        url = row.get("urlname") or ""
        page = _page_of(row.get("parentname") or "", site)
        chapter = by_page.get(page)
        if chapter is None:
            key: tuple = (kind, url, page)
            if key not in seen:
                seen.add(key)
                findings.append(Finding(kind, url, page, message, file=page, line=int(row.get("line") or 0) if (row.get("line") or "").lstrip("-").isdigit() else 0))
            continue
        if chapter.path not in urls_cache:
            table: dict[str, list] = {}
            for link in chapter.links:
                rendered = policy.url_for(link) or ""
                table.setdefault(rendered, []).append(link)
                table.setdefault(unquote(rendered), []).append(link)
            urls_cache[chapter.path] = table
        links = urls_cache[chapter.path].get(url) or urls_cache[chapter.path].get(unquote(url)) or []
        if not links:
            key = (kind, url, chapter.path, 0)
            if key not in seen:
                seen.add(key)
                findings.append(Finding(kind, url, page, message, file=chapter.path))
            continue
        for link in links:
            key = (kind, url, link.source, link.line, link.col)
            if key in seen:
                continue
            seen.add(key)
            findings.append(Finding(kind, url, page, message, file=link.source, line=link.line, col=link.col))
    findings.sort(key=lambda f: (f.file, f.line, f.col, f.kind))
    return findings


def start_pages(book: Book) -> list[str]:
    policy = MultiPagePolicy(book, Diagnostics(), ".html", local=True)  # its page names: colliding chapters renamed
    return [policy.front] + [policy.page_of(chapter.path) for chapter in book.chapters]


def cross_check(book: Book, diagnostics: Diagnostics, rc: Path | None = None, keep_site: Path | None = None, threads: int | None = None, cache=None, known: Diagnostics | None = None) -> CrossCheck:
    """Build the site in local mode, run LinkChecker on it, add what only LinkChecker found to `diagnostics`."""
    from tools.render.site.write import build_site

    with private_folder("check-links-html-") as temp:
        os.chmod(temp, 0o755)
        site = temp / "site"
        build_site(book, site, Diagnostics(), local=True, cache=cache)
        readable_by_all(temp)
        pages = [page for page in dict.fromkeys(start_pages(book)) if (site / page).is_file()]
        rows, seconds = run_linkchecker(site, pages, rc=rc, threads=threads)
        findings = map_findings(book, site, rows)
        if keep_site is not None:
            shutil.copytree(site, keep_site, dirs_exist_ok=True)
    local = known if known is not None else diagnostics
    places = {(d.file, d.line, d.col) for d in local.items if d.severity in (Severity.ERROR, Severity.WARNING)}
    result = CrossCheck(findings, 0, seconds)
    for finding in findings:
        finding.known = (finding.file, finding.line, finding.col) in places
        if finding.known:
            continue
        result.new += 1
        where = "" if finding.file != finding.page else f" (in the generated page {finding.page}, not in a chapter)"
        text = f"LinkChecker: '{finding.url}' in {finding.page}: {finding.message}{where}"
        if finding.kind == "warning":
            diagnostics.warning(finding.file, finding.line, text, col=finding.col, code=finding.code)
        else:
            diagnostics.error(finding.file, finding.line, text, col=finding.col, code=finding.code, suggestion="The local check missed this; please report it.")
    return result
