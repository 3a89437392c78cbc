"""Mermaid diagrams drawn to SVG in a headless browser, at build time (the drawing stage: tools/render/diagrams/stage.py).

mermaid.js comes from npm (`package.json` at the repository root, `scripts/install-node-deps.sh`) and the browser is
an installed package (Debian's chromium) driven by Playwright; nothing is downloaded: every request of the page is
refused, and the script is put into the page as text. One browser draws every diagram the cache lacks, in both
themes. Each diagram has a deadline, and so has the whole stage; a browser that fails or hangs is given up, and the
diagrams it did not draw are shown as code.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.book.diagrams import MAX_SOURCE, Drawing, diagram_ident
from tools.render.diagrams.svg_check import unsafe_svg

if TYPE_CHECKING:  # Playwright is optional (the `diagrams` extra): imported only to draw
    from playwright.async_api import Browser, Page

MERMAID_JS = Path("node_modules/mermaid/dist/mermaid.min.js")
SCRIPT_LIMIT = 32 * 1024 * 1024  # mermaid.min.js is 3.5 MB
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
THEMES = ("default", "dark")  # the light drawing, the dark one
# SVG text instead of HTML labels: no <foreignObject>, so WeasyPrint draws the labels and the EPUB stays valid
CONFIG = {"startOnLoad": False, "securityLevel": "strict", "htmlLabels": False, "flowchart": {"htmlLabels": False},
          "maxTextSize": MAX_SOURCE}
DIAGRAM_SECONDS = 20.0  # one diagram in both themes; past it the page is closed and the diagram shown as code
STAGE_SECONDS = 300.0  # every diagram of a build; past it the rest are shown as code (and drawn by the next build)
LAUNCH_SECONDS = 30.0
ENABLE = ("To draw them, install mermaid.js (`npm install mermaid@11` in the book's folder, or "
          "`bash scripts/install-node-deps.sh` in the tool's repository), Debian's chromium (`apt-get install chromium`) "
          "and Playwright (`pip install 'mlbook-tools[diagrams]'`); TOOLS_MERMAID_JS and TOOLS_CHROMIUM name other "
          "places, TOOLS_DIAGRAMS=off turns diagrams off.")

# Draws one diagram; every id inside the SVG is made to start with the diagram's id (mermaid leaves some edge ids
# bare and repeats them), with each reference to it, so a page can make each occurrence's ids its own.
_DRAW = """async ([id, code, config]) => {
  mermaid.initialize(config);
  try {
    const {svg} = await mermaid.render(id, code);
    const root = new DOMParser().parseFromString(svg, 'image/svg+xml').documentElement;
    if (root.nodeName !== 'svg') return {error: 'mermaid drew no SVG'};
    const renamed = new Map(), seen = new Set([id]);
    let count = 0;
    for (const element of root.querySelectorAll('[id]')) {
      const old = element.getAttribute('id');
      if (old.startsWith(id) && !seen.has(old)) { seen.add(old); continue; }
      const fresh = `${id}-id${count++}`;
      if (!renamed.has(old)) renamed.set(old, fresh);
      element.setAttribute('id', fresh);
    }
    const ref = (name) => renamed.get(name) || name;
    // What a book's diagram could bring in besides a drawing goes (mermaid's strict mode already removes most):
    // scripts, HTML islands, event handlers, links out, and styles that load something.
    for (const element of root.querySelectorAll('script, foreignObject, iframe, object, embed')) element.remove();
    const inert = (text) => text.replace(/@import[^;]*;?/gi, '').replace(/url\\(\\s*(?!['"]?#)[^)]*\\)/gi, 'none');
    for (const style of root.querySelectorAll('style')) style.textContent = inert(style.textContent);
    for (const element of [root, ...root.querySelectorAll('*')]) {
      for (const attr of [...element.attributes]) {
        const unsafe = attr.name.toLowerCase().startsWith('on') || (attr.localName === 'href' && !attr.value.startsWith('#'));
        if (attr.name === 'name' || unsafe) { element.removeAttributeNode(attr); continue; }  // `name`: not SVG, the EPUB refuses it
        let value = attr.name === 'style' ? inert(attr.value) : attr.value;
        if (attr.localName === 'href' && value.startsWith('#')) value = '#' + ref(value.slice(1));
        else if (attr.name === 'aria-labelledby' || attr.name === 'aria-describedby') value = value.split(/\\s+/).map(ref).join(' ');
        else value = value.replace(/url\\(#([^)]+)\\)/g, (match, name) => `url(#${ref(name)})`);
        if (value !== attr.value) attr.value = value;
      }
    }
    return {svg: new XMLSerializer().serializeToString(root)};
  } catch (e) {
    return {error: String((e && e.message) || e)};
  } finally {
    for (const left of [id, 'd' + id]) document.getElementById(left)?.remove();
  }
}"""


def find_mermaid_js(root: Path) -> Path | None:
    """TOOLS_MERMAID_JS, else node_modules/mermaid/dist/mermaid.min.js in the book's folder or a folder above it,
    else in the current folder or one above it."""
    named = os.environ.get("TOOLS_MERMAID_JS")
    try:
        if named:
            return Path(named) if Path(named).is_file() else None
        for start in (root, Path.cwd()):
            base = start.resolve()
            for folder in (base, *base.parents):
                if (folder / MERMAID_JS).is_file():
                    return folder / MERMAID_JS
    except OSError:  # a folder that cannot be searched, a current folder that was deleted: as if not found
        return None
    return None


def _playwright_browser() -> bool:
    """Whether Playwright has downloaded a chromium of its own (`playwright install chromium`)."""
    base = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright")
    return base.is_dir() and any(base.glob("chromium*"))


def find_browser() -> tuple[str | None, str]:
    """(the browser to start, "" for Playwright's own; or None) and, when None, what is missing."""
    from importlib.util import find_spec

    if find_spec("playwright") is None:
        return None, "Playwright is not installed"
    named = os.environ.get("TOOLS_CHROMIUM")
    if named:
        found = shutil.which(named)
        return (found, "") if found else (None, f"the browser TOOLS_CHROMIUM names ({named}) is not there")
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found, ""
    if _playwright_browser():
        return "", ""
    return None, "no chromium was found"


Drawn = dict[str, Drawing | str]  # source -> its drawing, or mermaid's error (both kept in the cache)


def draw(sources: list[str], script: str, executable: str, advance: Callable[[str], None]) -> tuple[Drawn, dict[str, str], str]:
    """Draw `sources` in one browser: (drawings and mermaid's errors; diagrams that ran out of time, with why;
    why the others were not drawn, or ""). Never raises for what the browser does."""
    drawn: Drawn = {}
    late: dict[str, str] = {}
    try:
        reason = _run_coroutine(lambda: _draw_all(sources, script, executable, advance, drawn, late))
    except Exception as exc:  # noqa: BLE001 (a browser that fails to start or crashes: the rest is shown as code)
        reason = f"the browser failed ({_first_line(exc)})"
    return drawn, late, reason


def _run_coroutine(make: Callable[[], Any]) -> Any:
    """`asyncio.run(make())`, in a thread of its own when this thread already runs an event loop (a notebook, an
    async application, Playwright's sync API in the same process), where asyncio.run refuses to start."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(make())
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="mermaid-drawing", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _one_line(message: str) -> str:
    """Mermaid's message on one line: a parse error's first line and what was expected, without the source excerpt
    and its caret."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return "mermaid could not draw it"
    text = lines[0] if len(lines) < 3 else f"{lines[0].rstrip(':')}: {lines[-1]}"
    return text if len(text) <= 500 else text[:499] + "…"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


async def _draw_all(sources: list[str], script: str, executable: str, advance: Callable[[str], None], drawn: Drawn,
                    late: dict[str, str]) -> str:
    from playwright.async_api import async_playwright

    deadline = time.monotonic() + STAGE_SECONDS
    options: dict[str, Any] = {"timeout": LAUNCH_SECONDS * 1000, "args": ["--no-sandbox"] if os.geteuid() == 0 else []}
    if executable:
        options["executable_path"] = executable
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**options)
        try:
            page: Page | None = None
            for source in sources:
                if time.monotonic() > deadline:
                    return f"drawing took longer than {STAGE_SECONDS:.0f} seconds"
                if page is None:
                    page = await asyncio.wait_for(_open_page(browser, script), LAUNCH_SECONDS)
                try:
                    drawn[source] = await asyncio.wait_for(_draw_one(page, source), DIAGRAM_SECONDS)
                except TimeoutError:
                    late[source] = f"drawing it took longer than {DIAGRAM_SECONDS:.0f} seconds"
                    await _bounded(page.context.close())  # a page stuck in a script: the next diagram gets a fresh one
                    page = None
                advance(source.split("\n", 1)[0][:40])
        finally:
            await _bounded(browser.close())
    return ""


async def _bounded(closing) -> None:
    """A browser step that cleans up, given as long as a launch: ending the driver takes Chromium down anyway."""
    try:
        await asyncio.wait_for(closing, LAUNCH_SECONDS)
    except TimeoutError:
        pass


async def _open_page(browser: Browser, script: str) -> Page:
    context = await browser.new_context()
    page = await context.new_page()
    await page.route("**/*", lambda route: route.abort())  # nothing is fetched
    await page.set_content("<!doctype html><html><body></body></html>")
    await page.add_script_tag(content=script)
    if not await page.evaluate("() => typeof mermaid === 'object' && typeof mermaid.render === 'function'"):
        raise RuntimeError("the mermaid script did not load")
    return page


async def _draw_one(page: Page, source: str) -> Drawing | str:
    ident = diagram_ident(source)
    svgs = []
    for theme in THEMES:
        result = await page.evaluate(_DRAW, [ident, source, dict(CONFIG, theme=theme)])
        if "error" in result:
            return _one_line(str(result["error"]))
        unsafe = unsafe_svg(str(result["svg"]))
        if unsafe:
            return f"the drawing cannot go into a page: {unsafe}"
        svgs.append(str(result["svg"]))
    return Drawing(svgs[0], svgs[1], ident)
