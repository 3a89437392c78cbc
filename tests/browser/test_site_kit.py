"""What readers of a book site expect besides the text: a copy button on code, a tab icon, a page that loads no more
than it shows (the search index only once the reader searches)."""
from __future__ import annotations

import pytest

from conftest import write_book

from .support import build, serve

pytestmark = pytest.mark.xdist_group("browser")

SHELL = "$ pip install -e .\n$ tools build html\nBuilt 3 pages.\n"
PYTHON = "for step in range(3):\n    print(step)  # $ stays\n"
PNG_ICON = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf000000030101005c6b52a90000000049454e44ae426082"
)
KIT_BOOK = {
    "book.toml": '[book]\ntitle = "Kit Book"\nfavicon = "art/icon.png"\n',
    "chapters-md.txt": "README.md\ncode.md\n",
    "README.md": "# Kit Book\n\nSee [the code](code.md).\n",
    "code.md": f"# Code\n\nA link [back](README.md) before the code.\n\n```console\n{SHELL}```\n\n```python\n{PYTHON}```\n",
    "art/icon.png": PNG_ICON,
}
CLIPBOARD = ["clipboard-read", "clipboard-write"]


@pytest.fixture(scope="module")
def kit_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("kit-site")
    site = build(write_book(base / "book", KIT_BOOK), base / "html", "kit")
    assert site.extra["exit_code"] == 0, site.extra["build_output"]
    site.server = serve(site.out)
    yield site
    site.server.close()


def _copy(page, index: int) -> str:
    """Click the `index`th copy button and return what the clipboard then holds."""
    page.locator("button.copy-code").nth(index).click()
    page.locator(".copy-status").filter(has_text="Copied").wait_for(state="attached")
    return page.evaluate("navigator.clipboard.readText()")


def test_copy_buttons_copy_the_code_without_prompts_and_say_copied(kit_site, open_page):
    page, _ = open_page(kit_site, "http", page="code.html", permissions=CLIPBOARD)
    buttons = page.locator("button.copy-code")
    assert buttons.count() == 2
    assert buttons.first.evaluate("b => b.tagName + ' ' + b.type") == "BUTTON button"
    assert _copy(page, 0) == "pip install -e .\ntools build html\nBuilt 3 pages."
    status = page.locator(".copy-status")
    assert status.get_attribute("aria-live") == "polite" and status.text_content() == "Copied"
    assert buttons.first.inner_text() == "Copied"
    assert _copy(page, 1) == PYTHON.rstrip("\n"), "a block that is no shell keeps its `$`"


def test_the_fallback_copies_where_the_clipboard_api_is_refused(kit_site, open_page):
    page, _ = open_page(kit_site, "file", page=None, permissions=CLIPBOARD)
    # As on a file:// page of a browser without the asynchronous clipboard: copy.js must select and execCommand.
    page.add_init_script("Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true})")
    page.goto(kit_site.url("code.html", "file"))
    page.evaluate("window.copied = []; document.addEventListener('copy', () => window.copied.push(String(document.getSelection())))")
    page.locator("button.copy-code").first.click()
    page.locator(".copy-status").filter(has_text="Copied").wait_for(state="attached")
    assert page.evaluate("window.copied") == ["pip install -e .\ntools build html\nBuilt 3 pages."]


def test_tab_reaches_the_copy_button_and_enter_copies(kit_site, open_page):
    page, _ = open_page(kit_site, "http", page="code.html", permissions=CLIPBOARD)
    page.locator(".content a[href='README.html']").first.focus()  # the last link before the first code block
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "copy-code"
    page.keyboard.press("Enter")
    page.locator(".copy-status").filter(has_text="Copied").wait_for(state="attached")
    assert page.evaluate("navigator.clipboard.readText()").startswith("pip install")


def test_no_button_without_script_nor_in_print(kit_site, open_page):
    page, _ = open_page(kit_site, "http", page="code.html", java_script_enabled=False)
    assert page.locator("pre.highlight").count() == 2 and page.locator("button.copy-code").count() == 0
    page, _ = open_page(kit_site, "http", page="code.html")
    page.emulate_media(media="print")
    assert page.locator("button.copy-code").count() == 2
    assert all(not page.locator("button.copy-code").nth(i).is_visible() for i in range(2))


def test_the_button_follows_the_theme(kit_site, open_page):
    colours = {}
    for theme in ("light", "dark"):
        page, _ = open_page(kit_site, "http", page="code.html", color_scheme=theme)
        colours[theme] = page.locator("button.copy-code").first.evaluate("b => getComputedStyle(b).backgroundColor")
    assert colours == {"light": "rgb(255, 255, 255)", "dark": "rgb(13, 17, 23)"}


def _icon(page) -> tuple[int, str]:
    """The status and type of the page's `<link rel=icon>`, fetched as the browser fetches it."""
    return page.evaluate("""async () => {
      const link = document.querySelector("link[rel=icon]");
      const response = await fetch(link.href);
      return [response.status, response.headers.get("content-type") || ""];
    }""")


@pytest.mark.parametrize("page_name", ["index.html", "intro/setup.html", "404.html"])
def test_every_page_has_the_default_favicon(fixture_site, page_name, open_page):
    page, _ = open_page(fixture_site, "http", page=page_name)
    status, kind = _icon(page)
    assert status == 200 and kind.startswith("image/svg+xml"), (status, kind)


@pytest.mark.parametrize("page_name", ["index.html", "code.html", "404.html"])
def test_book_toml_names_the_favicon(kit_site, page_name, open_page):
    page, _ = open_page(kit_site, "http", page=page_name)
    status, kind = _icon(page)
    assert status == 200 and kind.startswith("image/png"), (status, kind)
    assert (kit_site.out / "assets" / "favicon.png").read_bytes() == PNG_ICON


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_search_index_loads_only_when_the_reader_searches(fixture_site, scheme, open_page):
    page, _ = open_page(fixture_site, scheme, page=None)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(fixture_site.url("intro/setup.html", scheme))
    page.wait_for_load_state("networkidle")
    assert any(url.endswith("assets/search.js") for url in requested), requested
    assert not any("search-index" in url for url in requested), requested
    page.locator("#search-input").type("quagmire")
    page.locator("#search-results li a").first.wait_for()
    assert sum("search-index" in url for url in requested) == 1, requested
