"""The independent validators the tests run on the outputs, each as its maintainers ship it:

- the Nu HTML checker (npm `vnu-jar`, run with `java -jar`) on the site's pages, all pages of all sites in one JVM;
- DAISY Ace (npm `@daisy/ace`, its `ace-puppeteer` runner in Debian's Chromium) on an EPUB;
- `pdfua` (PyPI) on a PDF: the machine-checkable part of PDF/UA-1;
- axe-core (npm `axe-core`) in Chromium: tests/browser/support.py injects it.

`make test` installs them (scripts/install-node-deps.sh from package.json's devDependencies, `pdfua` from the dev
extra, Java from build/apt-packages.txt). Missing, a test skips on a reader's machine and fails under CI=true.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, require, require_tool

NODE_MODULES = REPO / "node_modules"
VNU_JAR = NODE_MODULES / "vnu-jar" / "build" / "dist" / "vnu.jar"
ACE = NODE_MODULES / "@daisy" / "ace" / "bin" / "ace-puppeteer.js"
INSTALL = "bash scripts/install-node-deps.sh installs it (make test runs it)"


def vnu_errors(*roots: Path) -> list[str]:
    """Every error the Nu checker finds in the HTML files under `roots` (one invocation): `file:line: message`."""
    java = require_tool("java")
    require(VNU_JAR.is_file(), f"the Nu HTML checker is not at {VNU_JAR}; {INSTALL}")
    assert all(next(Path(root).rglob("*.html"), None) for root in roots), f"no HTML page under one of {roots}"
    # a folder is checked whole (--skip-non-html: its .html files); --errors-only: warnings are advice, not invalid markup
    done = subprocess.run([java, "-Xss8m", "-jar", str(VNU_JAR), "--errors-only", "--skip-non-html", "--format", "json", "--stdout", *map(str, roots)],
                          capture_output=True, text=True, timeout=900)
    try:
        messages = json.loads(done.stdout or "{}").get("messages", [])
    except json.JSONDecodeError:
        raise AssertionError(f"the Nu checker did not answer in JSON (exit {done.returncode}): {done.stderr[-2000:]}") from None
    problems = [f"{m.get('url', '').removeprefix('file:')}:{m.get('lastLine', 0)}: {m.get('type')}: {m.get('message')}" for m in messages
                if m.get("type") in ("error", "non-document-error") or m.get("subType") == "fatal"]
    assert done.returncode == (1 if problems else 0), f"vnu exited {done.returncode}: {done.stderr[-2000:]}"
    return problems


def ace_violations(epub: Path, work: Path) -> list[str]:
    """DAISY Ace's violations in `epub` (every impact, minor included): `document: rule (impact): where`."""
    node = require_tool("node")
    require(ACE.is_file(), f"DAISY Ace is not at {ACE}; {INSTALL}")
    from browser.support import chromium_path

    env = dict(os.environ, PUPPETEER_EXECUTABLE_PATH=chromium_path(), PUPPETEER_SKIP_DOWNLOAD="1")
    out = work / f"ace-{epub.stem}"
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([node, str(ACE), "--silent", "--force", "--outdir", str(out), "--tempdir", str(work / f"ace-tmp-{epub.stem}"), str(epub)],
                          capture_output=True, text=True, timeout=600, env=env)
    report = out / "report.json"
    assert report.is_file(), f"Ace wrote no report (exit {done.returncode}): {done.stdout[-1500:]} {done.stderr[-1500:]}"
    found = []
    for document in json.loads(report.read_text(encoding="utf-8"))["assertions"]:
        for assertion in document.get("assertions", []):
            result = assertion["earl:result"]
            if result.get("earl:outcome") == "fail":
                test = assertion["earl:test"]
                where = ", ".join((result.get("earl:pointer") or {}).get("css", [])[:3])
                found.append(f"{document['earl:testSubject']['url']}: {test['dct:title']} ({test['earl:impact']}): {where} {result.get('dct:description', '')[:200]}")
    return found


def pdfua_report(pdf: Path):
    """`pdfua`'s report of the PDF; `pdfua_errors` keeps what must not be there."""
    try:
        import pdfua
    except ImportError:
        pdfua = None
    require(pdfua is not None, "the Python package pdfua is not installed (make install-dev installs it)")
    return pdfua.validate(str(pdf))


def pdfua_errors(pdf: Path) -> list[str]:
    from pdfua import Severity

    return [f"{f.rule_id} page {f.location.page}: {f.message}" for f in pdfua_report(pdf).findings if f.severity >= Severity.ERROR]


def ua_claimed(pdf: Path) -> bool:
    """Whether the PDF's XMP metadata says it is PDF/UA (pdfuaid:part)."""
    import re

    from pypdf import PdfReader

    metadata = PdfReader(str(pdf)).trailer["/Root"].get("/Metadata")
    data = metadata.get_object().get_data() if metadata is not None else b""
    return re.search(rb"pdfuaid:part=\"\d\"|<pdfuaid:part>", data) is not None
