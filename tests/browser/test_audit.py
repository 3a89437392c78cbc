"""Every page: no console error, no request that leaves the local server, no failed load; and an axe-core audit
(injected from `.cache/axe-core`, see support.py) finds no serious or critical accessibility violation."""
from __future__ import annotations

import pytest

from .pages import first_page_with
from .support import DESKTOP, PHONE

pytestmark = pytest.mark.xdist_group("browser")


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_every_page_loads_cleanly(fixture_site, scheme, open_page):
    """Every page of the fixture's site; every page of our book is opened (and checked the same way) by the walk
    through Previous/Next in test_navigation.py."""
    page, watch = open_page(fixture_site, scheme, page=None)
    for path in ["index.html", *(p for p, _ in fixture_site.chapters), "404.html"]:
        page.goto(fixture_site.url(path, scheme))
        page.wait_for_load_state("load")
    assert not watch.problems(), "\n".join(watch.problems())


AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + (n.failureSummary || "").replace(/\\s+/g, " ").slice(0, 300)),
    count: v.nodes.length,
  }));
}"""


def audit(page, axe: str) -> list[dict]:
    page.add_script_tag(content=axe)
    return page.evaluate(AXE_RUN)


def _audited_pages(site) -> list[str]:
    chapters = [p for p, _ in site.chapters]
    if site.name == "fixture":
        return ["index.html", *chapters, "404.html"]
    # Our book: the front page, the first and last chapters, and the first chapter with a table and code.
    return ["index.html", chapters[0], first_page_with(site.out, chapters, ["table", "pre.highlight"]), chapters[-1]]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_accessibility_violations(site, theme, axe, open_page):
    """The audited pages on a desktop, and a chapter with a table and code on a phone (where they scroll sideways)."""
    found = []
    for device, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page, _ = open_page(site, "http", page=None, color_scheme=theme, viewport=viewport)
        pages = _audited_pages(site) if device == "desktop" else [first_page_with(site.out, [p for p, _ in site.chapters], ["table", "pre.highlight"])]
        for path in dict.fromkeys(pages):
            page.goto(site.url(path))
            assert page.evaluate("document.documentElement.getAttribute('data-theme') || 'light'") == theme or path == "404.html"
            for violation in audit(page, axe):
                found.append(f"{path} [{theme}, {device}] {violation['impact']} {violation['id']}: {violation['help']} ({violation['count']} elements)\n    " + "\n    ".join(violation["nodes"]))
    assert not found, "\n".join(found)


def test_no_serious_accessibility_violations_on_a_phone_with_the_menu_open(fixture_site, axe, open_page):
    page, _ = open_page(fixture_site, "http", page="intro/setup.html", viewport=PHONE, is_mobile=True, has_touch=True)
    page.locator(".nav-toggle").click()
    violations = audit(page, axe)
    assert not violations, violations


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_guard_catches_a_request_that_leaves_the_server(fixture_site, scheme, open_page):
    """The interception the other tests rely on is not vacuous: a fetch and an image from elsewhere are stopped."""
    page, watch = open_page(fixture_site, scheme, page="README.html")
    page.evaluate("""async () => {
      try { await fetch("https://example.com/tracker.js"); } catch (e) { /* refused, as it should be */ }
      const img = new Image(); img.src = "http://203.0.113.9/pixel.png"; document.body.appendChild(img);
      await new Promise(r => { img.onerror = r; img.onload = r; });
    }""")
    assert watch.outside == ["https://example.com/tracker.js", "http://203.0.113.9/pixel.png"]
    watch.outside.clear()  # expected here; any other test fails on them
    watch.console_errors.clear()
    watch.failed.clear()
