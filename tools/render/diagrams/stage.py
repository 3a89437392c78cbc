"""The build's drawing stage (tools/build/pipeline.py, after the check and before the formats prepare): every chapter's
```` ```mermaid ```` diagrams drawn to SVG, from the cache or by one headless browser (tools/render/diagrams/browser.py).

A drawing is cached under the hash of mermaid.js, the themes, mermaid's settings and the diagram's source, and so is
mermaid's error about it, so a rebuild starts no browser. Each chapter gets its drawings (`Chapter.drawings`), which
the renderers show and whose digest is part of every per-chapter cache key. A mermaid error is a warning at the
fence's line; diagrams that cannot be drawn at all (no mermaid.js, no browser, no Playwright) are one warning for
the whole build, saying how to enable them. `TOOLS_DIAGRAMS=off` draws nothing and warns about nothing.
"""
from __future__ import annotations

import hashlib
import os

from tools.book.diagrams import MAX_SOURCE, Drawing
from tools.book.model import Book
from tools.core.cache import Cache, key_of
from tools.core.errors import Diagnostics

NAMESPACE = "diagram"


def diagrams_off() -> bool:
    return os.environ.get("TOOLS_DIAGRAMS", "").strip().lower() in ("off", "0", "no", "false")


def draw_diagrams(book: Book, cache: Cache | None, diagnostics: Diagnostics) -> None:
    """Give each chapter with diagrams its drawings; report what could not be drawn."""
    chapters = [chapter for chapter in book.chapters if chapter.diagrams]
    if not chapters or diagrams_off():
        return
    from tools.render.diagrams.browser import CONFIG, ENABLE, SCRIPT_LIMIT, THEMES, draw, find_browser, find_mermaid_js

    sources = list(dict.fromkeys(source for chapter in chapters for _, source in chapter.diagrams))
    found: dict[str, Drawing | str] = {source: f"it is longer than {MAX_SOURCE:,} characters" for source in sources if len(source) > MAX_SOURCE}
    late: dict[str, str] = {}
    reason = ""
    script_path = find_mermaid_js(book.root)
    script = None
    try:
        if script_path is not None and script_path.stat().st_size <= SCRIPT_LIMIT:
            script = script_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = f"mermaid.js could not be read ({exc.strerror or exc})" if isinstance(exc, OSError) else "mermaid.js is not UTF-8"
    if script is None:
        reason = reason or "mermaid.js was not found"
    else:
        usable = cache if cache is not None and cache.enabled else None
        version = hashlib.sha256(script.encode()).hexdigest()
        keys = {source: key_of(NAMESPACE, version, THEMES, CONFIG, source) for source in sources}
        for source in sources:
            hit = usable.get(NAMESPACE, keys[source]) if usable is not None and source not in found else None
            if isinstance(hit, (Drawing, str)):
                found[source] = hit
        missing = [source for source in sources if source not in found]
        if missing:
            executable, reason = find_browser()
            if executable is not None:
                from tools.core.report import progress

                with progress("diagrams", len(missing)) as advance:
                    drawn, late, reason = draw(missing, script, executable, advance)
                for source, result in drawn.items():
                    found[source] = result
                    if usable is not None:
                        usable.put(NAMESPACE, keys[source], result)
    _report(chapters, found, late, reason, ENABLE, diagnostics)


def _report(chapters, found: dict[str, Drawing | str], late: dict[str, str], reason: str, enable: str, diagnostics: Diagnostics) -> None:
    undrawn: list[tuple[str, int]] = []
    for chapter in chapters:
        for line, source in chapter.diagrams:
            result = found.get(source)
            problem = late.get(source) or (result if isinstance(result, str) else None)
            if isinstance(result, Drawing):
                chapter.drawings[source] = result
            elif problem is not None:
                diagnostics.warning(chapter.path, line, f"this mermaid diagram cannot be drawn: {problem}; it is shown as code.",
                                    suggestion="Check it in the Mermaid Live Editor (https://mermaid.live).", code="mermaid-error")
            else:
                undrawn.append((chapter.path, line))
    if undrawn:
        path, line = undrawn[0]
        count = len(undrawn)
        what = "mermaid diagram is" if count == 1 else "mermaid diagrams are"
        diagnostics.warning(path, line, f"{count} {what} shown as code because {reason}.", suggestion=enable, code="diagrams-not-drawn")
