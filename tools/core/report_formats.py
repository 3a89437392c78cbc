"""The one printer of diagnostics: for people (text, coloured on a terminal), programs (json), GitHub Actions
(github) and code-scanning tools (sarif). Checks and builds produce `Diagnostic`s; only this module writes them
out: `print_diagnostics` for every command's stderr, `render` for `check-links --format`."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import click

from tools import __version__
from tools.core.errors import Diagnostic, Diagnostics, Severity

FORMAT_NAMES = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/mlbook/ml-engineering-book"

# Every code the checks emit, with one line a code-scanning tool shows as the rule's description.
RULES = {
    "missing-file": "A link points at a file that does not exist in the book.",
    "missing-image": "An image points at a file that does not exist in the book.",
    "missing-anchor": "A link's #fragment is not a heading id or anchor of the target chapter (GitHub rules, case-sensitive).",
    "directory-fragment": "A link puts a #fragment on a folder; GitHub drops it. Link to the folder's README.md#fragment.",
    "outside-root": "A link leaves the book's root folder; nothing outside it is published.",
    "not-a-chapter": "A link points at a markdown file that is not in the chapter list; the PDF and EPUB will not contain it.",
    "missing-chapter": "A chapter-list entry names a file that does not exist.",
    "duplicate-chapter": "A chapter is listed twice in the chapter list.",
    "bad-part": "A 'Part:' line of the chapter list has no title, or one with invisible characters or too long.",
    "empty-part": "A part of the chapter list holds no chapter.",
    "duplicate-part": "Two parts of the chapter list have the same title.",
    "chapter-outside-root": "A chapter-list entry lies outside the book's root folder.",
    "no-chapter-list": "The book has no chapter list.",
    "redirect": "A [redirects] entry of book.toml leads to no chapter, or its old path is a file of the book again.",
    "empty-link": "A link has an empty destination.",
    "nested-url": "A URL holds other URLs inside it, as if pasted into itself.",
    "not-utf8": "A chapter is not valid UTF-8.",
    "external-broken": "An external URL does not exist (HTTP 404, 410 or another 4xx, or an unknown host).",
    "external-forbidden": "An external URL refuses the checker (HTTP 401 or 403); check it in a browser.",
    "external-failed": "An external URL could not be checked (timeout, 5xx or 429 after every retry, connection error).",
    "external-redirect": "An external URL redirects permanently (HTTP 301/308 or a meta refresh); link to the final URL.",
    "external-redirect-temporary": "An external URL redirects temporarily (HTTP 302/303/307).",
    "linkchecker-broken": "LinkChecker found a broken link in the built site.",
    "linkchecker-anchor": "LinkChecker found a link to an anchor that the built page does not have.",
    "linkchecker-warning": "LinkChecker warned about a link in the built site.",
}


@dataclass
class Report:
    """What one run of check-links found, ready to be written in any format."""

    root: Path  # the book root
    diagnostics: Diagnostics
    summary: dict = field(default_factory=dict)  # counts: chapters, links, errors, warnings, external statuses, seconds
    external: list[dict] = field(default_factory=list)  # one entry per external URL checked (json only)
    linkchecker: list[dict] = field(default_factory=list)  # every LinkChecker finding, mapped to the source (json only)


def display_path(root: Path, file: str, base: Path | None = None) -> str:
    """`file` (relative to the book root) as a path relative to `base` (default: the current folder) when the book
    lies under it, so that editors and GitHub can open it; otherwise relative to the book root."""
    path = Path(file)
    full = path if path.is_absolute() else root / path
    base = (base or Path.cwd()).resolve()
    try:
        return full.resolve().relative_to(base).as_posix()
    except ValueError:
        return file


_SEVERITY_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _location(root: Path, diag: Diagnostic, base: Path | None) -> str:
    where = display_path(root, diag.file, base)
    if diag.line:
        where += f":{diag.line}"
        if diag.col:
            where += f":{diag.col}"
    return where


def text_line(diag: Diagnostic, location: str, color: bool) -> str:
    """`location: severity: message suggestion`, location bold and severity in its colour when `color`."""
    severity = f"{diag.severity.value}:"
    if color:
        location = click.style(location, bold=True)
        severity = click.style(severity, fg=_SEVERITY_COLORS[diag.severity], bold=True)
    text = f"{location}: {severity} {diag.message}"
    if diag.suggestion:
        text += f" {diag.suggestion}"
    return text


def print_diagnostics(diagnostics: Diagnostics) -> None:
    """Every diagnostic on stderr, located as the check wrote it (click drops the colour off a terminal)."""
    for diag in diagnostics.items:
        click.echo(text_line(diag, diag.location(), color=True), err=True)


def render_text(report: Report, color: bool = False, base: Path | None = None) -> str:
    lines = [text_line(diag, _location(report.root, diag, base), color) for diag in report.diagnostics.items]
    return "\n".join(lines) + ("\n" if lines else "")


def _finding(report: Report, diag: Diagnostic, base: Path | None) -> dict:
    return {
        "file": diag.file,
        "path": display_path(report.root, diag.file, base),
        "line": diag.line,
        "col": diag.col,
        "severity": diag.severity.value,
        "code": diag.code,
        "message": diag.message,
        "suggestion": diag.suggestion,
    }


def render_json(report: Report, base: Path | None = None) -> str:
    data = {
        "tool": "tools check-links",
        "version": __version__,
        "book": str(report.root),
        "summary": report.summary,
        "findings": [_finding(report, d, base) for d in report.diagnostics.items],
    }
    if report.external:
        data["external"] = report.external
    if report.linkchecker:
        data["linkchecker"] = report.linkchecker
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_GITHUB_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def render_github(report: Report, base: Path | None = None) -> str:
    """GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""
    base = base or Path(os.environ.get("GITHUB_WORKSPACE") or Path.cwd())
    lines = []
    for diag in report.diagnostics.items:
        props = [f"file={_escape_property(display_path(report.root, diag.file, base))}"]
        if diag.line:
            props.append(f"line={diag.line}")
            if diag.col:
                props.append(f"col={diag.col}")
        props.append(f"title={_escape_property(diag.code or 'check-links')}")
        message = diag.message + (f" {diag.suggestion}" if diag.suggestion else "")
        lines.append(f"::{_GITHUB_COMMANDS[diag.severity]} {','.join(props)}::{_escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def step_summary(report: Report) -> str:
    """A markdown table of the counts, for $GITHUB_STEP_SUMMARY."""
    rows = [f"| {key} | {value} |" for key, value in report.summary.items() if not isinstance(value, dict)]
    for key, value in report.summary.items():
        if isinstance(value, dict):
            rows += [f"| {key}: {name} | {count} |" for name, count in value.items()]
    return "### tools check-links\n\n| what | count |\n| --- | --- |\n" + "\n".join(rows) + "\n"


_SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_sarif(report: Report, base: Path | None = None) -> str:
    """SARIF 2.1.0, the format GitHub code scanning and many editors read."""
    used = sorted({d.code or "check-links" for d in report.diagnostics.items})
    rules = [
        {"id": code, "name": code, "shortDescription": {"text": RULES.get(code, "A link problem found by tools check-links.")}, "helpUri": INFORMATION_URI}
        for code in used
    ]
    rule_index = {code: number for number, code in enumerate(used)}
    results = []
    for diag in report.diagnostics.items:
        code = diag.code or "check-links"
        location: dict = {"artifactLocation": {"uri": display_path(report.root, diag.file, base)}}
        if diag.line:
            region = {"startLine": diag.line}
            if diag.col:
                region["startColumn"] = diag.col
            location["region"] = region
        text = diag.message + (f" {diag.suggestion}" if diag.suggestion else "")
        results.append({
            "ruleId": code,
            "ruleIndex": rule_index[code],
            "level": _SARIF_LEVELS[diag.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": location}],
        })
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tools check-links", "version": __version__, "informationUri": INFORMATION_URI, "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"


def render(report: Report, fmt: str, color: bool = False, base: Path | None = None) -> str:
    if fmt == "text":
        return render_text(report, color=color, base=base)
    if fmt == "json":
        return render_json(report, base=base)
    if fmt == "github":
        return render_github(report, base=base)
    if fmt == "sarif":
        return render_sarif(report, base=base)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMAT_NAMES)}")


def summary_line(report: Report) -> str:
    """One sentence for people: what was checked, what was found, how long it took."""
    s = report.summary
    errors, warnings = len(report.diagnostics.errors), len(report.diagnostics.warnings)
    chapters, links = s.get("chapters", 0), s.get("links", 0)
    parts = [f"Checked {chapters} chapter{'s' if chapters != 1 else ''}, {links} link{'s' if links != 1 else ''}"]
    if "external" in s:
        statuses = ", ".join(f"{count} {name}" for name, count in s["external"].items() if count) or "none"
        cached = s.get("external_from_cache", 0)
        parts.append(f"; external URLs: {statuses}" + (f" ({cached} from the cache)" if cached else ""))
    if "linkchecker" in s:
        parts.append(f"; LinkChecker: {s['linkchecker']} findings, {s.get('linkchecker_new', 0)} not found by the local check")
    seconds = s.get("seconds")
    timing = f" in {seconds:.2f}s" if isinstance(seconds, (int, float)) else ""
    return "".join(parts) + f"{timing}: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}."
